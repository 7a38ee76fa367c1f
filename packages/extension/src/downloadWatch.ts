// Downloads of the agent's (downloads.ts says which) are cancelled as they begin, here in the browser: a broker
// round trip is longer than a small download. What was done is reported to the broker, which records it.
import { emit } from "./connection.js";
import { agentDownload } from "./downloads.js";
import { tabsLoaded } from "./state.js";

chrome.downloads.onCreated.addListener((item) => {
  void tabsLoaded.then(async () => {
    const agent = await agentDownload(item);
    if (!agent) return;
    await chrome.downloads.cancel(item.id).catch(() => undefined);
    // A small file may have finished before the cancel arrived: when the download is surely the agent's,
    // its file is deleted too.
    const [now] = await chrome.downloads.search({ id: item.id }).catch(() => []);
    const finished = now?.state === "complete";
    if (agent.whose === "certain" && finished) await chrome.downloads.removeFile(item.id).catch(() => undefined);
    if (agent.whose === "certain" || !finished) await chrome.downloads.erase({ id: item.id }).catch(() => undefined);
    const outcome = !finished ? "cancelled" : agent.whose === "certain" ? "deleted" : "left";
    emit({
      type: "event",
      event: "tab.download",
      params: { ...(agent.tabId !== undefined ? { tabId: agent.tabId } : {}), url: item.finalUrl || item.url, outcome },
    });
  });
});

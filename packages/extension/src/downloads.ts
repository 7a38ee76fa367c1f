// Read-only means nothing lands on the user's disk either: a download started by the agent's navigation, or
// by a page in one of the agent's tabs, is cancelled and erased from the download list as soon as it starts.
import { agentTabs, tabsLoaded } from "./state.js";

export const DOWNLOAD_NOTE = "tabrelay cancels downloads that agent tabs start: nothing was saved";
/** URLs the agent is sending a tab to: until when a download of one of them (before redirects) is the agent's. */
const agentRequests = new Map<string, number>();
/** After the agent's navigation settles, how long a download of its URL still counts as the agent's. */
const AGENT_REQUEST_GRACE_MS = 10_000;

/** Marks `url` as the agent's while its navigation runs; the returned function starts the grace period. */
export function noteAgentRequest(url: string): () => void {
  agentRequests.set(url, Number.POSITIVE_INFINITY);
  return () => {
    agentRequests.set(url, Date.now() + AGENT_REQUEST_GRACE_MS);
    setTimeout(() => {
      if ((agentRequests.get(url) ?? 0) <= Date.now()) agentRequests.delete(url);
    }, AGENT_REQUEST_GRACE_MS + 100);
  };
}

/**
 * "certain": the download is of a URL the agent is navigating to. "page": it was started by a page that only
 * an agent tab shows (its referrer), not by any of the user's tabs. undefined: the user's.
 */
async function agentDownload(item: chrome.downloads.DownloadItem): Promise<"certain" | "page" | undefined> {
  const until = agentRequests.get(item.url) ?? agentRequests.get(item.finalUrl);
  if (until !== undefined && Date.now() <= until) return "certain";
  if (!item.referrer) return undefined;
  const tabs = await chrome.tabs.query({});
  const showing = tabs.filter((tab) => tab.url === item.referrer && tab.id !== undefined);
  return showing.length > 0 && showing.every((tab) => agentTabs.has(tab.id!)) ? "page" : undefined;
}

chrome.downloads.onCreated.addListener((item) => {
  void tabsLoaded.then(async () => {
    const whose = await agentDownload(item);
    if (!whose) return;
    await chrome.downloads.cancel(item.id).catch(() => undefined);
    // A small file may have finished before the cancel arrived: when the download is surely the agent's,
    // its file is deleted too.
    const [now] = await chrome.downloads.search({ id: item.id }).catch(() => []);
    if (whose === "certain" && now?.state === "complete") await chrome.downloads.removeFile(item.id).catch(() => undefined);
    if (whose === "certain" || now?.state !== "complete") await chrome.downloads.erase({ id: item.id }).catch(() => undefined);
  });
});

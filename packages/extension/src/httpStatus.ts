// The HTTP status of each agent tab's top document is observed (webRequest without blocking) and reported; the broker
// matches it with the document it brought (drivers/documentStatus.ts).
import { emit } from "./connection.js";
import { isVisibleToAgent, tabsLoaded } from "./state.js";

chrome.webRequest.onResponseStarted.addListener(
  (details) => {
    const { tabId, url, statusCode: status } = details;
    if (tabId < 0) return;
    void tabsLoaded.then(() => {
      if (isVisibleToAgent(tabId)) emit({ type: "event", event: "tab.response", params: { tabId, url, status } });
    });
  },
  { urls: ["<all_urls>"], types: ["main_frame"] },
);

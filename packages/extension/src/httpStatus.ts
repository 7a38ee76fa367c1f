/**
 * The HTTP status of each tab's current top document (observed only: webRequest without blocking). A response
 * is held until its document commits, and dropped when a document commits without one (bfcache, a service
 * worker's answer): a status is never shown for another document than the one that brought it.
 */
const pendingStatus = new Map<number, { url: string; status: number }>();
export const documentStatus = new Map<number, { url: string; status: number }>();
export const withoutFragment = (url: string) => url.split("#")[0] ?? url;

chrome.webRequest.onResponseStarted.addListener(
  (details) => {
    if (details.tabId >= 0) pendingStatus.set(details.tabId, { url: withoutFragment(details.url), status: details.statusCode });
  },
  { urls: ["<all_urls>"], types: ["main_frame"] },
);
chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  // A blank document (a tab reset after a refused landing, a new tab's initial one) can commit after the next
  // page's response was seen; it brought no response and takes none away from the page that follows.
  if (details.url === "about:blank") {
    documentStatus.delete(details.tabId);
    return;
  }
  const pending = pendingStatus.get(details.tabId);
  pendingStatus.delete(details.tabId);
  if (pending && pending.url === withoutFragment(details.url)) documentStatus.set(details.tabId, pending);
  else documentStatus.delete(details.tabId);
});
chrome.tabs.onRemoved.addListener((tabId) => {
  pendingStatus.delete(tabId);
  documentStatus.delete(tabId);
});

// Read-only means nothing lands on the user's disk either: a download started by the agent's navigation, or
// by a page in one of the agent's tabs, is cancelled and erased from the download list as soon as it starts
// (downloadWatch.ts, at once: a broker round trip is longer than a small download). Which downloads those are is here.
import { agentTabs } from "./state.js";

export const DOWNLOAD_NOTE = "tabrelay cancels downloads that agent tabs start: nothing was saved";
/** URLs the agent is sending a tab to: until when a download of one of them (before redirects) is the agent's, and the tab. */
const agentRequests = new Map<string, { until: number; tabId?: number }>();
/** After the agent's navigation settles, how long a download of its URL still counts as the agent's. */
const AGENT_REQUEST_GRACE_MS = 10_000;

/** Marks `url` as the agent's while its navigation runs; the returned function starts the grace period. */
export function noteAgentRequest(url: string, tabId?: number): () => void {
  agentRequests.set(url, { until: Number.POSITIVE_INFINITY, ...(tabId !== undefined ? { tabId } : {}) });
  return () => {
    agentRequests.set(url, { until: Date.now() + AGENT_REQUEST_GRACE_MS, ...(tabId !== undefined ? { tabId } : {}) });
    setTimeout(() => {
      if ((agentRequests.get(url)?.until ?? 0) <= Date.now()) agentRequests.delete(url);
    }, AGENT_REQUEST_GRACE_MS + 100);
  };
}

/** The tab the agent's request for `url` is in, once it is known (tabs.open learns it after the request). */
export function noteAgentRequestTab(url: string, tabId: number): void {
  const request = agentRequests.get(url);
  if (request) request.tabId = tabId;
}

/**
 * "certain": the download is of a URL the agent is navigating to. "page": it was started by a page that only
 * an agent tab shows (its referrer), not by any of the user's tabs. undefined: the user's. `tabId`: the agent tab.
 */
export async function agentDownload(item: chrome.downloads.DownloadItem): Promise<{ whose: "certain" | "page"; tabId?: number } | undefined> {
  const request = agentRequests.get(item.url) ?? agentRequests.get(item.finalUrl);
  if (request !== undefined && Date.now() <= request.until) return { whose: "certain", ...(request.tabId !== undefined ? { tabId: request.tabId } : {}) };
  if (!item.referrer) return undefined;
  const tabs = await chrome.tabs.query({});
  const showing = tabs.filter((tab) => tab.url === item.referrer && tab.id !== undefined);
  const first = showing[0]?.id;
  return first !== undefined && showing.every((tab) => agentTabs.has(tab.id!)) ? { whose: "page", tabId: first } : undefined;
}

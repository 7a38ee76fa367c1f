import type { BridgeEvents } from "@tabrelay/protocol";
import { emit } from "./connection.js";
import { onLateClaim } from "./navigationRules.js";
import { loadError, requestError } from "./platform.js";
import { agentTabs, isVisibleToAgent, saveTabs, sharedTabs, tabsLoaded } from "./state.js";
import { groupAgentTab, toTabInfo } from "./tabs.js";

// A navigation request of an agent tab stopped before it was sent (the navigation rules, or another
// extension's): the broker decides whether it was its policy, records it and tells the agent.
// A popup's first request is stopped before the tab is claimed as the agent's: it is reported once it is.
const stoppedBeforeClaim = new Map<number, BridgeEvents["tab.blocked"]>();
/** Stops reported in the last moments, by tab, frame and URL, with which listener told them (below). */
const reportedStops = new Map<string, { at: number; source: "request" | "navigation" }>();
/** Both listeners tell one stop within this long of each other. */
const STOP_PAIR_MS = 2000;

/**
 * One stop is heard twice, from the request and from the navigation: the second of such a pair is dropped. The same
 * listener telling the same URL again is another stop (a retry, a page looping), reported again.
 */
function reportStopped(tabId: number, url: string, frame: boolean, source: "request" | "navigation"): void {
  const params = { tabId, url, frame };
  void tabsLoaded.then(() => {
    if (!isVisibleToAgent(tabId)) {
      if (frame) return;
      stoppedBeforeClaim.set(tabId, params);
      // Kept past the longest late claim (navigationRules.ts: ten rounds of a second).
      setTimeout(() => stoppedBeforeClaim.delete(tabId), 15_000);
      return;
    }
    const key = `${tabId} ${frame ? "frame" : "top"} ${url.split("#")[0]}`;
    const now = Date.now();
    const told = reportedStops.get(key);
    if (told && told.source !== source && now - told.at < STOP_PAIR_MS) {
      reportedStops.delete(key);
      return;
    }
    reportedStops.set(key, { at: now, source });
    if (reportedStops.size > 200) for (const [k, t] of reportedStops) if (now - t.at >= STOP_PAIR_MS) reportedStops.delete(k);
    emit({ type: "event", event: "tab.blocked", params });
  });
}

// Heard from the request (webRequest) and from the navigation (webNavigation), whichever comes first: Chrome tells
// the request's first, Firefox the navigation's, and the command that waited for that navigation answers on the
// second. The broker must know of the stop before it reads that answer.
chrome.webRequest.onErrorOccurred.addListener(
  (details) => {
    if (requestError(details.error) === "net::ERR_BLOCKED_BY_CLIENT" && details.tabId >= 0)
      reportStopped(details.tabId, details.url, details.type !== "main_frame", "request");
  },
  { urls: ["<all_urls>"], types: ["main_frame", "sub_frame"] },
);
chrome.webNavigation.onErrorOccurred.addListener((details) => {
  if (loadError(details.error) === "net::ERR_BLOCKED_BY_CLIENT" && details.tabId >= 0 && /^https?:/.test(details.url))
    reportStopped(details.tabId, details.url, details.frameId !== 0, "navigation");
});

function reportStoppedBeforeClaim(tabId: number): void {
  const params = stoppedBeforeClaim.get(tabId);
  stoppedBeforeClaim.delete(tabId);
  if (params) emit({ type: "event", event: "tab.blocked", params });
}

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  void tabsLoaded.then(() => {
    if (isVisibleToAgent(details.tabId)) emit({ type: "event", event: "tab.committed", params: { tabId: details.tabId, url: details.url } });
  });
});

/** A page the agent opened opened another tab: it is the agent's too, and the broker polices it. */
async function claimPopup(tab: chrome.tabs.Tab): Promise<void> {
  if (tab.id === undefined || tab.openerTabId === undefined || !agentTabs.has(tab.openerTabId) || agentTabs.has(tab.id)) return;
  agentTabs.add(tab.id);
  await saveTabs();
  void groupAgentTab(tab);
  emit({ type: "event", event: "tab.created", params: { tab: toTabInfo(tab), openerTabId: tab.openerTabId } });
  reportStoppedBeforeClaim(tab.id);
}

chrome.tabs.onCreated.addListener((tab) => {
  void tabsLoaded.then(() => claimPopup(tab));
});
// A popup that appeared before its opener was known as the agent's is claimed when navigationRules.ts finds out.
onLateClaim((tab) => tabsLoaded.then(() => claimPopup(tab)));

chrome.webNavigation.onCreatedNavigationTarget.addListener((details) => {
  void tabsLoaded.then(async () => {
    if (!agentTabs.has(details.sourceTabId) || agentTabs.has(details.tabId)) return;
    agentTabs.add(details.tabId);
    await saveTabs();
    reportStoppedBeforeClaim(details.tabId);
    emit({ type: "event", event: "tab.committed", params: { tabId: details.tabId, url: details.url, openerTabId: details.sourceTabId } });
  });
});

chrome.tabs.onRemoved.addListener((tabId) => {
  void tabsLoaded.then(async () => {
    if (!isVisibleToAgent(tabId)) return;
    agentTabs.delete(tabId);
    sharedTabs.delete(tabId);
    await saveTabs("later");
    emit({ type: "event", event: "tab.removed", params: { tabId } });
  });
});

import type { BridgeEvents } from "@tabrelay/protocol";
import { emit } from "./connection.js";
import { onLateClaim } from "./navigationRules.js";
import { agentTabs, isVisibleToAgent, saveTabs, sharedTabs, tabsLoaded } from "./state.js";
import { groupAgentTab, toTabInfo } from "./tabs.js";

// A navigation request of an agent tab stopped before it was sent (the navigation rules, or another
// extension's): the broker decides whether it was its policy, records it and tells the agent.
// A popup's first request is stopped before the tab is claimed as the agent's: it is reported once it is.
const stoppedBeforeClaim = new Map<number, BridgeEvents["tab.blocked"]>();
chrome.webRequest.onErrorOccurred.addListener(
  (details) => {
    if (details.error !== "net::ERR_BLOCKED_BY_CLIENT" || details.tabId < 0) return;
    const params = { tabId: details.tabId, url: details.url, frame: details.type !== "main_frame" };
    void tabsLoaded.then(() => {
      if (isVisibleToAgent(details.tabId)) {
        emit({ type: "event", event: "tab.blocked", params });
      } else if (!params.frame) {
        stoppedBeforeClaim.set(details.tabId, params);
        // Kept past the longest late claim (navigationRules.ts: ten rounds of a second).
        setTimeout(() => stoppedBeforeClaim.delete(details.tabId), 15_000);
      }
    });
  },
  { urls: ["<all_urls>"], types: ["main_frame", "sub_frame"] },
);

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

// The agent's tabs, pushed to the broker (tabs.now) when it starts being served and whenever one of them changes or
// the set does: the broker answers list_tabs from the last list (drivers/tabView.ts) without asking. One list at a
// time, each read after the change it reports, and at most one every PUSH_GAP_MS (a page retitling itself in a loop
// costs the broker a list every PUSH_GAP_MS, not one per change).
import { emit, onServing } from "./connection.js";
import { agentTabs, isVisibleToAgent, onTabsSaved, sharedTabs, tabsLoaded } from "./state.js";
import { toTabInfo } from "./tabs.js";

const PUSH_GAP_MS = 20;

let pushing = false;
let again = false;
let lastPush = 0;
/** The last list sent on this connection: the same list is not sent again (a page retitling itself to the same title). */
let lastSent = "";

export function pushTabs(): void {
  if (pushing) {
    again = true;
    return;
  }
  pushing = true;
  void (async () => {
    try {
      await tabsLoaded;
      do {
        again = false;
        const wait = lastPush + PUSH_GAP_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const tabs = (await chrome.tabs.query({})).filter((t) => t.id !== undefined && isVisibleToAgent(t.id)).map(toTabInfo);
        lastPush = Date.now();
        const text = JSON.stringify(tabs);
        if (text === lastSent) continue;
        lastSent = text;
        emit({ type: "event", event: "tabs.now", params: { tabs } });
      } while (again);
    } catch {
      // The browser is closing: nothing to report.
    } finally {
      pushing = false;
    }
  })();
}

const anyAgentTab = () => agentTabs.size + sharedTabs.size > 0;

onServing(() => {
  lastSent = ""; // a new connection gets the list whatever the last one got
  pushTabs();
});
onTabsSaved(pushTabs);
chrome.tabs.onUpdated.addListener((tabId, change) => {
  if (!isVisibleToAgent(tabId)) return;
  if (change.title !== undefined || change.status !== undefined || change.url !== undefined || change.discarded !== undefined) pushTabs();
});
// The front tab of a window changed: an agent tab came to the front or left it.
chrome.tabs.onActivated.addListener(() => {
  if (anyAgentTab()) pushTabs();
});
chrome.tabs.onAttached.addListener((tabId) => {
  if (isVisibleToAgent(tabId)) pushTabs();
});
chrome.tabs.onReplaced.addListener((added, removed) => {
  if (isVisibleToAgent(added) || isVisibleToAgent(removed)) pushTabs();
});

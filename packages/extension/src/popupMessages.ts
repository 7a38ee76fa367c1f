// The popup's requests (popup.ts): status, pairing, sharing the active tab.
import { reconnectNow } from "./connection.js";
import { navigationRulesError } from "./navigationRules.js";
import { loadSettings } from "./settings.js";
import { bridge, saveTabs, sharedTabs, tabsLoaded } from "./state.js";

type PopupMessage =
  | { type: "status" }
  | { type: "pair"; url: string; token: string }
  | { type: "share"; tabId: number }
  | { type: "unshare"; tabId: number };

chrome.runtime.onMessage.addListener((message: PopupMessage, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  void (async () => {
    await tabsLoaded;
    const settings = await loadSettings();
    if (message.type === "pair") {
      await chrome.storage.local.set({ brokerUrl: message.url, pairingToken: message.token });
      reconnectNow();
    } else if (message.type === "share") {
      sharedTabs.add(message.tabId);
      await saveTabs();
    } else if (message.type === "unshare") {
      sharedTabs.delete(message.tabId);
      await saveTabs("later");
    }
    const rulesError = navigationRulesError();
    sendResponse({ state: bridge.state, lastError: [bridge.lastError, rulesError].filter(Boolean).join("; "), brokerUrl: settings.brokerUrl ?? "", browserId: settings.browserId, label: settings.label, sharedTabs: [...sharedTabs] });
  })();
  // Keep the message channel open for the async sendResponse above.
  return true;
});

// The popup's requests (popup.ts): status, pairing, sharing the active tab.
import { dialUrl } from "@tabrelay/protocol";
import { reconnectNow } from "./connection.js";
import { navigationRulesError } from "./navigationRules.js";
import { loadSettings, plainRemoteRefusal, type Settings } from "./settings.js";
import { bridge, saveTabs, sharedTabs, tabsLoaded } from "./state.js";

type PopupMessage = { type: "status" } | { type: "pair"; url: string; token: string } | { type: "share"; tabId: number } | { type: "unshare"; tabId: number };

chrome.runtime.onMessage.addListener((message: PopupMessage, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  void (async () => {
    await tabsLoaded;
    const settings = await loadSettings();
    if (message.type === "pair") {
      const refusal = plainRemoteRefusal({ brokerUrl: message.url });
      if (refusal) {
        sendResponse({ ...status(settings), lastError: refusal });
        return;
      }
      // `localhost` is taken and kept as 127.0.0.1, the address the extension dials (protocol dialUrl).
      await chrome.storage.local.set({ brokerUrl: dialUrl(message.url), pairingToken: message.token });
      reconnectNow();
    } else if (message.type === "share") {
      sharedTabs.add(message.tabId);
      await saveTabs();
    } else if (message.type === "unshare") {
      sharedTabs.delete(message.tabId);
      await saveTabs("later");
    }
    sendResponse(status(await loadSettings()));
  })();
  // Keep the message channel open for the async sendResponse above.
  return true;
});

function status(settings: Settings) {
  // A listener that failed to prove itself stays on the popup until a real broker welcomes this browser.
  const lastError = [...new Set([bridge.lastError, bridge.impostor, navigationRulesError()])].filter(Boolean).join("; ");
  return {
    state: bridge.state,
    lastError,
    brokerUrl: settings.brokerUrl ?? "",
    browserId: settings.browserId,
    label: settings.label,
    sharedTabs: [...sharedTabs],
  };
}

// The popup's requests (popup.ts): status, pairing, sharing the active tab, the tab's state from the broker (who holds
// it, what the agent did there, the site's policy), answering the broker's questions, and Stop. Taken only from the
// extension's own popup page: a content script runs in web pages with this extension's id, and a page must never be
// able to answer a question or take a tab back.
import { dialUrl } from "@tabrelay/protocol";
import { answer, askTabState } from "./asks.js";
import { openQuestions, tabState } from "./askState.js";
import { emit, reconnectNow } from "./connection.js";
import { navigationRulesError } from "./navigationRules.js";
import { loadSettings, plainRemoteRefusal, type Settings } from "./settings.js";
import { agentTabs, bridge, isVisibleToAgent, saveTabs, sharedTabs, tabsLoaded } from "./state.js";

type PopupMessage =
  | { type: "status"; tabId?: number }
  | { type: "pair"; url: string; token: string }
  | { type: "share"; tabId: number }
  | { type: "unshare"; tabId: number }
  | { type: "answer"; id: string; answer: "once" | "always" | "deny"; tabId?: number }
  | { type: "stop"; tabId: number }
  | { type: "grant"; tabId: number; record: number; base: string };

const POPUP_PAGE = chrome.runtime.getURL("popup.html");

chrome.runtime.onMessage.addListener((message: PopupMessage, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id || !sender.url?.startsWith(POPUP_PAGE)) return false;
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
    } else if (message.type === "answer") {
      answer(message.id, message.answer, "popup");
    } else if (message.type === "stop") {
      await takeBack(message.tabId);
    } else if (message.type === "grant") {
      // The broker's own offer for its own record: it recomputes what to write, and writes nothing else.
      emit({ type: "event", event: "policy.grant", params: { tabId: message.tabId, record: message.record, base: message.base } });
    }
    const tabId = "tabId" in message ? message.tabId : undefined;
    // Each look at a tab asks the broker again; its answer (browser.tabState) is there by the popup's next poll.
    if (message.type === "status" && tabId !== undefined) await askTabState(tabId);
    sendResponse(status(await loadSettings(), tabId));
  })();
  // Keep the message channel open for the async sendResponse above.
  return true;
});

/**
 * Stop: the tab is the user's again. It leaves the agent's tabs (no rule polices it, no call reaches it), and the
 * broker ends the agent's lease and refuses its next call there with tab_taken_back.
 */
async function takeBack(tabId: number): Promise<void> {
  const was = isVisibleToAgent(tabId);
  agentTabs.delete(tabId);
  sharedTabs.delete(tabId);
  await saveTabs();
  if (was) await chrome.tabs.ungroup(tabId).catch(() => undefined);
  emit({ type: "event", event: "tab.stop", params: { tabId } });
}

function status(settings: Settings, tabId?: number) {
  // A listener that failed to prove itself stays on the popup until a real broker welcomes this browser.
  const lastError = [...new Set([bridge.lastError, bridge.impostor, navigationRulesError()])].filter(Boolean).join("; ");
  return {
    state: bridge.state,
    lastError,
    brokerUrl: settings.brokerUrl ?? "",
    browserId: settings.browserId,
    label: settings.label,
    sharedTabs: [...sharedTabs],
    ...(tabId !== undefined ? { tab: { tabId, agents: isVisibleToAgent(tabId), shared: sharedTabs.has(tabId), state: tabState(tabId) ?? null } } : {}),
    questions: openQuestions(),
  };
}

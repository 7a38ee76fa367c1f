// The person's side of the broker's questions (policy.ask) and of the popup's view of a tab: the broker pushes the open
// questions (browser.asks) and a tab's state (browser.tabState, asked for by popup.opened); the extension shows each
// question as a notification (Allow once, Deny; clicking it opens the popup on the question, where Always is too) and
// sends the user's answer back (ask.answer). Only the popup and the notifications answer: pages cannot reach either
// (no externally_connectable, no web-accessible page, and popupMessages.ts takes the popup's messages only from the
// extension's own pages, never from a content script).
import { forgetQuestion, isOpenQuestion, questionOf } from "./askState.js";
import { emit } from "./connection.js";
import { loadSettings } from "./settings.js";

/** The user's answer, sent to the broker (the first answer anywhere wins there). */
export function answer(id: string, value: "once" | "always" | "deny", via: "notification" | "popup"): boolean {
  if (!isOpenQuestion(id)) return false;
  emit({ type: "event", event: "ask.answer", params: { id, answer: value, via } });
  forgetQuestion(id);
  return true;
}

chrome.notifications.onButtonClicked.addListener((id, index) => {
  if (isOpenQuestion(id)) answer(id, index === 0 ? "once" : "deny", "notification");
});

// The notification itself: the popup, as a small window, on the question (three answers there, and the tab's state).
// A question about another browser's tab opens the popup on its list alone: this browser's tab of that number is another.
chrome.notifications.onClicked.addListener((id) => {
  const q = questionOf(id);
  if (!q) return;
  void loadSettings().then((settings) => {
    const about = q.browserId === settings.browserId ? `?tab=${q.tabId}` : "?tab=none";
    return chrome.windows.create({ url: chrome.runtime.getURL(`popup.html${about}`), type: "popup", width: 420, height: 640 });
  });
});

export async function askTabState(tabId: number): Promise<void> {
  const tab = await chrome.tabs.get(tabId).catch(() => undefined);
  if (tab) emit({ type: "event", event: "popup.opened", params: { tabId, url: tab.url ?? "" } });
}

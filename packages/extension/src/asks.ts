// The person's side of the broker's questions (policy.ask) and of the popup's view of a tab: the broker pushes the open
// questions (browser.asks) and a tab's state (browser.tabState, asked for by popup.opened); the extension shows each
// question as a notification (Allow once, Deny; clicking it opens the popup on the question, where Always is too) and
// sends the user's answer back (ask.answer). Only the popup and the notifications answer: pages cannot reach either
// (no externally_connectable, no web-accessible page, and popupMessages.ts takes the popup's messages only from the
// extension's own pages, never from a content script).
import type { AskNotice, TabStateView } from "@tabrelay/protocol";
import { emit } from "./connection.js";

let questions: AskNotice[] = [];
const notified = new Set<string>();
const tabStates = new Map<number, { view: TabStateView; at: number }>();
const TAB_STATES_MAX = 32;

/** The broker's list of open questions: new ones notified, answered or expired ones cleared. */
export async function showQuestions(list: readonly AskNotice[]): Promise<number> {
  questions = list.filter(isNotice);
  const open = new Set(questions.map((q) => q.id));
  for (const id of [...notified]) {
    if (open.has(id)) continue;
    notified.delete(id);
    void chrome.notifications.clear(id);
  }
  for (const q of questions) {
    if (notified.has(q.id)) continue;
    notified.add(q.id);
    void chrome.notifications.create(q.id, {
      type: "basic",
      iconUrl: chrome.runtime.getURL("icons/icon-128.png"),
      title: `May ${q.client} do this?`,
      message: q.text,
      contextMessage: `Tab ${q.tabId}: ${q.url}`.slice(0, 200),
      buttons: [{ title: "Allow once" }, { title: "Deny" }],
      requireInteraction: true,
      priority: 2,
    });
  }
  await chrome.action.setBadgeText({ text: questions.length > 0 ? "?" : "" }).catch(() => undefined);
  return questions.length;
}

/** The open questions, as the popup lists them. */
export function openQuestions(): AskNotice[] {
  const now = Date.now();
  return questions.filter((q) => q.expiresAt > now);
}

/** The user's answer, sent to the broker (the first answer anywhere wins there). */
export function answer(id: string, value: "once" | "always" | "deny", via: "notification" | "popup"): boolean {
  if (!questions.some((q) => q.id === id)) return false;
  emit({ type: "event", event: "ask.answer", params: { id, answer: value, via } });
  questions = questions.filter((q) => q.id !== id);
  notified.delete(id);
  void chrome.notifications.clear(id);
  return true;
}

chrome.notifications.onButtonClicked.addListener((id, index) => {
  if (notified.has(id)) answer(id, index === 0 ? "once" : "deny", "notification");
});

// The notification itself: the popup, as a small window, on the question (three answers there, and the tab's state).
chrome.notifications.onClicked.addListener((id) => {
  const q = questions.find((x) => x.id === id);
  if (!q) return;
  void chrome.windows.create({ url: chrome.runtime.getURL(`popup.html?tab=${q.tabId}`), type: "popup", width: 420, height: 640 });
});

/** The broker's answer to popup.opened. */
export function setTabState(view: TabStateView): void {
  tabStates.delete(view.tabId);
  tabStates.set(view.tabId, { view, at: Date.now() });
  while (tabStates.size > TAB_STATES_MAX) {
    const oldest = tabStates.keys().next().value;
    if (oldest === undefined) break;
    tabStates.delete(oldest);
  }
}

/** What the broker last said of a tab (asked for again each time the popup opens). */
export function tabState(tabId: number): TabStateView | undefined {
  return tabStates.get(tabId)?.view;
}

export async function askTabState(tabId: number): Promise<void> {
  const tab = await chrome.tabs.get(tabId).catch(() => undefined);
  if (tab) emit({ type: "event", event: "popup.opened", params: { tabId, url: tab.url ?? "" } });
}

function isNotice(value: unknown): value is AskNotice {
  if (!value || typeof value !== "object") return false;
  const q = value as Record<string, unknown>;
  return typeof q["id"] === "string" && typeof q["text"] === "string" && typeof q["client"] === "string" && typeof q["tabId"] === "number";
}

// What the broker last told this browser of its questions (browser.asks) and of tabs the popup looked at
// (browser.tabState): kept here, shown as notifications; asks.ts sends the user's answers back. Apart from asks.ts so
// that the commands the broker calls (commands.ts) need nothing that sends on the connection.
import type { AskNotice, TabStateView } from "@tabrelay/protocol";
import { questionNotification } from "./platform.js";

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
    void chrome.notifications.create(
      q.id,
      questionNotification({
        // The site first, in the title: a long label can never push it out of sight. The client is the agent's own name.
        title: `${q.host}: may the agent do this?`,
        message: q.text,
        context: `Asked by ${q.client} (its own name) · ${q.tabId >= 0 ? `tab ${q.tabId}` : "a tab it opens"}`.slice(0, 200),
      }),
    );
  }
  await chrome.action.setBadgeText({ text: questions.length > 0 ? "?" : "" }).catch(() => undefined);
  return questions.length;
}

/** The open questions, as the popup lists them. */
export function openQuestions(): AskNotice[] {
  const now = Date.now();
  return questions.filter((q) => q.expiresAt > now);
}

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

/** A question answered here: no longer listed, its notification closed. */
export function forgetQuestion(id: string): void {
  questions = questions.filter((q) => q.id !== id);
  notified.delete(id);
  void chrome.notifications.clear(id);
}

/** Whether the broker's list holds the question (and its notification is shown). */
export function isOpenQuestion(id: string): boolean {
  return questions.some((q) => q.id === id);
}

/** The question, while listed. */
export function questionOf(id: string): AskNotice | undefined {
  return questions.find((q) => q.id === id);
}

function isNotice(value: unknown): value is AskNotice {
  if (!value || typeof value !== "object") return false;
  const field = (key: string): unknown => Reflect.get(value, key);
  return typeof field("id") === "string" && typeof field("text") === "string" && typeof field("client") === "string" && typeof field("tabId") === "number";
}

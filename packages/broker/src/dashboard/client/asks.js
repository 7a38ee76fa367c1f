// @ts-check
// The questions tabrelay puts to you (policy.ask in config.yaml): a write no grant allows, on a site of the ask list,
// waits while you answer here (or with `tabrelay ask` on the broker's machine, whichever comes first). Polled every
// second while the page is open; labels, URLs and client names are the pages' and agents' own words and reach the
// DOM through pageBdi only.
import { getJson, hasEnded, post } from "./api.js";
import { byId, el, messageOf, pageBdi, setText } from "./dom.js";

/**
 * @typedef {{ id: string, text: string, action: string, keys: string | null, role: string, label: string, host: string, url: string, client: string, user: string, tabId: number, askedAt: number, expiresAt: number, always: string | null }} QuestionView
 */

const POLL_MS = 1000;
let renderedKey = "";

export async function pollAsks() {
  if (hasEnded()) return;
  try {
    const body = /** @type {{ questions: QuestionView[] }} */ (await getJson("/dashboard/api/asks"));
    render(body.questions);
  } catch {
    // The state poll says when the broker is away; the next poll tries again.
  }
  setTimeout(() => void pollAsks(), POLL_MS);
}

/** @param {QuestionView[]} questions */
function render(questions) {
  const section = byId("asks-section");
  section.hidden = questions.length === 0;
  setText(byId("asks-count"), questions.length ? "(" + questions.length + ")" : "");
  const key = JSON.stringify(questions.map((q) => q.id));
  const list = byId("asks-list");
  // Seconds left tick on every poll; the rows (and the focus within them) are kept while the questions stay the same.
  for (const q of questions) {
    const left = list.querySelector('[data-left="' + CSS.escape(q.id) + '"]');
    if (left) setText(left, secondsLeft(q));
  }
  if (key === renderedKey) return;
  renderedKey = key;
  list.replaceChildren(...questions.map(row));
}

/** @param {QuestionView} q */
function secondsLeft(q) {
  return Math.max(0, Math.round((q.expiresAt - Date.now()) / 1000)) + " s left";
}

/** @param {QuestionView} q */
function row(q) {
  const out = el("p", { className: "meta", role: "status" });
  /** @param {"once" | "always" | "deny"} answer */
  const answer = async (answer) => {
    for (const button of item.querySelectorAll("button")) button.disabled = true;
    try {
      const result = /** @type {{ grant?: string }} */ (await post("/dashboard/api/asks/answer", { id: q.id, answer }));
      setText(out, answer === "deny" ? "Denied." : answer === "once" ? "Allowed once." : "Allowed; " + (result.grant || "the grant is written") + ".");
    } catch (error) {
      setText(out, "Not answered: " + messageOf(error));
      for (const button of item.querySelectorAll("button")) button.disabled = false;
    }
  };
  const button = (/** @type {string} */ text, /** @type {"once" | "always" | "deny"} */ value, /** @type {string} */ className) =>
    el("button", { type: "button", className, "data-answer": value, "data-question": q.id }, [text]);
  const once = button("Allow once", "once", "allow");
  const always = q.always ? button("Always allow", "always", "allow") : null;
  const deny = button("Deny", "deny", "danger");
  once.addEventListener("click", () => void answer("once"));
  always?.addEventListener("click", () => void answer("always"));
  deny.addEventListener("click", () => void answer("deny"));
  const item = el("li", { className: "ask", "data-question": q.id }, [
    el("p", {}, [el("strong", { text: q.host }), ": may ", pageBdi(q.client, "client"), " ", pageBdi(q.text, "label"), "?"]),
    el("p", { className: "meta" }, [
      "Asked by the agent's client (its own name) · " + (q.tabId >= 0 ? "tab " + q.tabId : "a tab it opens") + " at ",
      pageBdi(q.url, "url"),
      q.user !== "default" ? " · for user " + q.user : null,
      " · ",
      el("span", { "data-left": q.id, text: secondsLeft(q) }),
    ]),
    q.always ? el("p", { className: "meta" }, ["Always writes ", el("code", { text: q.always }), " into config.yaml."]) : null,
    el("div", { className: "ask-actions" }, [once, always, deny]),
    out,
  ]);
  return item;
}

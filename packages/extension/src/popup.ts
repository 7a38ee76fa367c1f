import type { AskNotice, TabStateView } from "@tabrelay/protocol";

// Never inside another document's frame: a page that got the popup framed (the browsers refuse that to web pages;
// this holds should one not) could lay its own content over it and lure a click onto Always. Nothing is shown and no
// button is wired.
if (window.top !== window) {
  document.documentElement.replaceChildren();
  throw new Error("tabrelay's popup does not run inside a frame");
}

interface Status {
  state: string;
  lastError: string;
  brokerUrl: string;
  browserId: string;
  label: string;
  sharedTabs: number[];
  /** The tab the popup is about (the active one, or ?tab= when opened from a notification). */
  tab?: { tabId: number; agents: boolean; shared: boolean; state: TabStateView | null };
  questions: AskNotice[];
}

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`popup.html lacks #${id}`);
  return el as T;
};

/** The broker's dashboard for a bridge URL (ws://host:port/bridge -> http://host:port/), or the local default. */
export function dashboardUrl(bridgeUrl: string): string {
  try {
    const url = new URL(bridgeUrl);
    if (url.protocol !== "ws:" && url.protocol !== "wss:") return DEFAULT_DASHBOARD;
    return `${url.protocol === "wss:" ? "https:" : "http:"}//${url.host}/`;
  } catch {
    return DEFAULT_DASHBOARD;
  }
}

const DEFAULT_BRIDGE = "ws://127.0.0.1:9333/bridge";
const DEFAULT_DASHBOARD = "http://127.0.0.1:9333/";

/** The dashboard link follows the broker URL being typed: the code is on that broker's dashboard. */
function showWhere(): void {
  $<HTMLAnchorElement>("dashboard").href = dashboardUrl($<HTMLInputElement>("url").value.trim());
}

function render(status: Status): void {
  const box = $("state");
  box.dataset["state"] = status.state;
  box.textContent = `State: ${status.state}${status.lastError ? ` — ${status.lastError}` : ""}`;
  const url = $<HTMLInputElement>("url");
  // Not paired yet: the broker a first start runs (tabrelay start / serve on this machine).
  if (!url.value) url.value = status.brokerUrl || DEFAULT_BRIDGE;
  showWhere();
  $("browser").textContent = `This browser: ${status.label} (${status.browserId})`;
  renderTab(status);
  renderQuestions(status.questions ?? []);
}

const el = (tag: string, text?: string, className?: string): HTMLElement => {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
};

/** Who holds the tab, what the agent did there, the site's policy, and Stop. Every string reaches the DOM as text. */
function renderTab(status: Status): void {
  const tab = status.tab;
  const view = tab?.state ?? null;
  const holder = $("tab-holder");
  if (!tab) holder.textContent = "No tab.";
  else if (view?.takenBack) holder.textContent = "You took this tab back: agents' calls on it are refused.";
  else if (view?.holder) holder.textContent = `${view.holder.client} is working in this tab (since ${new Date(view.holder.since).toLocaleTimeString()}).`;
  else if (tab.agents) holder.textContent = tab.shared ? "Shared with agents; no agent holds it now." : "An agent's tab; no agent holds it now.";
  else holder.textContent = "Not an agent's tab: agents neither see nor use it.";
  $("stop").hidden = !tab || !(tab.agents || view?.holder);
  const recent = view?.recent ?? [];
  $("recent-none").hidden = !tab?.agents || recent.length > 0;
  // The list is rebuilt only when it changed: an offer being confirmed keeps its buttons while the popup polls.
  const key = JSON.stringify(recent);
  if (key !== shownRecent) {
    shownRecent = key;
    $("recent").replaceChildren(
      ...recent.map((r) => {
        const item = el(
          "li",
          `${new Date(r.time).toLocaleTimeString()} ${r.tool}${r.target ? ` ${r.target}` : ""}: ${r.decision}${r.code ? ` (${r.code})` : ""}`,
        );
        if (r.offer && tab) item.append(offerButton(tab.tabId, r.offer));
        return item;
      }),
    );
  }
  const policy = view?.policy ?? [];
  $("policy-heading").hidden = policy.length === 0;
  $("policy").replaceChildren(...policy.map((line) => el("li", line)));
}

/** A button of the popup's (type button: no form is submitted). */
const button = (text: string, className?: string): HTMLButtonElement => {
  const node = document.createElement("button");
  node.type = "button";
  node.textContent = text;
  if (className) node.className = className;
  return node;
};

let shownQuestions = "";
let shownRecent = "";

/** The grant the broker offers under a refused call: shown with its key first, written only once confirmed. */
function offerButton(tabId: number, offer: { record: number; text: string; key: string; base: string }): HTMLElement {
  const box = el("div", undefined, "offer");
  const propose = button(offer.text);
  propose.dataset["offer"] = String(offer.record);
  propose.addEventListener("click", () => {
    const save = button("Save this change");
    save.dataset["save"] = String(offer.record);
    const cancel = button("Cancel");
    cancel.addEventListener("click", () => box.replaceChildren(propose));
    save.addEventListener("click", () => {
      save.disabled = true;
      cancel.disabled = true;
      void ask({ type: "grant", tabId, record: offer.record, base: offer.base }).then((status) => {
        // The broker writes it unless config.yaml changed since the offer was made; the site's policy below says when it is in force.
        box.replaceChildren(
          el("div", `Sent: tabrelay writes ${offer.key} unless config.yaml changed since (then the offer shows again); it applies within a second.`, "muted"),
        );
        render(status);
      });
    });
    box.replaceChildren(el("div", `This writes ${offer.key} in config.yaml.`, "muted"), save, cancel);
  });
  box.append(propose);
  return box;
}

function renderQuestions(questions: AskNotice[]): void {
  $("questions").hidden = questions.length === 0;
  const key = questions.map((q) => q.id).join(",");
  if (key === shownQuestions) return;
  shownQuestions = key;
  $("question-list").replaceChildren(
    ...questions.map((q) => {
      const item = el("li", undefined, "question");
      item.dataset["question"] = q.id;
      item.append(
        el("strong", q.host),
        el("div", `May the agent ${q.text}?`),
        el("div", `Asked by ${q.client} (its own name) · ${q.tabId >= 0 ? `tab ${q.tabId}` : "a tab it opens"}: ${q.url}`, "muted"),
      );
      if (q.always) item.append(el("div", `Always writes ${q.always}`, "muted"));
      type Choice = ["once" | "always" | "deny", string, string | undefined];
      const always: Choice[] = q.always ? [["always", "Always allow", undefined]] : [];
      const buttons: Choice[] = [["once", "Allow once", undefined], ...always, ["deny", "Deny", "danger"]];
      for (const [answer, label, className] of buttons) {
        const choice = button(label, className);
        choice.dataset["answer"] = answer;
        choice.addEventListener("click", () => {
          item.querySelectorAll("button").forEach((b) => (b.disabled = true));
          void ask({ type: "answer", id: q.id, answer, ...tabField() }).then(render);
        });
        item.append(choice);
      }
      return item;
    }),
  );
}

/** The tab this popup is about: ?tab=N (opened from a notification), else the active tab of the window. */
let aboutTab: number | undefined;

function tabField(): { tabId?: number } {
  return aboutTab === undefined ? {} : { tabId: aboutTab };
}

async function ask(message: unknown): Promise<Status> {
  return await chrome.runtime.sendMessage<unknown, Status>(message);
}

async function activeTabId(): Promise<number | undefined> {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

$("pair").addEventListener("submit", (event) => {
  event.preventDefault();
  const url = $<HTMLInputElement>("url").value.trim();
  const token = $<HTMLInputElement>("code").value.trim();
  void ask({ type: "pair", url, token }).then(render);
  $<HTMLInputElement>("code").value = "";
  setTimeout(() => void ask({ type: "status" }).then(render), 1000);
});

async function shareActiveTab(type: "share" | "unshare"): Promise<void> {
  const tabId = aboutTab ?? (await activeTabId());
  if (tabId !== undefined) render(await ask({ type, tabId }));
}

$("url").addEventListener("input", showWhere);
$("share").addEventListener("click", () => void shareActiveTab("share"));
$("unshare").addEventListener("click", () => void shareActiveTab("unshare"));
$("stop").addEventListener("click", () => {
  if (aboutTab !== undefined) void ask({ type: "stop", tabId: aboutTab }).then(render);
});

/** Asks again every second while the popup is open: the broker's answer about the tab, new questions. */
async function poll(): Promise<void> {
  render(await ask({ type: "status", ...tabField() }));
  setTimeout(() => void poll(), 1000);
}

void (async () => {
  // Opened from a notification: on its tab (?tab=N), or on the questions alone (?tab=none: another browser's tab).
  const asked = new URLSearchParams(location.search).get("tab");
  const fromNotification = Number(asked);
  aboutTab = asked === "none" ? undefined : Number.isInteger(fromNotification) && fromNotification > 0 ? fromNotification : await activeTabId();
  await poll();
})();

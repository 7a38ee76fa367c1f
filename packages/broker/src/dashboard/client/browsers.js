// @ts-check
// The broker's state, polled every second: the emergency stop's state, the audit log's health, the browsers
// with their agent tabs (each tab a radio button choosing what the live view watches), and page tools (pages.js).
import { getJson, hasEnded } from "./api.js";
import { ago, byId, byIdOf, clock, el, messageOf, pageBdi, pageString, setText, titleBdi } from "./dom.js";
import { renderPages } from "./pages.js";

/**
 * @typedef {import("./api.js").AuditHealth} AuditHealth
 * @typedef {import("./api.js").Browser} Browser
 * @typedef {import("./api.js").State} State
 * @typedef {import("./api.js").Tab} Tab
 * @typedef {{ b: Browser, t: Tab }} TabRef
 */

/** @type {State | null} */
let state = null;
let stateTimer = 0;
let renderedKey = "";
/** "auto" (the agent's active tab), or the browser id and tab id of the tab the user chose. */
let watch = "auto";

/** The state last polled, null before the first answer. */
export function currentState() {
  return state;
}

export function watched() {
  return watch;
}

/** @param {string} value */
export function setWatched(value) {
  watch = value;
}

/** @param {number} delay */
export function scheduleState(delay) {
  clearTimeout(stateTimer);
  stateTimer = setTimeout(pollState, delay);
}

export async function pollState() {
  try {
    const current = /** @type {State} */ (await getJson("/dashboard/api/state"));
    state = current;
    setText(byId("link-status"), "Connected to the broker; updates every second.");
    renderState(current);
  } catch (error) {
    if (!hasEnded()) setText(byId("link-status"), "Cannot reach the broker: " + messageOf(error) + ". Retrying…");
  } finally {
    if (!hasEnded()) scheduleState(1000);
  }
}

/** @param {State} current */
function renderState(current) {
  const section = byId("stop-section");
  section.setAttribute("data-stopped", current.stopped ? "true" : "false");
  byId("resume-form").hidden = !current.stopped;
  setText(
    byId("stop-explain"),
    current.stopped
      ? "Emergency stop in effect since " +
          clock(Number(current.stoppedAt)) +
          ": every browser was disconnected and browsers that try to reconnect are turned away. Press Resume to let them connect again."
      : "Disconnects every browser at once. Until you resume, browsers that try to reconnect are turned away.",
  );

  renderAuditHealth(current.audit);
  renderConfigStatus(current.config ?? undefined);
  renderPages(current.pages);

  const browsers = current.browsers;
  // In a cluster: the browsers of every broker, each naming its broker; a broker that did not answer is named.
  const unreachable = current.unreachable ?? [];
  setText(
    byId("browser-count"),
    "(" +
      browsers.length +
      " connected" +
      (current.broker ? ", across the cluster" : "") +
      (unreachable.length ? "; not answering: broker " + unreachable.join(", ") : "") +
      ")",
  );
  const empty = byId("browsers-empty");
  empty.hidden = browsers.length > 0;
  setText(
    empty,
    current.stopped ? "No browser is connected: the emergency stop is in effect." : "No browser is connected. Pair one (see below) or run tabrelay launch.",
  );

  if (watch !== "auto" && !findTab(watch)) {
    watch = "auto";
    byIdOf("watch-auto", HTMLInputElement).checked = true;
  }
  const key = JSON.stringify([browsers, watch]);
  if (key !== renderedKey) {
    renderedKey = key;
    const box = byId("browsers");
    const focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.getAttribute("data-key") : null;
    box.replaceChildren(...browsers.map(renderBrowser));
    if (focused) {
      const again = box.querySelector('[data-key="' + CSS.escape(focused) + '"]');
      if (again instanceof HTMLElement) again.focus();
    }
  }
  for (const node of document.querySelectorAll("[data-since]")) {
    setText(node, clock(Number(node.getAttribute("data-since"))) + " (" + ago(Number(node.getAttribute("data-since"))) + ")");
  }
}

/** config.yaml as the broker last read it: a change it refused (the line and the reason), or one waiting for a restart. @param {import("./api.js").ConfigStatus | undefined} config */
function renderConfigStatus(config) {
  const refused = !!config && !config.ok;
  const waiting = !!config && config.restart.length > 0;
  byId("config-alert").hidden = !refused && !waiting;
  setText(
    byId("config-alert-text"),
    refused
      ? "The last change to " + config.path + " was not applied, and the config before it is still in force: " + config.error
      : waiting
        ? "Changes to " + config.restart.join(", ") + " in " + config.path + " apply when tabrelay is started again."
        : "",
  );
}

/** @param {AuditHealth | undefined} audit */
function renderAuditHealth(audit) {
  const failing = !!audit && audit.ok === false;
  byId("audit-alert").hidden = !failing;
  setText(
    byId("audit-alert-text"),
    failing
      ? "tabrelay records every write before it runs, and the audit log cannot be written (" +
          audit.error +
          "), so every click, fill, selection, checkbox and key press is refused and not sent to the browser. Reads go on. Free disk space in the tabrelay data folder (or fix its permissions): writes resume as soon as a record can be written."
      : "",
  );
  setText(byId("audit-alert-count"), failing ? audit.failures + " records could not be written; failing since " + clock(audit.since) + "." : "");
}

/** @param {Browser} b @param {number} index */
function renderBrowser(b, index) {
  const headingId = "browser-" + index;
  const since = el("time", { datetime: new Date(b.connectedAt).toISOString(), "data-since": b.connectedAt });
  const parts = [
    el("h3", { id: headingId, className: "browser-label" }, [pageBdi(b.label)]),
    el("p", { className: "meta" }, [
      "ID ",
      el("code", { text: b.id }),
      " · extension " + (b.extensionVersion || "?") + " · connected since ",
      since,
      ...(b.broker ? [" · on broker ", el("code", { text: b.broker })] : []),
    ]),
  ];
  if (b.tabsError) {
    parts.push(el("p", { className: "error" }, ["Could not list its tabs: " + b.tabsError.code + ": ", pageBdi(b.tabsError.message)]));
  } else if (b.tabs.length === 0) {
    parts.push(el("p", { className: "no-tabs", text: "No agent tabs are open in this browser." }));
  } else {
    const rows = b.tabs.map((t) => {
      const value = b.id + ":" + t.tabId;
      const radio = el("input", {
        type: "radio",
        name: "watch",
        value,
        "data-key": value,
        "aria-label": "Watch " + pageString(t.title || t.url || "tab " + t.tabId),
        checked: watch === value,
      });
      const flags = [t.active ? "in front" : "in the background", t.status, t.shared ? "shared by you" : "opened by an agent"];
      // The MCP client (its own name for itself) whose session holds the tab; a free tab is any agent's to take.
      const owner = t.owner
        ? el("td", { className: "tab-owner" }, [pageBdi(t.owner.client), el("span", { className: "meta", text: " since " + clock(t.owner.since) })])
        : el("td", { className: "tab-owner meta", text: "free (the next agent to use it)" });
      return el("tr", { "data-tab-id": t.tabId }, [
        el("td", {}, [radio]),
        el("td", { className: "tab-title" }, [titleBdi(t.title)]),
        el("td", {}, [el("span", { className: "url tab-url" }, [pageBdi(t.url)])]),
        owner,
        el("td", { className: "meta", text: flags.join(", ") }),
      ]);
    });
    parts.push(
      el("div", { className: "scroll" }, [
        el("table", { className: "tabs" }, [
          el("caption", { className: "visually-hidden" }, ["Agent tabs in ", pageBdi(b.label)]),
          el("thead", {}, [
            el("tr", {}, [
              el("th", { scope: "col", text: "Watch" }),
              el("th", { scope: "col", text: "Title" }),
              el("th", { scope: "col", text: "URL" }),
              el("th", { scope: "col", text: "Agent" }),
              el("th", { scope: "col", text: "State" }),
            ]),
          ]),
          el("tbody", {}, rows),
        ]),
      ]),
    );
  }
  return el("article", { className: "browser", "aria-labelledby": headingId, "data-browser-id": b.id }, parts);
}

/** @param {string} value @returns {TabRef | null} */
export function findTab(value) {
  if (!state) return null;
  for (const b of state.browsers) for (const t of b.tabs) if (b.id + ":" + t.tabId === value) return { b, t };
  return null;
}

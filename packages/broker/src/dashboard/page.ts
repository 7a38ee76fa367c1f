// The dashboard's HTML, stylesheet and script. No framework, no external resource, no inline script or
// style (the CSP forbids them): the script and the stylesheet are served from /dashboard/app.{js,css}.
// Everything that comes from pages or browsers is put in the DOM with textContent, never parsed as HTML.
import { PLAIN_LINE_PATTERNS } from "../util/pageText.js";

/** For the few server-side values in the HTML (a CSRF token, fixed messages). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function head(title: string, extra = ""): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/app.css">
${extra}</head>`;
}

export function loginPage(options: { csrf: string; error?: string }): string {
  const error = options.error ? `<p id="login-error" class="error" role="alert">${escapeHtml(options.error)}</p>\n` : "";
  const describedBy = options.error ? "token-help login-error" : "token-help";
  return `${head("Log in · tabrelay")}
<body class="login">
<main id="main">
<h1>tabrelay</h1>
<p>This dashboard shows what the agent does in your browser and lets you stop it.</p>
${error}<form method="post" action="/login">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrf)}">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" spellcheck="false" required autofocus aria-describedby="${describedBy}">
<p id="token-help" class="help">The MCP token that <code>tabrelay serve</code> printed (the <code>mcp-token</code> file in your tabrelay data folder, <code>~/.tabrelay</code> by default).</p>
<button type="submit">Log in</button>
</form>
</main>
</body>
</html>
`;
}

export function dashboardPage(options: { csrf: string; version: string }): string {
  const csrf = escapeHtml(options.csrf);
  return `${head("tabrelay dashboard", `<meta name="csrf-token" content="${csrf}">\n<script src="/dashboard/app.js" defer></script>\n`)}
<body>
<a class="skip" href="#main">Skip to the dashboard</a>
<header class="top">
<h1>tabrelay <span class="version">${escapeHtml(options.version)}</span></h1>
<p id="link-status" class="link" role="status">Connecting to the broker…</p>
<form method="post" action="/logout" class="logout">
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit">Log out</button>
</form>
</header>
<main id="main">

<section id="audit-alert" class="audit-alert" aria-labelledby="audit-alert-heading" hidden>
<h2 id="audit-alert-heading">Writes refused: the audit log cannot be written</h2>
<p id="audit-alert-text" role="alert"></p>
<p id="audit-alert-count" class="meta"></p>
</section>

<section id="stop-section" class="stop" aria-labelledby="stop-heading" data-stopped="false">
<h2 id="stop-heading">Emergency stop</h2>
<p id="stop-explain">Disconnects every browser at once. Until you resume, browsers that try to reconnect are turned away.</p>
<div class="stop-actions">
<form method="post" action="/dashboard/api/stop" id="stop-form">
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit" id="stop-button" class="danger">Stop: disconnect every browser</button>
</form>
<form method="post" action="/dashboard/api/resume" id="resume-form" hidden>
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit" id="resume-button">Resume: let browsers connect again</button>
</form>
</div>
<p id="stop-result" role="status" aria-live="polite"></p>
</section>

<section aria-labelledby="browsers-heading">
<h2 id="browsers-heading">Browsers <span id="browser-count" class="count"></span></h2>
<p id="browsers-empty">Waiting for the broker…</p>
<div id="browsers"></div>
</section>

<section id="preview" aria-labelledby="preview-heading" data-state="none">
<h2 id="preview-heading">Live view</h2>
<div class="preview-controls">
<label class="inline"><input type="radio" name="watch" value="auto" id="watch-auto" checked> Follow the agent (its active tab)</label>
<button type="button" id="preview-pause" aria-pressed="false">Pause live view</button>
</div>
<p id="preview-target" class="meta"></p>
<p id="preview-status" role="status" aria-live="polite">No agent tab to show yet.</p>
<p id="preview-time" class="meta"></p>
<img id="preview-img" alt="" hidden>
</section>

<section aria-labelledby="audit-heading">
<h2 id="audit-heading">Activity</h2>
<div class="audit-controls">
<label for="audit-filter">Show</label>
<select id="audit-filter">
<option value="">every decision</option>
<option value="allowed">allowed</option>
<option value="refused">refused</option>
<option value="failed">failed</option>
<option value="outcome_unknown">outcome unknown</option>
</select>
<span id="audit-count" class="meta"></span>
<span id="audit-link" class="meta">connecting…</span>
</div>
<p id="audit-announce" class="visually-hidden" aria-live="polite"></p>
<div class="scroll">
<table id="audit">
<caption class="visually-hidden">Tool calls, newest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Decision</th><th scope="col">Tool</th><th scope="col">Browser and tab</th><th scope="col">Origin</th><th scope="col">Target</th><th scope="col">Rule or error</th><th scope="col">Took</th></tr></thead>
<tbody id="audit-rows"></tbody>
</table>
</div>
<p id="audit-empty">No tool calls recorded yet.</p>
</section>

<section aria-labelledby="policy-heading">
<h2 id="policy-heading">Policy</h2>
<p>Configuration: <span id="config-file">…</span></p>
<h3>Reading</h3>
<ul id="read-policy" class="rules"></ul>
<h3>Writing (click, type)</h3>
<ul id="write-policy" class="rules"></ul>
</section>

<section aria-labelledby="pair-heading">
<h2 id="pair-heading">Pair a browser</h2>
<ol class="steps">
<li>Open <code>chrome://extensions</code>, turn on <em>Developer mode</em>, choose <em>Load unpacked</em> and pick the folder <code id="extension-dir">…</code></li>
<li>Open the tabrelay extension's popup and enter the broker address <code id="bridge-url">…</code></li>
<li>Enter the pairing code <code id="pairing-token">…</code> The toolbar badge shows ON when the browser is connected.</li>
</ol>
<p class="meta">Or run <code>tabrelay launch</code>: it starts Chromium with the extension already paired.</p>
</section>

</main>
</body>
</html>
`;
}

export const DASHBOARD_CSS = `
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa; --line: #d1d9e0;
  --accent: #0969da; --danger: #cf222e; --ok: #1a7f37; --warn: #9a6700; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --line: #3d444d;
    --accent: #4493f8; --danger: #f85149; --ok: #3fb950; --warn: #d29922; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 72rem; margin: 0 auto; padding: 0 1rem 3rem; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.15rem; margin: 0 0 .5rem; }
h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
section { border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin: 1rem 0; background: var(--panel); }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
a { color: var(--accent); }
button, select, input { font: inherit; }
button { padding: .4rem .9rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); cursor: pointer; }
button:hover { border-color: var(--accent); }
button:disabled { opacity: .6; cursor: progress; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.danger { background: var(--danger); border-color: var(--danger); color: #fff; font-weight: 600; }
.danger:hover { border-color: var(--fg); }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; z-index: 10; }
.visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.top { display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; max-width: 72rem; margin: 0 auto; padding: 1rem; }
.top .link { flex: 1; margin: 0; color: var(--muted); }
.top form { margin: 0; }
.version, .count, .meta { color: var(--muted); font-weight: normal; font-size: .9rem; }
.stop { border-color: var(--danger); }
.stop[data-stopped="true"] { background: color-mix(in srgb, var(--danger) 12%, var(--panel)); }
.audit-alert { border-color: var(--danger); background: color-mix(in srgb, var(--danger) 12%, var(--panel)); }
.audit-alert[hidden] { display: none; }
.stop-actions { display: flex; gap: .75rem; flex-wrap: wrap; }
.stop-actions form { margin: 0; }
.browser { border-top: 1px solid var(--line); padding-top: .5rem; margin-top: .5rem; }
.browser h3 { margin-top: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; vertical-align: top; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
td { overflow-wrap: anywhere; }
th { white-space: nowrap; }
.url { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
.error { color: var(--danger); }
.decision, .tool { font-weight: 600; white-space: nowrap; }
.decision-allowed { color: var(--ok); }
.decision-refused { color: var(--danger); }
.decision-failed { color: var(--warn); }
.decision-outcome_unknown { color: var(--warn); font-style: italic; }
.preview-controls, .audit-controls { display: flex; gap: .75rem; align-items: center; flex-wrap: wrap; margin-bottom: .5rem; }
.inline { display: inline-flex; gap: .35rem; align-items: center; }
#preview-img { display: block; max-width: min(100%, 56rem); height: auto; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
#preview-img[hidden] { display: none; }
#preview[data-state="not-visible"] #preview-status, #preview[data-state="error"] #preview-status { color: var(--warn); }
.rules li { overflow-wrap: anywhere; }
.steps li { margin: .35rem 0; }
body.login main { max-width: 28rem; margin: 4rem auto; }
body.login form { display: grid; gap: .5rem; }
body.login input[type="password"] { padding: .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
.help { color: var(--muted); font-size: .9rem; margin: 0; }
`;

// Plain browser JavaScript, served as /dashboard/app.js. Page-derived strings only ever reach the DOM
// through pageBdi (textContent in a <bdi>) or, in attributes, pageString.
export const DASHBOARD_JS = String.raw`"use strict";
(() => {
  const byId = (id) => document.getElementById(id);
  const BREAKS = new RegExp(${JSON.stringify(PLAIN_LINE_PATTERNS.breaks)}, "g");
  const INVISIBLE = new RegExp(${JSON.stringify(PLAIN_LINE_PATTERNS.invisible)}, "gu");
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute("content") || "" : "";
  const MAX_ROWS = 500;
  let state = null;
  let ended = false;

  function el(tag, props, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "className") node.className = String(value);
      else if (value === true) node.setAttribute(key, "");
      else node.setAttribute(key, String(value));
    }
    for (const child of children || []) {
      if (child === undefined || child === null || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function setText(node, text) {
    if (node && node.textContent !== text) node.textContent = text;
  }

  /** A string a page or a browser chose, as the tools show it: one line, no control that hides or reorders text. */
  function pageString(value) {
    return String(value === undefined || value === null ? "" : value).replace(BREAKS, " ").replace(INVISIBLE, "").replace(/\s+/g, " ").trim();
  }

  /** Every page string in the DOM goes through here: cleaned, and isolated so it cannot reorder the text around it. */
  function pageBdi(value, className) {
    return el("bdi", { className, text: pageString(value) });
  }

  function titleBdi(title) {
    return pageString(title) ? pageBdi(title) : "(untitled)";
  }

  /** Like setText, for a line of fixed words and pageBdi parts. */
  function setParts(node, parts) {
    const text = parts.map((part) => (typeof part === "string" ? part : part.textContent)).join("");
    if (node.textContent === text && node.childNodes.length === parts.length) return;
    node.replaceChildren(...parts);
  }

  function clock(ms) {
    return new Date(ms).toLocaleTimeString();
  }

  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min ago";
  }

  function sessionEnded() {
    if (ended) return;
    ended = true;
    setText(byId("link-status"), "Your session ended; taking you to the login page.");
    window.location.assign("/login");
  }

  async function getJson(path) {
    const res = await fetch(path, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
    if (res.status === 401) {
      sessionEnded();
      throw new Error("logged out");
    }
    const body = await res.json();
    if (!res.ok) throw new Error(body && body.error ? body.error : "HTTP " + res.status);
    return body;
  }

  async function post(path) {
    const res = await fetch(path, { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf, Accept: "application/json" } });
    if (res.status === 401) {
      sessionEnded();
      throw new Error("logged out");
    }
    const body = await res.json();
    if (!res.ok) throw new Error(body && body.error ? body.error : "HTTP " + res.status);
    return body;
  }

  // ---- browsers and tabs ----

  let stateTimer = 0;
  let renderedKey = "";
  let watch = "auto";

  function scheduleState(delay) {
    clearTimeout(stateTimer);
    stateTimer = setTimeout(pollState, delay);
  }

  async function pollState() {
    try {
      state = await getJson("/dashboard/api/state");
      setText(byId("link-status"), "Connected to the broker; updates every second.");
      renderState();
    } catch (error) {
      if (!ended) setText(byId("link-status"), "Cannot reach the broker: " + error.message + ". Retrying…");
    } finally {
      if (!ended) scheduleState(1000);
    }
  }

  function renderState() {
    const section = byId("stop-section");
    section.setAttribute("data-stopped", state.stopped ? "true" : "false");
    byId("resume-form").hidden = !state.stopped;
    setText(
      byId("stop-explain"),
      state.stopped
        ? "Emergency stop in effect since " + clock(state.stoppedAt) + ": every browser was disconnected and browsers that try to reconnect are turned away. Press Resume to let them connect again."
        : "Disconnects every browser at once. Until you resume, browsers that try to reconnect are turned away.",
    );

    renderAuditHealth(state.audit);

    const browsers = state.browsers;
    setText(byId("browser-count"), "(" + browsers.length + " connected)");
    const empty = byId("browsers-empty");
    empty.hidden = browsers.length > 0;
    setText(
      empty,
      state.stopped
        ? "No browser is connected: the emergency stop is in effect."
        : "No browser is connected. Pair one (see below) or run tabrelay launch.",
    );

    if (watch !== "auto" && !findTab(watch)) {
      watch = "auto";
      byId("watch-auto").checked = true;
    }
    const key = JSON.stringify([browsers, watch]);
    if (key !== renderedKey) {
      renderedKey = key;
      const box = byId("browsers");
      const focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.getAttribute("data-key") : null;
      box.replaceChildren(...browsers.map(renderBrowser));
      if (focused) {
        const again = box.querySelector('[data-key="' + CSS.escape(focused) + '"]');
        if (again) again.focus();
      }
    }
    for (const node of document.querySelectorAll("[data-since]")) {
      setText(node, clock(Number(node.getAttribute("data-since"))) + " (" + ago(Number(node.getAttribute("data-since"))) + ")");
    }
  }

  function renderAuditHealth(audit) {
    const failing = !!audit && audit.ok === false;
    byId("audit-alert").hidden = !failing;
    setText(
      byId("audit-alert-text"),
      failing
        ? "tabrelay records every write before it runs, and the audit log cannot be written (" + audit.error + "), so every click, fill, selection, checkbox and key press is refused and not sent to the browser. Reads go on. Free disk space in the tabrelay data folder (or fix its permissions): writes resume as soon as a record can be written."
        : "",
    );
    setText(byId("audit-alert-count"), failing ? audit.failures + " records could not be written; failing since " + clock(audit.since) + "." : "");
  }

  function renderBrowser(b, index) {
    const headingId = "browser-" + index;
    const since = el("time", { datetime: new Date(b.connectedAt).toISOString(), "data-since": b.connectedAt });
    const parts = [
      el("h3", { id: headingId, className: "browser-label" }, [pageBdi(b.label)]),
      el("p", { className: "meta" }, ["ID ", el("code", { text: b.id }), " · extension " + (b.extensionVersion || "?") + " · connected since ", since]),
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
        const flags = [t.active ? "in front" : "in the background", t.status, t.shared ? "shared by you" : "opened by the agent"];
        return el("tr", { "data-tab-id": t.tabId }, [
          el("td", {}, [radio]),
          el("td", { className: "tab-title" }, [titleBdi(t.title)]),
          el("td", {}, [el("span", { className: "url tab-url" }, [pageBdi(t.url)])]),
          el("td", { className: "meta", text: flags.join(", ") }),
        ]);
      });
      parts.push(
        el("div", { className: "scroll" }, [
          el("table", { className: "tabs" }, [
            el("caption", { className: "visually-hidden" }, ["Agent tabs in ", pageBdi(b.label)]),
            el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "Watch" }), el("th", { scope: "col", text: "Title" }), el("th", { scope: "col", text: "URL" }), el("th", { scope: "col", text: "State" })])]),
            el("tbody", {}, rows),
          ]),
        ]),
      );
    }
    return el("article", { className: "browser", "aria-labelledby": headingId, "data-browser-id": b.id }, parts);
  }

  function findTab(value) {
    if (!state) return null;
    for (const b of state.browsers) for (const t of b.tabs) if (b.id + ":" + t.tabId === value) return { b, t };
    return null;
  }

  document.addEventListener("change", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement && target.name === "watch") {
      watch = target.value;
      schedulePreview(0);
    }
  });

  // ---- live view ----

  let previewTimer = 0;
  let paused = false;
  const img = byId("preview-img");

  function schedulePreview(delay) {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(pollPreview, delay);
  }

  function previewTarget() {
    if (!state) return null;
    if (watch !== "auto") return findTab(watch);
    for (const b of state.browsers) {
      const active = b.tabs.find((t) => t.active);
      if (active) return { b, t: active };
    }
    for (const b of state.browsers) if (b.tabs.length) return { b, t: b.tabs[b.tabs.length - 1] };
    return null;
  }

  /** status and time: a string, or a list of strings and pageBdi parts. */
  function showPreview(kind, status, time) {
    byId("preview").setAttribute("data-state", kind);
    setParts(byId("preview-status"), [].concat(status));
    setParts(byId("preview-time"), [].concat(time || ""));
    if (kind !== "live") {
      img.hidden = true;
      img.removeAttribute("src");
    }
  }

  async function pollPreview() {
    try {
      if (paused) return showPreview("paused", "Live view paused.");
      if (document.hidden) return;
      const target = previewTarget();
      if (!target) {
        setText(byId("preview-target"), "");
        return showPreview("none", state && state.browsers.length ? "No agent tab to show: the agent has no tab open." : "No agent tab to show: no browser is connected.");
      }
      setParts(byId("preview-target"), ["Watching ", titleBdi(target.t.title), " — ", pageBdi(target.t.url), " (", pageBdi(target.b.label), ")"]);
      const result = await getJson("/dashboard/api/preview?browser=" + encodeURIComponent(target.b.id) + "&tab=" + encodeURIComponent(String(target.t.tabId)));
      if (result.ok) {
        img.src = "data:image/png;base64," + result.png;
        img.setAttribute("alt", "What the agent's tab shows: " + (pageString(target.t.title) || "(untitled)"));
        if (result.width) img.setAttribute("width", String(result.width));
        if (result.height) img.setAttribute("height", String(result.height));
        img.hidden = false;
        showPreview("live", ["Showing the agent's tab ", titleBdi(target.t.title), "."], ["Captured " + clock(result.capturedAt) + " from ", pageBdi(result.url)]);
      } else if (result.error.code === "tab_not_visible") {
        showPreview("not-visible", "Not visible: this tab is not the tab in front in its window, so Chrome cannot picture it. It shows here once it is in front.");
      } else {
        showPreview("error", ["No picture: " + result.error.code + ": ", pageBdi(result.error.message)]);
      }
    } catch (error) {
      if (!ended) showPreview("error", "No picture: " + error.message);
    } finally {
      if (!ended) schedulePreview(1000);
    }
  }

  byId("preview-pause").addEventListener("click", () => {
    paused = !paused;
    byId("preview-pause").setAttribute("aria-pressed", paused ? "true" : "false");
    schedulePreview(0);
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) schedulePreview(0);
  });

  // ---- audit stream ----

  const rowsBox = byId("audit-rows");
  const filter = byId("audit-filter");
  let lastAuditId = null;
  let firstBatch = true;

  function auditRow(r) {
    const where = [r.browser ? pageBdi(r.browser) : "", r.browser && r.tab !== undefined ? ", " : "", r.tab !== undefined ? "tab " + r.tab : ""].filter(Boolean);
    const outcome = [r.rule, r.code].filter(Boolean).join(" · ");
    return el("tr", { "data-decision": r.decision, "data-id": r.id }, [
      el("td", {}, [el("time", { datetime: new Date(r.time).toISOString(), text: clock(r.time) })]),
      el("td", { className: "decision decision-" + r.decision, text: r.decision.replace("_", " ") }),
      el("td", { className: "tool", text: r.tool }),
      el("td", {}, where),
      el("td", { className: "url" }, [r.origin ? pageBdi(r.origin) : ""]),
      el("td", { className: "target" }, [r.target ? pageBdi(r.target) : ""]),
      el("td", { text: outcome }),
      el("td", { text: r.durationMs + " ms" }),
    ]);
  }

  function applyFilter() {
    const wanted = filter.value;
    let shown = 0;
    for (const row of rowsBox.rows) {
      row.hidden = wanted !== "" && row.getAttribute("data-decision") !== wanted;
      if (!row.hidden) shown++;
    }
    const total = rowsBox.rows.length;
    setText(byId("audit-count"), wanted ? "showing " + shown + " of the last " + total : total ? "the last " + total : "");
    const empty = byId("audit-empty");
    empty.hidden = shown > 0;
    setText(empty, total === 0 ? "No tool calls recorded yet." : "None of the last " + total + " records is " + wanted.replace("_", " ") + ".");
  }

  function addRecords(records) {
    for (const r of records) rowsBox.prepend(auditRow(r));
    while (rowsBox.rows.length > MAX_ROWS) rowsBox.deleteRow(-1);
    applyFilter();
    const newest = records[records.length - 1];
    if (newest) lastAuditId = newest.id;
    if (!firstBatch && newest) {
      const what = newest.decision.replace("_", " ") + " " + newest.tool + (newest.target ? " on " + pageString(newest.target) : "");
      setText(byId("audit-announce"), records.length === 1 ? "New tool call: " + what : records.length + " new tool calls; latest: " + what);
    }
  }

  function startAudit() {
    const source = new EventSource("/dashboard/api/audit" + (lastAuditId !== null ? "?after=" + lastAuditId : ""));
    source.addEventListener("ready", () => {
      firstBatch = false;
      setText(byId("audit-link"), "live");
    });
    source.addEventListener("audit", (event) => {
      addRecords(JSON.parse(event.data));
    });
    source.addEventListener("expired", () => {
      source.close();
      sessionEnded();
    });
    source.addEventListener("error", () => {
      if (ended) return source.close();
      setText(byId("audit-link"), "reconnecting…");
      if (source.readyState === EventSource.CLOSED) {
        // Refused outright (logged out, broker gone): the state poll finds out which; retry meanwhile.
        setTimeout(() => {
          if (!ended) startAudit();
        }, 3000);
      }
    });
  }

  filter.addEventListener("change", applyFilter);

  // ---- emergency stop ----

  function describeStop(result) {
    const names = result.disconnected.flatMap((b, i) => (i === 0 ? [pageBdi(b.label)] : [", ", pageBdi(b.label)]));
    const count = result.disconnected.length;
    const what = count === 0 ? ["no browser was connected"] : ["disconnected " + count + (count === 1 ? " browser" : " browsers") + " (", ...names, ")"];
    return ["Emergency stop at " + clock(result.stoppedAt) + ": ", ...what, ". Browsers that try to reconnect are turned away until you press Resume."];
  }

  byId("stop-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = byId("stop-button");
    const out = byId("stop-result");
    button.disabled = true;
    setText(out, "Stopping…");
    try {
      setParts(out, describeStop(await post("/dashboard/api/stop")));
    } catch (error) {
      setText(out, "The stop failed: " + error.message + ". Close the browser yourself to be sure.");
    } finally {
      button.disabled = false;
      scheduleState(0);
    }
  });

  byId("resume-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = byId("stop-result");
    try {
      await post("/dashboard/api/resume");
      setText(out, "Resumed at " + clock(Date.now()) + ": browsers may connect again.");
    } catch (error) {
      setText(out, "Resume failed: " + error.message);
    } finally {
      scheduleState(0);
    }
  });

  // Logging out ends this session's streams too; the form's own answer takes the page to /login.
  document.querySelector("form.logout").addEventListener("submit", () => {
    ended = true;
  });

  // ---- policy and pairing ----

  async function loadConfig() {
    try {
      const c = await getJson("/dashboard/api/config");
      setText(byId("config-file"), c.configFile ? c.configFile : "built-in default (no file at " + c.configPathChecked + ")");
      const list = (id, lines) => byId(id).replaceChildren(...lines.map((line) => el("li", { text: line })));
      list("read-policy", c.readPolicy);
      list("write-policy", c.writePolicy);
      setText(byId("bridge-url"), c.bridgeUrl);
      setText(byId("pairing-token"), c.pairingToken);
      setText(byId("extension-dir"), c.extensionDir || "packages/extension/dist of your tabrelay checkout (" + (c.extensionDirError || "not found") + ")");
    } catch (error) {
      if (!ended) setText(byId("config-file"), "could not load: " + error.message);
    }
  }

  pollState();
  schedulePreview(300);
  startAudit();
  loadConfig();
})();
`;

// @ts-check
// The dashboard's script, served as /dashboard/app.js (packages/broker/src/dashboard/page.ts reads this file).
// Plain browser JavaScript, type-checked by `npm run typecheck` (tsconfig.json beside it). Page-derived strings
// only ever reach the DOM through pageBdi (textContent in a <bdi>) or, in attributes, pageString.

/**
 * What /dashboard/api/state, /preview, /audit, /stop and /config answer (packages/broker/src/dashboard/dashboard.ts).
 * @typedef {{ code: string, message: string }} WireError
 * @typedef {{ tabId: number, url: string, title: string, active: boolean, status: string, shared: boolean }} Tab
 * @typedef {{ id: string, label: string, extensionVersion?: string, connectedAt: number, tabs: Tab[], tabsError?: WireError }} Browser
 * @typedef {{ ok: true, failures: number } | { ok: false, failures: number, error: string, since: number }} AuditHealth
 * @typedef {{ stopped: boolean, stoppedAt: number | null, browsers: Browser[], audit?: AuditHealth }} State
 * @typedef {{ ok: true, png: string, width: number, height: number, url: string, capturedAt: number } | { ok: false, error: WireError }} Preview
 * @typedef {{ id: number, time: number, decision: string, tool: string, browser?: string, tab?: number, origin?: string, target?: string, rule?: string, code?: string, durationMs: number }} AuditRecord
 * @typedef {{ stoppedAt: number, disconnected: { label: string }[] }} StopResult
 * @typedef {{ configFile: string | null, configPathChecked: string, readPolicy: string[], writePolicy: string[], bridgeUrl: string, pairingToken: string, extensionDir: string | null, extensionDirError: string | null }} DashboardConfig
 * @typedef {{ b: Browser, t: Tab }} TabRef
 * @typedef {string | HTMLElement} Part A fixed string, or a pageBdi
 */

"use strict";
(() => {
  // The patterns the tools clean page strings with (util/pageText.ts): written in when the broker serves the file.
  const PATTERNS = { breaks: "$PLAIN_LINE_BREAKS", invisible: "$PLAIN_LINE_INVISIBLE" };
  /** @param {string} id */
  const byId = (id) => {
    const node = document.getElementById(id);
    if (!node) throw new Error("dashboard: no #" + id + " in the page");
    return node;
  };
  /**
   * @template {HTMLElement} T
   * @param {string} id
   * @param {{ new (): T, prototype: T }} type
   * @returns {T}
   */
  const byIdOf = (id, type) => {
    const node = byId(id);
    if (!(node instanceof type)) throw new Error("dashboard: #" + id + " is not a " + type.name);
    return node;
  };
  /** @param {unknown} body */
  const errorOf = (body) => (body && typeof body === "object" && "error" in body && body.error ? String(body.error) : undefined);
  /** @param {unknown} error */
  const messageOf = (error) => (error instanceof Error ? error.message : String(error));
  const BREAKS = new RegExp(PATTERNS.breaks, "g");
  const INVISIBLE = new RegExp(PATTERNS.invisible, "gu");
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute("content") || "" : "";
  const MAX_ROWS = 500;
  /** @type {State | null} */
  let state = null;
  let ended = false;

  /**
   * @param {string} tag
   * @param {Record<string, string | number | boolean | undefined | null>} [props]
   * @param {(Node | string | undefined | null | false)[]} [children]
   */
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

  /** @param {Element | null} node @param {string} text */
  function setText(node, text) {
    if (node && node.textContent !== text) node.textContent = text;
  }

  /** A string a page or a browser chose, as the tools show it: one line, no control that hides or reorders text. */
  /** @param {unknown} value */
  function pageString(value) {
    return String(value === undefined || value === null ? "" : value).replace(BREAKS, " ").replace(INVISIBLE, "").replace(/\s+/g, " ").trim();
  }

  /** Every page string in the DOM goes through here: cleaned, and isolated so it cannot reorder the text around it. */
  /** @param {unknown} value @param {string} [className] */
  function pageBdi(value, className) {
    return el("bdi", { className, text: pageString(value) });
  }

  /** @param {string} title @returns {Part} */
  function titleBdi(title) {
    return pageString(title) ? pageBdi(title) : "(untitled)";
  }

  /** Like setText, for a line of fixed words and pageBdi parts. */
  /** @param {HTMLElement} node @param {Part[]} parts */
  function setParts(node, parts) {
    const text = parts.map((part) => (typeof part === "string" ? part : part.textContent)).join("");
    if (node.textContent === text && node.childNodes.length === parts.length) return;
    node.replaceChildren(...parts);
  }

  /** @param {number} ms */
  function clock(ms) {
    return new Date(ms).toLocaleTimeString();
  }

  /** @param {number} ms */
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

  /**
   * The broker's JSON answer; callers give it the route's type (the broker is this page's own server).
   * @param {string} path
   * @returns {Promise<unknown>}
   */
  async function getJson(path) {
    const res = await fetch(path, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
    if (res.status === 401) {
      sessionEnded();
      throw new Error("logged out");
    }
    /** @type {unknown} */
    const body = await res.json();
    if (!res.ok) throw new Error(errorOf(body) ?? "HTTP " + res.status);
    return body;
  }

  /**
   * @param {string} path
   * @returns {Promise<unknown>}
   */
  async function post(path) {
    const res = await fetch(path, { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf, Accept: "application/json" } });
    if (res.status === 401) {
      sessionEnded();
      throw new Error("logged out");
    }
    /** @type {unknown} */
    const body = await res.json();
    if (!res.ok) throw new Error(errorOf(body) ?? "HTTP " + res.status);
    return body;
  }

  // ---- browsers and tabs ----

  let stateTimer = 0;
  let renderedKey = "";
  let watch = "auto";

  /** @param {number} delay */
  function scheduleState(delay) {
    clearTimeout(stateTimer);
    stateTimer = setTimeout(pollState, delay);
  }

  async function pollState() {
    try {
      const current = /** @type {State} */ (await getJson("/dashboard/api/state"));
      state = current;
      setText(byId("link-status"), "Connected to the broker; updates every second.");
      renderState(current);
    } catch (error) {
      if (!ended) setText(byId("link-status"), "Cannot reach the broker: " + messageOf(error) + ". Retrying…");
    } finally {
      if (!ended) scheduleState(1000);
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
        ? "Emergency stop in effect since " + clock(Number(current.stoppedAt)) + ": every browser was disconnected and browsers that try to reconnect are turned away. Press Resume to let them connect again."
        : "Disconnects every browser at once. Until you resume, browsers that try to reconnect are turned away.",
    );

    renderAuditHealth(current.audit);

    const browsers = current.browsers;
    setText(byId("browser-count"), "(" + browsers.length + " connected)");
    const empty = byId("browsers-empty");
    empty.hidden = browsers.length > 0;
    setText(
      empty,
      current.stopped
        ? "No browser is connected: the emergency stop is in effect."
        : "No browser is connected. Pair one (see below) or run tabrelay launch.",
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

  /** @param {AuditHealth | undefined} audit */
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

  /** @param {Browser} b @param {number} index */
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

  /** @param {string} value @returns {TabRef | null} */
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
  const img = byIdOf("preview-img", HTMLImageElement);

  /** @param {number} delay */
  function schedulePreview(delay) {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(pollPreview, delay);
  }

  /** @returns {TabRef | null} */
  function previewTarget() {
    if (!state) return null;
    if (watch !== "auto") return findTab(watch);
    for (const b of state.browsers) {
      const active = b.tabs.find((t) => t.active);
      if (active) return { b, t: active };
    }
    for (const b of state.browsers) {
      const last = b.tabs[b.tabs.length - 1];
      if (last) return { b, t: last };
    }
    return null;
  }

  /**
   * status and time: a string, or a list of strings and pageBdi parts.
   * @param {string} kind @param {Part | Part[]} status @param {Part | Part[]} [time]
   */
  function showPreview(kind, status, time) {
    byId("preview").setAttribute("data-state", kind);
    setParts(byId("preview-status"), /** @type {Part[]} */ ([]).concat(status));
    setParts(byId("preview-time"), /** @type {Part[]} */ ([]).concat(time || ""));
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
      const result = /** @type {Preview} */ (
        await getJson("/dashboard/api/preview?browser=" + encodeURIComponent(target.b.id) + "&tab=" + encodeURIComponent(String(target.t.tabId)))
      );
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
      if (!ended) showPreview("error", "No picture: " + messageOf(error));
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

  const rowsBox = byIdOf("audit-rows", HTMLTableSectionElement);
  const filter = byIdOf("audit-filter", HTMLSelectElement);
  /** @type {number | null} */
  let lastAuditId = null;
  let firstBatch = true;

  /** @param {AuditRecord} r */
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

  /** @param {AuditRecord[]} records */
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
      addRecords(/** @type {AuditRecord[]} */ (JSON.parse(event.data)));
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

  /** @param {StopResult} result @returns {Part[]} */
  function describeStop(result) {
    const names = result.disconnected.flatMap((b, i) => (i === 0 ? [pageBdi(b.label)] : [", ", pageBdi(b.label)]));
    const count = result.disconnected.length;
    const what = count === 0 ? ["no browser was connected"] : ["disconnected " + count + (count === 1 ? " browser" : " browsers") + " (", ...names, ")"];
    return ["Emergency stop at " + clock(result.stoppedAt) + ": ", ...what, ". Browsers that try to reconnect are turned away until you press Resume."];
  }

  byId("stop-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = byIdOf("stop-button", HTMLButtonElement);
    const out = byId("stop-result");
    button.disabled = true;
    setText(out, "Stopping…");
    try {
      setParts(out, describeStop(/** @type {StopResult} */ (await post("/dashboard/api/stop"))));
    } catch (error) {
      setText(out, "The stop failed: " + messageOf(error) + ". Close the browser yourself to be sure.");
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
      setText(out, "Resume failed: " + messageOf(error));
    } finally {
      scheduleState(0);
    }
  });

  // Logging out ends this session's streams too; the form's own answer takes the page to /login.
  document.querySelector("form.logout")?.addEventListener("submit", () => {
    ended = true;
  });

  // ---- policy and pairing ----

  async function loadConfig() {
    try {
      const c = /** @type {DashboardConfig} */ (await getJson("/dashboard/api/config"));
      setText(byId("config-file"), c.configFile ? c.configFile : "built-in default (no file at " + c.configPathChecked + ")");
      /** @param {string} id @param {string[]} lines */
      const list = (id, lines) => byId(id).replaceChildren(...lines.map((line) => el("li", { text: line })));
      list("read-policy", c.readPolicy);
      list("write-policy", c.writePolicy);
      setText(byId("bridge-url"), c.bridgeUrl);
      setText(byId("pairing-token"), c.pairingToken);
      setText(byId("extension-dir"), c.extensionDir || "packages/extension/dist of your tabrelay checkout (" + (c.extensionDirError || "not found") + ")");
    } catch (error) {
      if (!ended) setText(byId("config-file"), "could not load: " + messageOf(error));
    }
  }

  pollState();
  schedulePreview(300);
  startAudit();
  loadConfig();
})();

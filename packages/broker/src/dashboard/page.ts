// The dashboard's HTML, stylesheet and script. No framework, no external resource, no inline script or
// style (the CSP forbids them): the stylesheet is served as /dashboard/app.css and the script as ES modules, the
// entry /dashboard/app.js and the modules it imports as /dashboard/<name>.js, read from their sources in client/
// (type-checked browser code; there is nothing to build).
// Everything that comes from pages or browsers is put in the DOM with textContent, never parsed as HTML.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { assetPaths } from "../assets.js";
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
<label for="token">Dashboard token</label>
<input id="token" name="token" type="password" autocomplete="current-password" spellcheck="false" required autofocus aria-describedby="${describedBy}">
<p id="token-help" class="help">The dashboard token, not the MCP token your agents hold: <code>tabrelay dashboard-token</code> prints it on the broker's machine (it is the <code>dashboard-token</code> file in your tabrelay data folder, <code>~/.tabrelay</code> by default). On a team's broker, your own starts with <code>trd_</code>: your admin gives you one (<code>tabrelay users dashboard-token NAME</code>).</p>
<button type="submit">Log in</button>
</form>
</main>
</body>
</html>
`;
}

export function dashboardPage(options: { csrf: string; version: string }): string {
  const csrf = escapeHtml(options.csrf);
  return `${head("tabrelay dashboard", `<meta name="csrf-token" content="${csrf}">\n<script type="module" src="/dashboard/app.js"></script>\n`)}
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

<section id="config-alert" class="audit-alert" aria-labelledby="config-alert-heading" hidden>
<h2 id="config-alert-heading">config.yaml</h2>
<p id="config-alert-text" role="status"></p>
</section>

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

<section id="asks-section" class="asks" aria-labelledby="asks-heading" hidden>
<h2 id="asks-heading">Questions for you <span id="asks-count" class="count"></span></h2>
<p class="meta">An agent wants to do something no grant allows, on a site where you asked to be asked (policy.ask). Its call waits for your answer. Labels and addresses are the page's own words.</p>
<ol id="asks-list" aria-live="polite"></ol>
</section>

<section aria-labelledby="browsers-heading">
<h2 id="browsers-heading">Browsers <span id="browser-count" class="count"></span></h2>
<p id="browsers-empty">Waiting for the broker…</p>
<div id="browsers"></div>
</section>

<section id="pages-section" aria-labelledby="pages-heading" hidden>
<h2 id="pages-heading">Page tools <span id="pages-count" class="count"></span></h2>
<p class="meta">Tools that web pages on pages.allowed_origins offer agents. Their names, titles and descriptions are the pages' own words. A tool whose description or schema changed since you first saw it is held: agents neither see nor call it until you approve it again.</p>
<ul id="pages-list" class="rules"></ul>
<p id="pages-empty">No page is connected.</p>
<div class="scroll">
<table id="page-tools" hidden>
<caption class="visually-hidden">Page tools and their state</caption>
<thead><tr><th scope="col">Origin</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Agents may call it</th><th scope="col">Hash</th><th scope="col">Description (the page's)</th></tr></thead>
<tbody id="page-tool-rows"></tbody>
</table>
</div>
<p id="pages-result" role="status" aria-live="polite"></p>
</section>

<div class="live">
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

<section id="chat" aria-labelledby="chat-heading" data-state="loading">
<h2 id="chat-heading">Chat</h2>
<p id="chat-status" role="status">Checking for a model…</p>
<ol id="chat-log" class="chat-log" aria-label="The conversation: your tasks, the model's programs and their results" aria-live="polite"></ol>
<form id="chat-form" hidden>
<label for="chat-task">Task for the model</label>
<textarea id="chat-task" name="task" rows="3" maxlength="4000" required spellcheck="true"></textarea>
<div class="chat-actions">
<button type="submit" id="chat-send">Send</button>
<button type="button" id="chat-stop" class="danger" disabled>Stop</button>
<button type="button" id="chat-reset">New conversation</button>
</div>
</form>
</section>
</div>

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
<div id="policy-edit" hidden>
<h3>Entries in config.yaml</h3>
<p class="meta">What you change here is written to config.yaml as <code>tabrelay policy</code> writes it (its comments stay), after you confirm what it will write; tabrelay applies it within a second.</p>
<ul id="policy-entries" class="rules"></ul>
<p id="policy-entries-empty">The policy section of config.yaml has no entries.</p>
<h3>Change the policy</h3>
<form class="policy-form" data-action="allow-read">
<label for="allow-read-target">Allow reading a host (HOST, HOST:PORT or *.HOST), at an optional /PATH</label>
<input id="allow-read-target" name="target" required spellcheck="false" autocomplete="off">
<button type="submit">Preview</button>
</form>
<form class="policy-form" data-action="deny">
<label for="deny-host">Deny a host and its subdomains (to read and to write, whatever the grants)</label>
<input id="deny-host" name="host" required spellcheck="false" autocomplete="off">
<label for="deny-path">at paths matching (a regex; empty: every path)</label>
<input id="deny-path" name="path" spellcheck="false" autocomplete="off">
<button type="submit">Preview</button>
</form>
<form class="policy-form" data-action="grant">
<label for="grant-kind">Grant</label>
<select id="grant-kind" name="kind"><option value="click">click (click, check, select)</option><option value="type">type (fill, text keys)</option><option value="upload">upload</option><option value="keys">keys (chords, Escape, …)</option></select>
<label for="grant-host">on the host</label>
<input id="grant-host" name="host" required spellcheck="false" autocomplete="off">
<label for="grant-label">for labels matching (a regex over the whole label: ^Add to cart$)</label>
<input id="grant-label" name="label" required spellcheck="false" autocomplete="off">
<label for="grant-keys">keys matching (keys grants only: ^Control\\+Enter$)</label>
<input id="grant-keys" name="keys" spellcheck="false" autocomplete="off">
<button type="submit">Preview</button>
</form>
<form class="policy-form" data-action="page-tool">
<label for="page-tool-origin">Let agents call the page tools of the origin</label>
<input id="page-tool-origin" name="origin" required spellcheck="false" autocomplete="off">
<label for="page-tool-tools">whose names match (a regex: ^(render_chart|search)$)</label>
<input id="page-tool-tools" name="tools" required spellcheck="false" autocomplete="off">
<button type="submit">Preview</button>
</form>
<form class="policy-form" data-action="ask">
<label for="ask-list">Ask me (rather than refuse) when an agent wants to</label>
<select id="ask-list" name="list"><option value="write">write without a grant</option><option value="read">read outside the allowlist</option></select>
<label for="ask-host">on the host</label>
<input id="ask-host" name="host" required spellcheck="false" autocomplete="off">
<button type="submit">Preview</button>
</form>
<div id="policy-edit-result" aria-live="polite"></div>
</div>
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

const CSS_TYPE = "text/css; charset=utf-8";
const JS_TYPE = "text/javascript; charset=utf-8";

function client(file: string): string {
  return readFileSync(join(assetPaths.dashboardClient, file), "utf8");
}

/**
 * The files the page loads, by the path each is served at: the stylesheet, the script's entry (dashboard.js, as
 * app.js) and the modules it imports (each under its own name, so that `./dom.js` resolves in the browser as on
 * disk). dom.js gets the patterns the tools clean page strings with written in.
 */
export const CLIENT_ASSETS: ReadonlyMap<string, { type: string; body: string }> = new Map([
  ["/dashboard/app.css", { type: CSS_TYPE, body: client("dashboard.css") }],
  ["/dashboard/app.js", { type: JS_TYPE, body: client("dashboard.js") }],
  [
    "/dashboard/dom.js",
    {
      type: JS_TYPE,
      body: fillIn(client("dom.js"), {
        '"$PLAIN_LINE_BREAKS"': JSON.stringify(PLAIN_LINE_PATTERNS.breaks),
        '"$PLAIN_LINE_INVISIBLE"': JSON.stringify(PLAIN_LINE_PATTERNS.invisible),
      }),
    },
  ],
  ...["api.js", "browsers.js", "pages.js", "preview.js", "audit.js", "controls.js", "chat.js", "asks.js", "policy.js"].map(
    (file): [string, { type: string; body: string }] => [`/dashboard/${file}`, { type: JS_TYPE, body: client(file) }],
  ),
]);

function fillIn(source: string, values: Record<string, string>): string {
  let filled = source;
  for (const [placeholder, value] of Object.entries(values)) {
    const parts = filled.split(placeholder);
    if (parts.length !== 2) throw new Error(`dom.js: expected ${placeholder} once, found it ${parts.length - 1} times`);
    filled = parts.join(value);
  }
  return filled;
}

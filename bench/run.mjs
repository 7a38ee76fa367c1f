#!/usr/bin/env node
// tabrelay benchmark: prints figures side by side with @playwright/mcp and chrome-devtools-mcp, all run in the
// same process tree, on the same local pages, against the same Chromium binary. It asserts nothing: it prints a
// table (and writes bench/results/latest.json). Run from the repo root: `npm run bench` (after `npm install`).
//
// Figures (medians; N is printed with each):
//   1. round trip of a near-no-op browser call (tabrelay list_tabs; playwright-mcp browser_tabs list;
//      chrome-devtools-mcp list_pages)
//   2. reading a ~5,000-word article: characters handed to the agent, whether the last paragraph is in it,
//      and the wall time of the read
//  2b. the same characters and last-paragraph check for a heavier page: a saved news page (packages/broker/test/fixtures/
//      news-article.html: ~4,900 words of article amid nav, mega-menu, ads, related links, comments, footer)
//   3. broker-side extract() time (readable mode) over the article and the fixture pages
//   4. server-process RSS after the same workload (1 warm-up + 30 reads)
//   5. spawn to first successful read (tabrelay start --headless; the peers' cold start likewise)
//   6. snapshot of a 10,000-element page (pages/big.html): characters and estimated tokens of the default
//      snapshot result, and whether the last row's button is reachable (tabrelay: find + revision)
//   7. snapshot time of that page
//   8. click by ref (pages/click.html): time of the click call alone, and whether its result shows the page's
//      reaction
//   9. snapshot of the ~5,000-word article: characters and estimated tokens
//  10. screenshot of the article's viewport: characters of the default result (text, and base64 image data,
//      counted separately), and whether tabrelay's link serves a PNG
//  11. time of the screenshot call (visible tab; each call >= 600 ms after the previous one returned)
//  12. over CDP: navigate + snapshot of the article (tabrelay start --cdp --headless: navigate + snapshot;
//      playwright-mcp: browser_navigate + browser_snapshot; chrome-devtools-mcp: navigate_page + take_snapshot),
//      each in a fresh process, in two passes in ABBA order
//  13. memory (PSS from /proc/<pid>/smaps_rollup, summed over the server process and its process tree: the
//      browser's processes) after figure 12's workload, in the same processes
//  14. a page cannot stall the broker: p99 of one session's list_tabs (and of GET /health) while another session
//      reads pages/builds-11mb.html (~400 bytes building ~11 MB of paragraphs), probes every 50 ms; tabrelay only
//      (each peer serves one stdio client, so there is no other session to stall). `--only=stall` runs it alone.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, get as httpGet } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BIG_LAST_BUTTON, BIG_ROWS, CLICK_BUTTON } from "./pages/make-interaction.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH);
const CHROMIUM = process.env.CHROME_PATH ?? "/usr/lib/chromium/chromium";
// TABRELAY_BENCH_CLI (diagnostics): another bin to run `tabrelay serve` with (other node flags, say).
const CLI = process.env.TABRELAY_BENCH_CLI || join(ROOT, "packages/cli/bin/tabrelay.js");
const MCP_TOKEN = "bench-mcp-token-0123456789abcdef0123";
const PAIRING_TOKEN = "bench-pairing-token-0123456789abcdef";
const MARKER = "CLOSING-PARAGRAPH-MARKER";

/** 2b: the news page fixture; its article's closing paragraph ends with NEWS.marker (the same words are in the
 * page's __NEXT_DATA__ JSON, which none of the tools hands over); NEWS.check is from the headline. */
const NEWS = { path: "/fixtures/news-article.html", marker: "the river, for once, was only a river", check: "how Riverton rebuilt its water system" };

/** Flags every Chromium gets here (/work/shared/TESTING.md). */
const CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run", "--no-default-browser-check"];

const N = {
  roundTripWarmup: 20,
  roundTrip: 100,
  reads: 30, // the workload before RSS is read; the read times are its median
  extractWarmup: 5,
  extract: 20,
  coldStart: 3,
  snapshotWarmup: 2,
  snapshot: 10, // snapshots of the 10,000-element page, timed
  clickWarmup: 2,
  click: 20, // clicks, timed (each after an untimed snapshot)
  screenshotWarmup: 2,
  screenshot: 10, // screenshot calls, timed, each >= SHOT_GAP_MS after the previous one returned
  cdpPasses: 2, // 12-13: fresh processes per tool, in ABBA order (tabrelay, playwright, devtools, then reversed)
  cdpWarmup: 2, // navigate+snapshot rounds per pass, untimed (the peers' first one starts their browser)
  cdpRounds: 20, // navigate+snapshot rounds per pass, timed; then the memory is read
  memorySamples: 5, // PSS readings per pass after the workload, MEMORY_GAP_MS apart
};

/** 13: the memory is read this long after the workload's last call returned, then every MEMORY_GAP_MS. */
const MEMORY_SETTLE_MS = 500;
const MEMORY_GAP_MS = 200;

/** Chrome allows two captureVisibleTab calls a second (the extension spaces them 510 ms apart): wait this long
 * after each screenshot call returns before the next, so the capture is timed and not the quota wait. */
const SHOT_GAP_MS = 600;

// ---------------------------------------------------------------------------------------------------------------
// Process and temp-dir bookkeeping: everything started here is stopped at the end, also on failure or Ctrl-C.

const cleanups = [];
const tempDirs = [];
const startedPids = new Set();

function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `tabrelay-bench-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** All descendants of pid (children, grandchildren, ...), from /proc. */
function descendants(pid) {
  const children = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  const out = [];
  const queue = [pid];
  while (queue.length) {
    for (const child of children.get(queue.shift()) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/** SIGKILLs the given pids that still run (each one by its id). */
function killPids(pids) {
  for (const pid of pids) {
    if (!alive(pid)) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Remembers a launched browser until it has exited. */
function track(browser) {
  const pid = browser.process.pid;
  startedPids.add(pid);
  void browser.exited.then(() => startedPids.delete(pid));
}

async function waitExit(pid, ms) {
  const deadline = Date.now() + ms;
  while (alive(pid) && Date.now() < deadline) await sleep(25);
  return !alive(pid);
}

/** SIGTERM, wait, then SIGKILL the process and whatever it started that is still there. */
async function stopTree(pid, graceMs = 5000) {
  if (!pid || !alive(pid)) return;
  const tree = descendants(pid);
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    // gone
  }
  await waitExit(pid, graceMs);
  await sleep(100);
  killPids([pid, ...tree, ...descendants(pid)]);
}

async function runCleanups() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 15_000, "cleanup");
    } catch (error) {
      process.stderr.write(`bench: cleanup failed: ${message(error)}\n`);
    }
  }
  // Last resort: anything started here (and its children) that has not been seen to exit.
  for (const pid of startedPids) if (alive(pid)) killPids([...descendants(pid), pid]);
  startedPids.clear();
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}, stopping everything it started\n`);
    void runCleanups().finally(() => process.exit(130));
  });
}
process.on("exit", () => {
  for (const pid of startedPids) {
    if (!alive(pid)) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Small helpers.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const message = (error) => (error instanceof Error ? error.message : String(error));
const log = (line) => process.stderr.write(`bench: ${line}\n`);

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

function median(values) {
  if (!values.length) return undefined;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function quantile(values, q) {
  if (!values.length) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function stats(values) {
  return { n: values.length, median: round(median(values)), p90: round(quantile(values, 0.9)), min: round(Math.min(...values)), max: round(Math.max(...values)) };
}

function round(x, digits = 2) {
  if (x === undefined || !Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

function textOf(result) {
  const content = Array.isArray(result?.content) ? result.content : [];
  return content.map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
}

/** Calls a tool, returns its text; throws on an MCP error result. */
async function callText(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  if (result.isError) throw new Error(`${name} failed: ${text.slice(0, 300)}`);
  return text;
}

/** Calls a tool, returns the whole result; throws on an MCP error result. */
async function callResult(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${textOf(result).slice(0, 300)}`);
  return result;
}

/** Where a process's resident memory is (MiB): anonymous (heaps, stacks), the node binary's own pages, other files. */
function rssBreakdown(pid) {
  try {
    const parts = { anon: 0, nodeBinary: 0, otherFiles: 0 };
    let name = "";
    for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
      const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (mapping) name = mapping[1] ?? "";
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (!rss) continue;
      const kb = Number(rss[1]);
      if (name === "" || name.startsWith("[")) parts.anon += kb;
      else if (name === process.execPath || name.endsWith("/node")) parts.nodeBinary += kb;
      else parts.otherFiles += kb;
    }
    return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, round(v / 1024, 1)]));
  } catch (error) {
    return { error: `cannot read /proc/${pid}/smaps: ${message(error)}` };
  }
}

function procStatus(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1]);
    return { rssMiB: round(kb("VmRSS") / 1024, 1), peakRssMiB: round(kb("VmHWM") / 1024, 1) };
  } catch (error) {
    return { error: `cannot read /proc/${pid}/status: ${message(error)}` };
  }
}

/** Keeps the last lines a child wrote on a stream (for error reports); always drains it. */
function tail(stream, keep = 40) {
  const lines = [];
  stream?.setEncoding?.("utf8");
  stream?.on("data", (chunk) => {
    lines.push(...String(chunk).split("\n").filter(Boolean));
    if (lines.length > keep) lines.splice(0, lines.length - keep);
  });
  return () => lines.join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Setup: the bench's own npm project, the build, the local site.

function ensureInstalled() {
  const need = ["@playwright/mcp/package.json", "chrome-devtools-mcp/package.json", "@modelcontextprotocol/sdk/package.json"];
  if (need.every((p) => existsSync(join(BENCH, "node_modules", p)))) return;
  log("installing the peers (npm install --prefix bench) ...");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["install", "--prefix", BENCH, "--no-audit", "--no-fund"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`npm install --prefix bench failed (exit ${r.status})`);
}

function ensureBuilt() {
  const needed = [join(ROOT, "packages/broker/dist/index.js"), join(ROOT, "packages/cli/dist/main.js"), join(ROOT, "packages/extension/dist/manifest.json")];
  if (needed.every(existsSync)) return;
  log("tabrelay is not built; running npm run build ...");
  const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error("npm run build failed");
}

function pkgVersion(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8")).version;
  } catch {
    return undefined;
  }
}

async function startSite() {
  const pages = join(BENCH, "pages");
  const files = new Map([["/article", join(pages, "article.html")]]);
  // The saved pages of the extraction tests, served as they are (one copy in the repo).
  const fixtures = join(ROOT, "packages/broker/test/fixtures");
  for (const name of readdirSync(fixtures)) if (name.endsWith(".html")) files.set(`/fixtures/${name}`, join(fixtures, name));
  // The interaction pages are served too, but are not part of the extract() figure (files).
  const interactionPages = new Map([
    ["/big", join(pages, "big.html")],
    ["/click", join(pages, "click.html")],
    ["/builds-11mb", join(pages, "builds-11mb.html")],
  ]);
  const bodies = new Map([...files, ...interactionPages].map(([path, file]) => [path, readFileSync(file)]));
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    const body = bodies.get(path);
    if (!body) {
      res.writeHead(404, { "Content-Type": "text/plain", "Cache-Control": "no-store" });
      res.end("not found");
      return;
    }
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(() => r()));
  });
  return { origin, files };
}

/**
 * Reads allowed on the local site; the one write the bench makes, clicking the counter button, granted.
 * `screenshots` turns the screenshot tool on (it is off by default).
 */
function allowYaml({ screenshots = false } = {}) {
  return [
    "policy:",
    "  read:",
    "    allow:",
    '      "127.0.0.1": [".*"]',
    "  write:",
    "    click:",
    `      "127.0.0.1": { label: "^${CLICK_BUTTON}$" }`,
    ...(screenshots ? ["screenshots:", "  enabled: true"] : []),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the article: a "read" is what an agent needs to get the page's text.

function readStats(samples) {
  return samples.length ? stats(samples) : undefined;
}

/** tabrelay: one read_url call (default settings: the first max_chars characters). */
async function tabrelayRead(client, url) {
  return callText(client, "read_url", { url });
}

/** tabrelay: the whole article, following the truncation marker's offset (served from the broker's cache). */
async function tabrelayReadAll(client, url) {
  const texts = [await callText(client, "read_url", { url })];
  for (let i = 0; i < 20; i++) {
    const next = texts.at(-1).match(/offset=(\d+)/);
    if (!next) break;
    texts.push(await callText(client, "read_url", { url, offset: Number(next[1]) }));
  }
  return texts;
}

// ---------------------------------------------------------------------------------------------------------------
// 1 + 3: in-process broker (as test/harness.ts does it) for the bridge round trip; extract() timings.

async function benchInProcess(lib, site) {
  const { Broker, loadConfig, prepareExtension, launchChromium, silentLogger } = lib.broker;
  const dataDir = tempDir("inproc");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN } });
  const broker = new Broker({ config, log: silentLogger });
  const { port, url } = await broker.listen();
  cleanups.push(() => broker.close());
  const profileDir = tempDir("inproc-profile");
  const extensionDir = prepareExtension(profileDir, `ws://127.0.0.1:${port}/bridge`, PAIRING_TOKEN, "bench chromium");
  const browser = launchChromium({ chromiumPath: CHROMIUM, profileDir, extensionDir, headless: true });
  track(browser);
  cleanups.push(() => browser.kill());
  const deadline = Date.now() + 30_000;
  while (broker.registry.list().length === 0) {
    if (Date.now() > deadline) throw new Error("the extension did not connect to the in-process broker within 30 s");
    await sleep(20);
  }
  const client = await connectHttp(lib, url, MCP_TOKEN);
  cleanups.push(() => client.close());
  for (let i = 0; i < N.roundTripWarmup; i++) await callText(client, "list_tabs");
  const samples = [];
  for (let i = 0; i < N.roundTrip; i++) samples.push((await timed(() => callText(client, "list_tabs"))).ms);
  // The whole bridge, once more, on an article read (cheap sanity check that this browser reads pages).
  const check = await tabrelayRead(client, `${site.origin}/article`);
  if (!check.includes("Beneath the streets")) throw new Error(`in-process read_url returned something unexpected: ${check.slice(0, 200)}`);
  return { roundTrip: stats(samples) };
}

async function benchExtract(lib, site) {
  const { extract } = lib.extract;
  const pages = [...site.files].map(([path, file]) => ({ path, url: `${site.origin}${path}`, html: readFileSync(file, "utf8") }));
  const perPage = {};
  const pooled = [];
  for (const page of pages) {
    for (let i = 0; i < N.extractWarmup; i++) extract({ html: page.html, url: page.url, mode: "readable" });
    const samples = [];
    let chars = 0;
    for (let i = 0; i < N.extract; i++) {
      const t0 = performance.now();
      const result = extract({ html: page.html, url: page.url, mode: "readable" });
      samples.push(performance.now() - t0);
      chars = result.markdown.length;
    }
    pooled.push(...samples);
    perPage[page.path] = { ...stats(samples), htmlChars: page.html.length, markdownChars: chars };
  }
  return { pooled: stats(pooled), perPage, worstPageMedian: round(Math.max(...Object.values(perPage).map((p) => p.median))), articleTextChars: await articleTextChars(pages) };
}

/**
 * The generated article's words alone: the text of its headline, paragraphs, headings, caption and quote inside
 * <article>, blank-line separated. No reader that keeps every word can hand over fewer characters.
 */
async function articleTextChars(pages) {
  const { parseHTML } = await import("linkedom");
  const page = pages.find((p) => p.path === "/article");
  if (!page) return undefined;
  const { document } = parseHTML(page.html);
  const blocks = [...document.querySelectorAll("article :is(h1, h2, p, figcaption)")].map((el) => el.textContent.replace(/\s+/g, " ").trim());
  return blocks.filter(Boolean).join("\n\n").length;
}

async function connectHttp(lib, baseUrl, token) {
  const { Client, StreamableHTTPClientTransport } = lib.sdk;
  const client = new Client({ name: "tabrelay-bench", version: "0.0.0" });
  const endpoint = baseUrl.endsWith("/mcp") ? baseUrl : `${baseUrl}/mcp`;
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

// ---------------------------------------------------------------------------------------------------------------
// 2 + 4 (+ 1 in its own process): `tabrelay serve` as a child process, Chromium with the extension, the workload.

function spawnTabrelay(args, env, dataDir, chromiumExtra = []) {
  // Run the bin as a user's `npx tabrelay` does: through its shebang, with the flags it sets there.
  const child = spawn(CLI, [...args, "--port", "0", "--data-dir", dataDir, ...(chromiumExtra.length ? ["--", ...chromiumExtra] : [])], {
    cwd: ROOT,
    env: Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined)),
    stdio: ["ignore", "pipe", "pipe"],
  });
  startedPids.add(child.pid);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  void exited.then(() => startedPids.delete(child.pid));
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  child.stdout.resume();
  const urlPromise = new Promise((resolve, reject) => {
    const onData = () => {
      const m = stderr.match(/MCP endpoint:\s+(http:\/\/\S+\/mcp)/);
      const token = stderr.match(/"Authorization":\s*"Bearer ([^"]+)"/);
      if (m && token) {
        child.stderr.off("data", onData);
        resolve({ mcpUrl: m[1], token: token[1] });
      }
    };
    child.stderr.on("data", onData);
    void exited.then(({ code, signal }) => reject(new Error(`tabrelay ${args[0]} exited (${code ?? signal}) before printing its MCP endpoint:\n${stderr.slice(-2000)}`)));
  });
  urlPromise.catch(() => {}); // observed by callers; no unhandled rejection if it loses a race
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const tree = descendants(child.pid);
    child.kill("SIGTERM");
    const done = await Promise.race([exited.then(() => true), sleep(8000).then(() => false)]);
    if (!done) child.kill("SIGKILL");
    await sleep(100);
    killPids(tree); // a browser the process started, if it outlived it
  };
  return { child, exited, urlPromise, stop, stderr: () => stderr };
}

async function benchTabrelayServe(lib, site) {
  const { prepareExtension, launchChromium } = lib.broker;
  const dataDir = tempDir("serve");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml({ screenshots: true })); // 10: the screenshot figure
  const server = spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir);
  cleanups.push(server.stop);
  const { mcpUrl } = await withTimeout(server.urlPromise, 15_000, "tabrelay serve start-up");
  const rssSeries = { listening: procStatus(server.child.pid).rssMiB };
  const port = Number(new URL(mcpUrl).port);
  const profileDir = tempDir("serve-profile");
  const extensionDir = prepareExtension(profileDir, `ws://127.0.0.1:${port}/bridge`, PAIRING_TOKEN, "bench chromium");
  const browser = launchChromium({ chromiumPath: CHROMIUM, profileDir, extensionDir, headless: true });
  track(browser);
  cleanups.push(() => browser.kill());
  const client = await connectHttp(lib, mcpUrl, MCP_TOKEN);
  cleanups.push(() => client.close());
  const toolsListChars = JSON.stringify((await client.listTools()).tools).length;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await client.callTool({ name: "list_tabs", arguments: {} });
    if (!result.isError) break;
    if (Date.now() > deadline) throw new Error(`the extension did not connect to tabrelay serve: ${textOf(result)}`);
    await sleep(50);
  }
  const articleUrl = `${site.origin}/article`;
  rssSeries.browserConnected = procStatus(server.child.pid).rssMiB;

  // Round trip, broker in its own process (like the peers).
  for (let i = 0; i < N.roundTripWarmup; i++) await callText(client, "list_tabs");
  const rt = [];
  for (let i = 0; i < N.roundTrip; i++) rt.push((await timed(() => callText(client, "list_tabs"))).ms);

  // What one read hands the agent, and what the whole article costs.
  const first = await tabrelayRead(client, articleUrl); // also the warm-up read
  const all = await tabrelayReadAll(client, articleUrl);
  const allText = all.join("\n");

  // The workload: N.reads read_url calls, timed; then the broker's RSS.
  const reads = [];
  for (let i = 0; i < N.reads; i++) {
    const { ms, value } = await timed(() => tabrelayRead(client, articleUrl));
    if (!value.includes("Beneath the streets")) throw new Error("read_url returned something unexpected");
    reads.push(ms);
    if ((i + 1) % 10 === 0) rssSeries[`read${i + 1}`] = procStatus(server.child.pid).rssMiB;
  }
  const rss = { ...procStatus(server.child.pid), series: rssSeries, breakdown: rssBreakdown(server.child.pid) };
  // Diagnostics: TABRELAY_BENCH_DIAG=command runs `command <pid>` here, right after the RSS figure is read (a look at
  // /proc/<pid>/smaps, a signal for a heap snapshot, ...), TABRELAY_BENCH_DIAG_IDLE after the idle reading below;
  // their output goes to the bench's stderr. TABRELAY_BENCH_RSS_ONLY=1 (with --only=tabrelay) stops after the idle reading.
  if (process.env.TABRELAY_BENCH_DIAG) execFileSync(process.env.TABRELAY_BENCH_DIAG, [String(server.child.pid)], { stdio: ["ignore", 2, 2] });
  // And once idle: the broker ends an extraction worker 5 s after its last job.
  await sleep(6_500);
  rssSeries.idle6s = procStatus(server.child.pid).rssMiB;
  if (process.env.TABRELAY_BENCH_DIAG_IDLE) execFileSync(process.env.TABRELAY_BENCH_DIAG_IDLE, [String(server.child.pid)], { stdio: ["ignore", 2, 2] });
  if (process.env.TABRELAY_BENCH_RSS_ONLY) return { roundTrip: stats(rt), read: { time: readStats(reads) }, rss: { ...rss, pid: server.child.pid } };

  // 2b: the news page, after the RSS figure (which stays the article workload's): every call to its end.
  let news;
  try {
    const texts = await withTimeout(tabrelayReadAll(client, `${site.origin}${NEWS.path}`), 60_000, "tabrelay news page read");
    const text = texts.join("\n");
    if (!text.includes(NEWS.check)) throw new Error(`read_url ${NEWS.path} returned something unexpected: ${texts[0].slice(0, 300)}`);
    news = {
      firstCallChars: texts[0].length,
      firstCallHasMarker: texts[0].includes(NEWS.marker),
      wholeArticleCalls: texts.length,
      wholeArticleChars: text.length,
      wholeArticleHasMarker: text.includes(NEWS.marker),
    };
  } catch (error) {
    news = { error: message(error) };
  }

  // 6-9: snapshot and click, after the RSS figure (which stays the read workload's).
  let interaction;
  try {
    interaction = await withTimeout(tabrelayInteraction(client, site), 180_000, "tabrelay snapshot/click figures");
    interaction.rssAfter = procStatus(server.child.pid).rssMiB;
  } catch (error) {
    interaction = { error: message(error) };
  }
  // 10: screenshot, after the rest.
  let screenshot;
  try {
    screenshot = await withTimeout(tabrelayScreenshot(client, site), 120_000, "tabrelay screenshot figure");
  } catch (error) {
    screenshot = { error: message(error) };
  }
  return {
    roundTrip: stats(rt),
    read: {
      calls: `read_url (default max_chars)`,
      firstCallChars: first.length,
      firstCallHasMarker: first.includes(MARKER),
      wholeArticleCalls: all.length,
      wholeArticleChars: allText.length,
      wholeArticleHasMarker: allText.includes(MARKER),
      time: readStats(reads),
    },
    news,
    rss: { ...rss, pid: server.child.pid, after: `${N.reads + 1 + all.length} read_url calls` },
    toolsListChars,
    interaction,
    screenshot,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 6-9: snapshots and a click by ref. Shared by tabrelay and the peers: what a snapshot hands the agent, its time,
// and a click whose result should show what the page did.

const estTokens = (chars) => Math.round(chars / 4);

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The ref of `- role "name" ... [ref=X]` (tabrelay and playwright-mcp snapshots). */
function refOf(text, role, name) {
  return new RegExp(`- ${role} "${escapeRegExp(name)}"[^\\n]*?\\[ref=([^\\]\\s]+)\\]`).exec(text)?.[1];
}

/** The uid of `uid=X role "name"` (chrome-devtools-mcp snapshots). */
function uidOf(text, role, name) {
  return new RegExp(`uid=(\\S+) ${role} "${escapeRegExp(name)}"`).exec(text)?.[1];
}

/** Times `snapshot` N times (after warm-ups); returns the stats and the sizes of the timed results. */
async function timeSnapshots(take) {
  for (let i = 0; i < N.snapshotWarmup; i++) await take();
  const samples = [];
  const sizes = [];
  for (let i = 0; i < N.snapshot; i++) {
    const { ms, value } = await timed(take);
    samples.push(ms);
    sizes.push(value.length);
  }
  return { ...stats(samples), resultChars: { min: Math.min(...sizes), max: Math.max(...sizes) } };
}

/**
 * Clicks the counter button N times (after warm-ups). Before each click an untimed snapshot yields the ref; only
 * the click call is timed. `reacted(text, count)` says whether a click's result shows what the page did.
 */
async function timeClicks({ snapshot, refIn, click, reacted }) {
  const samples = [];
  let reactions = 0;
  let sample = "";
  const total = N.clickWarmup + N.click;
  for (let i = 0; i < total; i++) {
    const snap = await snapshot();
    const ref = refIn(snap);
    if (!ref) throw new Error(`no ref for button "${CLICK_BUTTON}" in the snapshot:\n${snap.slice(0, 600)}`);
    const { ms, value } = await timed(() => click(ref, snap));
    if (i < N.clickWarmup) continue;
    samples.push(ms);
    if (reacted(value, i + 1)) reactions += 1;
    sample = value;
  }
  return { time: stats(samples), reactions, clicks: total, sampleResult: sample.slice(0, 600) };
}

/** tabrelay: open_tab each page, snapshot it, click by ref; the counter is read back with read_page. */
async function tabrelayInteraction(client, site) {
  const out = {};
  const opened = [];
  const openTab = async (path) => {
    const text = await callText(client, "open_tab", { url: `${site.origin}${path}` });
    const tab = Number(/Opened tab (\d+)/.exec(text)?.[1]);
    if (!Number.isInteger(tab)) throw new Error(`open_tab ${path} answered: ${text.slice(0, 300)}`);
    opened.push(tab);
    return tab;
  };
  try {
    // 6 + 7: the 10,000-element page.
    const big = await openTab("/big");
    const first = await callText(client, "snapshot", { tab: big });
    const revision = /revision: (\S+)/.exec(first)?.[1];
    const paged = /Lines (\d+)-(\d+) of (\d+)/.exec(first);
    const found = await callText(client, "snapshot", { tab: big, revision, find: BIG_LAST_BUTTON });
    const lastRef = refOf(found, "button", BIG_LAST_BUTTON);
    out.big = {
      chars: first.length,
      tokens: estTokens(first.length),
      linesShown: paged ? Number(paged[2]) - Number(paged[1]) + 1 : first.split("\n").length,
      linesTotal: paged ? Number(paged[3]) : undefined,
      lastRowInFirst: first.includes(`"${BIG_LAST_BUTTON}"`),
      lastRowFound: Boolean(lastRef),
      lastRowRef: lastRef,
      findChars: found.length,
      time: await timeSnapshots(() => callText(client, "snapshot", { tab: big })),
    };
    // The same 300 lines served from the broker's copy of one revision: no page walk, so the difference to the
    // figure above is the walk in the page and the transfer of its result to the broker.
    const latest = /revision: (\S+)/.exec(await callText(client, "snapshot", { tab: big }))?.[1];
    out.big.cachedTime = await timeSnapshots(() => callText(client, "snapshot", { tab: big, revision: latest }));

    // 9: the article.
    const article = await openTab("/article");
    const articleSnap = await callText(client, "snapshot", { tab: article });
    out.article = { chars: articleSnap.length, tokens: estTokens(articleSnap.length), paged: /Lines \d+-\d+ of \d+/.test(articleSnap) };

    // 8: click by ref.
    const counter = await openTab("/click");
    out.click = await timeClicks({
      snapshot: () => callText(client, "snapshot", { tab: counter }),
      refIn: (snap) => refOf(snap, "button", CLICK_BUTTON),
      click: (ref, snap) => callText(client, "click", { tab: counter, ref, revision: /revision: (\S+)/.exec(snap)?.[1] }),
      reacted: (text) => text.includes("the page changed"),
    });
    const page = await callText(client, "read_page", { tab: counter, mode: "full" });
    out.click.counterAfter = Number(/Clicked (\d+) times/.exec(page)?.[1]);
  } finally {
    for (const tab of opened) await client.callTool({ name: "close_tab", arguments: { tab } }).catch(() => {});
  }
  return out;
}

/** A peer: navigate to each page, snapshot it, click by ref/uid; the counter is read back from a snapshot. */
async function peerInteraction(client, spec, site) {
  const out = {};
  // 6 + 7: the 10,000-element page.
  await spec.navigate(client, `${site.origin}/big`);
  const first = await spec.snapshot(client);
  out.big = {
    chars: first.length,
    tokens: estTokens(first.length),
    lastRowInFirst: Boolean(spec.refIn(first, "button", BIG_LAST_BUTTON)),
    time: await timeSnapshots(() => spec.snapshot(client)),
  };
  out.big.lastRowFound = out.big.lastRowInFirst;

  // 9: the article (the snapshot call alone is counted, not the navigation).
  await spec.navigate(client, `${site.origin}/article`);
  const articleSnap = await spec.snapshot(client);
  out.article = { chars: articleSnap.length, tokens: estTokens(articleSnap.length) };

  // 8: click by ref.
  await spec.navigate(client, `${site.origin}/click`);
  out.click = await timeClicks({
    snapshot: () => spec.snapshot(client),
    refIn: (snap) => spec.refIn(snap, "button", CLICK_BUTTON),
    click: (ref) => spec.click(client, ref),
    reacted: (text, count) => text.includes(`Clicked ${count} times`),
  });
  out.click.counterAfter = Number(/Clicked (\d+) times/.exec(await spec.snapshot(client))?.[1]);
  out.click.resultLinksSnapshotFile = /\[Snapshot\]\([^)]*\.yml\)/.test(out.click.sampleResult);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// 10: screenshot of the article's viewport. Size of the default result (text, and base64 image data, apart) and the
// time of the screenshot call, each timed call SHOT_GAP_MS after the previous one returned.

/** Width and height from a PNG's IHDR, or undefined if the bytes are not a PNG. */
function pngDims(bytes) {
  if (bytes.length < 24 || bytes.subarray(0, 8).toString("hex") !== "89504e470d0a1a0a") return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** What a tool result hands the agent: characters of text content, and of base64 data of image content, apart. */
function resultSizes(result) {
  const content = Array.isArray(result?.content) ? result.content : [];
  const out = { textChars: 0, imageChars: 0, otherChars: 0, images: [] };
  for (const c of content) {
    if (c.type === "text") out.textChars += (c.text ?? "").length;
    else if (c.type === "image") {
      out.imageChars += (c.data ?? "").length;
      out.images.push({ mimeType: c.mimeType, ...(pngDims(Buffer.from(c.data ?? "", "base64")) ?? {}) });
    } else out.otherChars += JSON.stringify(c).length;
  }
  return out;
}

/** Times `shoot` N.screenshot times after warm-ups, waiting SHOT_GAP_MS after each call; checks each result. */
async function timeScreenshots(shoot, check) {
  const samples = [];
  for (let i = 0; i < N.screenshotWarmup + N.screenshot; i++) {
    const { ms, value } = await timed(shoot);
    check(value);
    if (i >= N.screenshotWarmup) samples.push(ms);
    await sleep(SHOT_GAP_MS);
  }
  return stats(samples);
}

/** tabrelay: open the article in a visible tab, one default screenshot (size, link fetched), then the timed calls. */
async function tabrelayScreenshot(client, site) {
  const opened = await callText(client, "open_tab", { url: `${site.origin}/article`, active: true });
  const tab = Number(/Opened tab (\d+)/.exec(opened)?.[1]);
  if (!Number.isInteger(tab)) throw new Error(`open_tab /article answered: ${opened.slice(0, 300)}`);
  try {
    await sleep(SHOT_GAP_MS);
    const first = await callResult(client, "screenshot", { tab });
    const text = textOf(first);
    const linkOf = (t) => /(https?:\/\/\S+\/shots\/\S+)/.exec(t)?.[1];
    const link = linkOf(text);
    const out = { ...resultSizes(first), sample: text, reported: /(\d+)x(\d+) PNG/.exec(text)?.slice(1, 3).map(Number) };
    if (link) {
      const response = await fetch(link);
      const bytes = Buffer.from(await response.arrayBuffer());
      out.link = { status: response.status, contentType: response.headers.get("content-type"), bytes: bytes.length, png: pngDims(bytes) };
    } else out.link = { error: "no link in the result" };
    await sleep(SHOT_GAP_MS);
    out.time = await timeScreenshots(
      () => callResult(client, "screenshot", { tab }),
      (r) => {
        if (!linkOf(textOf(r))) throw new Error(`screenshot returned no link: ${textOf(r).slice(0, 300)}`);
      },
    );
    return out;
  } finally {
    await client.callTool({ name: "close_tab", arguments: { tab } }).catch(() => {});
  }
}

/** A peer: navigate to the article, one default screenshot (size), then the timed calls. */
async function peerScreenshot(client, spec, site) {
  await spec.navigate(client, `${site.origin}/article`);
  let ownWindow;
  if (spec.resizeForScreenshot) {
    await sleep(SHOT_GAP_MS);
    ownWindow = resultSizes(await spec.screenshot(client));
    await spec.resizeForScreenshot(client);
  }
  await sleep(SHOT_GAP_MS);
  const first = await spec.screenshot(client);
  const out = { ...resultSizes(first), tool: spec.screenshotTool, sample: textOf(first).slice(0, 600), ...(ownWindow ? { ownWindow } : {}) };
  await sleep(SHOT_GAP_MS);
  out.time = await timeScreenshots(
    () => spec.screenshot(client),
    (r) => {
      const s = resultSizes(r);
      if (!s.imageChars && !/\.(png|jpe?g|webp)\b/.test(textOf(r))) throw new Error(`${spec.screenshotTool} returned neither an image nor a file: ${textOf(r).slice(0, 300)}`);
    },
  );
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// 12-13: over CDP. Each tool in a fresh process: navigate + snapshot of the article, timed together, then the
// memory of the server process and its process tree (the browser) after that workload.

/** A process's memory from /proc/<pid>/smaps_rollup, in KiB (Rss, Pss, Pss_Anon, ...), or undefined. */
function smapsRollup(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const out = {};
    for (const m of text.matchAll(/^(\w+):\s+(\d+) kB/gm)) out[m[1]] = Number(m[2]);
    return out.Pss === undefined ? undefined : out;
  } catch {
    return undefined; // gone meanwhile, or a kernel without smaps_rollup
  }
}

/** The executable's file name and the command line as one string (Chromium rewrites its children's titles). */
function processOf(pid) {
  let exe = "?";
  let cmdline = "";
  try {
    exe = readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, "").split("/").at(-1);
  } catch {
    // not ours to read, or gone
  }
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
  } catch {
    // gone
  }
  return { exe, cmdline };
}

/**
 * PSS of the server process and every process below it (found through /proc/<pid>/stat ppid): the browser's
 * processes, and anything else it started (listed apart as "other"). In MiB; the per-process list in KiB.
 */
function treeMemory(rootPid) {
  const processes = [];
  for (const pid of [rootPid, ...descendants(rootPid)]) {
    const m = smapsRollup(pid);
    if (!m) continue;
    const { exe, cmdline } = processOf(pid);
    const kind = pid === rootPid ? "server" : /^(chromium|chrome|headless_shell|chrome-headless-shell)$/.test(exe) ? "browser" : "other";
    const type = kind === "browser" ? (/--type=(\S+)/.exec(cmdline)?.[1] ?? "browser") : exe;
    processes.push({ pid, kind, type, pssKiB: m.Pss, pssAnonKiB: m.Pss_Anon, rssKiB: m.Rss });
  }
  const sum = (filter, key = "pssKiB") => round(processes.filter(filter).reduce((a, p) => a + (p[key] ?? 0), 0) / 1024, 1);
  return {
    pssMiB: sum(() => true),
    pssAnonMiB: sum(() => true, "pssAnonKiB"),
    serverPssMiB: sum((p) => p.kind === "server"),
    browserPssMiB: sum((p) => p.kind === "browser"),
    browserProcesses: processes.filter((p) => p.kind === "browser").length,
    otherPssMiB: sum((p) => p.kind === "other"),
    otherProcesses: processes.filter((p) => p.kind === "other").map((p) => p.type),
    rssSumMiB: sum(() => true, "rssKiB"),
    processes,
  };
}

/** N.memorySamples readings of treeMemory, MEMORY_GAP_MS apart, after MEMORY_SETTLE_MS. */
async function sampleTreeMemory(pid) {
  await sleep(MEMORY_SETTLE_MS);
  const samples = [];
  for (let i = 0; i < N.memorySamples; i++) {
    if (i) await sleep(MEMORY_GAP_MS);
    samples.push(treeMemory(pid));
  }
  return samples;
}

/** N.cdpWarmup + N.cdpRounds rounds of navigate then snapshot; the timed ones are returned, apart and together. */
async function navigateSnapshotRounds({ navigate, snapshot }) {
  const total = [];
  const nav = [];
  const snap = [];
  let snapshotChars;
  for (let i = 0; i < N.cdpWarmup + N.cdpRounds; i++) {
    const t0 = performance.now();
    await navigate();
    const t1 = performance.now();
    const text = await snapshot();
    const t2 = performance.now();
    if (!text.includes("Beneath the streets")) throw new Error(`the snapshot after navigating to /article is not the article's: ${text.slice(0, 300)}`);
    if (i < N.cdpWarmup) continue;
    total.push(t2 - t0);
    nav.push(t1 - t0);
    snap.push(t2 - t1);
    snapshotChars = text.length;
  }
  return { total, nav, snap, snapshotChars };
}

/** tabrelay: `tabrelay start --cdp --headless` as a child; open_tab once, then navigate + snapshot in that tab. */
async function cdpPassTabrelay(lib, site) {
  const dataDir = tempDir("cdp");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  // Tokens generated and read from the printed block, as in figure 5. --no-sandbox: the peers' browsers get it
  // too (tabrelay adds it itself when run as root). --profile in the bench's temp dir: on SIGTERM, tabrelay start
  // --cdp exits before it has deleted the temporary profile it makes without one (so the bench deletes this one).
  const proc = spawnTabrelay(
    ["start", "--cdp", "--headless", "--profile", join(dataDir, "profile")],
    { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: undefined, TABRELAY_PAIRING_TOKEN: undefined },
    dataDir,
    ["--no-sandbox"],
  );
  cleanups.push(proc.stop);
  let client;
  try {
    const { mcpUrl, token } = await withTimeout(proc.urlPromise, 30_000, "tabrelay start --cdp (MCP endpoint)");
    client = await connectHttp(lib, mcpUrl, token);
    const url = `${site.origin}/article`;
    // Headless, tabrelay's browser starts without a tab (older builds started with about:blank): open one, as the
    // peers start with one page, and navigate that one.
    let tab = Number(/- tab (\d+):/.exec(await callText(client, "list_tabs"))?.[1]);
    let firstTab = "navigate (the start-up tab)";
    if (!Number.isInteger(tab)) {
      tab = Number(/Opened tab (\d+)/.exec(await callText(client, "open_tab", { url }))?.[1]);
      firstTab = "open_tab, then navigate";
      if (!Number.isInteger(tab)) throw new Error("neither list_tabs nor open_tab gave a tab");
    }
    const rounds = await navigateSnapshotRounds({
      navigate: () => callText(client, "navigate", { tab, url }),
      snapshot: () => callText(client, "snapshot", { tab }),
    });
    const memory = await sampleTreeMemory(proc.child.pid);
    return { ...rounds, memory, pid: proc.child.pid, tab: firstTab };
  } catch (error) {
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`);
  } finally {
    await client?.close().catch(() => {});
    await proc.stop();
    const i = cleanups.indexOf(proc.stop);
    if (i >= 0) cleanups.splice(i, 1);
  }
}

/** A peer: a fresh stdio server; navigate + snapshot (its browser starts on the first call). */
async function cdpPassPeer(lib, spec, site) {
  const peer = await startPeer(lib, spec, tempDir(`cdp-${spec.label}`));
  try {
    if (!peer.pid) throw new Error("the stdio transport did not report the server's pid");
    const url = `${site.origin}/article`;
    const rounds = await navigateSnapshotRounds({ navigate: () => spec.navigate(peer.client, url), snapshot: () => spec.snapshot(peer.client) });
    const memory = await sampleTreeMemory(peer.pid);
    return { ...rounds, memory, pid: peer.pid };
  } catch (error) {
    throw new Error(`${message(error)}\n${peer.stderrTail()}`);
  } finally {
    peer.remember();
    await peer.stop();
  }
}

/** 12-13: N.cdpPasses passes over the three tools, the order reversed every other pass (ABBA). */
async function benchCdp(lib, specs, site) {
  const keys = ["tabrelay", "playwright", "devtools"];
  const passes = Object.fromEntries(keys.map((k) => [k, []]));
  const failed = {};
  for (let pass = 0; pass < N.cdpPasses; pass++) {
    for (const key of pass % 2 ? [...keys].reverse() : keys) {
      if (failed[key]) continue;
      const label = key === "tabrelay" ? "tabrelay start --cdp --headless" : specs[key].label;
      log(`  pass ${pass + 1}/${N.cdpPasses}: ${label} ...`);
      try {
        const run = key === "tabrelay" ? cdpPassTabrelay(lib, site) : cdpPassPeer(lib, specs[key], site);
        passes[key].push(await withTimeout(run, 180_000, `${label} navigate+snapshot pass`));
      } catch (error) {
        failed[key] = message(error);
      }
      await runCleanupsExceptSite();
    }
  }
  const out = {};
  for (const key of keys) {
    const runs = passes[key];
    if (!runs.length) {
      out[key] = { error: failed[key] ?? "no pass ran" };
      continue;
    }
    const samples = runs.flatMap((r) => r.memory);
    const med = (field) => round(median(samples.map((s) => s[field])), 1);
    out[key] = {
      passes: runs.length,
      time: stats(runs.flatMap((r) => r.total)),
      navigate: stats(runs.flatMap((r) => r.nav)),
      snapshot: stats(runs.flatMap((r) => r.snap)),
      snapshotChars: runs.at(-1).snapshotChars,
      memory: {
        n: samples.length,
        pssMiB: med("pssMiB"),
        pssAnonMiB: med("pssAnonMiB"),
        serverPssMiB: med("serverPssMiB"),
        browserPssMiB: med("browserPssMiB"),
        browserProcesses: median(samples.map((s) => s.browserProcesses)),
        otherPssMiB: med("otherPssMiB"),
        otherProcesses: [...new Set(samples.flatMap((s) => s.otherProcesses))],
        rssSumMiB: med("rssSumMiB"),
        perPass: runs.map((r) => ({ pid: r.pid, pssMiB: round(median(r.memory.map((s) => s.pssMiB)), 1), lastSample: r.memory.at(-1) })),
      },
      ...(runs[0].tab ? { tab: runs[0].tab } : {}),
      ...(failed[key] ? { error: failed[key] } : {}),
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// 5: `tabrelay start --headless` to the first successful read_url.

async function coldStartTabrelay(lib, site) {
  const dataDir = tempDir("start");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const t0 = performance.now();
  // No tokens in the environment: they are generated, and the MCP one is read from the printed block, as a user would.
  const proc = spawnTabrelay(["start", "--headless"], { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: undefined, TABRELAY_PAIRING_TOKEN: undefined }, dataDir);
  cleanups.push(proc.stop);
  let client;
  try {
    const { mcpUrl, token } = await withTimeout(proc.urlPromise, 15_000, "tabrelay start (MCP endpoint)");
    const endpointMs = performance.now() - t0;
    client = await connectHttp(lib, mcpUrl, token);
    let lastError = "";
    for (;;) {
      if (performance.now() - t0 > 30_000) throw new Error(`no successful read_url within 30 s (last: ${lastError})`);
      const result = await client.callTool({ name: "read_url", arguments: { url: `${site.origin}/article` } });
      if (!result.isError && textOf(result).includes("Beneath the streets")) break;
      lastError = textOf(result).slice(0, 200);
      await sleep(20);
    }
    return { ms: performance.now() - t0, endpointMs };
  } finally {
    await client?.close().catch(() => {});
    await proc.stop();
    cleanups.splice(cleanups.indexOf(proc.stop), 1);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Peers over stdio.

function peerSpecs(outDir) {
  const pwConfig = join(outDir, "playwright-mcp.json");
  writeFileSync(
    pwConfig,
    JSON.stringify({
      browser: {
        browserName: "chromium",
        isolated: true,
        launchOptions: { executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: CHROMIUM_FLAGS.filter((f) => f !== "--no-sandbox") },
      },
    }),
  );
  return {
    playwright: {
      label: "playwright-mcp",
      version: pkgVersion(join(BENCH, "node_modules/@playwright/mcp/package.json")),
      command: [join(BENCH, "node_modules/@playwright/mcp/cli.js"), "--config", pwConfig, "--headless", "--isolated", "--no-sandbox", "--executable-path", CHROMIUM, "--output-dir", join(outDir, "playwright-output")],
      env: {},
      roundTrip: { name: "browser_tabs", args: { action: "list" } },
      async read(client, url) {
        // 0.0.83 writes the navigation's snapshot to a file and returns a link; the page text comes from
        // browser_snapshot. Both results count as what the agent reads.
        const nav = await callText(client, "browser_navigate", { url });
        const snap = await callText(client, "browser_snapshot", {});
        return { text: `${nav}\n${snap}`, parts: { browser_navigate: nav.length, browser_snapshot: snap.length } };
      },
      readLabel: "browser_navigate + browser_snapshot",
      tools: [],
      navigate: (client, url) => callText(client, "browser_navigate", { url }),
      snapshot: (client) => callText(client, "browser_snapshot", {}),
      refIn: refOf,
      click(client, ref) {
        // 0.0.83 names the ref `target`; older releases named it `ref`.
        const props = this.tools.find((t) => t.name === "browser_click")?.inputSchema?.properties ?? {};
        return callText(client, "browser_click", { element: `${CLICK_BUTTON} button`, ["target" in props || !("ref" in props) ? "target" : "ref"]: ref });
      },
      screenshotTool: "browser_take_screenshot",
      screenshot: (client) => callResult(client, "browser_take_screenshot", {}),
    },
    devtools: {
      label: "chrome-devtools-mcp",
      version: pkgVersion(join(BENCH, "node_modules/chrome-devtools-mcp/package.json")),
      command: [
        join(BENCH, "node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"),
        "--headless",
        "--isolated",
        "--executablePath",
        CHROMIUM,
        ...CHROMIUM_FLAGS.map((f) => `--chromeArg=${f}`),
        "--no-usage-statistics",
        "--no-performance-crux",
      ],
      env: { CI: "1", CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: "1", CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: "1" },
      pageId: undefined,
      roundTrip: { name: "list_pages", args: {} },
      async read(client, url) {
        await this.ensurePage(client);
        const nav = await callText(client, "navigate_page", { pageId: this.pageId, type: "url", url });
        const snap = await callText(client, "take_snapshot", { pageId: this.pageId });
        return { text: `${nav}\n${snap}`, parts: { navigate_page: nav.length, take_snapshot: snap.length } };
      },
      readLabel: "navigate_page + take_snapshot",
      tools: [],
      async navigate(client, url) {
        await this.ensurePage(client);
        return callText(client, "navigate_page", { pageId: this.pageId, type: "url", url });
      },
      snapshot(client) {
        return callText(client, "take_snapshot", { pageId: this.pageId });
      },
      refIn: uidOf,
      click(client, uid) {
        return callText(client, "click", { pageId: this.pageId, uid });
      },
      screenshotTool: "take_screenshot",
      screenshot(client) {
        return callResult(client, "take_screenshot", { pageId: this.pageId });
      },
      // Its headless window is not 1280x720 (the viewport screenshot came out 1905x2053 here): sized like the
      // others for figure 10-11, after one screenshot at its own size (in the JSON).
      resizeForScreenshot(client) {
        return callText(client, "resize_page", { pageId: this.pageId, width: 1280, height: 720 });
      },
      async ensurePage(client) {
        if (this.pageId !== undefined) return;
        const pages = await callText(client, "list_pages", {});
        this.pageId = Number(pages.match(/^(\d+):.*\[selected\]/m)?.[1] ?? pages.match(/^(\d+):/m)?.[1] ?? 1);
      },
    },
  };
}

async function startPeer(lib, spec, cwd) {
  const { Client, StdioClientTransport } = lib.sdk;
  spec.pageId = undefined;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: spec.command,
    cwd,
    env: { ...process.env, ...spec.env },
    stderr: "pipe",
  });
  const stderrTail = tail(transport.stderr);
  const client = new Client({ name: "tabrelay-bench", version: "0.0.0" });
  let pid;
  let tree = [];
  let rssConnected;
  const stop = async () => {
    if (pid) tree = [...new Set([...tree, ...descendants(pid)])];
    await withTimeout(client.close(), 10_000, `${spec.label} close`).catch(() => {});
    if (pid) {
      await waitExit(pid, 3000);
      killPids([pid, ...tree]); // the server, or a browser that outlived it
      if (await waitExit(pid, 2000)) startedPids.delete(pid);
    }
  };
  cleanups.push(stop);
  try {
    await withTimeout(client.connect(transport), 30_000, `${spec.label} connect`);
  } catch (error) {
    throw new Error(`${message(error)}\n${stderrTail()}`);
  }
  pid = transport.pid;
  if (pid) startedPids.add(pid);
  rssConnected = pid ? procStatus(pid).rssMiB : undefined;
  return {
    client,
    pid,
    stderrTail,
    rssConnected,
    async stop() {
      await stop();
      const i = cleanups.indexOf(stop);
      if (i >= 0) cleanups.splice(i, 1);
    },
    remember() {
      if (pid) tree = [...new Set([...tree, ...descendants(pid)])];
    },
  };
}

async function benchPeer(lib, spec, site) {
  const articleUrl = `${site.origin}/article`;
  const cwd = tempDir(`peer-${spec.label}`);
  const result = { version: spec.version };

  // Cold starts: spawn to first successful read (the browser starts lazily, on the first tool call).
  const cold = [];
  let peer;
  for (let i = 0; i < N.coldStart; i++) {
    const t0 = performance.now();
    peer = await startPeer(lib, spec, cwd);
    try {
      const { text } = await withTimeout(spec.read(peer.client, articleUrl), 60_000, `${spec.label} first read`);
      if (!text.includes("Beneath the streets")) throw new Error("the first read returned something unexpected");
      cold.push(performance.now() - t0);
    } catch (error) {
      const why = `${message(error)}\n${peer.stderrTail()}`;
      await peer.stop();
      throw new Error(why);
    }
    peer.remember();
    if (i < N.coldStart - 1) await peer.stop();
  }
  result.coldStart = stats(cold);

  try {
    const { client } = peer;
    spec.tools = (await client.listTools()).tools;
    result.toolsListChars = JSON.stringify(spec.tools).length;
    // Round trip of the cheapest browser tool.
    for (let i = 0; i < N.roundTripWarmup; i++) await callText(client, spec.roundTrip.name, spec.roundTrip.args);
    const rt = [];
    for (let i = 0; i < N.roundTrip; i++) rt.push((await timed(() => callText(client, spec.roundTrip.name, spec.roundTrip.args))).ms);
    result.roundTrip = { ...stats(rt), tool: spec.roundTrip.name };
    peer.remember();

    // The read: what it hands the agent (the cold start above was the warm-up), then the workload.
    const { text, parts } = await spec.read(client, articleUrl);
    const rssSeries = { connected: peer.rssConnected, browserStarted: procStatus(peer.pid).rssMiB };
    const reads = [];
    for (let i = 0; i < N.reads; i++) {
      const { ms, value } = await timed(() => spec.read(client, articleUrl));
      if (!value.text.includes("Beneath the streets")) throw new Error("a read returned something unexpected");
      reads.push(ms);
      if ((i + 1) % 10 === 0) rssSeries[`read${i + 1}`] = procStatus(peer.pid).rssMiB;
    }
    result.read = { calls: spec.readLabel, chars: text.length, parts, hasMarker: text.includes(MARKER), time: readStats(reads) };
    result.rss = { ...procStatus(peer.pid), pid: peer.pid, after: `${N.reads + 2} reads`, series: rssSeries };

    // 2b: the news page, one read, after the RSS figure (which stays the article workload's).
    try {
      const news = await withTimeout(spec.read(client, `${site.origin}${NEWS.path}`), 60_000, `${spec.label} news page read`);
      if (!news.text.includes(NEWS.check)) throw new Error(`the read of ${NEWS.path} returned something unexpected: ${news.text.slice(0, 300)}`);
      result.news = { calls: spec.readLabel, chars: news.text.length, parts: news.parts, hasMarker: news.text.includes(NEWS.marker) };
    } catch (error) {
      result.news = { error: `${message(error)}\n${peer.stderrTail()}` };
    }
    peer.remember();

    // 6-9: snapshot and click, after the RSS figure (which stays the read workload's).
    try {
      result.interaction = await withTimeout(peerInteraction(client, spec, site), 240_000, `${spec.label} snapshot/click figures`);
      result.interaction.rssAfter = procStatus(peer.pid).rssMiB;
    } catch (error) {
      result.interaction = { error: `${message(error)}\n${peer.stderrTail()}` };
    }
    peer.remember();
    // 10: screenshot, after the rest.
    try {
      result.screenshot = await withTimeout(peerScreenshot(client, spec, site), 120_000, `${spec.label} screenshot figure`);
    } catch (error) {
      result.screenshot = { error: `${message(error)}\n${peer.stderrTail()}` };
    }
    peer.remember();
  } catch (error) {
    result.error = `${message(error)}\n${peer.stderrTail()}`;
  } finally {
    await peer.stop();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------------------------
// 14: a page cannot stall the broker. One MCP session reads a hostile page (pages/builds-11mb.html: ~400 bytes
// whose script builds ~11 MB of paragraphs) while another session's cheap call (list_tabs) and GET /health are
// timed back to back. Fresh processes: `tabrelay serve` + Chromium with the extension, and `tabrelay start --cdp`.

const STALL = { path: "/builds-11mb", reads: 2, idle: 50, readTimeoutMs: 120_000, probeEveryMs: 50 };

async function stallPass(lib, site, driver) {
  const dataDir = tempDir(`stall-${driver}`);
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const proc =
    driver === "extension"
      ? spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir)
      : spawnTabrelay(["start", "--cdp", "--headless", "--profile", join(dataDir, "profile")], { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir, ["--no-sandbox"]);
  cleanups.push(proc.stop);
  const clients = [];
  try {
    const { mcpUrl } = await withTimeout(proc.urlPromise, 30_000, `tabrelay (${driver}) start-up`);
    if (driver === "extension") {
      const { prepareExtension, launchChromium } = lib.broker;
      const profileDir = tempDir("stall-profile");
      const extensionDir = prepareExtension(profileDir, `ws://127.0.0.1:${new URL(mcpUrl).port}/bridge`, PAIRING_TOKEN, "bench chromium");
      const browser = launchChromium({ chromiumPath: CHROMIUM, profileDir, extensionDir, headless: true });
      track(browser);
      cleanups.push(() => browser.kill());
    }
    const reader = await connectHttp(lib, mcpUrl, MCP_TOKEN);
    const prober = await connectHttp(lib, mcpUrl, MCP_TOKEN);
    clients.push(reader, prober);
    const deadline = Date.now() + 30_000;
    while ((await prober.callTool({ name: "list_tabs", arguments: {} })).isError) {
      if (Date.now() > deadline) throw new Error("no browser connected within 30 s");
      await sleep(50);
    }
    const healthUrl = mcpUrl.replace(/\/mcp$/, "/health");
    // A fresh connection each time (no keep-alive socket the server may close under a stalled event loop).
    const health = () =>
      new Promise((resolve, reject) => {
        const req = httpGet(healthUrl, { agent: false }, (res) => {
          res.resume();
          res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`/health answered ${res.statusCode}`))));
        });
        req.on("error", reject);
      });
    for (let i = 0; i < 10; i++) await callText(prober, "list_tabs");
    const idle = [];
    for (let i = 0; i < STALL.idle; i++) idle.push((await timed(() => callText(prober, "list_tabs"))).ms);
    // The reads, one after another; meanwhile list_tabs and /health alternate, back to back, on the other session.
    const reads = [];
    let reading = true;
    let readError;
    const readsDone = (async () => {
      try {
        for (let i = 0; i < STALL.reads; i++) {
          const { ms, value } = await timed(() => withTimeout(reader.callTool({ name: "read_url", arguments: { url: `${site.origin}${STALL.path}`, mode: "full" } }), STALL.readTimeoutMs, "read_url of the hostile page"));
          const text = textOf(value);
          reads.push({ ms, isError: value.isError === true, chars: text.length, note: stallNote(text) });
        }
      } catch (error) {
        readError = error;
      } finally {
        reading = false;
      }
    })();
    // On a fixed schedule (not back to back): a stall then delays every probe that falls into it, as it would
    // delay every other session's calls, and the p99 sees it.
    const listTabs = [];
    const healthMs = [];
    const pending = [];
    try {
      for (let i = 0; reading; i++) {
        const probe = i % 2 === 0 ? timed(() => callText(prober, "list_tabs")).then((r) => listTabs.push(r.ms)) : timed(health).then((r) => healthMs.push(r.ms));
        pending.push(probe);
        await sleep(STALL.probeEveryMs);
      }
    } finally {
      await readsDone;
      await Promise.allSettled(pending);
    }
    if (readError) throw readError;
    await Promise.all(pending);
    return { idle: tail99(idle), listTabs: tail99(listTabs), health: tail99(healthMs), reads };
  } catch (error) {
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`);
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await runCleanupsExceptSite();
  }
}

/** What the read said about the page's size (its first line that names a limit), or its first lines. */
function stallNote(text) {
  const line = text.split("\n").find((l) => /too large|limit|cut|truncat|plain text|budget|MiB|could not/i.test(l) && !l.startsWith("<page-content"));
  return (line ?? text.split("\n").slice(0, 2).join(" / ")).slice(0, 200);
}

function tail99(values) {
  return { ...stats(values), p99: round(quantile(values, 0.99)) };
}

async function benchStall(lib, site) {
  const out = {};
  for (const driver of ["extension", "cdp"]) {
    try {
      out[driver] = await stallPass(lib, site, driver);
    } catch (error) {
      out[driver] = { error: message(error) };
    }
  }
  return out;
}

function stallRows(stall) {
  const cell = (driver, fn) => (stall?.[driver]?.error ? `failed: ${stall[driver].error.split("\n")[0].slice(0, 60)}` : stall?.[driver] ? fn(stall[driver]) : "n/a");
  const p99 = (s) => `p99 ${round(s.p99, 1)} ms, max ${round(s.max, 1)} (N=${s.n})`;
  const rows = [];
  for (const driver of ["extension", "cdp"]) {
    const label = driver === "extension" ? "serve + extension" : "start --cdp";
    rows.push(
      {
        figure: `14. list_tabs while another session reads a page building 11 MB (${label})`,
        tabrelay: cell(driver, (x) => p99(x.listTabs)),
        playwright: "-",
        devtools: "-",
        target: `p99 < 2000 ms${verdict(stall?.[driver]?.listTabs ? stall[driver].listTabs.p99 < 2000 : undefined)}`,
      },
      { figure: "    GET /health meanwhile", tabrelay: cell(driver, (x) => p99(x.health)), playwright: "", devtools: "", target: "" },
      { figure: "    list_tabs idle, same process", tabrelay: cell(driver, (x) => p99(x.idle)), playwright: "", devtools: "", target: "" },
      {
        figure: `    the ${STALL.reads} hostile reads: time, result`,
        tabrelay: cell(driver, (x) => x.reads.map((r) => `${Math.round(r.ms)} ms${r.isError ? " (error)" : ""}`).join(", ")),
        playwright: "",
        devtools: "",
        target: "ends with a message, never hangs",
      },
      { figure: "    what the read said", tabrelay: cell(driver, (x) => x.reads[0]?.note ?? ""), playwright: "", devtools: "", target: "" },
    );
  }
  return rows;
}

// Output.

function fmtMs(s, digits = 1) {
  return s ? `${round(s.median, digits)} ms (N=${s.n})` : "n/a";
}

function fmtMiB(r) {
  return r?.rssMiB !== undefined ? `${r.rssMiB} MiB` : r?.error ? `n/a (${r.error})` : "n/a";
}

function verdict(ok) {
  return ok === undefined ? "" : ok ? " [met]" : " [MISSED]";
}

function cellError(peer) {
  if (!peer) return "n/a";
  const flat = (peer.error ?? "unknown error").replace(/#+ ?Error\s*/g, "").replace(/\s+/g, " ").trim();
  return `failed: ${flat.length > 70 ? `${flat.slice(0, 69)}…` : flat} (see below)`;
}

function printTable(rows) {
  const headers = ["figure", "tabrelay", "playwright-mcp", "chrome-devtools-mcp", "target"];
  const all = [headers, ...rows.map((r) => [r.figure, r.tabrelay, r.playwright, r.devtools, r.target])];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => String(r[i] ?? "").length)));
  const line = (r) => `| ${r.map((c, i) => String(c ?? "").padEnd(widths[i])).join(" | ")} |`;
  const sep = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  const out = [line(headers), sep, ...rows.map((r) => line([r.figure, r.tabrelay, r.playwright, r.devtools, r.target]))];
  process.stdout.write(`${out.join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
  const started = performance.now();
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROME_PATH)`);
  ensureBuilt();
  ensureInstalled();
  const lib = {
    broker: await import(pathToFileURL(join(ROOT, "packages/broker/dist/index.js")).href),
    extract: await import(pathToFileURL(join(ROOT, "packages/broker/dist/extract/extract.js")).href),
    sdk: {
      ...(await import("@modelcontextprotocol/sdk/client/index.js")),
      ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      ...(await import("@modelcontextprotocol/sdk/client/stdio.js")),
    },
  };
  const chromiumVersion = (() => {
    try {
      return execFileSync(CHROMIUM, ["--version"], { encoding: "utf8", timeout: 10_000 }).trim();
    } catch {
      return "unknown";
    }
  })();
  const site = await startSite();
  const results = { tabrelay: {}, playwright: undefined, devtools: undefined, cdp: undefined };
  const errors = {};

  if (process.argv.includes("--only=tabrelay")) {
    // Figures 3 and 4 alone (extract() timings; tabrelay serve's read workload and RSS): `node bench/run.mjs --only=tabrelay`.
    log("3: extract() timings ...");
    // TABRELAY_BENCH_RSS_ONLY=1 (diagnostics, ~1 min less): figures 2 and 4 alone.
    const extract = process.env.TABRELAY_BENCH_RSS_ONLY ? undefined : await benchExtract(lib, site);
    log("4: tabrelay serve: read workload and RSS ...");
    const serve = await benchTabrelayServe(lib, site);
    await runCleanupsExceptSite();
    const rss = serve.rss;
    process.stdout.write(
      (extract
        ? `3. extract() readable, median over ${Object.keys(extract.perPage).length} pages: ${fmtMs(extract.pooled)}; worst page ${round(extract.worstPageMedian, 1)} ms\n` +
          Object.entries(extract.perPage).map(([path, x]) => `   ${path}: ${round(x.median, 1)} ms\n`).join("")
        : "") +
        `2. read_url article (median): ${fmtMs(serve.read.time)}\n` +
        `4. server RSS after the workload: ${rss.rssMiB} MiB (peak ${rss.peakRssMiB}); series ${JSON.stringify(rss.series)}; resident ${JSON.stringify(rss.breakdown)}\n`,
    );
    return;
  }
  if (process.argv.includes("--only=coldstart")) {
    // Figure 5 alone (tabrelay's side: `tabrelay start --headless` to the first read_url): `node bench/run.mjs --only=coldstart`.
    log(`5: tabrelay start --headless to first read_url (N=${N.coldStart}) ...`);
    const runs = [];
    for (let i = 0; i < N.coldStart; i++) runs.push((await coldStartTabrelay(lib, site)).ms);
    process.stdout.write(`5. spawn to first successful read (median): ${round(median(runs), 0)} ms (${runs.map((ms) => round(ms, 0)).join(", ")})\n`);
    return;
  }
  if (process.argv.includes("--only=stall")) {
    // Figure 14 alone (fresh processes; no peers): `node bench/run.mjs --only=stall`.
    log("14: cheap calls while another session reads a hostile page ...");
    const stall = await benchStall(lib, site);
    printTable(stallRows(stall));
    mkdirSync(join(BENCH, "results"), { recursive: true });
    writeFileSync(join(BENCH, "results", "stall.json"), `${JSON.stringify(stall, null, 2)}\n`);
    return;
  }

  log("tabrelay: extract() timings ...");
  results.tabrelay.extract = await benchExtract(lib, site);

  log("tabrelay: in-process broker + headless Chromium: list_tabs round trip ...");
  try {
    results.tabrelay.inProcess = await benchInProcess(lib, site);
  } catch (error) {
    errors.inProcess = message(error);
  }
  // The in-process broker and its browser are not needed any more: stop them before the RSS workloads.
  await runCleanupsExceptSite();

  log("tabrelay: `tabrelay serve` child process: round trip, read_url and RSS ...");
  try {
    results.tabrelay.serve = await benchTabrelayServe(lib, site);
  } catch (error) {
    errors.serve = message(error);
  }
  await runCleanupsExceptSite();

  log(`tabrelay: \`tabrelay start --headless\` to first read_url (N=${N.coldStart}) ...`);
  try {
    const cold = [];
    const endpoint = [];
    for (let i = 0; i < N.coldStart; i++) {
      const r = await coldStartTabrelay(lib, site);
      cold.push(r.ms);
      endpoint.push(r.endpointMs);
    }
    results.tabrelay.coldStart = { ...stats(cold), endpointPrinted: stats(endpoint) };
  } catch (error) {
    errors.coldStart = message(error);
  }
  await runCleanupsExceptSite();

  const specs = peerSpecs(tempDir("peers"));
  for (const key of ["playwright", "devtools"]) {
    log(`${specs[key].label} ${specs[key].version}: cold start, round trip, reads, RSS ...`);
    try {
      results[key] = await benchPeer(lib, specs[key], site);
    } catch (error) {
      results[key] = { version: specs[key].version, error: message(error) };
    }
    await runCleanupsExceptSite();
    if (results[key].error) log(`${specs[key].label} failed: ${results[key].error.split("\n").slice(0, 6).join("\n  ")}`);
  }

  log(`12-13: navigate + snapshot over CDP and memory, fresh processes, ${N.cdpPasses} passes (ABBA) ...`);
  results.cdp = await benchCdp(lib, specs, site);
  await runCleanupsExceptSite();

  log("14: cheap calls from one session while another reads a hostile page, fresh processes ...");
  results.stall = await benchStall(lib, site);
  await runCleanupsExceptSite();

  // ------------------------------------------------------------------ the table
  const t = results.tabrelay;
  const pw = results.playwright;
  const cd = results.devtools;
  const peerCell = (peer, fn) => (peer?.error && fn(peer) === undefined ? cellError(peer) : (fn(peer) ?? (peer?.error ? cellError(peer) : "n/a")));
  const pwChars = pw?.read?.chars;
  const ratio = t.serve && pwChars ? t.serve.read.wholeArticleChars / pwChars : undefined;
  const ratioFirst = t.serve && pwChars ? t.serve.read.firstCallChars / pwChars : undefined;
  const rows = [
    {
      figure: "1. round trip, near-no-op browser call (median)",
      tabrelay: t.inProcess ? `${fmtMs(t.inProcess.roundTrip, 2)} list_tabs` : `failed: ${errors.inProcess}`,
      playwright: peerCell(pw, (p) => p.roundTrip && `${fmtMs(p.roundTrip, 2)} browser_tabs list`),
      devtools: peerCell(cd, (p) => p.roundTrip && `${fmtMs(p.roundTrip, 2)} list_pages`),
      target: `<= 5 ms${verdict(t.inProcess ? t.inProcess.roundTrip.median <= 5 : undefined)}`,
    },
    {
      figure: "   same, broker in its own process (tabrelay serve)",
      tabrelay: t.serve ? fmtMs(t.serve.roundTrip, 2) : `failed: ${errors.serve}`,
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "2. article: characters handed to the agent",
      tabrelay: t.serve ? `${t.serve.read.wholeArticleChars} (${t.serve.read.wholeArticleCalls} read_url calls)` : "n/a",
      playwright: peerCell(pw, (p) => p.read && `${p.read.chars} (navigate+snapshot)`),
      devtools: peerCell(cd, (p) => p.read && `${p.read.chars} (navigate+snapshot)`),
      target: `<= 0.5x playwright${ratio !== undefined ? `: ${round(ratio, 2)}x${verdict(ratio <= 0.5)}` : ""}`,
    },
    {
      figure: "   first read_url call alone (default max_chars)",
      tabrelay: t.serve ? `${t.serve.read.firstCallChars}` : "n/a",
      playwright: "",
      devtools: "",
      target: ratioFirst !== undefined ? `${round(ratioFirst, 2)}x playwright` : "",
    },
    {
      figure: "   the article's own Markdown (extract(), no tool framing)",
      tabrelay: `${t.extract.perPage["/article"].markdownChars}`,
      playwright: "",
      devtools: "",
      target: pwChars ? `0.5x playwright = ${Math.round(pwChars / 2)}` : "",
    },
    {
      figure: "   the article's words alone (its headline, paragraphs, headings, caption as plain text)",
      tabrelay: t.extract.articleTextChars !== undefined ? `${t.extract.articleTextChars}` : "n/a",
      playwright: "",
      devtools: "",
      target: pwChars && t.extract.articleTextChars ? `${round(t.extract.articleTextChars / pwChars, 2)}x playwright: the floor for a lossless read` : "",
    },
    {
      figure: "   closing-paragraph marker present",
      tabrelay: t.serve ? `${t.serve.read.wholeArticleHasMarker ? "yes" : "NO"} (first call alone: ${t.serve.read.firstCallHasMarker ? "yes" : "no"})` : "n/a",
      playwright: peerCell(pw, (p) => p.read && (p.read.hasMarker ? "yes" : "NO")),
      devtools: peerCell(cd, (p) => p.read && (p.read.hasMarker ? "yes" : "NO")),
      target: "yes",
    },
    {
      figure: "   read time, end to end (median)",
      tabrelay: t.serve ? `${fmtMs(t.serve.read.time)} read_url` : "n/a",
      playwright: peerCell(pw, (p) => p.read && fmtMs(p.read.time)),
      devtools: peerCell(cd, (p) => p.read && fmtMs(p.read.time)),
      target: "",
    },
    ...newsRows(t, pw, cd, errors, peerCell),
    {
      figure: "3. extract() readable, median over 6 pages",
      tabrelay: `${fmtMs(t.extract.pooled)}; worst page ${round(t.extract.worstPageMedian, 1)} ms`,
      playwright: "-",
      devtools: "-",
      target: `<= 60 ms${verdict(t.extract.worstPageMedian <= 60)}`,
    },
    ...Object.entries(t.extract.perPage).map(([path, s]) => ({ figure: `   ${path} (${Math.round(s.htmlChars / 1000)}k chars HTML)`, tabrelay: `${round(s.median, 1)} ms`, playwright: "", devtools: "", target: "" })),
    {
      figure: `4. server RSS after the workload (${N.reads + 2}+ reads)`,
      tabrelay: t.serve ? `${fmtMiB(t.serve.rss)} (peak ${t.serve.rss.peakRssMiB}; ${t.serve.rss.series.idle6s} MiB 6.5 s later)` : "n/a",
      playwright: peerCell(pw, (p) => p.rss && `${fmtMiB(p.rss)} (peak ${p.rss.peakRssMiB})`),
      devtools: peerCell(cd, (p) => p.rss && `${fmtMiB(p.rss)} (peak ${p.rss.peakRssMiB})`),
      target: `<= 90 MiB${verdict(t.serve?.rss?.rssMiB !== undefined ? t.serve.rss.rssMiB <= 90 : undefined)}`,
    },
    {
      figure: "   RSS idle (tabrelay: browser connected; peers: stdio connected, no browser yet)",
      tabrelay: t.serve ? `${t.serve.rss.series.browserConnected} MiB` : "n/a",
      playwright: peerCell(pw, (p) => p.rss && `${p.rss.series.connected} MiB`),
      devtools: peerCell(cd, (p) => p.rss && `${p.rss.series.connected} MiB`),
      target: "",
    },
    {
      figure: "5. spawn to first successful read (median)",
      tabrelay: t.coldStart ? `${fmtMs(t.coldStart, 0)} start --headless` : `failed: ${errors.coldStart}`,
      playwright: peerCell(pw, (p) => p.coldStart && fmtMs(p.coldStart, 0)),
      devtools: peerCell(cd, (p) => p.coldStart && fmtMs(p.coldStart, 0)),
      target: `< 2000 ms${verdict(t.coldStart ? t.coldStart.median < 2000 : undefined)}`,
    },
    {
      figure: "   tools/list size (characters of JSON)",
      tabrelay: t.serve ? `${t.serve.toolsListChars}` : "n/a",
      playwright: peerCell(pw, (p) => p.toolsListChars && `${p.toolsListChars}`),
      devtools: peerCell(cd, (p) => p.toolsListChars && `${p.toolsListChars}`),
      target: "",
    },
    ...interactionRows(t, pw, cd, errors),
    ...screenshotRows(t, pw, cd, errors),
    ...cdpRows(results.cdp),
    ...stallRows(results.stall),
  ];

  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    chromium: chromiumVersion,
    chromiumPath: CHROMIUM,
    tabrelay: pkgVersion(join(ROOT, "packages/cli/package.json")),
    "@playwright/mcp": specs.playwright.version,
    "chrome-devtools-mcp": specs.devtools.version,
    n: N,
    article: { url: "/article", words: "~4,900 in the body", htmlChars: site.files.has("/article") ? readFileSync(site.files.get("/article")).length : undefined },
    newsArticle: { url: NEWS.path, words: "~4,900 in the article (headline, standfirst, body, captions)", htmlChars: site.files.has(NEWS.path) ? readFileSync(site.files.get(NEWS.path)).length : undefined, marker: NEWS.marker },
    notes: [
      "tabrelay read_url returns at most read.max_chars (40,000 by default) per call; the article figure counts every call needed to reach its end (following the offset the truncation marker names).",
      "playwright-mcp 0.0.83 browser_navigate saves the page snapshot to a file and returns a link; the page text is counted from browser_snapshot (both results counted).",
      `2b: ${NEWS.path}, a saved news page (157k chars of HTML: nav and mega-menu, cookie banner, share bars, 3 ad slots, related and most-viewed lists, a comment form and 12 comments, footer) around a ~4,900-word article. Same counting as 2 (tabrelay: every read_url call to the end; the peers: navigate + snapshot), one read each, after the RSS workload in the same processes. The closing-paragraph marker is the article's last words, "${NEWS.marker}". Its third-party hosts (ads, tag manager, avatars) do not resolve on this machine: the two ad iframes hold Chromium's "server IP address could not be found" page (a few lines inside playwright-mcp's snapshot, which descends into iframes), not ads.`,
      "Round trips: tabrelay list_tabs goes MCP -> broker -> extension (chrome.tabs) -> back; playwright-mcp browser_tabs reads each tab's title from the browser; chrome-devtools-mcp list_pages answers from puppeteer's locally tracked target list, so it is probably not a browser round trip at all.",
      "RSS is the server process only (tabrelay serve / the peers' node process), not the browser.",
      "Peers' cold start: spawn of the stdio server to the first successful navigate+snapshot (their browser starts on the first tool call).",
      `6-9 run after the RSS figure, in the same processes: tabrelay serve + its Chromium, the peers' own browsers. Tokens are estimated as characters / 4. Sizes count the snapshot tool's result alone (not open_tab / navigate).`,
      `tabrelay snapshot by default returns the first 300 lines of the page's list (headings, landmarks, controls) with a footer naming the next offset; its time covers the whole page walk in the extension. The last row is looked up with find="${BIG_LAST_BUTTON}" and the first call's revision (same refs, no new walk). The peers return the whole tree in one result.`,
      `Screenshots (10-11) run after 6-9, on /article (tabrelay: open_tab { active: true }; the peers: navigate), in the same processes; tabrelay's broker has \`screenshots: { enabled: true }\` in its config.yaml. chrome-devtools-mcp's headless window gives a larger viewport, so it gets resize_page { width: 1280, height: 720 } first (one default screenshot at its own size is shown too). Sizes count the default call's result: characters of text content, and of base64 data of image content, apart; the image's pixel size is from its PNG header. tabrelay's link is fetched once (status, content type, PNG header). Times: ${N.screenshot} calls after ${N.screenshotWarmup} warm-ups, each ${SHOT_GAP_MS} ms after the previous one returned (Chrome allows two captureVisibleTab calls a second; the extension spaces captures 510 ms apart), so the capture is timed, not the quota wait.`,
      `12-13 run last, each tool in a fresh process: \`tabrelay start --cdp --headless\` (no extension: the broker drives its own Chromium over the DevTools protocol; it opens one tab with open_tab and navigates it, as the peers use their one page) and the peers' stdio servers, each with its own browser. Per process: ${N.cdpWarmup} untimed + ${N.cdpRounds} timed rounds of navigate + snapshot of /article (the peers' first round starts their browser), each round timed as one; then PSS read ${N.memorySamples} times, ${MEMORY_GAP_MS} ms apart, from ${MEMORY_SETTLE_MS} ms after the last call. ${N.cdpPasses} passes in ABBA order (tabrelay, playwright-mcp, chrome-devtools-mcp, then the reverse), a fresh server and browser each; medians pool the passes (times N=${N.cdpPasses * N.cdpRounds}, PSS N=${N.cdpPasses * N.memorySamples}; each part, e.g. server and browser, is its own median, so the parts need not add up to the total). tabrelay's snapshot is its default result (the first 300 lines of headings, landmarks and controls), the peers' the whole tree.`,
      `14 runs after 12-13, in fresh processes (tabrelay serve + the extension's Chromium, then tabrelay start --cdp --headless): one MCP session reads ${STALL.path} (a page of 373 bytes whose script builds ~11 MB of paragraphs) ${STALL.reads} times with read_url (full mode) while a second session calls list_tabs and GET /health (a fresh connection each) alternately, one every ${STALL.probeEveryMs} ms whether or not the previous one answered, so a stalled event loop delays every probe in the stall. Over CDP, list_tabs also waits for the busy tab's renderer (the in-page reader walks ~48,000 paragraphs), which /health does not. The peers are not measured: each serves one stdio client, there is no other session to stall.`,
      "Memory (13): PSS from /proc/<pid>/smaps_rollup, summed over the server process and every process below it (found through /proc/*/stat ppid): the browser and its zygote, GPU, utility and renderer processes (anything else in a tree is counted too, and named in the row under figure 13). Chromium's crashpad handlers, where it starts them, re-parent to init, so they are outside the trees and counted for no tool (two, ~3 MiB PSS together, beside tabrelay's Chromium). PSS divides shared file pages among all processes mapping them, other Chromiums on the machine included, so its file-backed part moves with what else runs; Pss_Anon (private and copy-on-write memory) does not.",
      `Click: ${N.click} timed clicks after ${N.clickWarmup} warm-ups; before each, one untimed snapshot for the ref. "Reaction visible": tabrelay's result says "the page changed"; for the peers, the new counter text ("Clicked N times") is in the click result. "Clicks that took effect": the counter read back afterwards (tabrelay read_page; peers a snapshot). tabrelay's click waits for a navigation to commit only when the page started one (the in-page Navigation API and the drivers' signals; packages/broker/src/tools/act.ts), so this click, which navigates nowhere, is answered once the page's reaction is seen.`,
    ],
    durationS: undefined,
  };
  meta.durationS = round((performance.now() - started) / 1000, 1);

  process.stdout.write(`\ntabrelay benchmark, ${meta.date}: ${chromiumVersion}, Node ${process.version}, @playwright/mcp ${meta["@playwright/mcp"]}, chrome-devtools-mcp ${meta["chrome-devtools-mcp"]}\n\n`);
  printTable(rows);
  process.stdout.write(`\nNotes:\n${meta.notes.map((n) => `- ${n}`).join("\n")}\n`);
  const failures = [
    ...Object.entries(errors).map(([k, v]) => `tabrelay ${k}: ${v}`),
    ...(t.serve?.news?.error ? [`tabrelay news page read: ${t.serve.news.error}`] : []),
    ...["playwright", "devtools"].filter((k) => results[k]?.news?.error).map((k) => `${specs[k].label} news page read: ${results[k].news.error}`),
    ...(t.serve?.interaction?.error ? [`tabrelay snapshot/click: ${t.serve.interaction.error}`] : []),
    ...["playwright", "devtools"].filter((k) => results[k]?.error).map((k) => `${specs[k].label}: ${results[k].error}`),
    ...["playwright", "devtools"].filter((k) => results[k]?.interaction?.error).map((k) => `${specs[k].label} snapshot/click: ${results[k].interaction.error}`),
    ...(t.serve?.screenshot?.error ? [`tabrelay screenshot: ${t.serve.screenshot.error}`] : []),
    ...["playwright", "devtools"].filter((k) => results[k]?.screenshot?.error).map((k) => `${specs[k].label} screenshot: ${results[k].screenshot.error}`),
    ...Object.entries(results.cdp ?? {})
      .filter(([, v]) => v?.error)
      .map(([k, v]) => `${k === "tabrelay" ? "tabrelay start --cdp" : specs[k].label} navigate+snapshot/memory (12-13): ${v.error}`),
  ];
  if (failures.length) process.stdout.write(`\nDid not work:\n${failures.map((f) => `- ${f.split("\n").slice(0, 8).join("\n  ")}`).join("\n")}\n`);
  process.stdout.write(`\n(${meta.durationS} s; JSON in bench/results/latest.json)\n`);

  mkdirSync(join(BENCH, "results"), { recursive: true });
  writeFileSync(join(BENCH, "results", "latest.json"), `${JSON.stringify({ meta, table: rows, results, errors }, null, 2)}\n`);
}

/** 2b: the news page fixture, counted like figure 2. */
function newsRows(t, pw, cd, errors, peerCell) {
  const tn = t.serve?.news;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : tn?.error ? `failed: ${tn.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(tn) ?? "n/a";
  const peer = (p, fn) => {
    if (p?.news?.error) return `failed: ${p.news.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    return peerCell(p, (x) => x.news && fn(x.news));
  };
  const pwChars = pw?.news?.chars;
  const ratio = tn && !tn.error && pwChars ? tn.wholeArticleChars / pwChars : undefined;
  const ratioFirst = tn && !tn.error && pwChars ? tn.firstCallChars / pwChars : undefined;
  const markdownChars = t.extract.perPage[NEWS.path]?.markdownChars;
  return [
    {
      figure: "2b. news page (nav, ads, comments): characters handed to the agent",
      tabrelay: tr((x) => `${x.wholeArticleChars} (${x.wholeArticleCalls} read_url calls)`),
      playwright: peer(pw, (x) => `${x.chars} (navigate+snapshot)`),
      devtools: peer(cd, (x) => `${x.chars} (navigate+snapshot)`),
      target: `<= 0.5x playwright${ratio !== undefined ? `: ${round(ratio, 2)}x${verdict(ratio <= 0.5)}` : ""}`,
    },
    {
      figure: "    first read_url call alone (default max_chars)",
      tabrelay: tr((x) => `${x.firstCallChars}`),
      playwright: "",
      devtools: "",
      target: ratioFirst !== undefined ? `${round(ratioFirst, 2)}x playwright` : "",
    },
    {
      figure: "    the article's own Markdown (extract(), no tool framing)",
      tabrelay: markdownChars !== undefined ? `${markdownChars}` : "n/a",
      playwright: "",
      devtools: "",
      target: pwChars ? `0.5x playwright = ${Math.round(pwChars / 2)}` : "",
    },
    {
      figure: "    closing-paragraph marker present",
      tabrelay: tr((x) => `${x.wholeArticleHasMarker ? "yes" : "NO"} (first call alone: ${x.firstCallHasMarker ? "yes" : "no"})`),
      playwright: peer(pw, (x) => (x.hasMarker ? "yes" : "NO")),
      devtools: peer(cd, (x) => (x.hasMarker ? "yes" : "NO")),
      target: `yes${verdict(tn && !tn.error ? tn.wholeArticleHasMarker : undefined)}`,
    },
  ];
}

function interactionRows(t, pw, cd, errors) {
  const trIx = t.serve?.interaction;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : trIx?.error ? `failed: ${trIx.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(trIx) ?? "n/a";
  const peer = (p, fn) => {
    if (!p) return "n/a";
    if (p.interaction?.error) return `failed: ${p.interaction.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    if (!p.interaction) return cellError(p);
    return fn(p.interaction) ?? "n/a";
  };
  const size = (x) => x && `${x.chars} chars, ~${x.tokens} tok`;
  const yesNo = (b) => (b ? "yes" : "NO");
  const clickReact = (c, what) => c && `${c.reactions}/${N.click}${what ? ` (${what})` : ""}`;
  const took = (c) => c && `${c.counterAfter === c.clicks ? "yes" : "NO"}: counter ${c.counterAfter}/${c.clicks}`;
  return [
    {
      figure: `6. ${(BIG_ROWS * 4).toLocaleString("en-US")}-element page: snapshot result size (default call)`,
      tabrelay: tr((x) => x.big && `${size(x.big)} (${x.big.linesShown} of ${x.big.linesTotal ?? x.big.linesShown} lines)`),
      playwright: peer(pw, (x) => size(x.big)),
      devtools: peer(cd, (x) => size(x.big)),
      target: `<= 15000 tok${verdict(trIx?.big ? trIx.big.tokens <= 15000 : undefined)}`,
    },
    {
      figure: `   last row's button ("${BIG_LAST_BUTTON}") reachable, with its ref`,
      tabrelay: tr((x) => x.big && `${yesNo(x.big.lastRowFound)} (find + revision: ${x.big.findChars} chars)`),
      playwright: peer(pw, (x) => x.big && `${yesNo(x.big.lastRowFound)} (in the one snapshot)`),
      devtools: peer(cd, (x) => x.big && `${yesNo(x.big.lastRowFound)} (in the one snapshot)`),
      target: `yes${verdict(trIx?.big ? trIx.big.lastRowFound : undefined)}`,
    },
    {
      figure: `7. snapshot time, ${(BIG_ROWS * 4).toLocaleString("en-US")}-element page (median)`,
      tabrelay: tr((x) => x.big && `${fmtMs(x.big.time)} snapshot`),
      playwright: peer(pw, (x) => x.big && `${fmtMs(x.big.time)} browser_snapshot`),
      devtools: peer(cd, (x) => x.big && `${fmtMs(x.big.time)} take_snapshot`),
      target: `<= 150 ms${verdict(trIx?.big ? trIx.big.time.median <= 150 : undefined)}`,
    },
    {
      figure: "   same 300 lines from the broker's copy (revision passed: no page walk)",
      tabrelay: tr((x) => x.big?.cachedTime && fmtMs(x.big.cachedTime)),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "8. click by ref, the click call alone (median)",
      tabrelay: tr((x) => x.click && `${fmtMs(x.click.time)} click`),
      playwright: peer(pw, (x) => x.click && `${fmtMs(x.click.time)} browser_click`),
      devtools: peer(cd, (x) => x.click && `${fmtMs(x.click.time)} click`),
      target: `<= 150 ms${verdict(trIx?.click ? trIx.click.time.median <= 150 : undefined)}`,
    },
    {
      figure: "   page's reaction visible in the click result",
      tabrelay: tr((x) => clickReact(x.click, '"the page changed"')),
      playwright: peer(pw, (x) => clickReact(x.click, x.click?.resultLinksSnapshotFile ? "snapshot only as a file link" : "")),
      devtools: peer(cd, (x) => clickReact(x.click, x.click && x.click.reactions === 0 ? JSON.stringify(x.click.sampleResult.trim().split("\n")[0]) : "")),
      target: `${N.click}/${N.click}${verdict(trIx?.click ? trIx.click.reactions === N.click : undefined)}`,
    },
    {
      figure: "   clicks that took effect (counter read back)",
      tabrelay: tr((x) => took(x.click)),
      playwright: peer(pw, (x) => took(x.click)),
      devtools: peer(cd, (x) => took(x.click)),
      target: "",
    },
    {
      figure: "9. article (~5,000 words): snapshot result size",
      tabrelay: tr((x) => size(x.article)),
      playwright: peer(pw, (x) => size(x.article)),
      devtools: peer(cd, (x) => size(x.article)),
      target: `<= 6000 tok${verdict(trIx?.article ? trIx.article.tokens <= 6000 : undefined)}`,
    },
  ];
}

function screenshotRows(t, pw, cd, errors) {
  const trShot = t.serve?.screenshot;
  const trFailed = !t.serve ? `failed: ${errors.serve}` : trShot?.error ? `failed: ${trShot.error.replace(/\s+/g, " ").slice(0, 70)}` : undefined;
  const tr = (fn) => trFailed ?? fn(trShot) ?? "n/a";
  const peer = (p, fn) => {
    if (!p) return "n/a";
    if (p.screenshot?.error) return `failed: ${p.screenshot.error.replace(/\s+/g, " ").slice(0, 60)}… (see JSON)`;
    if (!p.screenshot) return cellError(p);
    return fn(p.screenshot) ?? "n/a";
  };
  const dims = (d) => (d?.width ? `${d.width}x${d.height}` : "?");
  const size = (x) => {
    const image = x.images.length ? `, ${x.images.map((i) => `${dims(i)} ${i.mimeType ?? "image"}`).join(", ")} inline` : "";
    return `${x.textChars} text + ${x.imageChars} base64${image}`;
  };
  const linkOk = (l) => l && l.status === 200 && l.contentType === "image/png" && Boolean(l.png);
  return [
    {
      figure: "10. screenshot result size, article viewport (default call; chars)",
      tabrelay: tr((x) => `${size(x)} (${x.reported ? x.reported.join("x") : "?"} PNG as a link)`),
      playwright: peer(pw, (x) => size(x)),
      devtools: peer(cd, (x) => `${size(x)}${x.ownWindow ? " (after resize_page)" : ""}`),
      target: `<= 500 text${verdict(trShot && !trShot.error ? trShot.textChars <= 500 : undefined)}`,
    },
    ...(cd?.screenshot?.ownWindow
      ? [
          {
            figure: "    same, at the server's own headless window size",
            tabrelay: "",
            playwright: "",
            devtools: size(cd.screenshot.ownWindow),
            target: "",
          },
        ]
      : []),
    {
      figure: "    tabrelay's link fetched (status, type, PNG header)",
      tabrelay: tr((x) => x.link && (x.link.error ?? `${x.link.status} ${x.link.contentType}, ${dims(x.link.png)} PNG, ${x.link.bytes} bytes`)),
      playwright: "",
      devtools: "",
      target: `200 image/png${verdict(trShot?.link ? linkOk(trShot.link) : undefined)}`,
    },
    {
      figure: `11. screenshot call, visible tab (median; >= ${SHOT_GAP_MS} ms apart)`,
      tabrelay: tr((x) => x.time && `${fmtMs(x.time)} screenshot`),
      playwright: peer(pw, (x) => x.time && `${fmtMs(x.time)} ${x.tool}`),
      devtools: peer(cd, (x) => x.time && `${fmtMs(x.time)} ${x.tool}`),
      target: `<= 250 ms${verdict(trShot?.time ? trShot.time.median <= 250 : undefined)}`,
    },
  ];
}

function cdpRows(cdp) {
  const cell = (key, fn) => {
    const x = cdp?.[key];
    if (!x) return "n/a";
    if (!x.time) return `failed: ${(x.error ?? "?").replace(/\s+/g, " ").slice(0, 60)}… (see below)`;
    return fn(x) ?? "n/a";
  };
  const tr = cdp?.tabrelay;
  const pw = cdp?.playwright;
  const timeRatio = tr?.time && pw?.time ? tr.time.median / pw.time.median : undefined;
  const memRatio = tr?.memory && pw?.memory ? tr.memory.pssMiB / pw.memory.pssMiB : undefined;
  const vsPw = (ratio) => (ratio !== undefined ? `: ${round(ratio, 2)}x${verdict(ratio <= 1)}` : "");
  const rounds = N.cdpWarmup + N.cdpRounds;
  const mem = (x) => `${x.memory.pssMiB} MiB (N=${x.memory.n})`;
  const split = (x) => `${x.memory.serverPssMiB} + ${x.memory.browserPssMiB} MiB (${x.memory.browserProcesses} browser procs${x.memory.otherProcesses.length ? `; + ${x.memory.otherPssMiB} MiB other: ${x.memory.otherProcesses.join(", ")}` : ""})`;
  return [
    {
      figure: "12. over CDP: navigate + snapshot, article (median; fresh processes)",
      tabrelay: cell("tabrelay", (x) => `${fmtMs(x.time)} navigate+snapshot`),
      playwright: cell("playwright", (x) => `${fmtMs(x.time)} browser_navigate+browser_snapshot`),
      devtools: cell("devtools", (x) => `${fmtMs(x.time)} navigate_page+take_snapshot`),
      target: `<= playwright-mcp${vsPw(timeRatio)}`,
    },
    {
      figure: "    navigate alone / snapshot alone (median)",
      tabrelay: cell("tabrelay", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      playwright: cell("playwright", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      devtools: cell("devtools", (x) => `${round(x.navigate.median, 1)} / ${round(x.snapshot.median, 1)} ms`),
      target: "",
    },
    {
      figure: "    snapshot result (chars)",
      tabrelay: cell("tabrelay", (x) => `${x.snapshotChars}`),
      playwright: cell("playwright", (x) => `${x.snapshotChars}`),
      devtools: cell("devtools", (x) => `${x.snapshotChars}`),
      target: "",
    },
    {
      figure: `13. server + browser memory, PSS, after ${rounds} rounds of 12 (median)`,
      tabrelay: cell("tabrelay", mem),
      playwright: cell("playwright", mem),
      devtools: cell("devtools", mem),
      target: `<= playwright-mcp${vsPw(memRatio)}`,
    },
    {
      figure: "    server process + browser processes (PSS)",
      tabrelay: cell("tabrelay", split),
      playwright: cell("playwright", split),
      devtools: cell("devtools", split),
      target: "",
    },
    {
      figure: "    anonymous memory only (Pss_Anon)",
      tabrelay: cell("tabrelay", (x) => `${x.memory.pssAnonMiB} MiB`),
      playwright: cell("playwright", (x) => `${x.memory.pssAnonMiB} MiB`),
      devtools: cell("devtools", (x) => `${x.memory.pssAnonMiB} MiB`),
      target: "",
    },
  ];
}

/** Runs every cleanup registered so far except the first (the local site, registered first). */
async function runCleanupsExceptSite() {
  while (cleanups.length > 1) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 15_000, "cleanup");
    } catch (error) {
      process.stderr.write(`bench: cleanup failed: ${message(error)}\n`);
    }
  }
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  exitCode = 1;
} finally {
  await runCleanups();
}
process.exit(exitCode);

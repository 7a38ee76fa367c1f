// Shared by the figures: constants, the bookkeeping that stops everything the bench started (also on failure or
// Ctrl-C), small helpers, the bench's own npm project, the build, the local site, and what a read is.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { CLICK_BUTTON } from "../pages/make-interaction.mjs";

/** bench/ (this module is in bench/lib/). */
export const BENCH = dirname(dirname(fileURLToPath(import.meta.url)));
export const ROOT = dirname(BENCH);
export const CHROMIUM = process.env.CHROME_PATH ?? "/usr/lib/chromium/chromium";
// TABRELAY_BENCH_CLI (diagnostics): another bin to run `tabrelay serve` with (other node flags, say).
export const CLI = process.env.TABRELAY_BENCH_CLI || join(ROOT, "packages/cli/bin/tabrelay.js");
export const MCP_TOKEN = "bench-mcp-token-0123456789abcdef0123";
export const PAIRING_TOKEN = "bench-pairing-token-0123456789abcdef";
export const MARKER = "CLOSING-PARAGRAPH-MARKER";

/** 2b: the news page fixture; its article's closing paragraph ends with NEWS.marker (the same words are in the
 * page's __NEXT_DATA__ JSON, which none of the tools hands over); NEWS.check is from the headline. */
export const NEWS = { path: "/fixtures/news-article.html", marker: "the river, for once, was only a river", check: "how Riverton rebuilt its water system" };

/** Flags every Chromium gets here (/work/shared/TESTING.md). */
export const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
];

export const N = {
  roundTripWarmup: 200, // the JIT warm in every process (tabrelay and both peers alike): a steady-state round trip
  roundTrip: 300,
  reads: 30, // the workload before RSS is read; the read times are its median
  newsReads: 10, // 2b: timed reads of the news page after the first (whose text is checked)
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
  codeModeWarmup: 1, // 15: untimed runs of the shop task per way
  codeModeRounds: 5, // 15: timed runs of the shop task per way, each from a fresh page
};

/** 13: the memory is read this long after the workload's last call returned, then every MEMORY_GAP_MS. */
export const MEMORY_SETTLE_MS = 500;
export const MEMORY_GAP_MS = 200;

/** Chrome allows two captureVisibleTab calls a second (the extension spaces them 510 ms apart): wait this long
 * after each screenshot call returns before the next, so the capture is timed and not the quota wait. */
export const SHOT_GAP_MS = 600;

// ---------------------------------------------------------------------------------------------------------------
// Process and temp-dir bookkeeping: everything started here is stopped at the end, also on failure or Ctrl-C.

export const cleanups = [];
export const tempDirs = [];
export const startedPids = new Set();

export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `tabrelay-bench-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** All descendants of pid (children, grandchildren, ...), from /proc. */
export function descendants(pid) {
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
export function killPids(pids) {
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
export function track(browser) {
  const pid = browser.process.pid;
  startedPids.add(pid);
  void browser.exited.then(() => startedPids.delete(pid));
}

export async function waitExit(pid, ms) {
  const deadline = Date.now() + ms;
  while (alive(pid) && Date.now() < deadline) await sleep(25);
  return !alive(pid);
}

/** SIGTERM, wait, then SIGKILL the process and whatever it started that is still there. */
export async function stopTree(pid, graceMs = 5000) {
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

export async function runCleanups() {
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

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const message = (error) => (error instanceof Error ? error.message : String(error));
export const log = (line) => process.stderr.write(`bench: ${line}\n`);

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)))]).finally(
    () => clearTimeout(timer),
  );
}

export function median(values) {
  if (!values.length) return undefined;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

export function quantile(values, q) {
  if (!values.length) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

export function stats(values) {
  return {
    n: values.length,
    median: round(median(values)),
    p90: round(quantile(values, 0.9)),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
  };
}

export function round(x, digits = 2) {
  if (x === undefined || !Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

export function textOf(result) {
  const content = Array.isArray(result?.content) ? result.content : [];
  return content.map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
}

/** Calls a tool, returns its text; throws on an MCP error result. */
export async function callText(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  if (result.isError) throw new Error(`${name} failed: ${text.slice(0, 300)}`);
  return text;
}

/** Calls a tool, returns the whole result; throws on an MCP error result. */
export async function callResult(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${textOf(result).slice(0, 300)}`);
  return result;
}

/** Where a process's resident memory is (MiB): anonymous (heaps, stacks), the node binary's own pages, other files. */
export function rssBreakdown(pid) {
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

export function procStatus(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1]);
    return { rssMiB: round(kb("VmRSS") / 1024, 1), peakRssMiB: round(kb("VmHWM") / 1024, 1) };
  } catch (error) {
    return { error: `cannot read /proc/${pid}/status: ${message(error)}` };
  }
}

/** Keeps the last lines a child wrote on a stream (for error reports); always drains it. */
export function tail(stream, keep = 40) {
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

export function ensureInstalled() {
  const need = ["@playwright/mcp/package.json", "chrome-devtools-mcp/package.json", "@modelcontextprotocol/sdk/package.json"];
  if (need.every((p) => existsSync(join(BENCH, "node_modules", p)))) return;
  log("installing the peers (npm install --prefix bench) ...");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["install", "--prefix", BENCH, "--no-audit", "--no-fund"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`npm install --prefix bench failed (exit ${r.status})`);
}

export function ensureBuilt() {
  const needed = [join(ROOT, "packages/broker/dist/index.js"), join(ROOT, "packages/cli/dist/main.js"), join(ROOT, "packages/extension/dist/manifest.json")];
  if (needed.every(existsSync)) return;
  log("tabrelay is not built; running npm run build ...");
  const r = spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error("npm run build failed");
}

export function pkgVersion(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8")).version;
  } catch {
    return undefined;
  }
}

export async function startSite() {
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
    ["/shop", join(pages, "shop.html")],
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
 * Reads allowed on the local site; the writes the bench makes, clicking the counter button and the shop's "Add to
 * cart" buttons, granted.
 * `screenshots` turns the screenshot tool on (it is off by default).
 */
export function allowYaml({ screenshots = false } = {}) {
  return [
    "policy:",
    "  read:",
    "    allow:",
    '      "127.0.0.1": [".*"]',
    "  write:",
    "    click:",
    `      "127.0.0.1": { label: "^(${CLICK_BUTTON}|Add to cart)$" }`,
    ...(screenshots ? ["screenshots:", "  enabled: true"] : []),
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the article: a "read" is what an agent needs to get the page's text.

export function readStats(samples) {
  return samples.length ? stats(samples) : undefined;
}

/** tabrelay: one read_url call (default settings: the first max_chars characters). */
export async function tabrelayRead(client, url) {
  return callText(client, "read_url", { url });
}

/** tabrelay: the whole article, following the truncation marker's offset (served from the broker's cache). */
export async function tabrelayReadAll(client, url) {
  const texts = [await callText(client, "read_url", { url })];
  for (let i = 0; i < 20; i++) {
    const next = texts.at(-1).match(/offset=(\d+)/);
    if (!next) break;
    texts.push(await callText(client, "read_url", { url, offset: Number(next[1]) }));
  }
  return texts;
}

/** Runs every cleanup registered so far except the first (the local site, registered first). */
export async function runCleanupsExceptSite() {
  while (cleanups.length > 1) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 15_000, "cleanup");
    } catch (error) {
      process.stderr.write(`bench: cleanup failed: ${message(error)}\n`);
    }
  }
}

/** What the figures import from the built tree and the SDK: the broker, extract(), and the MCP client's transports. */
export async function loadLib() {
  const { pathToFileURL } = await import("node:url");
  return {
    broker: await import(pathToFileURL(join(ROOT, "packages/broker/dist/index.js")).href),
    extract: await import(pathToFileURL(join(ROOT, "packages/broker/dist/extract/extract.js")).href),
    sdk: {
      ...(await import("@modelcontextprotocol/sdk/client/index.js")),
      ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      ...(await import("@modelcontextprotocol/sdk/client/stdio.js")),
    },
  };
}

// read_url beside its floor (issue 28): the browser's own load of the same page over CDP plus the broker's extract()
// of that page's HTML (readable mode), and tabrelay's read_url of the article and the news page through
// `tabrelay serve` and the extension. `node bench/lib/readFloor.mjs` runs it alone and prints the figures.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import {
  CHROMIUM,
  CHROMIUM_FLAGS,
  MARKER,
  N,
  NEWS,
  allowYaml,
  cleanups,
  ensureBuilt,
  log,
  runCleanups,
  runCleanupsExceptSite,
  sleep,
  startSite,
  startedPids,
  stats,
  tabrelayRead,
  tempDir,
  timed,
  withTimeout,
  loadLib,
} from "./common.mjs";
import { startServe } from "./tabrelay.mjs";

/** Untimed loads / reads of each page before the timed ones. */
const WARMUP = 3;

/** The two pages, each with words from near its end (the closing paragraph is in what is read). */
export const READ_PAGES = { article: { path: "/article", check: MARKER }, news: { path: NEWS.path, check: NEWS.marker } };

/** A fresh headless Chromium with a DevTools WebSocket; answers a minimal CDP client on its one page. */
async function startCdpChromium() {
  const profileDir = tempDir("floor-profile");
  const child = spawn(CHROMIUM, [...CHROMIUM_FLAGS, "--headless=new", "--remote-debugging-port=0", `--user-data-dir=${profileDir}`, "about:blank"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  startedPids.add(child.pid);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  void exited.then(() => startedPids.delete(child.pid));
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await Promise.race([exited, sleep(5000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  const wsUrl = await withTimeout(
    new Promise((resolve, reject) => {
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        const m = stderr.match(/DevTools listening on (ws:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      void exited.then(() => reject(new Error(`Chromium exited before listening:\n${stderr.slice(-1000)}`)));
    }),
    15_000,
    "Chromium's DevTools endpoint",
  );
  const port = new URL(wsUrl).port;
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const page = targets.find((t) => t.type === "page");
  if (!page) throw new Error("the fresh Chromium has no page target");
  return connectCdp(page.webSocketDebuggerUrl);
}

/** A CDP session on one page target: send(method, params), once(event). */
async function connectCdp(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error(`cannot connect to ${url}`)), { once: true });
  });
  cleanups.push(() => ws.close());
  let nextId = 1;
  const pending = new Map();
  const waiters = new Map();
  ws.addEventListener("message", (e) => {
    const msg = JSON.parse(String(e.data));
    if (msg.id !== undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(`${msg.error.message}`));
      else p?.resolve(msg.result);
    } else if (msg.method) {
      const list = waiters.get(msg.method) ?? [];
      waiters.delete(msg.method);
      for (const w of list) w(msg.params);
    }
  });
  return {
    send(method, params = {}) {
      const id = nextId++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    once(method) {
      return new Promise((resolve) => waiters.set(method, [...(waiters.get(method) ?? []), resolve]));
    },
  };
}

/**
 * One floor sample of a page: Page.navigate to the load event in the reused tab, the document's HTML taken out
 * (DOM.getOuterHTML), then extract() in readable mode on this thread; each part timed.
 */
async function floorSample(cdp, extract, url, check) {
  const t0 = performance.now();
  const loaded = cdp.once("Page.loadEventFired");
  await cdp.send("Page.navigate", { url });
  await loaded;
  const t1 = performance.now();
  const { root } = await cdp.send("DOM.getDocument", { depth: 0 });
  const { outerHTML } = await cdp.send("DOM.getOuterHTML", { nodeId: root.nodeId });
  const t2 = performance.now();
  const result = extract({ html: outerHTML, url, mode: "readable" });
  const t3 = performance.now();
  if (!result.markdown.includes(check)) throw new Error(`extract() of ${url} lost its closing words`);
  return { load: t1 - t0, html: t2 - t1, extract: t3 - t2, total: t3 - t0 };
}

/** One read_url of `url` (default settings), timed; the closing words must be in the result. */
async function tabrelaySample(client, url, check) {
  const { ms, value } = await timed(() => tabrelayRead(client, url));
  if (!value.includes(check)) throw new Error(`read_url ${url} lost its closing words: ${value.slice(0, 300)}`);
  return ms;
}

/**
 * The floor (a fresh Chromium over CDP, then extract()) and tabrelay's read_url (`tabrelay serve` + the extension),
 * on the article and the news page: both running at once, their samples alternated (floor, tabrelay, ...) so that the
 * machine's drift falls on both alike; medians of N.reads after WARMUP untimed rounds each.
 */
export async function benchReadFloor(lib, site) {
  const { extract } = lib.extract;
  const cdp = await startCdpChromium();
  await cdp.send("Page.enable");
  await cdp.send("DOM.enable");
  const { client } = await startServe(lib, { yaml: allowYaml() });
  const floor = {};
  const tabrelay = {};
  try {
    for (const [name, page] of Object.entries(READ_PAGES)) {
      const url = `${site.origin}${page.path}`;
      const parts = { load: [], html: [], extract: [], total: [] };
      const reads = [];
      for (let i = 0; i < WARMUP + (name === "news" ? N.newsReads : N.reads); i++) {
        const f = await floorSample(cdp, extract, url, page.check);
        const t = await tabrelaySample(client, url, page.check);
        if (i < WARMUP) continue;
        for (const k of Object.keys(parts)) parts[k].push(f[k]);
        reads.push(t);
      }
      floor[name] = { ...stats(parts.total), parts: { load: stats(parts.load), html: stats(parts.html), extract: stats(parts.extract) } };
      tabrelay[name] = stats(reads);
    }
  } finally {
    await runCleanupsExceptSite();
  }
  return { floor, tabrelay };
}

async function main() {
  ensureBuilt();
  const lib = await loadLib();
  const site = await startSite();
  try {
    log(`read_url beside its floor (N=${N.reads} per page, after ${WARMUP} warm-ups, samples alternated) ...`);
    const { floor, tabrelay } = await benchReadFloor(lib, site);
    const ms = (x) => `${x.median.toFixed(1)} ms`;
    for (const name of Object.keys(READ_PAGES)) {
      const f = floor[name];
      const t = tabrelay[name];
      process.stdout.write(
        `${name}: read_url ${ms(t)} (p90 ${t.p90.toFixed(1)}); floor ${ms(f)} (load ${ms(f.parts.load)}, html ${ms(f.parts.html)}, extract ${ms(f.parts.extract)}); ratio ${(t.median / f.median).toFixed(2)}x\n`,
      );
    }
    if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify({ floor, tabrelay }, null, 2)}\n`);
  } finally {
    await runCleanups();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().then(
    () => process.exit(0),
    async (error) => {
      process.stderr.write(`readFloor: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      await runCleanups();
      process.exit(1);
    },
  );
}

// tabrelay's own figures 1-4: the in-process broker (bridge round trip, extract() timings) and `tabrelay serve` as a
// child process with Chromium and the extension (the read workload, its resident memory).
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  CHROMIUM,
  CLI,
  MARKER,
  MCP_TOKEN,
  N,
  NEWS,
  PAIRING_TOKEN,
  ROOT,
  allowYaml,
  callText,
  cleanups,
  descendants,
  killPids,
  message,
  procStatus,
  readStats,
  round,
  rssBreakdown,
  sleep,
  startedPids,
  stats,
  tabrelayRead,
  tabrelayReadAll,
  tempDir,
  textOf,
  timed,
  track,
  withTimeout,
} from "./common.mjs";
import { tabrelayInteraction, tabrelayScreenshot } from "./interaction.mjs";

// ---------------------------------------------------------------------------------------------------------------
// 1 + 3: in-process broker (as test/harness.ts does it) for the bridge round trip; extract() timings.

export async function benchInProcess(lib, site) {
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

export async function benchExtract(lib, site) {
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
  return {
    pooled: stats(pooled),
    perPage,
    worstPageMedian: round(Math.max(...Object.values(perPage).map((p) => p.median))),
    articleTextChars: await articleTextChars(pages),
  };
}

/**
 * The generated article's words alone: the text of its headline, paragraphs, headings, caption and quote inside
 * <article>, blank-line separated. No reader that keeps every word can hand over fewer characters.
 */
export async function articleTextChars(pages) {
  const { parseHTML } = await import("linkedom");
  const page = pages.find((p) => p.path === "/article");
  if (!page) return undefined;
  const { document } = parseHTML(page.html);
  const blocks = [...document.querySelectorAll("article :is(h1, h2, p, figcaption)")].map((el) => el.textContent.replace(/\s+/g, " ").trim());
  return blocks.filter(Boolean).join("\n\n").length;
}

export async function connectHttp(lib, baseUrl, token) {
  const { Client, StreamableHTTPClientTransport } = lib.sdk;
  const client = new Client({ name: "tabrelay-bench", version: "0.0.0" });
  const endpoint = baseUrl.endsWith("/mcp") ? baseUrl : `${baseUrl}/mcp`;
  await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

// ---------------------------------------------------------------------------------------------------------------
// 2 + 4 (+ 1 in its own process): `tabrelay serve` as a child process, Chromium with the extension, the workload.

export function spawnTabrelay(args, env, dataDir, chromiumExtra = [], bin = CLI) {
  // Run the bin as a user's `npx tabrelay` does: through its shebang, with the flags it sets there.
  const child = spawn(bin, [...args, "--port", "0", "--data-dir", dataDir, ...(chromiumExtra.length ? ["--", ...chromiumExtra] : [])], {
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
    void exited.then(({ code, signal }) =>
      reject(new Error(`tabrelay ${args[0]} exited (${code ?? signal}) before printing its MCP endpoint:\n${stderr.slice(-2000)}`)),
    );
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

/**
 * `tabrelay serve` with config `yaml`, a headless Chromium carrying the extension paired to it, and an MCP client,
 * once the extension answers; `onListening(server)` hears the broker listening, before the browser starts.
 */
export async function startServe(lib, { yaml, onListening = () => {}, env = {} }) {
  const { prepareExtension, launchChromium } = lib.broker;
  const dataDir = tempDir("serve");
  writeFileSync(join(dataDir, "config.yaml"), yaml);
  const server = spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN, ...env }, dataDir);
  cleanups.push(server.stop);
  const { mcpUrl } = await withTimeout(server.urlPromise, 15_000, "tabrelay serve start-up");
  onListening(server);
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
  return { server, client, browser, toolsListChars, mcpUrl, dataDir };
}

export async function benchTabrelayServe(lib, site) {
  let rssSeries;
  // 10: the screenshot figure needs screenshots on.
  const { server, client, toolsListChars } = await startServe(lib, {
    yaml: allowYaml({ screenshots: true }),
    onListening: (s) => (rssSeries = { listening: procStatus(s.child.pid).rssMiB }),
  });
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
    const times = [];
    for (let i = 0; i < N.newsReads; i++) times.push((await timed(() => tabrelayRead(client, `${site.origin}${NEWS.path}`))).ms);
    news.time = readStats(times);
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

// The peers (@playwright/mcp, chrome-devtools-mcp) over stdio: how each is started and its figures.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { CLICK_BUTTON } from "../pages/make-interaction.mjs";
import {
  BENCH,
  CHROMIUM,
  CHROMIUM_FLAGS,
  MARKER,
  N,
  NEWS,
  callResult,
  callText,
  cleanups,
  descendants,
  killPids,
  message,
  pkgVersion,
  procStatus,
  readStats,
  startedPids,
  stats,
  tail,
  tempDir,
  timed,
  waitExit,
  withTimeout,
} from "./common.mjs";
import { peerInteraction, peerScreenshot, refOf, uidOf } from "./interaction.mjs";

// ---------------------------------------------------------------------------------------------------------------
// Peers over stdio.

export function peerSpecs(outDir) {
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
      command: [
        join(BENCH, "node_modules/@playwright/mcp/cli.js"),
        "--config",
        pwConfig,
        "--headless",
        "--isolated",
        "--no-sandbox",
        "--executable-path",
        CHROMIUM,
        "--output-dir",
        join(outDir, "playwright-output"),
      ],
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

export async function startPeer(lib, spec, cwd) {
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
  // Known once connected; the cleanup may run before that (a connect that failed).
  let pid = null;
  let tree = [];
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
    throw new Error(`${message(error)}\n${stderrTail()}`, { cause: error });
  }
  pid = transport.pid;
  if (pid) startedPids.add(pid);
  const rssConnected = pid ? procStatus(pid).rssMiB : undefined;
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

export async function benchPeer(lib, spec, site) {
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
      throw new Error(why, { cause: error });
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

    // 2b: the news page, one read checked, then N.newsReads timed, after the RSS figure (which stays the article workload's).
    try {
      const news = await withTimeout(spec.read(client, `${site.origin}${NEWS.path}`), 60_000, `${spec.label} news page read`);
      if (!news.text.includes(NEWS.check)) throw new Error(`the read of ${NEWS.path} returned something unexpected: ${news.text.slice(0, 300)}`);
      const times = [];
      for (let i = 0; i < N.newsReads; i++) times.push((await timed(() => spec.read(client, `${site.origin}${NEWS.path}`))).ms);
      result.news = { calls: spec.readLabel, chars: news.text.length, parts: news.parts, hasMarker: news.text.includes(NEWS.marker), time: readStats(times) };
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

// Figure 11 alone, for before/after work on the screenshot call:
//   node bench/lib/shotOnly.mjs [--calls=N] [--passes=N] [--only=extension,cdp,devtools] [--before=DIR] [--interleave]
// In one run, on the same page (/article) and with the same calls as the full bench (interaction.mjs: warm-ups first,
// each call >= SHOT_GAP_MS after the previous one returned): tabrelay through the extension (`tabrelay serve` + a
// headless Chromium carrying the extension, open_tab { active: true }), tabrelay over CDP (`tabrelay start --cdp
// --headless`), and chrome-devtools-mcp's take_screenshot after resize_page 1280x720 (the faster peer in the full bench).
// --before=DIR: a built checkout of an earlier commit (`git archive <commit> | tar -x -C DIR`, its node_modules, `node
// scripts/build.mjs`): tabrelay's two ways run from its CLI and extension too, beside this checkout's, in the same run.
// --passes=2 or more: the ways run again in reverse order (ABBA); each pass's median is printed, and the median of those.
// --interleave (for a busy machine): all ways start at once and their calls are taken in turn; calls x passes each.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import {
  CHROMIUM,
  CLI,
  MCP_TOKEN,
  N,
  PAIRING_TOKEN,
  ROOT,
  SHOT_GAP_MS,
  allowYaml,
  callResult,
  callText,
  cleanups,
  ensureBuilt,
  ensureInstalled,
  log,
  median,
  message,
  runCleanups,
  sleep,
  startSite,
  stats,
  tempDir,
  textOf,
  timed,
  track,
  withTimeout,
  loadLib,
} from "./common.mjs";
import { peerScreenshot, pngDims, resultSizes, tabrelayScreenshot } from "./interaction.mjs";
import { peerSpecs, startPeer } from "./peers.mjs";
import { connectHttp, spawnTabrelay } from "./tabrelay.mjs";

const option = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
N.screenshot = Number(option("calls") ?? N.screenshot);
const passes = Number(option("passes") ?? 1);
const only = option("only")?.split(",");
const beforeDir = option("before") && resolve(option("before"));

/** Where a tabrelay build is: this checkout's, or --before's. */
const builds = [
  { name: "", cli: CLI, extensionDir: join(ROOT, "packages/extension/dist") },
  ...(beforeDir ? [{ name: " (before)", cli: join(beforeDir, "packages/cli/bin/tabrelay.js"), extensionDir: join(beforeDir, "packages/extension/dist") }] : []),
];

/** `tabrelay serve` (with screenshots on) and a headless Chromium carrying the build's extension, as bench/lib/tabrelay.mjs startServe. */
async function startExtension(lib, build) {
  const dataDir = tempDir("shot-serve");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml({ screenshots: true }));
  const server = spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir, [], build.cli);
  cleanups.push(server.stop);
  try {
    const { mcpUrl } = await withTimeout(server.urlPromise, 15_000, "tabrelay serve start-up");
    const profileDir = tempDir("shot-serve-profile");
    const extensionDir = lib.broker.prepareExtension(profileDir, `ws://127.0.0.1:${new URL(mcpUrl).port}/bridge`, PAIRING_TOKEN, "bench chromium", {
      ...process.env,
      TABRELAY_EXTENSION_DIR: build.extensionDir,
    });
    const browser = lib.broker.launchChromium({ chromiumPath: CHROMIUM, profileDir, extensionDir, headless: true });
    track(browser);
    cleanups.push(() => browser.kill());
    const client = await connectHttp(lib, mcpUrl, MCP_TOKEN);
    cleanups.push(() => client.close());
    const deadline = Date.now() + 30_000;
    while ((await client.callTool({ name: "list_tabs", arguments: {} })).isError) {
      if (Date.now() > deadline) throw new Error("the extension did not connect to tabrelay serve");
      await sleep(50);
    }
    return { client, logs: server.stderr };
  } catch (error) {
    throw new Error(`${message(error)}\n${server.stderr().slice(-1500)}`, { cause: error });
  }
}

/** `tabrelay start --cdp --headless` (with screenshots on), as bench/lib/cdp.mjs runs it. */
async function startCdp(lib, build) {
  const dataDir = tempDir("shot-cdp");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml({ screenshots: true }));
  const proc = spawnTabrelay(
    ["start", "--cdp", "--headless", "--profile", join(dataDir, "profile")],
    { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: undefined, TABRELAY_PAIRING_TOKEN: undefined },
    dataDir,
    ["--no-sandbox"],
    build.cli,
  );
  cleanups.push(proc.stop);
  try {
    const { mcpUrl, token } = await withTimeout(proc.urlPromise, 30_000, "tabrelay start --cdp (MCP endpoint)");
    const client = await connectHttp(lib, mcpUrl, token);
    cleanups.push(() => client.close());
    return { client, logs: proc.stderr };
  } catch (error) {
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`, { cause: error });
  }
}

async function startDevtools(lib) {
  const spec = peerSpecs(tempDir("shot-peers")).devtools;
  const peer = await startPeer(lib, spec, tempDir("shot-devtools"));
  cleanups.push(() => peer.stop());
  return { client: peer.client, spec, logs: peer.stderrTail };
}

/** A tabrelay way's article tab (open_tab { active: true }) and its shot; the first one's link is fetched and checked. */
async function tabrelayShooter(client, site) {
  const opened = await callText(client, "open_tab", { url: `${site.origin}/article`, active: true });
  const tab = Number(/Opened tab (\d+)/.exec(opened)?.[1]);
  if (!Number.isInteger(tab)) throw new Error(`open_tab /article answered: ${opened.slice(0, 300)}`);
  const shoot = async () => {
    const text = textOf(await callResult(client, "screenshot", { tab }));
    const link = /(https?:\/\/\S+\/shots\/\S+)/.exec(text)?.[1];
    if (!link) throw new Error(`screenshot returned no link: ${text.slice(0, 300)}`);
    return link;
  };
  await sleep(SHOT_GAP_MS);
  const response = await fetch(await shoot());
  const png = pngDims(Buffer.from(await response.arrayBuffer()));
  if (response.status !== 200 || response.headers.get("content-type") !== "image/png" || !png) throw new Error(`the link answered ${response.status}`);
  return { shoot, size: png };
}

/** chrome-devtools-mcp: navigate to the article, resize_page 1280x720, and its shot (an inline PNG). */
async function devtoolsShooter(client, spec, site) {
  await spec.navigate(client, `${site.origin}/article`);
  await spec.resizeForScreenshot(client);
  const shoot = async () => {
    const image = resultSizes(await spec.screenshot(client)).images[0];
    if (!image?.width) throw new Error("take_screenshot returned no PNG");
    return image;
  };
  await sleep(SHOT_GAP_MS);
  return { shoot, size: await shoot() };
}

/** Runs every cleanup registered after the first `keep` (the local site is the first). */
async function runCleanupsFrom(keep) {
  while (cleanups.length > keep) {
    const fn = cleanups.pop();
    await withTimeout(Promise.resolve().then(fn), 15_000, "cleanup").catch((error) => log(`cleanup failed: ${message(error)}`));
  }
}

const fmt = (x) => `median ${x.median.toFixed(1)}, p90 ${x.p90.toFixed(1)}, min ${x.min.toFixed(1)} ms`;

/** The full bench's procedure, way after way: each in fresh processes, its calls timed by bench/lib/interaction.mjs. */
async function sequential(ways, site) {
  const times = Object.fromEntries(ways.map((w) => [w.key, []]));
  const sizes = {};
  const failures = {};
  for (let pass = 0; pass < passes; pass++) {
    for (const way of pass % 2 === 0 ? ways : [...ways].reverse()) {
      log(`pass ${pass + 1}: ${way.label} ...`);
      try {
        const started = await way.start();
        const out = await withTimeout(
          way.kind === "devtools" ? peerScreenshot(started.client, started.spec, site) : tabrelayScreenshot(started.client, site),
          120_000,
          way.label,
        );
        if (out.link && (out.link.status !== 200 || out.link.contentType !== "image/png" || !out.link.png))
          throw new Error(`its link answered ${JSON.stringify(out.link)}`);
        times[way.key].push(out.time);
        sizes[way.key] = out.link?.png ?? out.images?.[0];
      } catch (error) {
        log(`${way.label} failed: ${message(error)}`);
        failures[way.key] = message(error).split("\n")[0];
      } finally {
        await runCleanupsFrom(1);
      }
    }
  }
  return ways.map((way) => {
    const t = times[way.key];
    const failed = failures[way.key] ? ` (a pass failed: ${failures[way.key]})` : "";
    const size = sizes[way.key]?.width ? `${sizes[way.key].width}x${sizes[way.key].height} PNG` : "?";
    return t.length
      ? `  ${way.label}: ${median(t.map((x) => x.median)).toFixed(1)} ms [${t.map(fmt).join("; ")}] ${size}${failed}`
      : `  ${way.label}: failed${failed}`;
  });
}

/**
 * All ways at once, their calls taken in turn (the order rotating each round), each way's call >= SHOT_GAP_MS after its
 * previous one returned: a busy machine's drift falls on every way alike.
 */
async function interleaved(ways, site) {
  const shooters = [];
  for (const way of ways) {
    log(`starting ${way.label} ...`);
    const started = await way.start();
    shooters.push(await (way.kind === "devtools" ? devtoolsShooter(started.client, started.spec, site) : tabrelayShooter(started.client, site)));
  }
  const last = ways.map(() => 0);
  const samples = ways.map(() => []);
  const rounds = N.screenshotWarmup + N.screenshot * passes;
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < ways.length; k++) {
      const i = (round + k) % ways.length;
      const wait = last[i] + SHOT_GAP_MS - performance.now();
      if (wait > 0) await sleep(wait);
      const { ms } = await timed(shooters[i].shoot);
      last[i] = performance.now();
      if (round >= N.screenshotWarmup) samples[i].push(ms);
    }
  }
  await runCleanupsFrom(1);
  return ways.map((way, i) => `  ${way.label}: ${fmt(stats(samples[i]))} (n=${samples[i].length}) ${shooters[i].size.width}x${shooters[i].size.height} PNG`);
}

async function main() {
  ensureBuilt();
  ensureInstalled();
  const lib = await loadLib();
  const site = await startSite();
  const ways = [
    ...builds.map((b) => ({ key: `extension${b.name}`, kind: "extension", label: `tabrelay serve (extension)${b.name}`, start: () => startExtension(lib, b) })),
    ...builds.map((b) => ({ key: `cdp${b.name}`, kind: "cdp", label: `tabrelay start --cdp --headless${b.name}`, start: () => startCdp(lib, b) })),
    { key: "devtools", kind: "devtools", label: "chrome-devtools-mcp take_screenshot", start: () => startDevtools(lib) },
  ].filter((w) => !only || only.includes(w.kind));
  const lines = process.argv.includes("--interleave") ? await interleaved(ways, site) : await sequential(ways, site);
  const how = process.argv.includes("--interleave")
    ? `the ways' calls interleaved, ${N.screenshot * passes} timed calls each after ${N.screenshotWarmup} warm-ups`
    : `${N.screenshot} timed calls per pass after ${N.screenshotWarmup} warm-ups, ${passes} pass(es)`;
  process.stdout.write(`11. screenshot call of /article (each call >= ${SHOT_GAP_MS} ms after the way's previous one returned): ${how}\n${lines.join("\n")}\n`);
}

main()
  .catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => runCleanups());

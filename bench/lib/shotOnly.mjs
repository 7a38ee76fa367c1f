// Figure 11 alone, for before/after work on the screenshot call:
//   node bench/lib/shotOnly.mjs [--calls=N] [--passes=N] [--only=extension,cdp,devtools] [--before=DIR]
// In one run, on the same page (/article) and with the same calls as the full bench (interaction.mjs: warm-ups first,
// each call >= SHOT_GAP_MS after the previous one returned): tabrelay through the extension (`tabrelay serve` + a
// headless Chromium carrying the extension, open_tab { active: true }), tabrelay over CDP (`tabrelay start --cdp
// --headless`), and chrome-devtools-mcp's take_screenshot after resize_page 1280x720 (the faster peer in the full bench).
// --before=DIR: a built checkout of an earlier commit (`git archive <commit> | tar -x -C DIR`, its node_modules, `node
// scripts/build.mjs`): tabrelay's two ways run from its CLI and extension too, beside this checkout's, in the same run.
// --passes=2 or more: the ways run again in reverse order (ABBA); each pass's median is printed, and the median of those.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  CHROMIUM,
  CLI,
  MCP_TOKEN,
  N,
  PAIRING_TOKEN,
  ROOT,
  SHOT_GAP_MS,
  allowYaml,
  cleanups,
  ensureBuilt,
  ensureInstalled,
  log,
  median,
  message,
  runCleanups,
  sleep,
  startSite,
  tempDir,
  track,
  withTimeout,
} from "./common.mjs";
import { peerScreenshot, tabrelayScreenshot } from "./interaction.mjs";
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
async function viaExtension(lib, site, build) {
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
    return await withTimeout(tabrelayScreenshot(client, site), 120_000, "tabrelay serve screenshot");
  } catch (error) {
    throw new Error(`${message(error)}\n${server.stderr().slice(-1500)}`, { cause: error });
  } finally {
    await runCleanupsFrom(1);
  }
}

/** `tabrelay start --cdp --headless` (with screenshots on), as bench/lib/cdp.mjs runs it. */
async function viaCdp(lib, site, build) {
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
    return await withTimeout(tabrelayScreenshot(client, site), 120_000, "tabrelay --cdp screenshot");
  } catch (error) {
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`, { cause: error });
  } finally {
    await runCleanupsFrom(1);
  }
}

async function viaDevtools(lib, site) {
  const spec = peerSpecs(tempDir("shot-peers")).devtools;
  const peer = await startPeer(lib, spec, tempDir("shot-devtools"));
  try {
    return await withTimeout(peerScreenshot(peer.client, spec, site), 120_000, "chrome-devtools-mcp screenshot");
  } finally {
    await peer.stop();
    await runCleanupsFrom(1);
  }
}

/** Runs every cleanup registered after the first `keep` (the local site is the first). */
async function runCleanupsFrom(keep) {
  while (cleanups.length > keep) {
    const fn = cleanups.pop();
    await withTimeout(Promise.resolve().then(fn), 15_000, "cleanup").catch((error) => log(`cleanup failed: ${message(error)}`));
  }
}

const fmt = (s) => `median ${s.median.toFixed(1)}, p90 ${s.p90.toFixed(1)}, min ${s.min.toFixed(1)} ms`;

async function main() {
  ensureBuilt();
  ensureInstalled();
  const lib = {
    broker: await import(pathToFileURL(join(ROOT, "packages/broker/dist/index.js")).href),
    sdk: {
      ...(await import("@modelcontextprotocol/sdk/client/index.js")),
      ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      ...(await import("@modelcontextprotocol/sdk/client/stdio.js")),
    },
  };
  const site = await startSite();
  const ways = [
    ...builds.map((b) => ({
      key: `extension${b.name}`,
      kind: "extension",
      label: `tabrelay serve (extension)${b.name}`,
      run: () => viaExtension(lib, site, b),
    })),
    ...builds.map((b) => ({ key: `cdp${b.name}`, kind: "cdp", label: `tabrelay start --cdp --headless${b.name}`, run: () => viaCdp(lib, site, b) })),
    { key: "devtools", kind: "devtools", label: "chrome-devtools-mcp take_screenshot", run: () => viaDevtools(lib, site) },
  ].filter((w) => !only || only.includes(w.kind));
  const times = Object.fromEntries(ways.map((w) => [w.key, []]));
  const failures = {};
  const sizes = {};
  for (let pass = 0; pass < passes; pass++) {
    for (const way of pass % 2 === 0 ? ways : [...ways].reverse()) {
      log(`pass ${pass + 1}: ${way.label} ...`);
      try {
        const out = await way.run();
        if (out.link && (out.link.status !== 200 || out.link.contentType !== "image/png" || !out.link.png))
          throw new Error(`its link answered ${JSON.stringify(out.link)}`);
        times[way.key].push(out.time);
        const size = out.link?.png ?? out.images?.[0];
        sizes[way.key] = size?.width ? `${size.width}x${size.height} PNG` : "?";
      } catch (error) {
        log(`${way.label} failed: ${message(error)}`);
        failures[way.key] = message(error).split("\n")[0];
      }
    }
  }
  const lines = [
    `11. screenshot call of /article: ${N.screenshot} timed calls per pass after ${N.screenshotWarmup} warm-ups, each >= ${SHOT_GAP_MS} ms after the previous one returned; ${passes} pass(es)`,
  ];
  for (const way of ways) {
    const t = times[way.key];
    const failed = failures[way.key] ? ` (a pass failed: ${failures[way.key]})` : "";
    lines.push(
      t.length
        ? `  ${way.label}: ${median(t.map((s) => s.median)).toFixed(1)} ms [${t.map(fmt).join("; ")}] ${sizes[way.key]}${failed}`
        : `  ${way.label}: failed${failed}`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

main()
  .catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => runCleanups());

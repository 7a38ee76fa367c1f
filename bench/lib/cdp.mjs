// Figures 12-13 over CDP (each tool in a fresh process: navigate + snapshot, then memory) and figure 5 (cold start).
import { readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  CHROMIUM,
  MEMORY_GAP_MS,
  MEMORY_SETTLE_MS,
  N,
  allowYaml,
  callText,
  cleanups,
  descendants,
  log,
  median,
  message,
  round,
  runCleanupsExceptSite,
  sleep,
  stats,
  tempDir,
  textOf,
  withTimeout,
} from "./common.mjs";
import { startPeer } from "./peers.mjs";
import { connectHttp, spawnTabrelay } from "./tabrelay.mjs";

// ---------------------------------------------------------------------------------------------------------------
// 12-13: over CDP. Each tool in a fresh process: navigate + snapshot of the article, timed together, then the
// memory of the server process and its process tree (the browser) after that workload.

/** A process's memory from /proc/<pid>/smaps_rollup, in KiB (Rss, Pss, Pss_Anon, ...), or undefined. */
export function smapsRollup(pid) {
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
export function processOf(pid) {
  let exe = "?";
  let cmdline = "";
  try {
    exe = readlinkSync(`/proc/${pid}/exe`)
      .replace(/ \(deleted\)$/, "")
      .split("/")
      .at(-1);
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
export function treeMemory(rootPid) {
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
export async function sampleTreeMemory(pid) {
  await sleep(MEMORY_SETTLE_MS);
  const samples = [];
  for (let i = 0; i < N.memorySamples; i++) {
    if (i) await sleep(MEMORY_GAP_MS);
    samples.push(treeMemory(pid));
  }
  return samples;
}

/** N.cdpWarmup + N.cdpRounds rounds of navigate then snapshot; the timed ones are returned, apart and together. */
export async function navigateSnapshotRounds({ navigate, snapshot }) {
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
export async function cdpPassTabrelay(lib, site) {
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
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`, { cause: error });
  } finally {
    await client?.close().catch(() => {});
    await proc.stop();
    const i = cleanups.indexOf(proc.stop);
    if (i >= 0) cleanups.splice(i, 1);
  }
}

/** A peer: a fresh stdio server; navigate + snapshot (its browser starts on the first call). */
export async function cdpPassPeer(lib, spec, site) {
  const peer = await startPeer(lib, spec, tempDir(`cdp-${spec.label}`));
  try {
    if (!peer.pid) throw new Error("the stdio transport did not report the server's pid");
    const url = `${site.origin}/article`;
    const rounds = await navigateSnapshotRounds({ navigate: () => spec.navigate(peer.client, url), snapshot: () => spec.snapshot(peer.client) });
    const memory = await sampleTreeMemory(peer.pid);
    return { ...rounds, memory, pid: peer.pid };
  } catch (error) {
    throw new Error(`${message(error)}\n${peer.stderrTail()}`, { cause: error });
  } finally {
    peer.remember();
    await peer.stop();
  }
}

/** 12-13: N.cdpPasses passes over the three tools, the order reversed every other pass (ABBA). */
export async function benchCdp(lib, specs, site) {
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

export async function coldStartTabrelay(lib, site, bin = undefined) {
  const dataDir = tempDir("start");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const t0 = performance.now();
  // No tokens in the environment: they are generated, and the MCP one is read from the printed block, as a user would.
  const proc = spawnTabrelay(
    ["start", "--headless"],
    { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: undefined, TABRELAY_PAIRING_TOKEN: undefined },
    dataDir,
    [],
    bin,
  );
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

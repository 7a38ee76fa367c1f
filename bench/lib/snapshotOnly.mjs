// Figure 7 alone, for tabrelay: the snapshot of pages/big.html (10,000 elements), default result, timed end to end
// through MCP. Two ways: `tabrelay serve` + Chromium with the extension (as bench/run.mjs measures figure 7), and
// `tabrelay start --cdp --headless` (the CDP driver, same in-page code).
//
//   node bench/lib/snapshotOnly.mjs [--runs=N] [--only=extension|cdp] [--dump=DIR]
//
// --runs: timed snapshots per way (default 15, after 2 warm-ups). --dump: writes each way's default result for
// big.html to DIR/<way>.txt with the revision masked, to compare results before and after a change byte for byte.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CHROMIUM,
  allowYaml,
  callText,
  cleanups,
  ensureBuilt,
  log,
  message,
  runCleanups,
  runCleanupsExceptSite,
  startSite,
  stats,
  tempDir,
  timed,
  withTimeout,
  loadLib,
} from "./common.mjs";
import { connectHttp, spawnTabrelay, startServe } from "./tabrelay.mjs";

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const RUNS = Number(arg("runs") ?? 15);
const WARMUP = 2;
const ONLY = arg("only");
const DUMP = arg("dump");

const openTab = async (client, url) => {
  const tab = Number(/Opened tab (\d+)/.exec(await callText(client, "open_tab", { url }))?.[1]);
  if (!Number.isInteger(tab)) throw new Error(`open_tab ${url} gave no tab`);
  return tab;
};

/** Warm-ups, then RUNS timed default snapshots of `tab`; the cached page (revision) once more for scale. */
async function measure(client, tab, way) {
  const take = () => callText(client, "snapshot", { tab });
  let text = "";
  for (let i = 0; i < WARMUP; i++) text = await take();
  if (!/Lines 1-300 of 7,?501/.test(text)) throw new Error(`unexpected snapshot of big.html:\n${text.slice(-400)}`);
  if (DUMP) {
    mkdirSync(DUMP, { recursive: true });
    writeFileSync(
      join(DUMP, `${way}.txt`),
      text
        .replace(/r\d+-[0-9a-f]+/g, "REV")
        .replace(/tab(=| )\d+/g, "tab$1TAB")
        .replace(/127\.0\.0\.1:\d+/g, "SITE")
        .replace(/nonce="[0-9a-f]+"/g, 'nonce="NONCE"'),
    );
  }
  const samples = [];
  for (let i = 0; i < RUNS; i++) samples.push((await timed(take)).ms);
  const revision = /revision: (\S+)/.exec(await take())?.[1];
  const cached = [];
  for (let i = 0; i < RUNS; i++) cached.push((await timed(() => callText(client, "snapshot", { tab, revision }))).ms);
  return { walk: stats(samples), cached: stats(cached), samples: samples.map((x) => Math.round(x)) };
}

async function viaExtension(lib, site) {
  const { client } = await startServe(lib, { yaml: allowYaml() });
  return measure(client, await openTab(client, `${site.origin}/big`), "extension");
}

async function viaCdp(lib, site) {
  const dataDir = tempDir("snap-cdp");
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const proc = spawnTabrelay(
    ["start", "--cdp", "--headless", "--profile", join(dataDir, "profile")],
    { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: undefined, TABRELAY_PAIRING_TOKEN: undefined },
    dataDir,
    ["--no-sandbox"],
  );
  cleanups.push(proc.stop);
  const { mcpUrl, token } = await withTimeout(proc.urlPromise, 30_000, "tabrelay start --cdp (MCP endpoint)");
  const client = await connectHttp(lib, mcpUrl, token);
  cleanups.push(() => client.close());
  return measure(client, await openTab(client, `${site.origin}/big`), "cdp");
}

async function main() {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROME_PATH)`);
  ensureBuilt();
  const lib = await loadLib();
  const site = await startSite();
  const out = {};
  for (const [way, run] of [
    ["extension", viaExtension],
    ["cdp", viaCdp],
  ]) {
    if (ONLY && ONLY !== way) continue;
    log(`7: snapshot of big.html via ${way}, ${RUNS} timed ...`);
    const result = await run(lib, site);
    out[way] = result;
    await runCleanupsExceptSite();
    process.stdout.write(
      `7. snapshot, 10,000-element page (${way}): median ${result.walk.median} ms (p90 ${result.walk.p90}, min ${result.walk.min}, N=${result.walk.n}); ` +
        `the same page from the broker's copy (revision): ${result.cached.median} ms\n   samples: ${result.samples.join(" ")}\n`,
    );
  }
  return out;
}

main()
  .catch((error) => {
    process.stderr.write(`bench: ${message(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => runCleanups());

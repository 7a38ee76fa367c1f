// Figure 18 (issue 15, the stateless path): tabrelay's Workers bundle under workerd (the `workerd` npm package, started
// by packages/worker/local.mjs as the tests start it) driving a Chromium over CDP on loopback.
// 18a: cold start: workerd spawned to the first tool result (read_url of /article), the browser already running
//      (local.mjs returns once /health answers; the MCP handshake and the read follow).
// 18b: navigate + snapshot of /article, each round two requests (each connects to the browser and disconnects), beside
//      the Node broker over CDP (tabrelay start --cdp, one connection kept) and playwright-mcp, in the same run.
// `--only=worker` runs it alone.
import { performance } from "node:perf_hooks";
import { startWorkerd } from "../../packages/worker/local.mjs";
import { cdpPassPeer, cdpPassTabrelay, navigateSnapshotRounds } from "./cdp.mjs";
import { CHROMIUM, MCP_TOKEN, callText, cleanups, median, message, round, startedPids, stats, tempDir } from "./common.mjs";
import { peerSpecs } from "./peers.mjs";
import { connectHttp } from "./tabrelay.mjs";

const COLD_STARTS = 3;

/** workerd serving the bundle with these bindings (packages/worker/local.mjs), tracked for the bench's cleanup. */
async function spawnWorkerd(bindings) {
  const worker = await startWorkerd({ bindings });
  startedPids.add(worker.pid);
  const stop = async () => {
    await worker.stop();
    startedPids.delete(worker.pid);
  };
  cleanups.push(stop);
  return { url: worker.url, stop };
}

export async function benchWorker(lib, site) {
  const out = {};
  const browser = await lib.broker.launchLocalChromium({ chromiumPath: CHROMIUM, headless: true, extraArgs: ["--no-sandbox"] });
  cleanups.push(() => browser.close());
  const bindings = {
    TABRELAY_MCP_TOKEN: MCP_TOKEN,
    TABRELAY_CDP_URL: browser.endpoint,
    TABRELAY_CONFIG: 'policy:\n  read:\n    top_sites: 0\n    allow:\n      "127.0.0.1": [".*"]\n',
  };
  try {
    // 18a: spawn -> the first read_url's result.
    const cold = [];
    for (let i = 0; i < COLD_STARTS; i++) {
      const t0 = performance.now();
      const worker = await spawnWorkerd(bindings);
      const client = await connectHttp(lib, `${worker.url}/mcp`, MCP_TOKEN);
      const text = await callText(client, "read_url", { url: `${site.origin}/article` });
      if (!text.includes("Beneath the streets")) throw new Error(`the Worker's first read_url did not read the article: ${text.slice(0, 300)}`);
      cold.push(performance.now() - t0);
      await client.close();
      await worker.stop();
    }
    out.coldStart = { ms: round(median(cold), 0), runs: cold.map((ms) => round(ms, 0)) };

    // 18b: navigate + snapshot rounds through one Worker.
    const worker = await spawnWorkerd(bindings);
    const client = await connectHttp(lib, `${worker.url}/mcp`, MCP_TOKEN);
    const url = `${site.origin}/article`;
    const tab = Number(/tab (\d+)/i.exec(await callText(client, "open_tab", { url }))?.[1]);
    if (!Number.isInteger(tab)) throw new Error("the Worker's open_tab gave no tab");
    const rounds = await navigateSnapshotRounds({
      navigate: () => callText(client, "navigate", { tab, url }),
      snapshot: () => callText(client, "snapshot", { tab }),
    });
    out.worker = { total: stats(rounds.total), nav: stats(rounds.nav), snap: stats(rounds.snap), chars: rounds.snapshotChars };
    await client.close();
    await worker.stop();
  } catch (error) {
    out.error = message(error);
  }
  await browser.close();

  // The same rounds through the Node broker over CDP and playwright-mcp, each with its own browser, in this run.
  try {
    const node = await cdpPassTabrelay(lib, site);
    out.node = { total: stats(node.total), nav: stats(node.nav), snap: stats(node.snap) };
  } catch (error) {
    out.node = { error: message(error) };
  }
  try {
    const pw = await cdpPassPeer(lib, peerSpecs(tempDir("worker-peers")).playwright, site);
    out.playwright = { total: stats(pw.total), nav: stats(pw.nav), snap: stats(pw.snap) };
  } catch (error) {
    out.playwright = { error: message(error) };
  }
  return out;
}

export function workerRows(r) {
  if (!r) return [];
  const ms = (s) =>
    s?.error
      ? `failed: ${s.error.replace(/\s+/g, " ").slice(0, 70)}`
      : s
        ? `${round(s.total.median, 1)} ms (navigate ${round(s.nav.median, 1)} + snapshot ${round(s.snap.median, 1)}; N=${s.total.n})`
        : "n/a";
  return [
    {
      figure: "18. the stateless path (workerd): cold start, spawn to the first read_url result (median)",
      tabrelay: r.error ? `failed: ${r.error.slice(0, 80)}` : `${r.coldStart.ms} ms (${r.coldStart.runs.join(", ")})`,
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "    navigate + snapshot of /article: the Worker (a connection per request)",
      tabrelay: r.error ? "" : ms(r.worker),
      playwright: ms(r.playwright),
      devtools: "",
      target: "",
    },
    { figure: "    the same through the Node broker over CDP (tabrelay start --cdp)", tabrelay: ms(r.node), playwright: "", devtools: "", target: "" },
  ];
}

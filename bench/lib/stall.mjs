// Figure 14: a page cannot stall the broker.
import { writeFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { join } from "node:path";
import {
  CHROMIUM,
  MCP_TOKEN,
  PAIRING_TOKEN,
  allowYaml,
  callText,
  cleanups,
  message,
  quantile,
  round,
  runCleanupsExceptSite,
  sleep,
  stats,
  tempDir,
  textOf,
  timed,
  track,
  withTimeout,
} from "./common.mjs";
import { verdict } from "./output.mjs";
import { connectHttp, spawnTabrelay } from "./tabrelay.mjs";

// ---------------------------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------------------------
// 14: a page cannot stall the broker. One MCP session reads a hostile page (pages/builds-11mb.html: ~400 bytes
// whose script builds ~11 MB of paragraphs) while another session's cheap call (list_tabs) and GET /health are
// timed back to back. Fresh processes: `tabrelay serve` + Chromium with the extension, and `tabrelay start --cdp`.

export const STALL = { path: "/builds-11mb", reads: 2, idle: 50, readTimeoutMs: 120_000, probeEveryMs: 50 };

export async function stallPass(lib, site, driver) {
  const dataDir = tempDir(`stall-${driver}`);
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const proc =
    driver === "extension"
      ? spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir)
      : spawnTabrelay(
          ["start", "--cdp", "--headless", "--profile", join(dataDir, "profile")],
          { CHROME_PATH: CHROMIUM, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
          dataDir,
          ["--no-sandbox"],
        );
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
          const { ms, value } = await timed(() =>
            withTimeout(
              reader.callTool({ name: "read_url", arguments: { url: `${site.origin}${STALL.path}`, mode: "full" } }),
              STALL.readTimeoutMs,
              "read_url of the hostile page",
            ),
          );
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
        const probe =
          i % 2 === 0 ? timed(() => callText(prober, "list_tabs")).then((r) => listTabs.push(r.ms)) : timed(health).then((r) => healthMs.push(r.ms));
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
    throw new Error(`${message(error)}\n${proc.stderr().slice(-1500)}`, { cause: error });
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await runCleanupsExceptSite();
  }
}

/** What the read said about the page's size (its first line that names a limit), or its first lines. */
export function stallNote(text) {
  const line = text.split("\n").find((l) => /too large|limit|cut|truncat|plain text|budget|MiB|could not/i.test(l) && !l.startsWith("<page-content"));
  return (line ?? text.split("\n").slice(0, 2).join(" / ")).slice(0, 200);
}

export function tail99(values) {
  return { ...stats(values), p99: round(quantile(values, 0.99)) };
}

export async function benchStall(lib, site) {
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

export function stallRows(stall) {
  const cell = (driver, fn) =>
    stall?.[driver]?.error ? `failed: ${stall[driver].error.split("\n")[0].slice(0, 60)}` : stall?.[driver] ? fn(stall[driver]) : "n/a";
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

// 22. The extension in Firefox beside the same extension in Chromium (issue 29): figures 1, 2, 7 and 8 on one
// in-process broker per browser, the same pages, the same MCP client: list_tabs round trip, read_url of the article,
// snapshot of the 10,000-element page, click by ref. Firefox is Debian's firefox-esr (FIREFOX_PATH to choose another)
// with tabrelay's Firefox build, started as `tabrelay start --firefox` starts it (launch/firefox.ts); Chromium as
// figure 1's. Both headless. `--only=firefox` runs it alone.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connectHttp } from "./tabrelay.mjs";
import { tabrelayInteraction } from "./interaction.mjs";
import { CHROMIUM, MCP_TOKEN, N, PAIRING_TOKEN, allowYaml, callText, readStats, round, sleep, stats, tempDir, timed, track, MARKER } from "./common.mjs";
import { fmtMs } from "./output.mjs";

const READS = 10;

/** One browser on a fresh in-process broker: its figures, or { error }. */
async function oneBrowser(lib, site, which) {
  const b = lib.broker;
  const dataDir = tempDir(`ff-${which}`);
  writeFileSync(join(dataDir, "config.yaml"), allowYaml());
  const config = b.loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN } });
  const broker = new b.Broker({ config, log: b.silentLogger });
  const { port, url } = await broker.listen();
  const stops = [() => broker.close()];
  try {
    const profileDir = tempDir(`ff-${which}-profile`);
    const bridge = `ws://127.0.0.1:${port}/bridge`;
    let browser;
    if (which === "firefox") {
      const extensionDir = b.prepareExtension(profileDir, bridge, PAIRING_TOKEN, "bench firefox", process.env, { sourceDir: b.builtFirefoxExtensionDir() });
      b.prepareFirefoxProfile(profileDir, extensionDir);
      browser = b.launchFirefox({ firefoxPath: b.findFirefox(), profileDir, headless: true });
    } else {
      const extensionDir = b.prepareExtension(profileDir, bridge, PAIRING_TOKEN, "bench chromium");
      browser = b.launchChromium({ chromiumPath: CHROMIUM, profileDir, extensionDir, headless: true });
    }
    track(browser);
    stops.unshift(() => browser.kill());
    const deadline = Date.now() + 30_000;
    while (broker.registry.list().length === 0) {
      if (Date.now() > deadline) throw new Error(`the ${which} extension did not connect within 30 s`);
      await sleep(20);
    }
    const client = await connectHttp(lib, url, MCP_TOKEN);
    stops.unshift(() => client.close());
    const out = {};
    for (let i = 0; i < N.roundTripWarmup; i++) await callText(client, "list_tabs");
    const rt = [];
    for (let i = 0; i < N.roundTrip; i++) rt.push((await timed(() => callText(client, "list_tabs"))).ms);
    out.roundTrip = stats(rt);
    const reads = [];
    for (let i = 0; i < READS + 2; i++) {
      const r = await timed(() => callText(client, "read_url", { url: `${site.origin}/article` }));
      if (!r.value.includes(MARKER) && !r.value.includes("Beneath the streets"))
        throw new Error(`${which}: read_url of the article answered ${r.value.slice(0, 200)}`);
      if (i >= 2) reads.push(r.ms);
    }
    out.read = readStats(reads);
    const interaction = await tabrelayInteraction(client, site);
    out.snapshot = interaction.big.time;
    out.lastRowFound = interaction.big.lastRowFound;
    out.click = interaction.click;
    return out;
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  } finally {
    for (const stop of stops)
      await Promise.resolve()
        .then(stop)
        .catch(() => undefined);
  }
}

export async function benchFirefox(lib, site) {
  const chromium = await oneBrowser(lib, site, "chromium");
  const firefox = await oneBrowser(lib, site, "firefox");
  return { chromium, firefox };
}

export function firefoxRows(r) {
  const cell = (way, pick) => (way?.error ? `failed: ${way.error.replace(/\s+/g, " ").slice(0, 80)}` : pick(way));
  const row = (figure, pick) => ({ figure, chromium: cell(r.chromium, pick), firefox: cell(r.firefox, pick), ratio: ratio(r, pick) });
  return [
    row("22/1. list_tabs round trip (median)", (w) => fmtMs(w.roundTrip, 2)),
    row(`22/2. read_url of the article (median of ${READS})`, (w) => fmtMs(w.read)),
    row("22/7. snapshot of the 10,000-element page (median)", (w) => `${fmtMs(w.snapshot)}${w.lastRowFound ? "" : " (last row not found)"}`),
    row(
      "22/8. click by ref (median)",
      (w) => `${fmtMs(w.click.time)}${w.click.reactions === w.click.time.n ? "" : ` (${w.click.reactions}/${w.click.time.n} reactions seen)`}`,
    ),
  ].map(({ figure, chromium, firefox, ratio }) => ({
    figure,
    tabrelay: `Chromium ${chromium}; Firefox ${firefox}${ratio}`,
    playwright: "",
    devtools: "",
    target: "",
  }));
}

function ratio(r, pick) {
  if (r.chromium?.error || r.firefox?.error) return "";
  const n = (w) => Number.parseFloat(String(pick(w)));
  const value = n(r.firefox) / n(r.chromium);
  return Number.isFinite(value) ? ` (${round(value, 2)}x)` : "";
}

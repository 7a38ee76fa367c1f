// Firefox runs the extension's background as an event page, which Firefox suspends when it thinks it idle (issue 29):
// the link to the broker goes with it. A suspended page is woken by its keep-alive alarm (every 30 s) and dials
// again at once; one woken during a broker outage probes a loopback broker every 250 ms, as Chrome's worker does
// (connection.reconnect.test.ts). Firefox's own suspension is what is done here, through Marionette (the test's
// hands: about:debugging's "Terminate background script"), to the real add-on in a real headless Firefox.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIREFOX_ADDON_ID } from "../../packages/broker/src/index.js";
import {
  DRIVERS,
  allowYaml,
  article,
  call,
  connectClient,
  launchFirefoxBrowser,
  makeDataDir,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { FirefoxUi } from "../extensionUi.js";

const ALARM = "tabrelay-keepalive";
/** "Within a second" as a user notices it, with a little slack for a loaded CI machine (as connection.reconnect). */
const NOTICEABLE_MS = 1500;
/** An event page's start after its alarm (its scripts loaded again) and its dial: ~300 ms measured, 3 s allowed under load. */
const WAKE_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

describe.runIf(DRIVERS.includes("firefox"))("Firefox suspends the event page: the extension comes back and serves", () => {
  let site: TestSite;
  let broker: TestBroker;
  let dataDir: string;
  let browser: TestBrowser;
  let ui: FirefoxUi;
  const figures: string[] = [];

  const connected = () => broker.broker.registry.list().length > 0;
  /** Where the event page is: "running", "suspending", "stopped", as Firefox keeps it. */
  const backgroundState = async () =>
    String(
      await ui.marionette.chrome(
        `const { ExtensionParent } = ChromeUtils.importESModule("resource://gre/modules/ExtensionParent.sys.mjs");
         return ExtensionParent.GlobalManager.getExtension(arguments[0]).backgroundState;`,
        [FIREFOX_ADDON_ID],
      ),
    );
  /** When the keep-alive alarm fires next, in performance.now() time, asked of an extension page. */
  const nextAlarm = async () => {
    const popup = await ui.popup();
    try {
      return performance.now() + Number(await popup.eval(`browser.alarms.get(${JSON.stringify(ALARM)}).then((a) => a.scheduledTime - Date.now())`));
    } finally {
      await popup.close();
    }
  };

  beforeAll(async () => {
    site = await startSite();
    site.route("/article", article("Still here", 3, "Read after the wake-up."));
    dataDir = makeDataDir(allowYaml());
    broker = await startBroker({ dataDir });
    browser = await launchFirefoxBrowser(broker.port, undefined, "test firefox", { remote: true });
    await waitFor("the extension to connect", () => connected() || undefined, 40_000);
    ui = await FirefoxUi.open(browser.profileDir);
  }, 90_000);

  afterAll(async () => {
    console.log(`Firefox's event page suspended:\n${figures.join("\n")}`);
    ui?.close();
    await browser?.close();
    await broker?.close();
    await site?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("suspended while connected, it is woken by its alarm, pairs again, and reads", async () => {
    // Suspended at least 5 s before the alarm fires: one that fires while the page is being suspended would leave the
    // wake-up to the next one, 30 s on.
    let alarmAt = await nextAlarm();
    if (alarmAt - performance.now() < 5000) {
      await sleep(alarmAt + 1000 - performance.now());
      alarmAt = await nextAlarm();
    }
    expect(connected()).toBe(true);
    await ui.marionette.suspendBackground(FIREFOX_ADDON_ID);
    const suspendedAt = performance.now();
    expect(await backgroundState()).toBe("stopped");
    await waitFor("the broker to see the browser leave", () => (!connected() ? true : undefined), 5000);
    // Nothing wakes it before its alarm in this idle browser: no tab loads, no agent calls.
    const back = await waitFor("the browser back in the registry", () => (connected() ? performance.now() : undefined), 40_000);
    figures.push(
      `  suspended while connected: back ${((back - suspendedAt) / 1000).toFixed(1)} s later, ${Math.round(back - alarmAt)} ms after its alarm fired`,
    );
    // The alarm woke it, not anything sooner (alarmAt is read late by one Marionette round trip, never early).
    expect(back).toBeGreaterThan(alarmAt - WAKE_MS);
    expect(back - alarmAt).toBeLessThan(WAKE_MS);
    const client = await connectClient(broker.url);
    try {
      const read = await call(client, "read_url", { url: `${site.origin}/article` });
      expect(read.isError, read.text).toBe(false);
      expect(read.text).toContain("Read after the wake-up.");
    } finally {
      await client.close();
    }
  }, 90_000);

  it("suspended during a broker outage, the woken page probes and pairs within a second of the broker listening again", async () => {
    await waitFor("the browser paired", () => (connected() ? true : undefined), 40_000);
    await broker.close();
    await waitFor("the broker gone", () => (!connected() ? true : undefined));
    const port = broker.port;
    await ui.marionette.suspendBackground(FIREFOX_ADDON_ID);
    const suspendedAt = performance.now();
    expect(await backgroundState()).toBe("stopped");
    // The alarm wakes it; with no broker to dial, it keeps probing the loopback port.
    await waitFor("the alarm to wake the event page", async () => ((await backgroundState()) === "running" ? true : undefined), 40_000);
    const woken = performance.now() - suspendedAt;
    await sleep(3000); // an outage that goes on after the wake-up
    broker = await startBroker({ port, dataDir });
    const listening = performance.now();
    await waitFor("the browser back", () => (connected() ? true : undefined), 10_000);
    const ms = performance.now() - listening;
    figures.push(`  suspended during an outage: woken after ${(woken / 1000).toFixed(1)} s, paired ${Math.round(ms)} ms after the broker listened`);
    expect(ms).toBeLessThanOrEqual(NOTICEABLE_MS);
    const client = await connectClient(broker.url);
    try {
      expect((await call(client, "list_tabs")).isError).toBe(false);
    } finally {
      await client.close();
    }
  }, 90_000);
});

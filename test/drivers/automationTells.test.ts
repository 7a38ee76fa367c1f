// What a page can tell about the browser it runs in (issue 12, section 1): tabrelay's own browsers do not announce
// automation. navigator.webdriver is false on every driver (the CDP driver launches Chromium without the
// AutomationControlled blink feature; tabrelay's Firefox runs no remote protocol), and a console-serialisation probe
// (an Error whose `stack` getter runs only when an attached DevTools client serialises console arguments) stays
// silent on each.
// The tells that remain on the CDP path are stated in docs/servers.md ("What a page can tell").
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS, attachBrowser, call, connectClient, startBroker, startSite, type TestBroker, type TestSite } from "../harness.js";

const PROBE = `<html><head><title>Tells</title></head><body><p id="out">pending</p><script>
  let devtools = false;
  const bait = new Error("bait");
  Object.defineProperty(bait, "stack", { get() { devtools = true; return ""; } });
  console.debug(bait);
  setTimeout(() => {
    document.getElementById("out").textContent = "webdriver=" + navigator.webdriver + " devtools=" + devtools;
  }, 200);
</script></body></html>`;

describe.each(DRIVERS)("with the %s driver, a page", (driver) => {
  let site: TestSite;
  let broker: TestBroker;
  let client: Client;
  let stop: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    site = await startSite();
    site.route("/tells", PROBE);
    broker = await startBroker();
    // Each as tabrelay starts it: the extension in Chromium or in Firefox (no Marionette, no WebDriver BiDi), or
    // Chromium over CDP.
    const browser = await attachBrowser(broker, driver);
    stop = () => browser.close();
    client = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await stop();
    await broker?.close();
    await site?.close();
  });

  it("sees navigator.webdriver false, and no DevTools client serialising its console", async () => {
    const opened = await call(client, "open_tab", { url: `${site.origin}/tells` });
    expect(opened.isError).toBe(false);
    const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    const waited = await call(client, "wait_for", { tab, text: "webdriver=", timeout_ms: 5000 });
    expect(waited.isError).toBe(false);
    const read = await call(client, "read_page", { tab, mode: "full" });
    expect(read.text).toContain("webdriver=false");
    // The CDP driver never enables the Runtime domain, so console arguments are not serialised for it either.
    expect(read.text).toContain("devtools=false");
  }, 30_000);
});

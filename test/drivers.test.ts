// The same tools, the same policy and the same audit log whichever driver serves: this suite runs
// against the real extension and against the CDP driver, each with a real Chromium.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchLocalChromium } from "../packages/broker/src/index.js";
import { browserConnected, article, call, connectClient, launchBrowser, startBroker, startSite, waitFor, type TestBroker, type TestSite } from "./harness.js";

const drivers = ["extension", "cdp"] as const;

describe.each(drivers)("with the %s driver", (driver) => {
  let site: TestSite;
  let offsite: TestSite;
  let broker: TestBroker;
  let client: Client;
  let stopBrowser: () => Promise<void> = async () => undefined;

  const tabOf = (text: string) => Number(/Opened tab (\d+)/.exec(text)?.[1]);

  beforeAll(async () => {
    site = await startSite("127.0.0.1");
    offsite = await startSite("localhost");
    offsite.route("/secret", "<html><head><title>Secret</title></head><body><p>OFFSITE SECRET TEXT</p></body></html>");
    site.route("/article", article("Rivers of the North", 40, "This is the closing paragraph of the article."));
    site.route("/redirect-away", (_req, res) => {
      res.writeHead(302, { Location: `${offsite.origin}/secret` });
      res.end();
    });
    site.route("/js-away", `<html><head><title>Leaving</title></head><body><p>Soon elsewhere.</p><script>setTimeout(() => { location.href = "${offsite.origin}/secret"; }, 300)</script></body></html>`);
    site.route("/a", "<html><head><title>Page A</title></head><body><p>Alpha.</p></body></html>");
    site.route("/b", "<html><head><title>Page B</title></head><body><p>Beta.</p></body></html>");
    site.route(
      "/form",
      `<html><head><title>Form</title></head><body><form onsubmit="event.preventDefault();document.getElementById('out').textContent='Added: '+document.getElementById('n').value">
<label for="n">Name</label><input id="n"><button>Add to cart</button></form><p id="out">nothing yet</p>
<button id="buy" style="position:absolute;top:300px;left:20px;width:100px;height:30px">Buy</button>
<div style="position:absolute;top:280px;left:0;width:300px;height:100px;opacity:0.01;background:#fff"></div></body></html>`,
    );
    site.route("/nav", `<html><head><title>Nav</title></head><body><button onclick="location.href='/a'">Next</button></body></html>`);
    site.route(
      "/effects",
      `<html><head><title>Effects</title></head><body>
<button onclick="window.open('/b')">Popup</button>
<button onclick="location.href='/slow'">Slow</button>
<button onclick="history.pushState({}, '', '/effects#spa'); document.body.append('moved')">Spa</button>
<button>Nothing</button></body></html>`,
    );
    site.route("/slow", (_req, res) => {
      // The server takes 3 s to answer: the click's result must not wait for it.
      setTimeout(() => {
        res.writeHead(200, { "Content-Type": "text/html" });
        res.end("<html><head><title>Slow</title></head><body><p>Finally.</p></body></html>");
      }, 3000);
    });
    broker = await startBroker({
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^(Add to cart|Buy|Next|Popup|Slow|Spa|Nothing)$" }
    type:
      "127.0.0.1": { label: "^Name$" }
screenshots:
  enabled: true
`,
    });
    if (driver === "extension") {
      const browser = await launchBrowser(broker.port);
      stopBrowser = () => browser.close();
    } else {
      // Popups allowed, as for the extension's browser (harness.ts).
      const local = await launchLocalChromium({ chromiumPath: findChromium(), headless: true, extraArgs: ["--disable-popup-blocking"] });
      await broker.broker.attachCdp(local.endpoint, { label: "test cdp", ownsBrowser: true });
      stopBrowser = () => local.close();
    }
    await browserConnected(broker);
    client = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await broker?.close();
    await stopBrowser();
    await site?.close();
    await offsite?.close();
  });

  it("reads an article as Markdown and leaves no tab behind", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/article` });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toContain("Title (page text): «Rivers of the North»");
    expect(result.text).toContain("This is the closing paragraph of the article.");
    expect(result.text).toContain(`(${site.origin}/related)`);
    expect((await call(client, "list_tabs")).text).not.toContain("/article");
  });

  it("refuses a redirect that leaves the allowlist", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/redirect-away` });
    expect(result.text).toMatch(/^policy_denied: .*localhost/);
    expect(result.text).not.toContain("OFFSITE SECRET TEXT");
    expect((await call(client, "list_tabs")).text).not.toContain(offsite.origin);
  });

  it("resets a tab a script navigated off-policy", async () => {
    const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/js-away` })).text);
    await waitFor("the reset", async () => ((await call(client, "list_tabs")).text.includes("about:blank") ? true : undefined));
    expect((await call(client, "read_page", { tab })).text).not.toContain("OFFSITE SECRET TEXT");
    await call(client, "close_tab", { tab });
  });

  it("navigates, goes back and forward, and reloads", async () => {
    const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/a` })).text);
    expect((await call(client, "navigate", { tab, url: `${site.origin}/b` })).text).toContain(`URL (page text): «${site.origin}/b»`);
    expect((await call(client, "history", { tab, action: "back" })).text).toContain(`URL (page text): «${site.origin}/a»`);
    expect((await call(client, "history", { tab, action: "forward" })).text).toContain(`URL (page text): «${site.origin}/b»`);
    expect((await call(client, "history", { tab, action: "reload" })).text).toContain("Reloaded tab");
    await call(client, "close_tab", { tab });
  });

  it("fills and clicks by ref, refuses a covered button, and fails loud on a stale ref", async () => {
    const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/form`, active: true })).text);
    const refOf = (text: string, name: string) => new RegExp(`"${name}" \\[ref=([^\\]]+)\\]`).exec(text)?.[1];
    let snap = await call(client, "snapshot", { tab });
    let revision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect((await call(client, "fill", { tab, ref: refOf(snap.text, "Name"), revision, text: "Ada" })).isError).toBe(false);
    snap = await call(client, "snapshot", { tab });
    revision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect((await call(client, "click", { tab, ref: refOf(snap.text, "Add to cart"), revision })).isError).toBe(false);
    expect((await call(client, "read_page", { tab, mode: "full" })).text).toContain("Added: Ada");
    snap = await call(client, "snapshot", { tab });
    revision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect((await call(client, "click", { tab, ref: refOf(snap.text, "Buy"), revision })).text).toMatch(/^write_denied: .*cover/i);
    await call(client, "navigate", { tab, url: `${site.origin}/nav` });
    snap = await call(client, "snapshot", { tab });
    revision = /revision: (\S+)/.exec(snap.text)?.[1];
    const next = refOf(snap.text, "Next");
    expect((await call(client, "click", { tab, ref: next, revision })).text).toContain("the tab navigated to");
    expect((await call(client, "click", { tab, ref: next, revision })).text).toMatch(/^stale_ref:/);
    await call(client, "close_tab", { tab });
  });

  it("a click's result says what the page did: a tab it opened, a navigation still on its way, an in-page change, nothing", async () => {
    const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/effects` })).text);
    const click = async (name: string) => {
      const snap = await call(client, "snapshot", { tab });
      const revision = /revision: (\S+)/.exec(snap.text)?.[1];
      const ref = new RegExp(`"${name}" \\[ref=([^\\]]+)\\]`).exec(snap.text)?.[1];
      const started = Date.now();
      const result = await call(client, "click", { tab, ref, revision });
      return { text: result.text, ms: Date.now() - started };
    };
    const popup = await click("Popup");
    const opened = Number(/the page opened a new tab: (\d+)/.exec(popup.text)?.[1]);
    expect(opened, `${driver}: ${popup.text}`).toBeGreaterThan(0);
    expect((await call(client, "list_tabs")).text).toContain(`tab ${opened}:`);
    await call(client, "close_tab", { tab: opened });

    const nothing = await click("Nothing");
    expect(nothing.text).toMatch(/^clicked button "Nothing"/);
    expect(nothing.text).not.toMatch(/navigat|opened a new tab|stale/);

    const spa = await click("Spa");
    expect(spa.text).toContain("the page changed");
    expect(spa.text).toContain(`the tab navigated to «${site.origin}/effects#spa»`);

    // A navigation the server answers slowly is reported as under way, within the wait, not after the load.
    const slow = await click("Slow");
    expect(slow.text).toContain(`the page is navigating to «${site.origin}/slow»`);
    expect(slow.ms).toBeLessThan(2900);
    await call(client, "close_tab", { tab });
  });

  it("takes a screenshot behind a signed link", async () => {
    const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/a`, active: true })).text);
    const shot = await call(client, "screenshot", { tab });
    expect(shot.isError, shot.text).toBe(false);
    const link = /(http:\/\/\S+\/shots\/\S+)/.exec(shot.text)?.[1] ?? "";
    const response = await fetch(link);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).subarray(1, 4).toString()).toBe("PNG");
    await call(client, "close_tab", { tab });
  });

  it("records every call in the same audit log", () => {
    const tools = new Set(broker.broker.audit.list({ limit: 1000 }).map((r) => r.tool));
    for (const tool of ["read_url", "open_tab", "snapshot", "fill", "click", "screenshot"]) expect(tools.has(tool), tool).toBe(true);
    const browsers = new Set(broker.broker.audit.list({ limit: 1000 }).map((r) => r.browser ?? ""));
    expect([...browsers].some((b) => b.includes(driver === "cdp" ? "test cdp" : "test chromium"))).toBe(true);
  });
});

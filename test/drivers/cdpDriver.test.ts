// The CDP driver against a real Chromium and a local test site: no mocks. One browser is launched for
// most tests (tabrelay owns it); the disconnect, close and attach tests start browsers of their own.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { inflateSync } from "node:zlib";
import type { ActParams, BridgeEvent, BridgeMethod, FrameSnapshot, ParamsOf, Result, ResultOf, WireError } from "@tabrelay/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CdpBrowser } from "../../packages/broker/src/drivers/cdp/cdpBrowser.js";
import { nodeCdpScripts } from "../../packages/broker/src/drivers/cdp/nodeScripts.js";
import { gateNewTab } from "../../packages/broker/src/gate/decisions.js";
import { nodeCdpSocket } from "../../packages/broker/src/drivers/cdp/nodeSocket.js";
import { CdpClient } from "../../packages/broker/src/drivers/cdp/cdpClient.js";
import { launchLocalChromium, type LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { findChromium } from "../../packages/broker/src/launch/chromium.js";
import { judgedFingerprint } from "../../packages/broker/src/tools/act.js";
import { decodeNodes } from "../../packages/broker/src/tools/snapshot.js";

/** What a Node host passes the CDP driver: the socket over ws, the in-page scripts read from disk. */
// Whose a new page is: the broker's rule, as it hands it to the driver.
const NODE_CDP = { socket: nodeCdpSocket, scripts: nodeCdpScripts, agentTab: gateNewTab };

// ---- a local site ------------------------------------------------------------------------------

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Site {
  port: number;
  /** The same server under two names: different sites to Chromium, so frames across them are out of process. */
  a: string;
  b: string;
  hits: Map<string, number>;
  route(path: string, handler: Handler | string): void;
  close(): Promise<void>;
}

async function startSite(): Promise<Site> {
  const routes = new Map<string, Handler>();
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const handler = routes.get(path);
    if (handler) handler(req, res);
    else {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found");
    }
  });
  // "::" accepts IPv4 too: Chromium may try ::1 first for "localhost".
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? (address satisfies AddressInfo).port : 0;
  return {
    port,
    a: `http://127.0.0.1:${port}`,
    b: `http://localhost:${port}`,
    hits,
    route(path, handler) {
      routes.set(
        path,
        typeof handler === "string"
          ? (_req, res) => {
              res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
              res.end(handler);
            }
          : handler,
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ---- PNG reading (independent of the driver) ----------------------------------------------------

function pngInfo(base64: string): { width: number; height: number; firstPixel: number[] } {
  const bytes = Buffer.from(base64, "base64");
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 3;
  const idat: Buffer[] = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      channels = data[9] === 6 ? 4 : 3;
    }
    if (type === "IDAT") idat.push(data);
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  // First scanline, first pixel: filter type 0 (None) or 1 (Sub) leave it as stored.
  return { width, height, firstPixel: [...raw.subarray(1, 1 + channels)] };
}

// ---- helpers -------------------------------------------------------------------------------------

async function ok<M extends BridgeMethod>(browser: CdpBrowser, method: M, params: ParamsOf<M>, timeoutMs?: number): Promise<ResultOf<M>> {
  const result = await browser.call(method, params, timeoutMs === undefined ? {} : { timeoutMs });
  if (!result.ok) throw new Error(`${method} failed: ${result.error.code}: ${result.error.message}`);
  return result.value;
}

/**
 * A write action as the broker sends it: the element's facts first (page.inspect, what the gate judges), then the
 * action with those facts for the page to check again.
 */
async function act(browser: CdpBrowser, params: ActParams): Promise<ResultOf<"page.act">> {
  const facts = await ok(browser, "page.inspect", {
    tabId: params.tabId,
    ref: params.ref,
    revision: params.revision,
    action: params.action,
    ...(params.value !== undefined ? { value: params.value } : {}),
  });
  return ok(browser, "page.act", { ...params, expect: judgedFingerprint(facts) });
}

async function fails<M extends BridgeMethod>(browser: CdpBrowser, method: M, params: ParamsOf<M>): Promise<WireError> {
  const result: Result<ResultOf<M>> = await browser.call(method, params);
  if (result.ok) throw new Error(`${method} succeeded; expected a failure`);
  return result.error;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function refOf(frames: FrameSnapshot[], role: string, name: string): string {
  for (const frame of frames) {
    const node = decodeNodes(frame.nodes).find((n) => n.role === role && n.name === name && n.ref);
    if (node?.ref) return node.ref;
  }
  throw new Error(`no ${role} "${name}" with a ref in the snapshot: ${JSON.stringify(frames.map((f) => f.nodes))}`);
}

let revisions = 0;
const nextRevision = () => `r${++revisions}`;

const CHROMIUM = findChromium();
const FLAGS = ["--site-per-process", "--disable-popup-blocking"];

// ---- the shared browser --------------------------------------------------------------------------

let site: Site;
let denied: Site;
let launched: LaunchedCdpBrowser;
let browser: CdpBrowser;
const events: BridgeEvent[] = [];

beforeAll(async () => {
  site = await startSite();
  denied = await startSite();
  const deniedOrigin = `http://127.0.0.1:${denied.port}`;
  const deniedOtherSite = `http://localhost:${denied.port}`;
  site.route("/page1", `<html><head><title>Page One</title></head><body><h1>One</h1><p>First page.</p></body></html>`);
  site.route("/page2", `<html><head><title>Page Two</title></head><body><h1>Two</h1><p>Second page.</p></body></html>`);
  site.route("/redirect", (_req, res) => {
    res.writeHead(302, { Location: "/landing" });
    res.end();
  });
  site.route("/js-redirect", `<html><head><title>Leaving</title></head><body><script>location.replace("/landing?via=js")</script></body></html>`);
  site.route("/landing", `<html><head><title>Landing</title></head><body><p>You have landed.</p></body></html>`);
  site.route(
    "/form",
    `<html><head><title>Form</title></head><body>
      <label>Your name <input id="name" type="text"></label>
      <button id="greet" onclick="document.getElementById('out').textContent = 'Hello ' + document.getElementById('name').value">Greet</button>
      <div id="out"></div>
      <a href="/page2">Go to two</a>
    </body></html>`,
  );
  site.route(
    "/framed",
    `<html><head><title>Outer</title></head><body style="margin:0">
      <h1>Outer page</h1>
      <div style="height:50px"></div>
      <iframe id="inner" src="${site.b}/inner" style="position:absolute;left:40px;top:120px;width:400px;height:200px;border:5px solid black"></iframe>
      <iframe id="same" src="/same-inner" style="position:absolute;left:500px;top:120px;width:300px;height:200px;border:0"></iframe>
    </body></html>`,
  );
  site.route(
    "/same-inner",
    `<html><head><title>Same origin</title></head><body style="margin:0">
      <button style="margin:20px" onclick="this.textContent = 'Done here'">Same press</button>
    </body></html>`,
  );
  site.route(
    "/inner",
    `<html><head><title>Inner</title></head><body style="margin:0">
      <button id="press" style="margin:10px" onclick="this.textContent = 'Pressed inside'">Press me</button>
    </body></html>`,
  );
  site.route(
    "/later",
    `<html><head><title>Later</title></head><body><p>Waiting.</p><script>setTimeout(() => { const p = document.createElement("p"); p.textContent = "The answer is ready"; document.body.append(p); }, 400)</script></body></html>`,
  );
  site.route(
    "/colors",
    `<html><head><title>Colors</title></head><body style="margin:0">
      <div style="height:1000px;background:rgb(255,0,0)"></div><div style="height:1000px;background:rgb(0,0,255)"></div>
    </body></html>`,
  );
  site.route(
    "/images",
    `<html><head><title>Images</title></head><body><p id="log"></p><script>
      const log = (t) => { document.getElementById("log").textContent += t + "; "; };
      for (const [name, url] of [["allowed", "${site.a}/pixel.png"], ["denied", "${deniedOrigin}/pixel.png"]]) {
        const img = new Image();
        img.onload = () => log(name + " image loaded");
        img.onerror = () => log(name + " image failed");
        img.src = url;
      }
      fetch("${deniedOrigin}/data").then(() => log("denied fetch answered"), () => log("denied fetch failed"));
      const worker = new Worker(URL.createObjectURL(new Blob([\`fetch("${deniedOrigin}/data?from=worker").then(() => postMessage("answered"), () => postMessage("failed"))\`], { type: "text/javascript" })));
      worker.onmessage = (e) => log("worker fetch " + e.data);
    </script>
    <iframe src="${site.b}/inner-images"></iframe>
    <iframe src="${deniedOtherSite}/data"></iframe>
    </body></html>`,
  );
  // Out of process (localhost vs 127.0.0.1): its requests go through its own DevTools session.
  site.route("/inner-images", `<html><body><img src="${deniedOrigin}/pixel.png?from=oopif"><img src="${site.b}/oopif-pixel.png"></body></html>`);
  const pixel = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");
  for (const s of [site, denied]) {
    for (const path of ["/pixel.png", "/oopif-pixel.png"])
      s.route(path, (_req, res) => {
        res.writeHead(200, { "Content-Type": "image/png", "Access-Control-Allow-Origin": "*" });
        res.end(pixel);
      });
    s.route("/data", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/plain", "Access-Control-Allow-Origin": "*" });
      res.end("data");
    });
  }
  site.route("/opener", `<html><head><title>Opener</title></head><body><button onclick="window.open('/page2')">Open a tab</button></body></html>`);

  launched = await launchLocalChromium({ chromiumPath: CHROMIUM, headless: true, extraArgs: FLAGS });
  browser = await CdpBrowser.connect(launched.endpoint, {
    ...NODE_CDP,
    label: "cdp test",
    ownsBrowser: true,
    onEvent: (frame) => events.push(frame),
    requestPolicy: (url) => !url.startsWith(deniedOrigin) && !url.startsWith(deniedOtherSite),
    callTimeoutMs: 30_000,
  });
});

afterAll(async () => {
  browser?.close("test done");
  await launched?.close();
  await site?.close();
  await denied?.close();
});

describe("CDP driver: tabs", () => {
  it("describes itself as a CDP browser", async () => {
    expect(browser.info.kind).toBe("cdp");
    expect(browser.info.label).toBe("cdp test");
    expect(browser.info.userAgent).toMatch(/Chrome\//);
    expect((await ok(browser, "browser.ping", {})).now).toBeGreaterThan(0);
  });

  it("opens, lists, gets, navigates, goes back and forward, reloads and closes a tab", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/page1` });
    expect(tab).toMatchObject({ url: `${site.a}/page1`, title: "Page One", status: "complete", shared: false });
    expect(tab.active).toBe(true);
    const listed = await ok(browser, "tabs.list", {});
    expect(listed.tabs.map((t) => t.tabId)).toContain(tab.tabId);
    expect((await ok(browser, "tabs.get", { tabId: tab.tabId })).tab.title).toBe("Page One");

    const second = await ok(browser, "tabs.navigate", { tabId: tab.tabId, url: `${site.a}/page2` });
    expect(second.tab).toMatchObject({ url: `${site.a}/page2`, title: "Page Two", status: "complete" });
    const back = await ok(browser, "tabs.history", { tabId: tab.tabId, action: "back" });
    expect(back.tab).toMatchObject({ url: `${site.a}/page1`, title: "Page One", status: "complete" });
    // The tab's history starts at the page it was opened on, as with chrome.tabs.create.
    const none = await fails(browser, "tabs.history", { tabId: tab.tabId, action: "back" });
    expect(none.code).toBe("navigation_failed");
    expect(none.message).toMatch(/no page before/);
    const forward = await ok(browser, "tabs.history", { tabId: tab.tabId, action: "forward" });
    expect(forward.tab.url).toBe(`${site.a}/page2`);
    const hitsBefore = site.hits.get("/page2") ?? 0;
    const reloaded = await ok(browser, "tabs.history", { tabId: tab.tabId, action: "reload" });
    expect(reloaded.tab).toMatchObject({ url: `${site.a}/page2`, status: "complete" });
    expect(site.hits.get("/page2")).toBe(hitsBefore + 1);

    expect(await ok(browser, "tabs.close", { tabId: tab.tabId })).toEqual({ closed: true });
    expect((await ok(browser, "tabs.list", {})).tabs.map((t) => t.tabId)).not.toContain(tab.tabId);
    expect((await fails(browser, "tabs.get", { tabId: tab.tabId })).code).toBe("no_such_tab");
    expect((await fails(browser, "tabs.get", { tabId: 987_654 })).code).toBe("not_agent_tab");
  });

  it("reads a page's content", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/page1` });
    const content = await ok(browser, "page.content", { tabId: tab.tabId });
    expect(content.url).toBe(`${site.a}/page1`);
    expect(content.title).toBe("Page One");
    expect(content.html).toMatch(/^<html><head><title>Page One<\/title>/);
    expect(content.html).toContain("<p>First page.</p>");
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("follows an HTTP redirect and a script redirect to the final page, and reports each commit", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: "about:blank" });
    const mark = events.length;
    const redirected = await ok(browser, "tabs.navigate", { tabId: tab.tabId, url: `${site.a}/redirect` });
    expect(redirected.tab).toMatchObject({ url: `${site.a}/landing`, title: "Landing", status: "complete" });
    const committed = () => events.slice(mark).flatMap((e) => (e.event === "tab.committed" && e.params.tabId === tab.tabId ? [e.params.url] : []));
    expect(committed()).toContain(`${site.a}/landing`);
    expect(committed()).not.toContain(`${site.a}/redirect`);

    const scripted = await ok(browser, "tabs.navigate", { tabId: tab.tabId, url: `${site.a}/js-redirect` });
    expect(scripted.tab.url).toBe(`${site.a}/landing?via=js`);
    expect(scripted.tab.status).toBe("complete");
    expect(committed()).toEqual(expect.arrayContaining([`${site.a}/js-redirect`, `${site.a}/landing?via=js`]));
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("fails a navigation that cannot load with navigation_failed and the network error", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/page1` });
    const port = await closedPort();
    const error = await fails(browser, "tabs.navigate", { tabId: tab.tabId, url: `http://127.0.0.1:${port}/` });
    expect(error.code).toBe("navigation_failed");
    expect(error.message).toContain("net::ERR_CONNECTION_REFUSED");
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("announces a tab an agent page opens, and lists it as the agent's", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/opener` });
    const mark = events.length;
    const { frames } = await ok(browser, "page.snapshot", { tabId: tab.tabId, revision: nextRevision(), interactiveOnly: true, viewportOnly: false });
    const revision = `r${revisions}`;
    await act(browser, { tabId: tab.tabId, ref: refOf(frames, "button", "Open a tab"), revision, action: "click" });
    const created = await until("tab.created", () => events.slice(mark).find((e) => e.event === "tab.created"));
    if (created.event !== "tab.created") throw new Error("unreachable");
    expect(created.params.openerTabId).toBe(tab.tabId);
    const popup = created.params.tab.tabId;
    await until("the popup to commit page2", () =>
      events.slice(mark).find((e) => e.event === "tab.committed" && e.params.tabId === popup && e.params.url === `${site.a}/page2`),
    );
    expect((await ok(browser, "tabs.list", {})).tabs.map((t) => t.tabId)).toContain(popup);
    // The popup opened in front of its opener; the opener is still captured, twice in a row.
    for (let i = 0; i < 2; i++) expect(pngInfo((await ok(browser, "page.capture", { tabId: tab.tabId, activate: false })).png).width).toBeGreaterThan(500);
    const mark2 = events.length;
    await ok(browser, "tabs.close", { tabId: tab.tabId });
    // A tab closed by other means than tabs.close is reported.
    const raw = await CdpClient.connect(launched.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
    if (!raw.ok) throw new Error(raw.error.message);
    const targets = await raw.value.send("Target.getTargets");
    const infos = targets.ok && Array.isArray(targets.value["targetInfos"]) ? targets.value["targetInfos"] : [];
    const target = infos.find((t: unknown) => typeof t === "object" && t !== null && "url" in t && t.url === `${site.a}/page2`);
    const targetId = typeof target === "object" && target !== null && "targetId" in target ? target.targetId : undefined;
    expect(typeof targetId).toBe("string");
    await raw.value.send("Target.closeTarget", { targetId: String(targetId) });
    raw.value.close();
    await until("tab.removed", () => events.slice(mark2).find((e) => e.event === "tab.removed" && e.params.tabId === popup));
  });
});

describe("CDP driver: pages", () => {
  it("snapshots a form, fills a field and clicks a button", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/form` });
    const revision = nextRevision();
    const { frames } = await ok(browser, "page.snapshot", { tabId: tab.tabId, revision, interactiveOnly: false, viewportOnly: false });
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ frameId: 0, parentFrameId: -1, url: `${site.a}/form`, title: "Form" });
    const field = refOf(frames, "textbox", "Your name");
    const button = refOf(frames, "button", "Greet");
    const facts = await ok(browser, "page.inspect", { tabId: tab.tabId, ref: field, revision });
    expect(facts).toMatchObject({ ref: field, role: "textbox", name: "Your name", editable: true, disabled: false, frameUrl: `${site.a}/form` });

    const filled = await act(browser, { tabId: tab.tabId, ref: field, revision, action: "fill", value: "Ada" });
    expect(filled.effects.done).toContain('value is now "Ada"');
    const clicked = await act(browser, { tabId: tab.tabId, ref: button, revision, action: "click" });
    expect(clicked.facts).toMatchObject({ ref: button, role: "button", name: "Greet" });
    expect(clicked.effects.domChanged).toBeGreaterThan(0);
    const content = await ok(browser, "page.content", { tabId: tab.tabId });
    expect(content.html).toContain('<div id="out">Hello Ada</div>');

    const box = await ok(browser, "page.rect", { tabId: tab.tabId, ref: button, revision });
    expect(box.width).toBeGreaterThan(10);
    expect(box.height).toBeGreaterThan(5);
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("keeps the in-page script out of the page's reach", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/form` });
    await ok(browser, "page.snapshot", { tabId: tab.tabId, revision: nextRevision(), interactiveOnly: true, viewportOnly: false });
    // The page's own world: a click handler it owns reports whether it can see the API.
    const raw = await CdpClient.connect(launched.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
    if (!raw.ok) throw new Error(raw.error.message);
    const targets = await raw.value.send("Target.getTargets");
    const infos = targets.ok && Array.isArray(targets.value["targetInfos"]) ? targets.value["targetInfos"] : [];
    const target = infos.find((t: unknown) => typeof t === "object" && t !== null && "url" in t && t.url === `${site.a}/form`);
    const targetId = typeof target === "object" && target !== null && "targetId" in target ? target.targetId : undefined;
    const attached = await raw.value.send("Target.attachToTarget", { targetId: String(targetId), flatten: true });
    const sessionId = attached.ok && typeof attached.value["sessionId"] === "string" ? attached.value["sessionId"] : undefined;
    const seen = await raw.value.send("Runtime.evaluate", { expression: "typeof globalThis.__tabrelayInpage", returnByValue: true }, sessionId);
    raw.value.close();
    expect(seen.ok && seen.value["result"]).toEqual({ type: "string", value: "undefined" });
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("snapshots and acts inside an out-of-process cross-origin iframe and a same-process one", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/framed` });
    // The iframe is its own target (out of process) under --site-per-process.
    const raw = await CdpClient.connect(launched.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
    if (!raw.ok) throw new Error(raw.error.message);
    const targets = await raw.value.send("Target.getTargets");
    raw.value.close();
    const infos = targets.ok && Array.isArray(targets.value["targetInfos"]) ? targets.value["targetInfos"] : [];
    expect(
      infos.some((t: unknown) => typeof t === "object" && t !== null && "type" in t && t.type === "iframe" && "url" in t && t.url === `${site.b}/inner`),
    ).toBe(true);

    const revision = nextRevision();
    const { frames } = await ok(browser, "page.snapshot", { tabId: tab.tabId, revision, interactiveOnly: false, viewportOnly: false });
    expect(frames).toHaveLength(3);
    expect(frames[0]).toMatchObject({ frameId: 0, parentFrameId: -1, url: `${site.a}/framed` });
    const inner = frames.find((f) => f.url === `${site.b}/inner`);
    expect(inner).toMatchObject({ parentFrameId: 0, title: "Inner" });
    expect(inner?.frameId).toBeGreaterThan(0);
    const button = refOf(frames, "button", "Press me");
    expect(button).toMatch(new RegExp(`^f${inner?.frameId}e\\d+$`));

    const facts = await ok(browser, "page.inspect", { tabId: tab.tabId, ref: button, revision });
    expect(facts).toMatchObject({ ref: button, role: "button", frameUrl: `${site.b}/inner` });
    // Rect is relative to the top frame's viewport: iframe at (40, 120) + 5px border + the button's 10px margin.
    const box = await ok(browser, "page.rect", { tabId: tab.tabId, ref: button, revision });
    expect(box.x).toBeCloseTo(55, 0);
    expect(box.y).toBeCloseTo(135, 0);

    // The same-process iframe: its own frame key, its own document.
    const same = frames.find((f) => f.url === `${site.a}/same-inner`);
    expect(same).toMatchObject({ parentFrameId: 0, title: "Same origin" });
    const sameButton = refOf(frames, "button", "Same press");
    expect(sameButton).toMatch(new RegExp(`^f${same?.frameId}e\\d+$`));
    expect(same?.frameId).not.toBe(inner?.frameId);
    const sameBox = await ok(browser, "page.rect", { tabId: tab.tabId, ref: sameButton, revision });
    expect(sameBox.x).toBeCloseTo(520, 0);
    expect(sameBox.y).toBeCloseTo(140, 0);
    const sameClick = await act(browser, { tabId: tab.tabId, ref: sameButton, revision, action: "click" });
    expect(sameClick.effects.domChanged).toBeGreaterThan(0);

    const acted = await act(browser, { tabId: tab.tabId, ref: button, revision, action: "click" });
    expect(acted.facts).toMatchObject({ ref: button, name: "Press me", frameUrl: `${site.b}/inner` });
    expect(acted.effects.domChanged).toBeGreaterThan(0);

    // Each click changed its own frame's document.
    const after = await ok(browser, "page.snapshot", { tabId: tab.tabId, revision: nextRevision(), interactiveOnly: false, viewportOnly: false });
    const names = (url: string) => decodeNodes(after.frames.find((f) => f.url === url)?.nodes ?? "").map((n) => n.name);
    expect(names(`${site.b}/inner`)).toContain("Pressed inside");
    expect(names(`${site.a}/same-inner`)).toContain("Done here");
    expect(names(`${site.a}/framed`)).toContain("Outer page");
    // Frame keys are stable across snapshots of the same document.
    expect(after.frames.find((f) => f.url === `${site.b}/inner`)?.frameId).toBe(inner?.frameId);
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("refuses a ref after the page navigated, and a ref from an older snapshot", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/form` });
    const first = nextRevision();
    const snap1 = await ok(browser, "page.snapshot", { tabId: tab.tabId, revision: first, interactiveOnly: true, viewportOnly: false });
    const button = refOf(snap1.frames, "button", "Greet");
    const second = nextRevision();
    await ok(browser, "page.snapshot", { tabId: tab.tabId, revision: second, interactiveOnly: true, viewportOnly: false });
    const older = await fails(browser, "page.act", { tabId: tab.tabId, ref: button, revision: first, action: "click" });
    expect(older.code).toBe("stale_ref");

    await ok(browser, "tabs.navigate", { tabId: tab.tabId, url: `${site.a}/form?again` });
    const navigated = await fails(browser, "page.act", { tabId: tab.tabId, ref: button, revision: second, action: "click" });
    expect(navigated.code).toBe("stale_ref");
    expect(navigated.message).toMatch(/navigated|reloaded/);
    const content = await ok(browser, "page.content", { tabId: tab.tabId });
    expect(content.html).toContain('<div id="out"></div>');
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("waits for text to appear, and times out on text that never does", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/later`, waitUntil: "commit" });
    const waited = await ok(browser, "page.wait", { tabId: tab.tabId, text: "The answer is ready", timeoutMs: 5000 });
    expect(waited.matched).toContain("The answer is ready");
    expect(waited.elapsedMs).toBeLessThan(5000);
    const never = await fails(browser, "page.wait", { tabId: tab.tabId, text: "Never written", timeoutMs: 300 });
    expect(never.code).toBe("wait_timeout");
    const url = await ok(browser, "page.wait", { tabId: tab.tabId, urlIncludes: "/later", timeoutMs: 500 });
    expect(url.matched).toContain("/later");
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("captures real PNGs: the viewport, a clip and the full page", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/colors` });
    const shot = await ok(browser, "page.capture", { tabId: tab.tabId, activate: false });
    const viewport = pngInfo(shot.png);
    expect(shot.width).toBe(viewport.width);
    expect(shot.height).toBe(viewport.height);
    expect(viewport.width).toBeGreaterThan(500);
    expect(viewport.firstPixel.slice(0, 3)).toEqual([255, 0, 0]);
    expect(shot.url).toBe(`${site.a}/colors`);
    expect(shot.capturedAt).toBeGreaterThan(Date.now() - 10_000);

    const clip = await ok(browser, "page.capture", { tabId: tab.tabId, activate: false, clip: { x: 10, y: 20, width: 30, height: 40 } });
    expect(pngInfo(clip.png)).toMatchObject({ width: 30, height: 40 });

    const full = await ok(browser, "page.capture", { tabId: tab.tabId, activate: false, fullPage: true });
    const whole = pngInfo(full.png);
    expect(whole.height).toBe(2000);
    expect(whole.height).toBeGreaterThan(viewport.height);

    // Several captures in a row (Chrome stalls repeated captures of a tab it does not show).
    for (let i = 0; i < 3; i++)
      expect(pngInfo((await ok(browser, "page.capture", { tabId: tab.tabId, activate: false })).png).firstPixel.slice(0, 3)).toEqual([255, 0, 0]);
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });

  it("blocks requests to a denied origin at the network layer and lets the rest through", async () => {
    const { tab } = await ok(browser, "tabs.open", { url: `${site.a}/images` });
    const waited = await ok(browser, "page.wait", { tabId: tab.tabId, text: "denied fetch failed", timeoutMs: 5000 });
    expect(waited.matched).toBeDefined();
    await ok(browser, "page.wait", { tabId: tab.tabId, text: "denied image failed", timeoutMs: 5000 });
    await ok(browser, "page.wait", { tabId: tab.tabId, text: "worker fetch failed", timeoutMs: 5000 });
    await ok(browser, "page.wait", { tabId: tab.tabId, text: "allowed image loaded", timeoutMs: 5000 });
    // The out-of-process iframe loaded its allowed image; its denied one never reached the server.
    await until("the iframe's allowed image", () => site.hits.get("/oopif-pixel.png"));
    await new Promise((r) => setTimeout(r, 300));
    expect(denied.hits.size).toBe(0);
    expect(site.hits.get("/pixel.png")).toBeGreaterThanOrEqual(1);
    // A top-level navigation to the denied origin is stopped before it is sent: the tab shows the browser's error
    // page for it (the broker judges that landing and resets the tab), and the driver reports the stopped request.
    const deniedPage = `http://127.0.0.1:${denied.port}/page`;
    const landed = await ok(browser, "tabs.navigate", { tabId: tab.tabId, url: deniedPage });
    expect(landed.tab.url).toBe(deniedPage);
    expect(events).toContainEqual({ type: "event", event: "tab.blocked", params: { tabId: tab.tabId, url: deniedPage, frame: false } });
    expect(denied.hits.size).toBe(0);
    await ok(browser, "tabs.close", { tabId: tab.tabId });
  });
});

describe("CDP driver: browser lifetime", () => {
  it("fails a call in flight at once with browser_disconnected when the browser dies", async () => {
    const own = await launchLocalChromium({ chromiumPath: CHROMIUM, headless: true });
    const driver = await CdpBrowser.connect(own.endpoint, { ...NODE_CDP, label: "doomed", ownsBrowser: true, onEvent: () => undefined, callTimeoutMs: 30_000 });
    try {
      const { tab } = await ok(driver, "tabs.open", { url: `${site.a}/page1` });
      const pending = driver.call("page.wait", { tabId: tab.tabId, text: "never appears", timeoutMs: 25_000 });
      await new Promise((r) => setTimeout(r, 300));
      const killedAt = Date.now();
      own.process.kill("SIGKILL");
      const result = await pending;
      // At once: well inside the 25 s the call would otherwise wait, even on a busy machine.
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.code).toBe("browser_disconnected");
      expect(driver.closed).toBe(true);
      const after = await driver.call("tabs.list", {});
      expect(!after.ok && after.error.code).toBe("browser_disconnected");
    } finally {
      driver.close("test done");
      await own.close();
    }
  });

  it("shuts down a browser it launched on close()", async () => {
    const own = await launchLocalChromium({ chromiumPath: CHROMIUM, headless: true });
    const driver = await CdpBrowser.connect(own.endpoint, { ...NODE_CDP, label: "owned", ownsBrowser: true, onEvent: () => undefined, callTimeoutMs: 30_000 });
    const exited = new Promise<void>((resolve) => own.process.once("exit", () => resolve()));
    // Headless, a browser of our own starts with no tab: every tab in it is one the agent opens.
    expect((await ok(driver, "tabs.list", {})).tabs).toEqual([]);
    driver.close("done");
    expect(driver.closed).toBe(true);
    await Promise.race([exited, new Promise((_, reject) => setTimeout(() => reject(new Error("the browser kept running")), 10_000))]);
    await own.close();
  });

  it("leaves an attached browser running and sees only the tabs it opened", async () => {
    const own = await launchLocalChromium({ chromiumPath: CHROMIUM, headless: true, extraArgs: ["--disable-popup-blocking"] });
    try {
      // A tab the user opened before tabrelay attached.
      const user = await CdpClient.connect(own.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
      if (!user.ok) throw new Error(user.error.message);
      await user.value.send("Target.createTarget", { url: "about:blank" });
      user.value.close();
      const seen: BridgeEvent[] = [];
      const driver = await CdpBrowser.connect(own.endpoint, {
        ...NODE_CDP,
        label: "attached",
        ownsBrowser: false,
        onEvent: (e) => seen.push(e),
        callTimeoutMs: 30_000,
      });
      // The user's tab is not the agent's.
      expect((await ok(driver, "tabs.list", {})).tabs).toEqual([]);
      const { tab } = await ok(driver, "tabs.open", { url: `${site.a}/opener` });
      expect(tab.title).toBe("Opener");
      expect((await ok(driver, "tabs.list", {})).tabs.map((t) => t.tabId)).toEqual([tab.tabId]);

      // A tab the agent's page opens is the agent's too.
      const { frames } = await ok(driver, "page.snapshot", { tabId: tab.tabId, revision: "a1", interactiveOnly: true, viewportOnly: false });
      await act(driver, { tabId: tab.tabId, ref: refOf(frames, "button", "Open a tab"), revision: "a1", action: "click" });
      const created = await until("tab.created", () => seen.find((e) => e.event === "tab.created"));
      if (created.event !== "tab.created") throw new Error("unreachable");
      expect(created.params.openerTabId).toBe(tab.tabId);
      expect((await ok(driver, "tabs.list", {})).tabs).toHaveLength(2);

      driver.close("detach");
      expect(driver.closed).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      expect(own.process.exitCode).toBeNull();
      expect(own.process.signalCode).toBeNull();
      // Still serving DevTools, with the agent's tabs still open.
      const again = await CdpClient.connect(own.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
      if (!again.ok) throw new Error(again.error.message);
      const targets = await again.value.send("Target.getTargets");
      again.value.close();
      const pages =
        targets.ok && Array.isArray(targets.value["targetInfos"])
          ? targets.value["targetInfos"].filter((t: unknown) => typeof t === "object" && t !== null && "type" in t && t.type === "page")
          : [];
      expect(pages.length).toBeGreaterThanOrEqual(3);
    } finally {
      await own.close();
    }
  });

  it("never puts the endpoint in an error message", async () => {
    const port = await closedPort();
    const endpoint = `ws://127.0.0.1:${port}/devtools/browser/secret-0123456789`;
    const failure = await CdpBrowser.connect(endpoint, { ...NODE_CDP, label: "x", ownsBrowser: false, onEvent: () => undefined, callTimeoutMs: 2000 }).then(
      () => "connected",
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    expect(failure).not.toBe("connected");
    expect(failure).not.toContain("secret-0123456789");
  });
});

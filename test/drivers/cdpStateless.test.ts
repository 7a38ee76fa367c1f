// The CDP driver for a stateless host (CdpBrowserOptions.stateless: the Workers entry connects per request), against
// a real Chromium: a tab opened and snapshotted through one connection is found under the same id by the next, whose
// clicks on the first connection's refs work (top document and out-of-process frame), and the browser outlives
// every connection.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ActParams, BridgeMethod, FrameSnapshot, ParamsOf, ResultOf } from "@tabrelay/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CdpBrowser, type CdpBrowserOptions } from "../../packages/broker/src/drivers/cdp/cdpBrowser.js";
import { CdpClient } from "../../packages/broker/src/drivers/cdp/cdpClient.js";
import { TAB_ID_MAX } from "../../packages/broker/src/drivers/cdp/cdpCore.js";
import { nodeCdpScripts } from "../../packages/broker/src/drivers/cdp/nodeScripts.js";
import { gateNewTab } from "../../packages/broker/src/gate/decisions.js";
import { nodeCdpSocket } from "../../packages/broker/src/drivers/cdp/nodeSocket.js";
import { launchLocalChromium, type LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { findChromium } from "../../packages/broker/src/launch/chromium.js";
import { judgedFingerprint } from "../../packages/broker/src/tools/act.js";
import { decodeNodes } from "../../packages/broker/src/tools/snapshot.js";

const CHROMIUM = findChromium();

let launched: LaunchedCdpBrowser;
let server: Server;
let a = "";
let b = "";

beforeAll(async () => {
  const pages = new Map<string, { status: number; html: string }>();
  server = createServer((req, res) => {
    const page = pages.get((req.url ?? "/").split("?")[0] ?? "/");
    res.writeHead(page?.status ?? 404, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page?.html ?? "not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? (address satisfies AddressInfo).port : 0;
  // Two sites to Chromium: the frame is out of process under --site-per-process.
  a = `http://127.0.0.1:${port}`;
  b = `http://localhost:${port}`;
  pages.set("/counter", {
    status: 200,
    html: `<html><head><title>Counter</title></head><body>
      <button onclick="document.getElementById('out').textContent = 'clicked ' + (window.clicks = (window.clicks || 0) + 1)">Count</button>
      <div id="out">not clicked</div>
      <iframe src="${b}/inner"></iframe></body></html>`,
  });
  pages.set("/inner", { status: 200, html: `<html><body><button onclick="this.textContent = 'Inner done'">Inner</button></body></html>` });
  pages.set("/gone", { status: 410, html: "<html><head><title>Gone</title></head><body>This page is gone.</body></html>" });
  launched = await launchLocalChromium({ chromiumPath: CHROMIUM, headless: true, extraArgs: ["--site-per-process"] });
});

afterAll(async () => {
  await launched?.close();
  await new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
});

/** One request's connection, as the Workers entry makes it (with a request policy: responses are seen through it). */
function connect(label: string, extra: Partial<CdpBrowserOptions> = {}): Promise<CdpBrowser> {
  const options: CdpBrowserOptions = {
    socket: nodeCdpSocket,
    scripts: nodeCdpScripts,
    label,
    ownsBrowser: false,
    stateless: true,
    agentTab: gateNewTab,
    requestPolicy: () => true,
    onEvent: () => undefined,
    callTimeoutMs: 30_000,
  };
  return CdpBrowser.connect(launched.endpoint, { ...options, ...extra });
}

async function ok<M extends BridgeMethod>(browser: CdpBrowser, method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
  const result = await browser.call(method, params);
  if (!result.ok) throw new Error(`${method} failed: ${result.error.code}: ${result.error.message}`);
  return result.value;
}

/** A write as the broker sends it: the facts first (what the gate judges), then the action checked against them. */
async function act(browser: CdpBrowser, params: ActParams): Promise<ResultOf<"page.act">> {
  const facts = await ok(browser, "page.inspect", { tabId: params.tabId, ref: params.ref, revision: params.revision, action: params.action });
  return ok(browser, "page.act", { ...params, expect: judgedFingerprint(facts) });
}

function refOf(frames: FrameSnapshot[], role: string, name: string): string {
  for (const frame of frames) {
    const node = decodeNodes(frame.nodes).find((n) => n.role === role && n.name === name && n.ref);
    if (node?.ref) return node.ref;
  }
  throw new Error(`no ${role} "${name}" in the snapshot`);
}

/** The page targets the browser has, seen from a connection of its own (not the driver's). */
async function pageTargets(): Promise<string[]> {
  const raw = await CdpClient.connect(launched.endpoint, { timeoutMs: 5000, socket: nodeCdpSocket });
  if (!raw.ok) throw new Error(raw.error.message);
  const targets = await raw.value.send("Target.getTargets");
  raw.value.close();
  if (!targets.ok) throw new Error(targets.error.message);
  return targets.value.targetInfos.filter((t) => t.type === "page").map((t) => t.url);
}

describe("CDP driver, stateless (one connection per request)", () => {
  it("finds the same tabs under the same ids from the next connection, acts on the first one's refs, and leaves the browser running", async () => {
    // Request 1: open tabs and snapshot. Even a browser it would own (ownsBrowser) outlives a stateless connection.
    // Ids counted per connection would not hold: the tab closed later was opened first, and the tab's document with
    // the refs used later is its second (its iframe is not the first this connection saw).
    const first = await connect("request 1", { ownsBrowser: true });
    const { tab: gone } = await ok(first, "tabs.open", { url: `${a}/gone` });
    const { tab } = await ok(first, "tabs.open", { url: `${a}/counter` });
    expect(tab.tabId).toBeGreaterThan(0);
    expect(tab.tabId).toBeLessThanOrEqual(TAB_ID_MAX);
    await ok(first, "page.snapshot", { tabId: tab.tabId, revision: "s0", interactiveOnly: true, viewportOnly: false });
    await ok(first, "tabs.navigate", { tabId: tab.tabId, url: `${a}/counter?again` });
    const { frames } = await ok(first, "page.snapshot", { tabId: tab.tabId, revision: "s1", interactiveOnly: true, viewportOnly: false });
    expect(frames).toHaveLength(2);
    const count = refOf(frames, "button", "Count");
    const inner = refOf(frames, "button", "Inner");
    expect(inner).toMatch(/^f\d+e\d+$/);
    expect((await ok(first, "page.content", { tabId: gone.tabId })).status).toBe(410);
    first.close("request 1 answered");
    await new Promise((r) => setTimeout(r, 500));
    expect(launched.process.exitCode).toBeNull();
    expect(await pageTargets()).toEqual(expect.arrayContaining([`${a}/counter?again`, `${a}/gone`]));

    // Request 2, a new connection: the same ids, the first request's refs (its isolated world is found by name).
    const second = await connect("request 2");
    expect((await ok(second, "tabs.list", {})).tabs.map((t) => t.tabId).sort()).toEqual([tab.tabId, gone.tabId].sort());
    expect((await ok(second, "tabs.get", { tabId: tab.tabId })).tab.title).toBe("Counter");
    const clicked = await act(second, { tabId: tab.tabId, ref: count, revision: "s1", action: "click" });
    expect(clicked.facts).toMatchObject({ role: "button", name: "Count" });
    expect(clicked.effects.domChanged).toBeGreaterThan(0);
    await act(second, { tabId: tab.tabId, ref: inner, revision: "s1", action: "click" });
    const content = await ok(second, "page.content", { tabId: tab.tabId });
    expect(content.html).toContain("clicked 1");
    expect(content.frames?.some((f) => f.html.includes("Inner done"))).toBe(true);
    // Its status was seen by request 1 only: the page's own account stands in.
    expect((await ok(second, "page.content", { tabId: gone.tabId })).status).toBe(410);
    await ok(second, "tabs.close", { tabId: gone.tabId });
    second.close("request 2 answered");

    // Request 3: a tab another connection closed is no_such_tab, not someone else's tab.
    const third = await connect("request 3");
    const missing = await third.call("tabs.get", { tabId: gone.tabId });
    expect(!missing.ok && missing.error.code).toBe("no_such_tab");
    expect((await ok(third, "tabs.list", {})).tabs.map((t) => t.tabId)).toEqual([tab.tabId]);
    third.close("request 3 answered");

    await new Promise((r) => setTimeout(r, 500));
    expect(launched.process.exitCode).toBeNull();
    expect(launched.process.signalCode).toBeNull();
    expect(await pageTargets()).toEqual([`${a}/counter?again`]);
  });
});

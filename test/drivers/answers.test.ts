// The answer schemas (drivers/answers.ts): every bridge method's result as a real driver sends it parses, and a
// malformed one is refused with a message naming the field. Real answers come from the CDP driver against a real
// Chromium and a local page (the extension's pass through the same schemas in BrowserConnection, in e2e.test.ts).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { BridgeMethod, ElementFacts, ParamsOf, ResultOf } from "@tabrelay/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bridgeAnswers,
  inpageAct,
  inpageDocument,
  inpageSnapshot,
  parseBridgeAnswer,
  parseWireError,
  parseWith,
} from "../../packages/broker/src/drivers/answers.js";
import { CdpBrowser } from "../../packages/broker/src/drivers/cdp/cdpBrowser.js";
import { nodeCdpScripts } from "../../packages/broker/src/drivers/cdp/nodeScripts.js";
import { gateNewTab } from "../../packages/broker/src/gate/decisions.js";
import { nodeCdpSocket } from "../../packages/broker/src/drivers/cdp/nodeSocket.js";
import { launchLocalChromium, type LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { findChromium } from "../../packages/broker/src/launch/chromium.js";
import { judgedFingerprint } from "../../packages/broker/src/tools/act.js";
import { decodeNodes } from "../../packages/broker/src/tools/snapshot.js";

/** What a Node host passes the CDP driver: the socket over ws, the in-page scripts read from disk. */
// Whose a new page is: the broker's rule, as it hands it to the driver.
const NODE_CDP = { socket: nodeCdpSocket, scripts: nodeCdpScripts, agentTab: gateNewTab };

function problem(method: BridgeMethod, value: unknown): string {
  const parsed = parseBridgeAnswer(method, value);
  if (parsed.ok) throw new Error(`${method}: the malformed answer parsed`);
  return parsed.problem;
}

const tab = { tabId: 3, windowId: 1, url: "https://shop.example/", title: "Shop", active: true, status: "complete", shared: false };
const facts: ElementFacts = {
  ref: "e4",
  role: "button",
  name: "Buy",
  visibleText: "Buy",
  tag: "button",
  disabled: false,
  editable: false,
  attributeText: "",
  frameUrl: "https://shop.example/",
  activates: [{ via: "the form it submits", role: "form", name: "", visibleText: "", tag: "form", disabled: false, attributeText: "" }],
};

describe("answers as the protocol documents them", () => {
  it("a snapshot frame whose nodes are not a string names the frame and the field", () => {
    const frame = { frameId: 0, parentFrameId: -1, url: "https://shop.example/", title: "Shop", nodes: [{ role: "button" }] };
    expect(problem("page.snapshot", { frames: [frame] })).toBe("frames[0].nodes must be a string");
  });

  it("a missing field says it is missing", () => {
    expect(problem("tabs.get", { tab: { ...tab, url: undefined } })).toBe("tab.url is missing (must be a string)");
    expect(problem("page.snapshot", {})).toBe("frames is missing (must be an array)");
  });

  it("an answer that is not an object at all is named as the answer", () => {
    expect(problem("browser.ping", "pong")).toBe("the answer must be an object");
    expect(problem("tabs.list", null)).toBe("the answer must be an object");
  });

  it("a value outside the protocol's set lists the allowed ones", () => {
    expect(problem("tabs.list", { tabs: [{ ...tab, status: "done" }] })).toBe('tabs[0].status must be "loading" or "complete" or "unloaded"');
    expect(problem("tabs.close", { closed: false })).toBe("closed must be true");
    expect(problem("page.inspect", { ...facts, hidden: "behind" })).toMatch(/^hidden must be "display" or /);
  });

  it("nested facts are checked as deeply as the gate reads them", () => {
    const bad = { ...facts, activates: [{ ...facts.activates![0], disabled: "no" }] };
    expect(problem("page.act", { facts: bad, effects: { done: "clicked" } })).toBe("facts.activates[0].disabled must be a boolean");
    expect(problem("page.act", { effects: { done: 3 } })).toBe("effects.done must be a string");
    expect(problem("page.act", { facts, effects: { done: "clicked", newTabs: ["7"] } })).toBe("effects.newTabs[0] must be a number");
    expect(problem("page.act", { facts, effects: { done: "clicked", domChanged: -1 } })).toMatch(/^effects\.domChanged must be >=\s*0/);
  });

  it("a fact this broker does not know is refused: the gate could not judge it", () => {
    expect(problem("page.inspect", { ...facts, opensDialog: true })).toBe("the answer has a field this broker does not know (opensDialog); update the broker");
    expect(problem("page.act", { facts: { ...facts, activates: [{ ...facts.activates![0], reachesForm: "f" }] }, effects: { done: "clicked" } })).toBe(
      "facts.activates[0] has a field this broker does not know (reachesForm); update the broker",
    );
  });

  it("other unknown fields are stripped, so a newer extension still works", () => {
    const parsed = parseBridgeAnswer("tabs.list", { tabs: [{ ...tab, pinned: true }], more: 1 });
    expect(parsed).toEqual({ ok: true, value: { tabs: [tab] } });
    const act = parseBridgeAnswer("page.act", { effects: { done: "clicked", scrolled: true } });
    expect(act).toEqual({ ok: true, value: { effects: { done: "clicked" } } });
  });

  it("several problems are listed, at most three", () => {
    const text = problem("page.capture", { png: 1, width: "1", height: "1", url: 1, capturedAt: "now" });
    expect(text).toBe("png must be a string; width must be a number; height must be a number (and 2 more)");
  });

  it("an error answer keeps a known code, makes an unknown one internal, and refuses a malformed one", () => {
    expect(parseWireError("tabs.get", { code: "stale_ref", message: "gone" })).toEqual({ code: "stale_ref", message: "gone" });
    expect(parseWireError("tabs.get", { code: "brand_new_code", message: "new" })).toEqual({ code: "internal", message: "new" });
    expect(parseWireError("tabs.get", "boom")).toEqual({
      code: "internal",
      message: "the browser's error answer to tabs.get is malformed: the answer must be an object",
    });
  });

  it("the in-page answers the CDP driver reads refuse what the extension's would", () => {
    expect(parseWith(inpageSnapshot, { url: "u", title: "t", nodes: 5 })).toEqual({ ok: false, problem: "nodes must be a string" });
    expect(parseWith(inpageDocument, { url: "u", origin: "null", title: "t" })).toEqual({ ok: false, problem: "html is missing (must be a string)" });
    expect(parseWith(inpageAct, { effects: { done: "clicked" } })).toEqual({ ok: false, problem: "facts is missing (must be an object)" });
  });

  it("has one schema for every bridge method", () => {
    expect(Object.keys(bridgeAnswers).sort()).toEqual(
      [
        "browser.ping",
        "browser.rules",
        "browser.asks",
        "browser.tabState",
        "browser.tabRules",
        "tabs.list",
        "tabs.open",
        "tabs.close",
        "tabs.activate",
        "tabs.navigate",
        "tabs.history",
        "tabs.get",
        "page.content",
        "page.snapshot",
        "page.inspect",
        "page.act",
        "page.wait",
        "page.rect",
        "page.capture",
        "page.query",
        "tabs.viewport",
        "page.eval",
        "page.webmcpCall",
        "page.webmcpWatch",
      ].sort(),
    );
  });
});

// ---- real answers -------------------------------------------------------------------------------

const PAGE = `<!doctype html><html><head><title>Shop</title></head><body>
<h1>Shop</h1>
<form action="/thanks"><label>Name <input name="n" placeholder="Your name"></label>
<label><input type="checkbox" name="c"> Gift</label>
<select name="s"><option>Red</option><option>Blue</option></select>
<button type="button" onclick="document.body.append(document.createElement('p'))">Add</button></form>
<iframe srcdoc="<p>Inside a frame</p><a href='#x'>Frame link</a>"></iframe>
</body></html>`;

let server: Server;
let origin = "";
let launched: LaunchedCdpBrowser;
let browser: CdpBrowser;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  launched = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
  browser = await CdpBrowser.connect(launched.endpoint, {
    ...NODE_CDP,
    label: "answers test",
    ownsBrowser: true,
    onEvent: () => undefined,
    requestPolicy: () => true,
    callTimeoutMs: 30_000,
  });
});

afterAll(async () => {
  browser?.close("test done");
  await launched?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

/** Calls the real driver and checks its answer against the method's schema: it parses, to the same value. */
async function real<M extends BridgeMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
  const result = await browser.call(method, params);
  if (!result.ok) throw new Error(`${method} failed: ${result.error.code}: ${result.error.message}`);
  expect(parseBridgeAnswer(method, result.value)).toEqual({ ok: true, value: result.value });
  return result.value;
}

describe("answers a real driver sends", () => {
  it("every method's answer parses unchanged", async () => {
    await real("browser.ping", {});
    const { tab: opened } = await real("tabs.open", { url: `${origin}/shop`, active: true });
    const tabId = opened.tabId;
    await real("tabs.get", { tabId });
    await real("tabs.list", {});
    await real("tabs.activate", { tabId });
    await real("tabs.navigate", { tabId, url: `${origin}/shop?again` });
    await real("tabs.history", { tabId, action: "reload" });
    const content = await real("page.content", { tabId });
    expect(content.frames?.length).toBe(1);
    const revision = "r1-answers";
    const { frames } = await real("page.snapshot", { tabId, revision, interactiveOnly: false, viewportOnly: false });
    expect(frames.length).toBe(2);
    const nodes = frames.flatMap((f) => decodeNodes(f.nodes));
    const ref = (role: string, name: string) => nodes.find((n) => n.role === role && n.name === name)?.ref ?? "";
    const add = ref("button", "Add");
    const facts = await real("page.inspect", { tabId, ref: add, revision, action: "click" });
    const act = await real("page.act", { tabId, ref: add, revision, action: "click", expect: judgedFingerprint(facts) });
    expect(act.effects.domChanged).toBeGreaterThan(0);
    const gift = ref("checkbox", "Gift");
    const giftFacts = await real("page.inspect", { tabId, ref: gift, revision, action: "check", value: "true" });
    await real("page.act", { tabId, ref: gift, revision, action: "check", value: "true", expect: judgedFingerprint(giftFacts) });
    const select = nodes.find((n) => n.role === "combobox")?.ref ?? "";
    const selectFacts = await real("page.inspect", { tabId, ref: select, revision, action: "select", value: "Blue" });
    expect(selectFacts.option?.name).toBe("Blue");
    const field = ref("textbox", "Name");
    const enter = await real("page.inspect", { tabId, ref: field, revision, action: "press", value: "Enter" });
    expect(enter.key).toBe("Enter");
    await real("page.wait", { tabId, text: "Shop", timeoutMs: 2000 });
    await real("page.rect", { tabId, ref: ref("link", "Frame link"), revision });
    await real("page.capture", { tabId, activate: true });
    await real("tabs.close", { tabId });
  });
});

// What the broker composes from a driver's own calls, once for both drivers (drivers/composed.ts), against a
// scripted driver: each case answers the primitive calls the way a browser would.
import type { BridgeMethod, ParamsOf, Result, ResultOf, TabInfo } from "@tabrelay/protocol";
import { describe, expect, it, vi } from "vitest";
import { serve } from "../../src/drivers/composed.js";
import type { RawCall } from "../../src/drivers/composer.js";
import { DocumentStatus } from "../../src/drivers/documentStatus.js";
import type { BrowserInfo } from "../../src/drivers/driver.js";
import { PendingCalls } from "../../src/drivers/pendingCalls.js";
import { TabView } from "../../src/drivers/tabView.js";

const info: BrowserInfo = { browserId: "b-1", label: "test", userAgent: "", extensionVersion: "", connectedAt: 0, kind: "extension" };
const tab = (tabId: number, url: string) => ({ tabId, windowId: 1, url, title: "", active: false, status: "complete" as const, shared: false });

type Script = { [M in BridgeMethod]?: (params: ParamsOf<M>) => Result<ResultOf<M>> | Promise<Result<ResultOf<M>>> };

/** A driver whose raw calls follow `script`; `calls` records them in order. */
function scripted(script: Script, tabView = new TabView()) {
  const calls: { method: BridgeMethod; params: unknown }[] = [];
  const raw: RawCall = async (method, params) => {
    calls.push({ method, params });
    const answer = script[method] as ((p: typeof params) => Result<ResultOf<typeof method>>) | undefined;
    return answer ? answer(params) : { ok: false, error: { code: "unknown_method", message: method } };
  };
  const call = <M extends BridgeMethod>(method: M, params: ParamsOf<M>, timeoutMs = 5000) =>
    serve({ calls: new PendingCalls(info), status: new DocumentStatus(), tabView }, method, params, { timeoutMs }, raw);
  return { calls, call };
}

describe("tabs.open", () => {
  it("closes the tab an open created before it failed, and answers the failure without its id", async () => {
    const driver = scripted({
      "tabs.open": () => ({ ok: false, error: { code: "navigation_failed", message: "the page failed to load", tabId: 12 } }),
      "tabs.close": () => ({ ok: true, value: { closed: true } }),
    });
    expect(await driver.call("tabs.open", { url: "http://x.test/" })).toEqual({
      ok: false,
      error: { code: "navigation_failed", message: "the page failed to load" },
    });
    expect(driver.calls.map((c) => [c.method, c.params])).toEqual([
      ["tabs.open", { url: "http://x.test/" }],
      ["tabs.close", { tabId: 12 }],
    ]);
  });

  it("leaves an open that worked, or failed before it made a tab, as it is", async () => {
    const worked = scripted({ "tabs.open": ({ url }) => ({ ok: true, value: { tab: tab(3, url) } }) });
    expect(await worked.call("tabs.open", { url: "http://x.test/" })).toEqual({ ok: true, value: { tab: tab(3, "http://x.test/") } });
    const refused = scripted({ "tabs.open": () => ({ ok: false, error: { code: "navigation_failed", message: "could not open a tab" } }) });
    expect((await refused.call("tabs.open", { url: "http://x.test/" })).ok).toBe(false);
    expect(refused.calls.map((c) => c.method)).toEqual(["tabs.open"]);
  });
});

describe("page.wait", () => {
  it("watches the URL from tabs.get until it includes the string, and times out naming where the tab is", async () => {
    let reads = 0;
    const driver = scripted({ "tabs.get": () => ({ ok: true, value: { tab: tab(4, ++reads >= 3 ? "http://x.test/done" : "http://x.test/start") } }) });
    const met = await driver.call("page.wait", { tabId: 4, urlIncludes: "/done", timeoutMs: 2000 });
    expect(met.ok && met.value.matched).toBe("URL is http://x.test/done");
    expect(driver.calls.every((c) => c.method === "tabs.get")).toBe(true);
    const stuck = scripted({ "tabs.get": () => ({ ok: true, value: { tab: tab(4, "http://x.test/start") } }) });
    expect(await stuck.call("page.wait", { tabId: 4, urlIncludes: "/done", timeoutMs: 120 })).toEqual({
      ok: false,
      error: { code: "wait_timeout", message: 'the URL did not come to include "/done" within 120 ms (it is http://x.test/start)' },
    });
  });

  it("asks the page for the other conditions, and starts again in the new document after a navigation", async () => {
    let attempts = 0;
    const driver = scripted({
      "page.wait": () =>
        ++attempts < 3
          ? { ok: false, error: { code: "stale_ref", message: "the frame went away" } }
          : { ok: true, value: { matched: 'text "Ready" is on the page', elapsedMs: 1 } },
    });
    const met = await driver.call("page.wait", { tabId: 4, text: "Ready", timeoutMs: 5000 });
    expect(met.ok && met.value.matched).toBe('text "Ready" is on the page');
    expect(driver.calls.map((c) => c.method)).toEqual(["page.wait", "page.wait", "page.wait"]);
    expect(driver.calls[0]?.params).toMatchObject({ tabId: 4, text: "Ready" });
    const failed = scripted({ "page.wait": () => ({ ok: false, error: { code: "wait_timeout", message: "no" } }) });
    expect(await failed.call("page.wait", { tabId: 4, text: "Ready", timeoutMs: 5000 })).toEqual({ ok: false, error: { code: "wait_timeout", message: "no" } });
    expect(failed.calls).toHaveLength(1);
  });
});

describe("page.content", () => {
  const page = (html: string, loading?: true) => ({ ok: true as const, value: { url: "http://x.test/", title: "X", html, ...(loading ? { loading } : {}) } });

  it("reads again while the document goes away under the read, is not parsed yet, or is still being parsed", async () => {
    const answers = [
      { ok: false as const, error: { code: "stale_ref" as const, message: "the document went away while it was read" } },
      page("<html></html>", true),
      page("<html><head></head><body><p></p></body></html>", true),
      page("<html><head></head><body><p>Here</p></body></html>"),
    ];
    const driver = scripted({ "page.content": () => answers.shift() ?? page("<html><body>never asked</body></html>") });
    const read = await driver.call("page.content", { tabId: 1 });
    expect(read.ok && read.value.html).toBe("<html><head></head><body><p>Here</p></body></html>");
    // The driver's word that the parser was still on it is not passed on.
    expect(read.ok && "loading" in read.value).toBe(false);
    expect(driver.calls).toHaveLength(4);
  });

  it("takes a document without a body once it is parsed (an SVG or XML document), and a stalled one as it stands", async () => {
    const svg = scripted({ "page.content": () => page("<svg><text>Chart</text></svg>") });
    const read = await svg.call("page.content", { tabId: 1 });
    expect(read.ok && read.value.html).toBe("<svg><text>Chart</text></svg>");
    expect(svg.calls).toHaveLength(1);
    // A response that stopped half way: the same partial document twice is read as it stands.
    const stalled = scripted({ "page.content": () => page("<html><body><p>Half of it", true) });
    const half = await stalled.call("page.content", { tabId: 1 });
    expect(half.ok && half.value.html).toBe("<html><body><p>Half of it");
    expect(stalled.calls).toHaveLength(2);
  });

  it("gives up after its window with navigation_failed, and passes any other failure on at once", async () => {
    vi.useFakeTimers();
    try {
      const loop = scripted({ "page.content": () => ({ ok: false, error: { code: "stale_ref", message: "gone" } }) });
      const pending = loop.call("page.content", { tabId: 1 }, 20_000);
      await vi.advanceTimersByTimeAsync(8_500);
      const read = await pending;
      expect(!read.ok && read.error).toEqual({
        code: "navigation_failed",
        message: "the page kept replacing its document while it was read (it reloads or redirects itself); try again, or use snapshot",
      });
      // Short rounds: many chances to land between two of the page's reloads.
      expect(loop.calls.length).toBeGreaterThan(40);
    } finally {
      vi.useRealTimers();
    }
    const restricted = scripted({ "page.content": () => ({ ok: false, error: { code: "restricted_page", message: "no" } }) });
    expect((await restricted.call("page.content", { tabId: 1 })).ok).toBe(false);
    expect(restricted.calls).toHaveLength(1);
  });
});

describe("page.content's frames", () => {
  const doc = (name: string, html = `<html><body>${name}</body></html>`) => ({ url: `http://x.test/${name}`, origin: "http://x.test", title: name, html });

  it("reads the frames the driver listed, parents first and shallow before deep, leaving out those it could not read and their children", async () => {
    const driver = scripted({
      "page.content": ({ frameId }) => {
        if (frameId === undefined) {
          return {
            ok: true,
            value: {
              url: "http://x.test/",
              title: "Top",
              html: "<html><body>Top</body></html>",
              // 5 in 3 in 1; 4 in 2 (which cannot be read); 1 and 2 in the top document.
              subframes: [
                { frameId: 5, parentFrameId: 3 },
                { frameId: 3, parentFrameId: 1 },
                { frameId: 1, parentFrameId: 0 },
                { frameId: 4, parentFrameId: 2 },
                { frameId: 2, parentFrameId: 0 },
              ],
            },
          };
        }
        return frameId === 2 ? { ok: false, error: { code: "restricted_page", message: "no" } } : { ok: true, value: doc(`f${frameId}`) };
      },
    });
    const read = await driver.call("page.content", { tabId: 1 });
    if (!read.ok) throw new Error(read.error.message);
    expect(read.value).not.toHaveProperty("subframes");
    expect(read.value.frames?.map((f) => [f.title, f.parent])).toEqual([
      ["f1", -1],
      ["f3", 0],
      ["f5", 1],
    ]);
  });

  it("keeps frames within the character budget and the frame count, and fits frames a driver read itself the same way", async () => {
    const big = "x".repeat(3 * 1024 * 1024);
    const driver = scripted({
      "page.content": ({ frameId }) =>
        frameId === undefined
          ? {
              ok: true,
              value: {
                url: "http://x.test/",
                title: "Top",
                html: "<body>",
                subframes: Array.from({ length: 40 }, (_, i) => ({ frameId: i + 1, parentFrameId: 0 })),
              },
            }
          : { ok: true, value: doc(`f${frameId}`, frameId <= 2 ? big : "<body>small</body>") },
    });
    const read = await driver.call("page.content", { tabId: 1 });
    const titles = read.ok ? (read.value.frames ?? []).map((f) => f.title) : [];
    expect(titles).toHaveLength(30);
    expect(titles[0]).toBe("f1"); // f2 no longer fits beside f1
    expect(titles).not.toContain("f2");
    const given = scripted({
      "page.content": () => ({
        ok: true,
        value: {
          url: "http://x.test/",
          title: "Top",
          html: "<body>",
          frames: [
            { ...doc("inner"), parent: 1 },
            { ...doc("outer"), parent: -1 },
          ],
        },
      }),
    });
    const fitted = await given.call("page.content", { tabId: 1 });
    expect(fitted.ok && fitted.value.frames?.map((f) => [f.title, f.parent])).toEqual([
      ["outer", -1],
      ["inner", 0],
    ]);
  });
});

describe("refs", () => {
  const facts = {
    ref: "e3",
    role: "button",
    name: "Go",
    visibleText: "Go",
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: "http://x.test/f",
  };

  it("gives a subframe's refs their frame, and splits them again for the browser", async () => {
    const driver = scripted({
      "page.snapshot": () => ({
        ok: true,
        value: {
          frames: [
            { frameId: 0, parentFrameId: -1, url: "http://x.test/", title: "Top", nodes: "e1\tbutton\tTop\t0\t\t\t\t\ne2\tlink\tMore\t0\t\t\t\t" },
            { frameId: 12, parentFrameId: 0, url: "http://x.test/f", title: "F", nodes: "e3\tbutton\tGo\t0\t\t\t\t" },
          ],
        },
      }),
      "page.inspect": () => ({ ok: true, value: facts }),
      "page.act": () => ({ ok: true, value: { facts, effects: { done: "clicked" } } }),
      "page.rect": () => ({ ok: true, value: { x: 1, y: 2, width: 3, height: 4 } }),
    });
    const snap = await driver.call("page.snapshot", { tabId: 1, revision: "r1", interactiveOnly: false, viewportOnly: false });
    expect(snap.ok && snap.value.frames.map((f) => f.nodes.split("\n").map((line) => line.split("\t")[0]))).toEqual([["e1", "e2"], ["f12e3"]]);
    const inspected = await driver.call("page.inspect", { tabId: 1, ref: "f12e3", revision: "r1" });
    expect(inspected.ok && inspected.value.ref).toBe("f12e3");
    const acted = await driver.call("page.act", { tabId: 1, ref: "f12e3", revision: "r1", action: "click" });
    expect(acted.ok && acted.value.facts?.ref).toBe("f12e3");
    await driver.call("page.rect", { tabId: 1, ref: "e1", revision: "r1" });
    expect(driver.calls.slice(1).map((c) => c.params)).toEqual([
      { tabId: 1, ref: "e3", frameId: 12, revision: "r1" },
      { tabId: 1, ref: "e3", frameId: 12, revision: "r1", action: "click" },
      { tabId: 1, ref: "e1", revision: "r1" },
    ]);
  });
});

describe("page.snapshot", () => {
  it("is taken once more when the page navigated under it, and no more", async () => {
    const gone = { ok: false as const, error: { code: "stale_ref" as const, message: "the page navigated" } };
    let takes = 0;
    const driver = scripted({ "page.snapshot": () => (++takes === 1 ? gone : { ok: true, value: { frames: [] } }) });
    expect(await driver.call("page.snapshot", { tabId: 1, revision: "r1", interactiveOnly: false, viewportOnly: false })).toEqual({
      ok: true,
      value: { frames: [] },
    });
    const always = scripted({ "page.snapshot": () => gone });
    expect(await always.call("page.snapshot", { tabId: 1, revision: "r1", interactiveOnly: false, viewportOnly: false })).toEqual(gone);
    expect(always.calls).toHaveLength(2);
  });
});

describe("tabs.list", () => {
  const tab = (tabId: number, over: Partial<TabInfo> = {}): TabInfo => ({
    tabId,
    windowId: 1,
    url: `http://x.test/${tabId}`,
    title: `page ${tabId}`,
    active: false,
    status: "complete",
    shared: false,
    ...over,
  });

  it("asks the browser while it has sent no list of its own", async () => {
    const driver = scripted({ "tabs.list": () => ({ ok: true, value: { tabs: [tab(1)] } }) });
    expect(await driver.call("tabs.list", {})).toEqual({ ok: true, value: { tabs: [tab(1)] } });
    expect(driver.calls.map((c) => c.method)).toEqual(["tabs.list"]);
  });

  it("is answered from the browser's last list, amended by the answers of tab calls since, without asking", async () => {
    const view = new TabView();
    const driver = scripted(
      {
        "tabs.open": () => ({ ok: true, value: { tab: tab(3, { active: true, title: "opened" }) } }),
        "tabs.close": () => ({ ok: true, value: { closed: true } }),
      },
      view,
    );
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [tab(1, { active: true }), tab(2, { windowId: 2, active: true })] } });
    await driver.call("tabs.open", { url: "http://x.test/3", active: true });
    await driver.call("tabs.close", { tabId: 2 });
    // The browser's own news: a page retitled itself; a tab the user closed.
    view.observe({ type: "event", event: "tab.removed", params: { tabId: 1 } });
    expect(await driver.call("tabs.list", {})).toEqual({ ok: true, value: { tabs: [tab(3, { active: true, title: "opened" })], asOf: expect.any(Number) } });
    expect(driver.calls.map((c) => c.method)).toEqual(["tabs.open", "tabs.close"]);
  });

  it("drops a tab from the view as its close is sent, before the browser answers", async () => {
    const view = new TabView();
    let answer: (value: Result<ResultOf<"tabs.close">>) => void = () => undefined;
    const driver = scripted({ "tabs.close": () => new Promise((resolve) => (answer = resolve)) as never }, view);
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [tab(1), tab(2)] } });
    const closing = driver.call("tabs.close", { tabId: 2 });
    expect((await driver.call("tabs.list", {})).ok && view.now()?.tabs.map((t) => t.tabId)).toEqual([1]);
    answer({ ok: true, value: { closed: true } });
    await closing;
  });

  it("puts back a tab whose close failed while it exists, keeps out one taken back during a call on it", async () => {
    const view = new TabView();
    const driver = scripted(
      {
        "tabs.close": ({ tabId }) =>
          tabId === 1 ? { ok: false, error: { code: "timeout", message: "no answer" } } : { ok: false, error: { code: "no_such_tab", message: "gone" } },
        "tabs.get": ({ tabId }) => ({ ok: true, value: { tab: tab(tabId, { title: "late answer" }) } }),
      },
      view,
    );
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [tab(1), tab(2), tab(3)] } });
    await driver.call("tabs.close", { tabId: 1 });
    await driver.call("tabs.close", { tabId: 2 });
    view.observe({ type: "event", event: "tab.stop", params: { tabId: 3 } });
    await driver.call("tabs.get", { tabId: 3 });
    expect(view.now()?.tabs.map((t) => t.tabId)).toEqual([1]);
  });

  it("marks the tab a call brought to the front as the only front tab of its window", async () => {
    const view = new TabView();
    const driver = scripted({ "tabs.activate": () => ({ ok: true, value: { tab: tab(2, { active: true }) } }) }, view);
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [tab(1, { active: true }), tab(2), tab(3, { windowId: 9, active: true })] } });
    await driver.call("tabs.activate", { tabId: 2 });
    const listed = await driver.call("tabs.list", {});
    expect(listed.ok && listed.value.tabs.map((t) => [t.tabId, t.active])).toEqual([
      [1, false],
      [2, true],
      [3, true],
    ]);
  });

  it("takes no list it cannot read, and asks the browser again", async () => {
    const view = new TabView();
    const driver = scripted({ "tabs.list": () => ({ ok: true, value: { tabs: [] } }) }, view);
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [tab(1)] } });
    view.observe({ type: "event", event: "tabs.now", params: { tabs: [{ tabId: "1" }] } } as never);
    expect(await driver.call("tabs.list", {})).toEqual({ ok: true, value: { tabs: [] } });
    expect(driver.calls.map((c) => c.method)).toEqual(["tabs.list"]);
  });
});

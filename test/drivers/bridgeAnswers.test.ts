// A malformed answer from the browser, through the real broker and a real MCP client: the stub extension speaks the
// real bridge protocol and answers with the wrong shape; the agent gets a clear internal error naming the method
// and the field, and the broker keeps serving.
import type { ResultOf, TabInfo } from "../../packages/protocol/src/index.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allowYaml, call, connectClient, startBroker, type TestBroker } from "../harness.js";
import { StubExtension } from "../stubExtension.js";

let broker: TestBroker;
let stub: StubExtension | undefined;

const tab: TabInfo = { tabId: 11, windowId: 1, url: "http://127.0.0.1:1/shop", title: "Shop", active: true, status: "complete", shared: false };

/** What a broken or mismatched extension might send: deliberately not the method's result type. */
function malformed<M extends "page.snapshot" | "tabs.list">(value: unknown): ResultOf<M> {
  return value as ResultOf<M>;
}

beforeEach(async () => {
  broker = await startBroker({ yaml: allowYaml() });
});

afterEach(async () => {
  stub?.close();
  stub = undefined;
  await broker.close();
});

describe("malformed extension answers", () => {
  it("a snapshot with the wrong shape is an internal error naming page.snapshot and the field", async () => {
    const frame = { frameId: 0, parentFrameId: -1, url: tab.url, title: "Shop", nodes: [{ role: "button", name: "Buy" }] };
    stub = new StubExtension({
      port: broker.port,
      handlers: { "tabs.get": () => ({ tab }), "tabs.list": () => ({ tabs: [tab] }), "page.snapshot": () => malformed<"page.snapshot">({ frames: [frame] }) },
    });
    await stub.welcomed;
    const client = await connectClient(broker.url);
    const result = await call(client, "snapshot", { tab: 11 });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^internal: the browser's answer to page\.snapshot is malformed: frames\[0\]\.nodes must be a string/);
    // The broker is unharmed: the next call with a good answer works.
    stub.handlers["page.snapshot"] = () => ({ frames: [{ ...frame, nodes: "e1\tbutton\tBuy\t0\t\t\t\t" }] });
    const again = await call(client, "snapshot", { tab: 11 });
    expect(again.isError).toBe(false);
    expect(again.text).toContain('button "Buy"');
    await client.close();
  });

  it("unknown extra fields from a newer extension are stripped, not refused", async () => {
    stub = new StubExtension({
      port: broker.port,
      handlers: { "tabs.list": () => malformed<"tabs.list">({ tabs: [{ ...tab, pinned: true }], cursor: "next" }) },
    });
    await stub.welcomed;
    const client = await connectClient(broker.url);
    const result = await call(client, "list_tabs");
    expect(result.isError).toBe(false);
    expect(result.text).toContain("http://127.0.0.1:1/shop");
    await client.close();
  });
});

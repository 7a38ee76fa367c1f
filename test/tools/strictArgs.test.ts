// Arguments are checked by the tool's own strict schema (the one tools/list shows), through a real MCP client:
// an unknown or ill-typed argument is an invalid_params result naming the field and the fix, nothing reaches
// the browser, and the call is audited.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { TabInfo } from "../../packages/protocol/src/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, connectClient, startBroker, type TestBroker } from "../harness.js";
import { StubExtension } from "../stubExtension.js";
import { tools as TABLE } from "../../packages/broker/src/catalog.js";

let broker: TestBroker;
let stub: StubExtension;
let client: Client;

function tab(tabId: number, url: string): TabInfo {
  return { tabId, windowId: 1, url, title: "T", active: false, status: "complete", shared: false };
}

beforeAll(async () => {
  broker = await startBroker();
  stub = new StubExtension({
    port: broker.port,
    handlers: { "tabs.list": () => ({ tabs: [tab(4, "http://127.0.0.1:1/")] }), "tabs.get": () => ({ tab: tab(4, "http://127.0.0.1:1/") }) },
  });
  await stub.welcomed;
  client = await connectClient(broker.url);
});

afterAll(async () => {
  await client.close();
  stub.close();
  await broker.close();
});

function lastAudit(tool: string) {
  return broker.broker.audit.list({ limit: 50 }).find((r) => r.tool === tool);
}

describe("strict arguments", () => {
  it("an unknown argument is refused, named, with the fix, and never reaches the browser", async () => {
    const before = stub.calls.length;
    const result = await call(client, "click", { tab: 4, ref: "e1", revision: "r1-x", bogus: 1 });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(
      /^invalid_params: unknown argument `bogus` \(click takes tab, ref, revision, browser, idempotency_key\): remove it and call click again/,
    );
    expect(stub.calls.length).toBe(before);
  });

  it("a wrongly typed argument names the field, what it must be and what was sent", async () => {
    const result = await call(client, "read_page", { tab: "x" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^invalid_params: `tab` must be an integer, got "x": fix it and call read_page again/);
    const fraction = await call(client, "read_page", { tab: 1.5 });
    expect(fraction.text).toMatch(/^invalid_params: `tab` must be an integer, got 1.5/);
  });

  it("a missing, out-of-range or off-list argument says so", async () => {
    expect((await call(client, "navigate", { url: "http://127.0.0.1:1/" })).text).toMatch(
      /^invalid_params: missing argument `tab` \(Tab id\.\): add it and call navigate again/,
    );
    expect((await call(client, "read_page", { tab: 4, max_chars: 10 })).text).toMatch(/^invalid_params: `max_chars` must be at least 500, got 10/);
    expect((await call(client, "read_page", { tab: 4, mode: "brief" })).text).toMatch(/^invalid_params: `mode` must be one of "readable", "full", got "brief"/);
  });

  it("an unknown field of an object argument is named with its path and that object's fields", async () => {
    const result = await call(client, "browser_run", { program: "return 1", budgets: { wallMs: 1500 } });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(
      /^invalid_params: unknown field `budgets\.wallMs` \(`budgets` takes wall_ms, [a-z_, ]+\): remove it and call browser_run again/,
    );
  });

  it("several problems are listed together, then the retry", async () => {
    const result = await call(client, "list_tabs", { browser: 7, tab: 1 });
    expect(result.text).toMatch(/^invalid_params: /);
    expect(result.text).toContain("unknown argument `tab` (list_tabs takes browser): remove it");
    expect(result.text).toContain("`browser` must be a string, got 7: fix it");
    expect(result.text).toMatch(/; then call list_tabs again/);
  });

  it("a refused call leaves an audit record: failed, invalid_params", async () => {
    await call(client, "close_tab", { tab: 4, extra: true });
    const record = lastAudit("close_tab");
    expect(record?.decision).toBe("failed");
    expect(record?.code).toBe("invalid_params");
    // A write refused for its arguments was never begun: one record, not an outcome_unknown one.
    await call(client, "fill", { tab: 4, ref: "e1", revision: "r1-x", text: 5 });
    expect(lastAudit("fill")).toMatchObject({ decision: "failed", code: "invalid_params" });
  });

  it("good arguments still run, and a tool without arguments takes none", async () => {
    const listed = await call(client, "list_tabs", {});
    expect(listed.isError).toBe(false);
    expect(listed.text).toContain("tab 4");
    expect((await call(client, "list_browsers", { verbose: true })).text).toMatch(
      /^invalid_params: unknown argument `verbose` \(list_browsers takes no arguments\)/,
    );
  });

  it("tools/list names exactly the fields each tool takes (the list leaves additionalProperties: false out; the call is still strict)", async () => {
    const { tools } = await client.listTools();
    for (const tool of tools) {
      const own = TABLE.find((t) => t.name === tool.name);
      expect(own, tool.name).toBeDefined();
      expect(Object.keys(tool.inputSchema.properties ?? {}).sort(), tool.name).toEqual(Object.keys(own!.input.shape).sort());
      const extra = await call(client, tool.name, { not_a_field: 1 });
      expect(extra.text, tool.name).toMatch(/^invalid_params: .*unknown argument `not_a_field`/);
    }
  });

  it("an unknown tool is a protocol error, not a tool result", async () => {
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/unknown tool "no_such_tool"/);
  });
});

// The broker against a stub browser that speaks the real bridge protocol: actions through the bridge.
import { describe, expect, it } from "vitest";
import { call, connectClient } from "./harness.js";
import { stubBrokerPerTest, stubTab } from "./stubExtension.js";

describe("actions through the bridge", () => {
  const bridge = stubBrokerPerTest();

  const facts = {
    ref: "e1",
    role: "button",
    name: "Buy",
    visibleText: "Buy",
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: "http://127.0.0.1:1/shop",
    // A click reaches only the button itself (no label control, no enclosing link).
    activates: [],
  };

  it("an action whose browser vanished after dispatch is outcome_unknown, audited, and not retried", async () => {
    const s = bridge.stub({
      handlers: {
        "tabs.get": () => ({ tab: stubTab(11, "http://127.0.0.1:1/shop") }),
        "page.inspect": () => facts,
        "page.act": () => {
          setTimeout(() => s.ws.terminate(), 20);
          return "never";
        },
      },
    });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "click", { tab: 11, ref: "e1", revision: "r1-x" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^browser_disconnected:/);
    expect(result.text).toContain("unknown");
    expect(s.methods().filter((m) => m === "page.act")).toHaveLength(1);
    const record = bridge.broker.broker.audit.list({ limit: 10 }).find((r) => r.tool === "click");
    expect(record?.decision).toBe("outcome_unknown");
    expect(record?.target).toBe('button "Buy"');
    await client.close();
  });

  it("a refusal never reaches the page, and is audited as refused with its rule", async () => {
    const s = bridge.stub({
      handlers: {
        "tabs.get": () => ({ tab: stubTab(12, "http://127.0.0.1:1/shop") }),
        "page.inspect": () => ({ ...facts, coveredBy: '<div#overlay>' }),
        "page.act": () => ({ facts, effects: { done: "clicked" } }),
      },
    });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "click", { tab: 12, ref: "e1", revision: "r1-x" });
    expect(result.text).toMatch(/^write_denied: .*overlay/);
    expect(s.methods()).not.toContain("page.act");
    const record = bridge.broker.broker.audit.list({ limit: 10 }).find((r) => r.tool === "click");
    expect(record?.decision).toBe("refused");
    expect(record?.rule).toBe("element: covered");
    await client.close();
  });
});

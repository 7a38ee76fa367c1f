// list_browsers and the `browser` argument every tool takes: several connected browsers, the newest serving by
// default. Fast broker tests: stub browsers on the real bridge protocol (test/stubExtension.ts). What each real
// driver can capture, as list_browsers states it, is in screenshot.test.ts.
import { describe, expect, it } from "vitest";
import { call, connectClient } from "../harness.js";
import { stubBrokerPerTest, stubTab } from "../stubExtension.js";

describe("browser registry", () => {
  const bridge = stubBrokerPerTest();

  it("keeps several browsers; the newest serves by default and `browser` picks another", async () => {
    const a = bridge.stub({ browserId: "browser-aaaa-0001", label: "first", handlers: { "tabs.list": () => ({ tabs: [stubTab(1, "https://a.test/")] }) } });
    await a.welcomed;
    const b = bridge.stub({ browserId: "browser-bbbb-0002", label: "second", handlers: { "tabs.list": () => ({ tabs: [stubTab(2, "https://b.test/")] }) } });
    await b.welcomed;
    const client = await connectClient(bridge.broker.url);
    const list = await call(client, "list_browsers");
    expect(list.text).toContain("browser-aaaa-0001");
    expect(list.text).toMatch(/browser-bbbb-0002.*default/);
    expect((await call(client, "list_tabs")).text).toContain("https://b.test/");
    expect((await call(client, "list_tabs", { browser: "first" })).text).toContain("https://a.test/");
    const unknown = await call(client, "list_tabs", { browser: "nope" });
    expect(unknown.isError).toBe(true);
    expect(unknown.text).toMatch(/^unknown_browser:/);
    await client.close();
  });
});

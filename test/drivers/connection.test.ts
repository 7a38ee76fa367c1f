// How agents and browsers stay connected to the broker, through each driver with a real headless Chromium: a second
// agent's `tabrelay stdio` forwards to the running broker, the MV3 service worker stays connected through idle, and a
// browser killed mid-call fails the call at once. How fast browsers come back after a broker restart (extension and
// `launch --cdp`) is in connection.reconnect.test.ts. Then against a stub browser on the real bridge protocol (fast): calls in flight when the browser goes away, a
// browser that does not answer, no browser at all. What happens to the browser's processes and profile when
// tabrelay stops is in lifecycle.test.ts.
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allowYaml,
  article,
  attachBrowser,
  call,
  connectClient,
  DRIVERS,
  MCP_TOKEN,
  PAIRING_TOKEN,
  startBroker,
  startSite,
  waitFor,
  type AttachedBrowser,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { stubBrokerPerTest, stubTab } from "../stubExtension.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

let site: TestSite;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/article", article("Rivers of the North", 60, "This is the closing paragraph of the article."));
  site.route("/slow", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.write("<html><head><title>Slow</title></head><body><p>Loading");
    // Never finishes: the browser keeps loading until the test kills it.
  });
}, 60_000);

afterAll(async () => {
  await site?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let broker: TestBroker;
  let client: Client;
  let browser: AttachedBrowser | undefined;
  const label = { cdp: "test cdp", extension: "test chromium", firefox: "test firefox" }[driver];

  async function connectBrowser(): Promise<void> {
    // Popups allowed over CDP too, as for the extension's browser (harness.ts).
    browser = await attachBrowser(broker, driver, { allowPopups: true });
  }

  beforeAll(async () => {
    broker = await startBroker({ yaml: allowYaml("read:\n  load_timeout_ms: 4000\n") });
    await connectBrowser();
    client = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await browser?.close();
    await broker?.close();
  });

  describe("stdio", () => {
    it("forwards to the running broker when the port is taken (several agents, one browser)", async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "stdio", "--port", String(broker.port), "--data-dir", broker.dataDir],
        env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
        stderr: "pipe",
      });
      const stdioClient = new Client({ name: "stdio-test", version: "0" });
      const sessionsBefore = broker.broker.mcpSessions;
      await stdioClient.connect(transport);
      expect(broker.broker.mcpSessions).toBe(sessionsBefore + 1);
      const browsers = await call(stdioClient, "list_browsers");
      expect(browsers.text).toContain(label);
      const read = await call(stdioClient, "read_url", { url: `${site.origin}/article` });
      expect(read.text).toContain("This is the closing paragraph of the article.");
      await stdioClient.close();
      await waitFor("the forwarded session to end on the broker", () => (broker.broker.mcpSessions === sessionsBefore ? true : undefined), 5000);
    });
  });

  // The extension's own lifetime: a CDP browser has no service worker.
  if (driver === "extension")
    describe("MV3 service-worker lifetime", () => {
      it("stays connected through 35 s of idle (Chrome kills an idle worker at 30 s) and still answers", async () => {
        const [before] = broker.broker.registry.list();
        expect(before).toBeDefined();
        await new Promise((r) => setTimeout(r, 35_000));
        const [after] = broker.broker.registry.list();
        expect(after?.info.connectedAt).toBe(before?.info.connectedAt);
        expect((await call(client, "list_tabs")).isError).toBe(false);
      }, 60_000);
    });

  describe("failures a user would hit", () => {
    it("a browser killed mid-call fails the call at once with browser_disconnected", async () => {
      const pending = call(client, "read_url", { url: `${site.origin}/slow` });
      await new Promise((r) => setTimeout(r, 1000));
      const killedAt = Date.now();
      browser?.kill();
      const result = await pending;
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(/^browser_disconnected:/);
      // At once: well inside the 30 s the call would otherwise wait for the browser's answer, even on a busy machine.
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      expect((await call(client, "list_browsers")).text).toContain("No browser is connected");
      await browser?.close();
      await connectBrowser();
    }, 60_000);
  });
});

// ---- against a stub browser (fast) --------------------------------------------------------------------

describe("browser registry", () => {
  const bridge = stubBrokerPerTest();

  it("fails every call in flight at once with browser_disconnected when the browser goes away", async () => {
    const s = bridge.stub({ handlers: { "tabs.list": () => "never" } });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const pending = call(client, "list_tabs");
    await waitFor("the call to reach the browser", () => s.calls.length > 0 || undefined);
    const started = Date.now();
    s.ws.terminate();
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^browser_disconnected:/);
    // At once: well inside the 30 s the call would otherwise wait, even on a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    await client.close();
  });

  it("gives `timeout` when the browser does not answer, and drops the late answer", async () => {
    const s = bridge.stub({ handlers: { "tabs.list": () => "never" } });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "list_tabs");
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^timeout:/);
    s.send({ type: "result", id: s.calls[0]?.id, ok: true, result: { tabs: [] } });
    s.send({ type: "result", id: 999_999, ok: true, result: {} });
    s.handlers["tabs.list"] = () => ({ tabs: [stubTab(5, "https://later.test/")] });
    expect((await call(client, "list_tabs")).text).toContain("https://later.test/");
    await client.close();
  });

  it("says not_connected with the next step when no browser is connected", async () => {
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "read_url", { url: "https://en.wikipedia.org/wiki/Main_Page" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^not_connected: .*tabrelay launch/);
    await client.close();
  });
});

// browser_start / browser_live_view / browser_stop with `browsers.source: browserbase | kernel`, through the real
// provider client (launch/providers.ts, the one `tabrelay serve --provider` uses) and the real MCP SDK client.
// The providers are LOCAL servers speaking their documented HTTP API (packages/broker/test/fakeProviderApi.ts, the
// same fake as providers.test.ts): they check the requests and hand out a connect URL that points at a real local
// Chromium (with a token in its query, as the real ones carry). Checked: the documented create, the live-view URL
// (Browserbase's GET /v1/sessions/{id}/debug, Kernel's browser_live_view_url) reaches the user in that one result and
// nowhere else (audit rows, log lines, another result quoting it is redacted), one release on stop, none on the
// second stop, and no connect URL, token or API key in any result.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Broker, findChromium, launchLocalChromium, loadConfig, type Logger } from "../../packages/broker/src/index.js";
import type { LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { startFakeApi, type FakeApi, type Recorded } from "../fakeProviderApi.js";
import { allowYaml, auditRows, call, connectClient, makeDataDir, MCP_TOKEN, page, PAIRING_TOKEN, startSite, type TestSite } from "../harness.js";

const API_KEY = "provider-api-key-3e8c1a9f5b7d2e4c";
const TOKEN = "connect-token-9b1d3f5a7c2e4a6b8d0f";
const LIVE_TOKEN = "live-view-token-4c6e8a0b2d4f6a8c0e";

let chromium: LaunchedCdpBrowser;
let site: TestSite;
let api: FakeApi;

beforeAll(async () => {
  chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
  site = await startSite();
  site.route("/hello", page("Hosted hello", "<h1>Hello from a hosted browser</h1><p>The hosted line.</p>"));
  api = await startFakeApi();
});

afterAll(async () => {
  await api?.close();
  await site?.close();
  await chromium?.close();
});

const connectUrl = () => `${chromium.endpoint}?token=${TOKEN}`;

const CASES = {
  browserbase: {
    env: (origin: string) => ({ BROWSERBASE_API_KEY: API_KEY, BROWSERBASE_PROJECT_ID: "proj-0042", BROWSERBASE_API_URL: origin }),
    created: () => ({
      status: 201,
      body: {
        id: "bb-session-0007",
        status: "RUNNING",
        projectId: "proj-0042",
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        connectUrl: connectUrl(),
        signingKey: TOKEN,
      },
    }),
    live: `https://www.browserbase.com/devtools-fullscreen/inspector.html?wss=connect.browserbase.com/debug/bb-session-0007/devtools/page/1?debug=true&token=${LIVE_TOKEN}`,
    createPath: "/v1/sessions",
    release: (r: Recorded) => r.method === "POST" && r.path === "/v1/sessions/bb-session-0007",
    authorized: (r: Recorded) => r.headers["x-bb-api-key"] === API_KEY,
  },
  kernel: {
    env: (origin: string) => ({ KERNEL_API_KEY: API_KEY, KERNEL_API_URL: origin }),
    created: () => ({
      status: 200,
      body: {
        session_id: "kernel-browser-0007",
        cdp_ws_url: connectUrl(),
        timeout_seconds: 60,
        headless: false,
        browser_live_view_url: `https://live.onkernel.com/kernel-browser-0007?jwt=${LIVE_TOKEN}`,
      },
    }),
    live: `https://live.onkernel.com/kernel-browser-0007?jwt=${LIVE_TOKEN}`,
    createPath: "/browsers",
    release: (r: Recorded) => r.method === "DELETE" && r.path === "/browsers/kernel-browser-0007",
    authorized: (r: Recorded) => r.headers.authorization === `Bearer ${API_KEY}`,
  },
} as const;

describe.each(["browserbase", "kernel"] as const)("browsers.source: %s", (name) => {
  const c = CASES[name];
  let broker: Broker;
  let client: Client;
  let dataDir: string;
  const logs: string[] = [];
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    api.requests = [];
    api.onCreate = () => c.created();
    api.onGet = (r) =>
      r.path === "/v1/sessions/bb-session-0007/debug"
        ? {
            status: 200,
            body: {
              debuggerFullscreenUrl: c.live,
              debuggerUrl: c.live.replace("-fullscreen", ""),
              wsUrl: `wss://connect.browserbase.com/debug/bb-session-0007?token=${LIVE_TOKEN}`,
              pages: [],
            },
          }
        : { status: 404 };
    // The provider client reads the same variables as `tabrelay serve --provider`, from the environment.
    for (const [key, value] of Object.entries(c.env(api.origin))) {
      saved[key] = process.env[key];
      process.env[key] = value;
    }
    dataDir = makeDataDir(allowYaml(`screenshots:\n  enabled: true\nbrowsers:\n  source: ${name}\n`));
    const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN } });
    const log: Logger = { info: (m) => logs.push(m), warn: (m) => logs.push(m), error: (m) => logs.push(m) };
    broker = new Broker({ config, log });
    client = await connectClient((await broker.listen()).url);
  });

  afterAll(async () => {
    await client?.close();
    await broker?.close();
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  it("starts a session with the documented request, reads a page in it, gives the live view to the user only, and releases it once", async () => {
    const texts: string[] = [];
    const tool = async (tool: string, args: Record<string, unknown> = {}) => {
      const result = await call(client, tool, args);
      texts.push(result.text);
      return result;
    };
    const start = await tool("browser_start");
    expect(start.isError, start.text).toBe(false);
    const id = /Started browser (cdp-[0-9a-f-]+)/.exec(start.text)?.[1] ?? "";
    expect(id).not.toBe("");
    const create = api.requests.find((r) => r.method === "POST" && r.path === c.createPath);
    expect(create && c.authorized(create)).toBe(true);

    const opened = await tool("open_tab", { url: `${site.origin}/hello`, browser: id });
    expect(opened.isError, opened.text).toBe(false);
    const tab = Number(/tab (\d+)/i.exec(opened.text)?.[1]);
    expect((await tool("read_page", { tab, browser: id })).text).toContain("The hosted line.");

    const view = await tool("browser_live_view", { browser: id });
    expect(view.isError, view.text).toBe(false);
    expect(view.text).toContain(c.live);
    expect(view.text).toContain("a credential");
    expect(view.text).toMatch(/\/shots\/\S+\.png/);
    if (name === "browserbase") {
      const debug = api.requests.find((r) => r.method === "GET" && r.path === "/v1/sessions/bb-session-0007/debug");
      expect(debug && c.authorized(debug)).toBe(true);
    }
    // Anywhere else the live-view URL is a secret: a page quoting it reads redacted.
    site.route("/quote", page("Quote", `<p>watch at ${c.live}</p>`));
    const quoted = await tool("read_url", { url: `${site.origin}/quote`, mode: "full" });
    expect(quoted.text).not.toContain(LIVE_TOKEN);
    expect(quoted.text).toContain("[redacted: provider session]");

    expect(api.requests.filter(c.release)).toHaveLength(0);
    const stop = await tool("browser_stop", { browser: id });
    expect(stop.text).toContain(`Stopped browser ${id}`);
    expect(api.requests.filter(c.release)).toHaveLength(1);
    expect((await tool("browser_stop", { browser: id })).text).toContain("already stopped");
    expect(api.requests.filter(c.release)).toHaveLength(1);
    // The provider runs the browser: stopping the session detaches it here, the (local stand-in) browser lives on.
    expect(broker.registry.list().some((b) => b.info.browserId === id)).toBe(false);

    const everything = [...texts.filter((t) => t !== view.text), ...logs];
    everything.push(JSON.stringify(auditRows({ dataDir })));
    for (const text of [...everything, view.text]) {
      for (const secret of [API_KEY, TOKEN, chromium.endpoint, new URL(chromium.endpoint).host]) expect(text).not.toContain(secret);
    }
    for (const text of everything) expect(text).not.toContain(LIVE_TOKEN);
  });

  it("names the missing key when the provider cannot be used", async () => {
    const key = name === "browserbase" ? "BROWSERBASE_API_KEY" : "KERNEL_API_KEY";
    const value = process.env[key];
    delete process.env[key];
    try {
      const start = await call(client, "browser_start");
      expect(start.isError).toBe(true);
      expect(start.text).toMatch(/^browser_start_failed: /);
      expect(start.text).toContain(key);
    } finally {
      process.env[key] = value;
    }
  });
});

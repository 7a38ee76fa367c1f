// The stateless entry (issue 15): tabrelay's CDP tools, policy and audit served by the Workers bundle under workerd
// (Cloudflare's runtime, from the workerd npm package) and by the same app as a Vercel-style Node function, each
// driving a real local Chromium over the DevTools protocol on loopback, through the real MCP SDK client. Every request
// connects to the browser and disconnects: refs from one call are used in the next (the in-page world survives).
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchLocalChromium } from "@tabrelay/broker";
import { createNodeHandler } from "../../packages/worker/src/node/index.js";
import { startFakeApi, type FakeApi } from "../fakeProviderApi.js";
import { article, page, startSite, waitFor, type TestSite } from "../harness.js";
import { auditLines, startWorkerd, type Workerd } from "../workerd.js";

const TOKEN = "worker-test-token-0123456789abcdef";

let site: TestSite;
let refused: TestSite;
let collector: Server;
let collected: Array<Record<string, unknown>> = [];

function configYaml(): string {
  return `policy:
  read:
    top_sites: 0
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Add to cart$" }
`;
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "worker-test", version: "0.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, ...headers } } }),
  );
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ text: string; isError: boolean }> {
  const result = await client.callTool({ name, arguments: args });
  const content = Array.isArray(result.content) ? result.content : [];
  return { text: content.map((c: { type: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("\n"), isError: result.isError === true };
}

const collectorUrl = () => `http://127.0.0.1:${(collector.address() as AddressInfo).port}/audit`;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  refused = await startSite("localhost");
  site.route("/story", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(article("River lights", 6, "The river, for once, was only a river."));
  });
  site.route(
    "/shop",
    page(
      "Shop",
      `<h1>Shop</h1><p id="cart">Cart: 0 items</p><button onclick="document.getElementById('cart').textContent='Cart: 1 item'">Add to cart</button><button onclick="document.body.append('DELETED')">Delete account</button>`,
    ),
  );
  refused.route("/secret", page("Secret", "<p>not for agents</p>"));
  collector = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (c: string) => (body += c));
    req.on("end", () => {
      if (req.headers.authorization === "Bearer collector-secret-0123456789") collected.push(...(JSON.parse(body) as Array<Record<string, unknown>>));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
}, 60_000);

afterAll(async () => {
  await site?.close();
  await refused?.close();
  await new Promise((resolve) => collector?.close(resolve));
});

/** What a user does through either host: list, open, read, snapshot, click (granted, then refused), read a refused host. */
function sameClientTest(name: string, start: (bindings: Record<string, string>) => Promise<{ url: string; output(): string; stop(): Promise<void> }>) {
  describe(name, () => {
    let chromium: Awaited<ReturnType<typeof launchLocalChromium>>;
    let host: { url: string; output(): string; stop(): Promise<void> };
    let client: Client;

    beforeAll(async () => {
      collected = [];
      chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
      host = await start({
        TABRELAY_MCP_TOKEN: TOKEN,
        TABRELAY_CDP_URL: chromium.endpoint,
        TABRELAY_CONFIG: configYaml(),
        TABRELAY_AUDIT_URL: collectorUrl(),
        TABRELAY_AUDIT_TOKEN: "collector-secret-0123456789",
      });
      client = await connect(host.url);
    }, 60_000);

    afterAll(async () => {
      await client?.close();
      await host?.stop();
      await chromium?.close();
    });

    it("lists the tools, reads a page, snapshots it and clicks through the write gate, one request each", async () => {
      const listed = (await client.listTools()).tools.map((t) => t.name);
      expect(listed).toEqual(expect.arrayContaining(["read_url", "open_tab", "read_page", "snapshot", "query", "click", "fill", "browser_api"]));

      const read = await call(client, "read_url", { url: `${site.origin}/story` });
      expect(read.isError, read.text).toBe(false);
      expect(read.text).toContain("The river, for once, was only a river.");

      const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
      expect(opened.isError, opened.text).toBe(false);
      const tab = Number(/tab (\d+)/i.exec(opened.text)?.[1]);
      expect(tab).toBeGreaterThan(0);

      // A new connection finds the same tab by the same id.
      const snap = await call(client, "snapshot", { tab });
      expect(snap.isError, snap.text).toBe(false);
      const revision = /revision[:= ]+"?([\w-]+)/i.exec(snap.text)?.[1];
      const ref = (label: string) => new RegExp(`"${label}"[^\\n]*\\[ref=(\\w+)\\]`).exec(snap.text)?.[1];
      expect(revision).toBeDefined();
      expect(ref("Add to cart")).toBeDefined();

      // The ref and revision of the previous request's snapshot still name the button.
      const added = await call(client, "click", { tab, ref: ref("Add to cart"), revision });
      expect(added.isError, added.text).toBe(false);
      const denied = await call(client, "click", { tab, ref: ref("Delete account"), revision });
      expect(denied.isError).toBe(true);
      expect(denied.text).toMatch(/^write_denied/);
      expect(denied.text).toContain("in the TABRELAY_CONFIG binding");
      expect(denied.text).not.toContain("config.yaml");
      const after = await call(client, "query", { tab, selector: "#cart" });
      expect(after.text).toContain("Cart: 1 item");
      const page = await call(client, "read_page", { tab, mode: "full" });
      expect(page.text).not.toContain("DELETED");
    });

    it("runs programs: a program end to end, two at once without one waiting for the other, its own tabs closed as it ends", async () => {
      const program = `const tab = await browse.open(${JSON.stringify(`${site.origin}/shop?from-a-program`)});
log("opened", tab.id);
return await browse.get("title");`;
      const ran = await client.callTool({ name: "browser_run", arguments: { program } });
      const sc = ran.structuredContent as { status: string; value?: unknown; logs: Array<{ level: string; text: string }>; run: string };
      expect(sc.status, JSON.stringify(ran.content).slice(0, 600)).toBe("ok");
      expect(sc.value).toBe("Shop");
      // log(...) is log.info(...).
      expect(sc.logs[0]).toMatchObject({ level: "info", text: expect.stringMatching(/^opened \d+$/) });
      // Its tab went with it (it returned none).
      expect((await call(client, "list_tabs")).text).not.toContain("from-a-program");
      // Two at once: the slow one waits on the browser for 3 s (in a tab opened for it, so nothing of its own is
      // closed when it ends); the fast one, asked once the slow one is running, answers while it waits.
      const holder = Number(/tab (\d+)/i.exec((await call(client, "open_tab", { url: `${site.origin}/shop?holder` })).text)?.[1]);
      let slowDone = false;
      const slow = client
        .callTool({
          name: "browser_run",
          arguments: {
            tab: holder,
            program: `await browse.goto(${JSON.stringify(`${site.origin}/shop?slow-started`)}); await browse.waitFor({ text: "a text this page never shows", timeoutMs: 3000 }).catch(() => 0); return "slow";`,
          },
        })
        .then((r) => ((slowDone = true), r));
      await waitFor("the slow program running", async () => ((await call(client, "list_tabs")).text.includes("slow-started") ? true : undefined));
      const fast = await client.callTool({ name: "browser_run", arguments: { program: `return "fast";` } });
      expect((fast.structuredContent as { value?: unknown }).value).toBe("fast");
      expect(slowDone).toBe(false);
      expect(((await slow).structuredContent as { value?: unknown }).value).toBe("slow");
      await call(client, "close_tab", { tab: holder });
    });

    it("names its browser the same on every request: the id list_browsers gives is one a call can name", async () => {
      const ids = (text: string) => [...text.matchAll(/id: (\S+)/g)].map((m) => m[1]);
      const first = (await call(client, "list_browsers")).text;
      const second = (await call(client, "list_browsers")).text;
      expect(ids(first)).toEqual(["cdp:default"]);
      expect(ids(second)).toEqual(ids(first));
      expect(first).toContain("cdp:default");
      expect(first).not.toMatch(/cdp-[0-9a-f]{8}-/);
      const named = await call(client, "list_tabs", { browser: "cdp:default" });
      expect(named.isError, named.text).toBe(false);
    });

    it("refuses a read outside the policy and a write without a grant, and audits both: log lines and the collector's batches", async () => {
      const refusedRead = await call(client, "read_url", { url: `${refused.origin}/secret` });
      expect(refusedRead.isError).toBe(true);
      expect(refusedRead.text).toMatch(/^policy_denied/);
      expect(refusedRead.text).not.toContain("not for agents");
      // The refusal names where this deployment's config lives: its binding, not a file it has none of.
      expect(refusedRead.text).toContain("under policy.read.allow in the TABRELAY_CONFIG binding");
      expect(refusedRead.text).not.toContain("config.yaml");
      await expect.poll(() => collected.some((r) => r["tool"] === "read_url" && r["decision"] === "refused"), { timeout: 10_000 }).toBe(true);
      expect(collected.some((r) => r["tool"] === "click" && r["code"] === "write_denied")).toBe(true);
      const logged = auditLines(host.output());
      expect(logged.some((r) => r["tool"] === "read_url" && r["decision"] === "refused" && String(r["origin"] ?? "").includes("localhost"))).toBe(true);
      expect(logged.some((r) => r["tool"] === "click" && r["code"] === "write_denied")).toBe(true);
      // The granted click's record was begun before it was sent, then completed.
      const clicks = logged.filter((r) => r["tool"] === "click" && r["phase"] !== undefined);
      expect(clicks.map((r) => r["phase"])).toEqual(expect.arrayContaining(["begun", "completed"]));
      // No credential in what the Worker wrote: the token, the DevTools URL, the collector's token.
      expect(host.output()).not.toContain(TOKEN);
      expect(host.output()).not.toContain(chromium.endpoint);
      expect(host.output()).not.toContain("collector-secret-0123456789");
    });

    it("answers 401 without the bearer token, GET /mcp 405 (stateless), and 413 to a body over 4 MiB sent without a length", async () => {
      const anonymous = await fetch(`${host.url}/mcp`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(anonymous.status).toBe(401);
      const stream = await fetch(`${host.url}/mcp`, { headers: { Authorization: `Bearer ${TOKEN}`, Accept: "text/event-stream" } });
      expect(stream.status).toBe(405);
      // A body with no declared length is read only up to the 4 MiB cap, then refused. (Under Node's HTTP server the
      // early 413 leaves undici's upload waiting for the unread rest, so this is asserted where the Worker runs.)
      if (!name.includes("workerd")) return;
      const chunk = new Uint8Array(1024 * 1024).fill(0x20);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent++ < 8) controller.enqueue(chunk);
          else controller.close();
        },
      });
      const big = await fetch(`${host.url}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body,
        duplex: "half",
      });
      expect(big.status).toBe(413);
    });
  });
}

sameClientTest("the Workers bundle under workerd", (bindings) => startWorkerd(bindings));

sameClientTest("the same app as a Vercel-style Node function", async (bindings) => {
  let output = "";
  const handler = createNodeHandler({ env: bindings, write: (line) => (output += `${line}\n`) });
  const server = createServer(getRequestListener(handler));
  // The app's audit lines go to console.log on Node too: captured for the test.
  const log = console.log;
  console.log = (...args: unknown[]) => {
    output += `${args.map(String).join(" ")}\n`;
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    output: () => output,
    async stop() {
      console.log = log;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
});

describe("instances share nothing but the handle", () => {
  let chromium: Awaited<ReturnType<typeof launchLocalChromium>>;
  let first: Workerd;
  let second: Workerd;

  beforeAll(async () => {
    chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    const bindings = { TABRELAY_MCP_TOKEN: TOKEN, TABRELAY_CDP_URL: chromium.endpoint, TABRELAY_CONFIG: configYaml() };
    [first, second] = await Promise.all([startWorkerd(bindings), startWorkerd(bindings)]);
  }, 60_000);

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    await chromium?.close();
  });

  it("a browser made through one workerd is listed and shut down through another; a second shutdown is a no-op", async () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const made = await fetch(`${first.url}/browser`, { method: "POST", headers: auth });
    expect(made.status).toBe(201);
    const { browser } = (await made.json()) as { browser: string };
    expect(browser).toBe("cdp:default");

    const client = await connect(first.url, { "X-Tabrelay-Browser": browser });
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
    expect(opened.isError, opened.text).toBe(false);
    await client.close();

    const listed = await fetch(`${second.url}/browser?browser=${encodeURIComponent(browser)}`, { headers: auth });
    expect(listed.status).toBe(200);
    const tabs = ((await listed.json()) as { tabs: Array<{ url: string }> }).tabs;
    expect(tabs.some((t) => t.url === `${site.origin}/shop`)).toBe(true);

    const stopped = await fetch(`${second.url}/browser?browser=${encodeURIComponent(browser)}`, { method: "DELETE", headers: auth });
    expect(await stopped.json()).toMatchObject({ browser, stopped: true });
    await expect.poll(() => chromium.process.exitCode !== null || chromium.process.signalCode !== null, { timeout: 10_000 }).toBe(true);

    const again = await fetch(`${first.url}/browser?browser=${encodeURIComponent(browser)}`, { method: "DELETE", headers: auth });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ browser, stopped: false, already: "gone" });
  });
});

describe("code mode under workerd: a program, and the hostile-program set stopped within budget", () => {
  let chromium: Awaited<ReturnType<typeof launchLocalChromium>>;
  let worker: Workerd;
  let client: Client;

  beforeAll(async () => {
    chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    worker = await startWorkerd({ TABRELAY_MCP_TOKEN: TOKEN, TABRELAY_CDP_URL: chromium.endpoint, TABRELAY_CONFIG: configYaml() });
    client = await connect(worker.url);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await worker?.stop();
    await chromium?.close();
  });

  type Outcome = {
    status: string;
    value?: unknown;
    error?: { code: string; message: string };
    failedCall?: { command: string; error: { code: string } };
    usage: Record<string, number>;
  };
  async function run(program: string, budgets: Record<string, number> = {}): Promise<Outcome> {
    const result = await client.callTool({ name: "browser_run", arguments: { program, budgets: { wall_ms: 3000, ...budgets } } });
    if (!result.structuredContent)
      throw new Error(`browser_run answered no result: ${JSON.stringify(result.content).slice(0, 600)}\n${worker.output().slice(-1500)}`);
    return result.structuredContent as Outcome;
  }
  const budgetHit = (o: Outcome, budget: string) => {
    expect(o.status, JSON.stringify(o)).toBe("budget_exceeded");
    expect(o.error?.message).toContain(`${budget} budget exceeded`);
  };

  it("runs a program: open, snapshot, click a granted button by ref, read what changed; a refused click is the run's failedCall", async () => {
    const ok = await run(`await browse.open(${JSON.stringify(`${site.origin}/shop`)});
const snap = await browse.snapshot();
await browse.click(snap.nodes.find((n) => n.name === "Add to cart")!.ref!);
return await browse.get("text", "#cart");`);
    expect(ok).toMatchObject({ status: "ok", value: "Cart: 1 item" });
    const refused = await run(`await browse.open(${JSON.stringify(`${site.origin}/shop`)});
await browse.click((await browse.query("button")).matches[1]!.ref!);
return "clicked";`);
    expect(refused.status).toBe("error");
    expect(refused.failedCall).toMatchObject({ command: "click", error: { code: "write_denied" } });
  });

  it("CPU: while(true){}, a loop inside a catch-all loop and a catastrophic regex stop at the instruction budget, which holds where the clock stands still (Workers)", async () => {
    // A wall clock far away: the instruction count is what stops each (on Cloudflare, Date.now() does not move in a loop).
    const ticks = { instructions: 2000, wall_ms: 60_000 };
    budgetHit(await run("while (true) {}", ticks), "instructions");
    budgetHit(await run("for (;;) { try { for (;;) {} } catch {} }", ticks), "instructions");
    budgetHit(await run("return /^(a+)+$/.test('a'.repeat(40) + '!');", ticks), "instructions");
    // With the defaults, whichever budget comes first stops it, and the Worker answers the next call.
    expect((await run("while (true) {}")).status).toBe("budget_exceeded");
    expect(await run("return 1;")).toMatchObject({ status: "ok", value: 1 });
  });

  it("memory: 'x'.repeat(2**29), a bomb of small objects and 1 MiB strings kept stop at the memory budget; deep recursion is a clean stack overflow", async () => {
    budgetHit(await run("const s = 'x'.repeat(2 ** 29);\nreturn s.length;"), "memory");
    budgetHit(
      await run("const all = [];\nfor (;;) all.push({ n: all.length, s: 'item' + all.length });", { memory_mb: 8, instructions: 10_000_000 }),
      "memory",
    );
    budgetHit(
      await run("const keep = [];\nfor (let i = 0; i < 2000; i++) keep.push('y'.repeat(1 << 20) + i);\nreturn keep.length;", { memory_mb: 8 }),
      "memory",
    );
    budgetHit(await run("function down(n: number): number { return down(n + 1) + 1; }\nreturn down(0);"), "stack");
  });

  it("escapes: process, require, import(), the constructor's constructor; nothing of the host is reachable", async () => {
    const probe = await run(
      `return [typeof process, typeof require, typeof fetch, typeof WebSocket, typeof setTimeout, (globalThis.constructor.constructor('return typeof this.process')())];`,
    );
    expect(probe).toMatchObject({ status: "ok", value: ["undefined", "undefined", "undefined", "undefined", "undefined", "undefined"] });
    const imported = await run("return await import('node:fs');");
    expect(imported.status).toBe("error");
    expect(imported.error?.message).toContain("could not load module");
  });

  it("values: a Proxy and a getter copied by value, a cyclic value refused; prototype pollution does not reach the next run", async () => {
    expect(await run("return new Proxy({ a: 1 }, { get: (t, k) => (k === 'a' ? 'trapped' : undefined) });")).toMatchObject({
      status: "ok",
      value: { a: "trapped" },
    });
    expect(await run("return { get answer() { return 42; } };")).toMatchObject({ status: "ok", value: { answer: 42 } });
    expect((await run("const a: any = {};\na.self = a;\nreturn a;")).error).toMatchObject({ code: "value_not_copyable" });
    expect(await run("Object.prototype.polluted = 'yes'; Array.prototype.push = null; return 1;")).toMatchObject({ status: "ok" });
    expect(await run("return [({}).polluted, typeof [].push];")).toMatchObject({ status: "ok", value: [null, "function"] });
  });

  it("time and output: a promise that never settles ends at once, 10,000 commands stop at the commands budget, 1 GB of logs at the output budget; the Worker still answers", async () => {
    const never = await run("await new Promise(() => {});\nreturn 1;");
    expect(never.status).toBe("error");
    expect(never.error?.message).toContain("can never settle");
    budgetHit(await run("for (let i = 0; i < 10000; i++) await browse.tabs.list();\nreturn 'all done';", { commands: 50 }), "commands");
    budgetHit(
      await run("const mb = 'x'.repeat(1 << 20);\nfor (let i = 0; i < 1024; i++) log.info(mb);", { output_kb: 2048, instructions: 10_000_000 }),
      "output",
    );
    const inFlight = await run(`browse.tabs.list();\nbrowse.tabs.list();\nreturn 'early';`);
    expect(inFlight).toMatchObject({ status: "ok", value: "early" });
    expect(await run("return 40 + 2;")).toMatchObject({ status: "ok", value: 42 });
  });
});

describe("a hosted provider (Browserbase's documented API, played by a local server) under workerd", () => {
  let chromium: Awaited<ReturnType<typeof launchLocalChromium>>;
  let api: FakeApi;
  let worker: Workerd;
  const live = new Set<string>();
  let made = 0;

  beforeAll(async () => {
    chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    api = await startFakeApi();
    api.onCreate = () => {
      const id = `bb-session-${++made}`;
      live.add(id);
      return { status: 201, body: { id, connectUrl: chromium.endpoint, status: "RUNNING" } };
    };
    api.onGet = (req) => {
      const id = /^\/v1\/sessions\/([^/?]+)$/.exec(req.path)?.[1];
      if (!id || !/^bb-session-\d+$/.test(id)) return { status: 404, body: { message: "no such session" } };
      return { status: 200, body: { id, status: live.has(id) ? "RUNNING" : "COMPLETED", ...(live.has(id) ? { connectUrl: chromium.endpoint } : {}) } };
    };
    api.onRelease = (req) => {
      const id = /^\/v1\/sessions\/([^/?]+)$/.exec(req.path)?.[1];
      if (id) live.delete(id);
      return { status: 200, body: {} };
    };
    worker = await startWorkerd({
      TABRELAY_MCP_TOKEN: TOKEN,
      TABRELAY_PROVIDER: "browserbase",
      BROWSERBASE_API_KEY: "bb-key-0123456789abcdef",
      BROWSERBASE_API_URL: api.origin,
      TABRELAY_CONFIG: configYaml(),
    });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await chromium?.close();
  });

  it("POST /browser creates a session, tool calls reach it by its handle, DELETE releases it and again is already gone", async () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const created = await fetch(`${worker.url}/browser`, { method: "POST", headers: auth });
    expect(created.status).toBe(201);
    const { browser } = (await created.json()) as { browser: string };
    expect(browser).toBe("browserbase:bb-session-1");
    expect(api.requests.find((r) => r.method === "POST" && r.path === "/v1/sessions")?.headers["x-bb-api-key"]).toBe("bb-key-0123456789abcdef");

    const client = await connect(worker.url, { "X-Tabrelay-Browser": browser });
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
    expect(opened.isError, opened.text).toBe(false);
    // Without a handle there is no browser to use: the call says what to do.
    const plain = await connect(worker.url);
    const none = await call(plain, "list_tabs");
    expect(none.isError).toBe(true);
    expect(none.text).toMatch(/^not_connected: no browser named and none by default: POST \/browser first/);
    await plain.close();
    await client.close();

    const stopped = await fetch(`${worker.url}/browser?browser=${encodeURIComponent(browser)}`, { method: "DELETE", headers: auth });
    expect(await stopped.json()).toMatchObject({ browser, stopped: true });
    expect(live.has("bb-session-1")).toBe(false);
    const again = await fetch(`${worker.url}/browser?browser=${encodeURIComponent(browser)}`, { method: "DELETE", headers: auth });
    expect(await again.json()).toMatchObject({ browser, stopped: false, already: "gone" });
    // A handle whose id would be a path segment of the provider's API (.., .) is not a handle: nothing is sent.
    const sent = api.requests.length;
    for (const id of ["..", ".", "..%2F..", "a/b"]) {
      const odd = await fetch(`${worker.url}/browser?browser=${encodeURIComponent(`browserbase:${id}`)}`, { method: "DELETE", headers: auth });
      expect(odd.status).toBe(400);
      expect(((await odd.json()) as { error: string }).error).toBe("unknown_browser");
    }
    expect(api.requests.length).toBe(sent);
    // The key never left the server: not in an answer, not in the log.
    expect(worker.output()).not.toContain("bb-key-0123456789abcdef");
    expect(worker.output()).not.toContain(chromium.endpoint);
  });

  it("POST /screen pictures a tab the read policy allows, and refuses one it does not (a page opened outside tabrelay)", async () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const { browser } = (await (await fetch(`${worker.url}/browser`, { method: "POST", headers: auth })).json()) as { browser: string };
    const client = await connect(worker.url, { "X-Tabrelay-Browser": browser });
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
    const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    await client.close();
    const screen = (body: unknown) =>
      fetch(`${worker.url}/screen`, { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const shot = await screen({ browser, tab });
    expect(shot.status).toBe(200);
    expect(shot.headers.get("content-type")).toBe("image/png");
    expect([...new Uint8Array(await shot.arrayBuffer()).slice(1, 4)]).toEqual([0x50, 0x4e, 0x47]); // "PNG"
    // A page the browser shows that the policy refuses (localhost is not 127.0.0.1 to the allowlist): not shown.
    await fetch(`http://127.0.0.1:${new URL(chromium.endpoint).port}/json/new?http://localhost:${new URL(site.origin).port}/shop`, { method: "PUT" });
    const listed = (await (await fetch(`${worker.url}/browser?browser=${encodeURIComponent(browser)}`, { headers: auth })).json()) as {
      tabs: { id: number; url: string }[];
    };
    const refusedTab = listed.tabs.find((t) => t.url.startsWith("http://localhost:"));
    expect(refusedTab, JSON.stringify(listed)).toBeDefined();
    const refused = await screen({ browser, tab: refusedTab?.id });
    expect(refused.status).toBe(403);
    const answer = (await refused.json()) as { error: string; message: string };
    expect(answer.error).toBe("policy_denied");
    expect(answer.message).toMatch(/shows «?http:\/\/localhost:\d+\/shop.*read policy refuses/);
    await fetch(`${worker.url}/browser?browser=${encodeURIComponent(browser)}`, { method: "DELETE", headers: auth });
  });

  it("browser_run without a browser runs on a temporary session, released once the run ends", async () => {
    const client = await connect(worker.url);
    const before = made;
    const result = await client.callTool({
      name: "browser_run",
      arguments: { program: `await browse.open(${JSON.stringify(`${site.origin}/shop`)});\nreturn await browse.get("title");` },
    });
    expect(result.structuredContent, JSON.stringify(result.content)).toMatchObject({ status: "ok", value: "Shop" });
    expect(made).toBe(before + 1);
    const temporary = `bb-session-${made}`;
    await expect.poll(() => live.has(temporary), { timeout: 10_000 }).toBe(false);
    expect(api.requests.some((r) => r.method === "POST" && r.path === `/v1/sessions/${temporary}` && r.body.includes("REQUEST_RELEASE"))).toBe(true);
    await client.close();
  });
});

describe("screenshots on the stateless path: S3 presigned links, or refused", () => {
  const BUCKET = "worker-shots";
  let chromium: Awaited<ReturnType<typeof launchLocalChromium>>;
  let s3: S3rver;
  let s3Dir = "";
  let worker: Workerd;

  beforeAll(async () => {
    chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    s3Dir = mkdtempSync(join(tmpdir(), "tabrelay-worker-s3-"));
    s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
    const { port } = await s3.run();
    worker = await startWorkerd({
      TABRELAY_MCP_TOKEN: TOKEN,
      TABRELAY_CDP_URL: chromium.endpoint,
      TABRELAY_CONFIG: `${configYaml()}screenshots:\n  enabled: true\n  ttl_seconds: 120\n  s3: { bucket: "${BUCKET}", region: "us-east-1", endpoint: "http://127.0.0.1:${port}", force_path_style: true, prefix: "agents/" }\n`,
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
    });
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await s3?.close();
    rmSync(s3Dir, { recursive: true, force: true });
    await chromium?.close();
  });

  it("the screenshot tool stores the PNG in the bucket and hands back a presigned link that serves it", async () => {
    const client = await connect(worker.url);
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop`, active: true });
    const tab = Number(/tab (\d+)/i.exec(opened.text)?.[1]);
    const shot = await call(client, "screenshot", { tab });
    expect(shot.isError, shot.text).toBe(false);
    const link = /(http:\/\/127\.0\.0\.1:\d+\/worker-shots\/agents\/[0-9a-f]{32}\.png\?\S+)/.exec(shot.text)?.[1];
    expect(link, shot.text).toBeDefined();
    expect(new URL(link ?? "http://x").searchParams.get("X-Amz-Expires")).toBe("120");
    const got = await fetch(link ?? "");
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect([...new Uint8Array(await got.arrayBuffer()).slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    await client.close();
  });

  it("screenshots enabled without a bucket: every request says so, naming the setting", async () => {
    const bare = await startWorkerd({
      TABRELAY_MCP_TOKEN: TOKEN,
      TABRELAY_CDP_URL: chromium.endpoint,
      TABRELAY_CONFIG: `${configYaml()}screenshots:\n  enabled: true\n`,
    });
    try {
      const answer = await fetch(`${bare.url}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body: "{}",
      });
      expect(answer.status).toBe(500);
      expect(((await answer.json()) as { message: string }).message).toMatch(/^TABRELAY_CONFIG: screenshots\.enabled needs screenshots\.s3 here/);
    } finally {
      await bare.stop();
    }
  });
});

// MCP over Streamable HTTP through the broker's fetch core (app.fetch): web-standard Requests in, Responses out, no
// socket. Sessions, SSE streams, DELETE and the session limit as an agent's client meets them; the real SDK client
// over a real socket is in test/broker.test.ts and the end-to-end suites.
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Broker, loadConfig, silentLogger } from "../../src/index.js";
import type { BridgeMethod, Result, ResultOf, TabInfo } from "@tabrelay/protocol";
import type { BrowserDriver } from "../../src/drivers/driver.js";

const TOKEN = randomBytes(32).toString("base64url");
const PROTOCOL = "2025-06-18";
let broker: Broker;
let base = "";
let host = "";

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-mcphttp-"));
  writeFileSync(join(dataDir, "config.yaml"), 'policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n');
  const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: TOKEN, TABRELAY_PAIRING_TOKEN: randomBytes(32).toString("base64url") } });
  broker = new Broker({ config, log: silentLogger });
  // Listening fixes the port the Host check names; the requests below never touch the socket.
  const { port } = await broker.listen();
  host = `127.0.0.1:${port}`;
  base = `http://${host}`;
});

afterAll(async () => {
  await broker.close();
});

function headers(session?: string): Record<string, string> {
  return {
    Host: host,
    Authorization: `Bearer ${TOKEN}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    ...(session ? { "Mcp-Session-Id": session, "Mcp-Protocol-Version": PROTOCOL } : {}),
  };
}

async function mcp(method: string, init: { session?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
  const body = init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body);
  return broker.app.fetch(
    new Request(`${base}/mcp`, { method, headers: { ...headers(init.session), ...init.headers }, ...(body === undefined ? {} : { body }) }),
  );
}

/**
 * The JSON-RPC messages of an answer: one JSON object when nothing but the answer was said during the call (mcp/
 * jsonWhenWhole.ts), else an SSE stream that ends once every request in the POST is answered.
 */
async function messages(response: Response, as: "json" | "sse" = "json"): Promise<unknown[]> {
  const type = response.headers.get("content-type");
  if (as === "json") {
    expect(type).toBe("application/json");
    return [await response.json()];
  }
  expect(type).toBe("text/event-stream");
  const text = await response.text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line): unknown => JSON.parse(line.slice(6)));
}

async function initialize(client = "fetch-test"): Promise<string> {
  const response = await mcp("POST", {
    body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: client, version: "0" } } },
  });
  expect(response.status).toBe(200);
  const session = response.headers.get("mcp-session-id");
  if (!session) throw new Error("no Mcp-Session-Id on the initialize answer");
  expect(await messages(response)).toEqual([
    expect.objectContaining({ id: 1, result: expect.objectContaining({ serverInfo: expect.objectContaining({ name: "tabrelay" }) }) }),
  ]);
  const initialized = await mcp("POST", { session, body: { jsonrpc: "2.0", method: "notifications/initialized" } });
  expect(initialized.status).toBe(202);
  return session;
}

const TAB: TabInfo = { tabId: 7, windowId: 1, url: "http://127.0.0.1/held", title: "Held", active: true, status: "complete", shared: false };

/** A browser that answers list_tabs with one tab; `hold()` keeps the next call waiting until it is released. */
class FakeBrowser implements BrowserDriver {
  readonly info = { browserId: "browser-fake-0001", label: "fake", userAgent: "fake", extensionVersion: "0", connectedAt: Date.now(), kind: "cdp" as const };
  readonly closed = false;
  readonly #answers: { [M in BridgeMethod]?: ResultOf<M> } = { "tabs.list": { tabs: [TAB] } };
  #held: Promise<void> | undefined;
  #reached: () => void = () => undefined;

  hold(): { reached: Promise<void>; release: () => void } {
    let release: () => void = () => undefined;
    this.#held = new Promise<void>((resolve) => (release = resolve));
    const reached = new Promise<void>((resolve) => (this.#reached = resolve));
    return { reached, release: () => release() };
  }

  async call<M extends BridgeMethod>(method: M): Promise<Result<ResultOf<M>>> {
    const held = this.#held;
    this.#held = undefined;
    if (held) {
      this.#reached();
      await held;
    }
    const value = this.#answers[method];
    return value === undefined ? { ok: false, error: { code: "internal", message: `the fake browser does not do ${method}` } } : { ok: true, value };
  }

  close(): void {}
}

describe("/mcp through the fetch core", () => {
  it("initializes a session, then lists the tools with their strict schemas", async () => {
    const session = await initialize();
    const response = await mcp("POST", { session, body: { jsonrpc: "2.0", id: 2, method: "tools/list" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("mcp-session-id")).toBe(session);
    const [answer] = await messages(response);
    const tools = (answer as { result: { tools: { name: string; inputSchema: { additionalProperties?: unknown } }[] } }).result.tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["list_tabs", "read_url", "snapshot", "click"]));
    // Strict at the call (an unknown argument is invalid_params, next test); the list leaves the keyword out.
    expect(tools.find((t) => t.name === "list_tabs")?.inputSchema).toEqual({ type: "object", properties: { browser: { type: "string" } } });
    expect((await mcp("DELETE", { session })).status).toBe(200);
  });

  it("calls a tool through a browser, and refuses an unknown argument with invalid_params", async () => {
    const fake = new FakeBrowser();
    broker.registry.add(fake);
    try {
      const session = await initialize();
      const ok = await messages(
        await mcp("POST", { session, body: { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "list_tabs", arguments: {} } } }),
      );
      expect(JSON.stringify(ok)).toContain("http://127.0.0.1/held");
      const bad = await messages(
        await mcp("POST", { session, body: { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "list_tabs", arguments: { bogus: 1 } } } }),
      );
      expect(bad).toEqual([expect.objectContaining({ id: 4, result: expect.objectContaining({ isError: true }) })]);
      expect(JSON.stringify(bad)).toMatch(/invalid_params: .*bogus/);
      await mcp("DELETE", { session });
    } finally {
      broker.registry.remove(fake);
    }
  });

  it("answers a call that said nothing while the browser worked with one JSON object, once the answer is there", async () => {
    const fake = new FakeBrowser();
    broker.registry.add(fake);
    try {
      const session = await initialize();
      const gate = fake.hold();
      let answered = false;
      const pending = mcp("POST", { session, body: { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "list_tabs", arguments: {} } } });
      void pending.then(() => (answered = true));
      await gate.reached;
      // No header leaves before the answer or something said during the call: the choice of JSON is still open.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(answered).toBe(false);
      gate.release();
      const response = await pending;
      expect(response.status).toBe(200);
      expect(response.headers.get("mcp-session-id")).toBe(session);
      expect(response.headers.get("cache-control")).toBeNull();
      const [answer] = await messages(response);
      expect(answer).toMatchObject({ jsonrpc: "2.0", id: 5, result: { content: [expect.objectContaining({ type: "text" })] } });
      expect(JSON.stringify(answer)).toContain("http://127.0.0.1/held");
      await mcp("DELETE", { session });
    } finally {
      broker.registry.remove(fake);
    }
  });

  it("opens the session's GET stream once, and DELETE ends the session and its stream", async () => {
    const session = await initialize();
    const stream = await mcp("GET", { session, headers: { Accept: "text/event-stream" } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    expect((await mcp("GET", { session, headers: { Accept: "text/event-stream" } })).status).toBe(409);
    const before = broker.mcpSessions;
    expect((await mcp("DELETE", { session })).status).toBe(200);
    expect(broker.mcpSessions).toBe(before - 1);
    // The stream ends with the session.
    expect(await stream.text()).toBe("");
    const gone = await mcp("POST", { session, body: { jsonrpc: "2.0", id: 6, method: "tools/list" } });
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({
      jsonrpc: "2.0",
      error: { code: -32000, message: "Session not found: it expired or the broker restarted; initialize a new session" },
      id: null,
    });
  });

  it("asks for an initialize first when a request has no session", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await mcp(method);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        jsonrpc: "2.0",
        error: { code: -32000, message: "No session: send an initialize request first (POST /mcp)" },
        id: null,
      });
    }
    const notInitialize = await mcp("POST", { body: { jsonrpc: "2.0", id: 7, method: "tools/list" } });
    expect(notInitialize.status).toBe(400);
  });

  it("refuses a body over 4 MiB with 413 before parsing it", async () => {
    const session = await initialize();
    const response = await mcp("POST", { session, body: `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"pad":"${"x".repeat(4 * 1024 * 1024)}"}}` });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { message: "Payload Too Large: Request body must not exceed 4194304 bytes" } });
    await mcp("DELETE", { session });
  });

  it("answers a body of declared length (as a socket's request has) like any other: JSON is served, the rest refused", async () => {
    const session = await initialize();
    const declared = (body: string) => ({ session, body, headers: { "Content-Length": String(Buffer.byteLength(body)) } });
    const list = JSON.stringify({ jsonrpc: "2.0", id: 10, method: "tools/list" });
    expect(await messages(await mcp("POST", declared(list)))).toEqual([
      expect.objectContaining({ id: 10, result: expect.objectContaining({ tools: expect.any(Array) }) }),
    ]);
    for (const init of [declared("{not json"), { session, body: "{not json" }]) {
      const response = await mcp("POST", init);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: Invalid JSON" }, id: null });
    }
    // The transport's own header checks still come first.
    const refused = await mcp("POST", { ...declared(list), headers: { "Content-Length": String(list.length), Accept: "application/json" } });
    expect(refused.status).toBe(406);
    await mcp("DELETE", { session });
  });

  it("keeps at most 64 sessions: a 65th is refused (503, naming the cap), none is evicted", async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 64; i++) sessions.push(await initialize(`fetch-test-${i}`));
    expect(broker.mcpSessions).toBe(64);
    const refused = await mcp("POST", {
      body: {
        jsonrpc: "2.0",
        id: 5,
        method: "initialize",
        params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "late", version: "0" } },
      },
    });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ id: 5, error: { message: expect.stringContaining("mcp.max_sessions = 64") } });
    expect(broker.mcpSessions).toBe(64);
    for (const session of sessions.slice(0, 2))
      expect((await mcp("POST", { session, body: { jsonrpc: "2.0", id: 9, method: "tools/list" } })).status).toBe(200);
    for (const session of sessions) await mcp("DELETE", { session });
    expect(broker.mcpSessions).toBe(0);
  });
});

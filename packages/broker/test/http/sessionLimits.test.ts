// HTTP MCP session limits as agents meet them, over a real socket with the SDK's own client: sessions that only
// sent initialize never push out an agent in use; idle ones expire first; a client past its cap and a broker past
// the global cap get an error naming the cap and what to do.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { allowYaml, call, MCP_TOKEN, startBroker, type TestBroker } from "../../../../test/harness.js";
import { StubExtension, stubTab } from "../../../../test/stubExtension.js";

const PROTOCOL = "2025-06-18";
let current: TestBroker | undefined;
const clients: Client[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await current?.close();
  current = undefined;
});

async function broker(mcpYaml = ""): Promise<TestBroker> {
  current = await startBroker({ yaml: `${allowYaml()}${mcpYaml ? `mcp:\n${mcpYaml}` : ""}` });
  return current;
}

async function agent(b: TestBroker, name: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name, version: "0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}` } } });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

function post(b: TestBroker, body: unknown, session?: string): Promise<Response> {
  return fetch(`${b.url}/mcp`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${MCP_TOKEN}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...(session ? { "Mcp-Session-Id": session, "Mcp-Protocol-Version": PROTOCOL } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** A client that sends initialize and nothing else, as the 64 that once pushed out active agents did. */
async function initializeOnly(b: TestBroker, name: string): Promise<{ status: number; session: string | null; body: string }> {
  const response = await post(b, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name, version: "0" } },
  });
  return { status: response.status, session: response.headers.get("mcp-session-id"), body: await response.text() };
}

function closeSession(b: TestBroker, session: string): Promise<Response> {
  return fetch(`${b.url}/mcp`, {
    method: "DELETE",
    headers: { Authorization: `Bearer ${MCP_TOKEN}`, "Mcp-Session-Id": session, "Mcp-Protocol-Version": PROTOCOL },
  });
}

describe("HTTP MCP sessions: limits that never cost an agent its session", () => {
  it("64 initialize-only sessions do not evict an agent in use: the one past the cap is refused, naming the cap", async () => {
    const b = await broker();
    const active = await agent(b, "active-agent");
    expect((await call(active.client, "list_browsers")).text).toContain("No browser is connected");
    const idle: string[] = [];
    for (let i = 0; i < 64; i++) {
      const r = await initializeOnly(b, `idle-${i}`);
      if (r.status === 200 && r.session) idle.push(r.session);
      else {
        expect(i).toBe(63);
        expect(r.status).toBe(503);
        expect(JSON.parse(r.body)).toMatchObject({
          id: 1,
          error: { message: expect.stringMatching(/64 open MCP sessions \(mcp\.max_sessions = 64\).*DELETE \/mcp/) },
        });
      }
    }
    expect(idle).toHaveLength(63);
    // The agent in use keeps its session.
    expect((await call(active.client, "list_browsers")).text).toContain("No browser is connected");
    // Closing an unused session (what the error says to do) makes room.
    expect((await closeSession(b, idle[0] ?? "")).status).toBe(200);
    expect((await initializeOnly(b, "late")).status).toBe(200);
  }, 30_000);

  it("idle sessions expire first; a session with a call in flight or an open GET stream never does", async () => {
    // 1.2 s idle time, room for 4 sessions.
    const b = await broker("  session_idle_minutes: 0.02\n  max_sessions: 4\n");
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const stub = new StubExtension({ port: b.port, handlers: { "tabs.list": async () => (await held, { tabs: [stubTab(5, "http://127.0.0.1/a")] }) } });
    await stub.welcomed;
    try {
      // An SDK client holds its GET stream open: in use while connected, however long it stays quiet.
      const streaming = await agent(b, "streaming-agent");
      // A raw client whose one call outlives the idle time.
      const slow = await initializeOnly(b, "slow-agent");
      expect(slow.status).toBe(200);
      const slowSession = slow.session ?? "";
      expect((await post(b, { jsonrpc: "2.0", method: "notifications/initialized" }, slowSession)).status).toBe(202);
      const inFlight = post(b, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_tabs", arguments: {} } }, slowSession).then((r) =>
        r.text(),
      );
      // Two sessions that only initialized fill the broker.
      for (const name of ["quiet-1", "quiet-2"]) expect((await initializeOnly(b, name)).status).toBe(200);
      expect((await initializeOnly(b, "too-early")).status).toBe(503);
      await new Promise((r) => setTimeout(r, 1_600));
      // The quiet ones expired and make room; the streaming agent and the call in flight were kept.
      for (const name of ["late-1", "late-2"]) expect((await initializeOnly(b, name)).status).toBe(200);
      expect((await initializeOnly(b, "late-3")).status).toBe(503);
      release();
      expect(await inFlight).toMatch(/"id":2.*"result"|"result".*"id":2/);
      expect((await call(streaming.client, "list_browsers")).text).toContain("stub");
    } finally {
      release();
      stub.close();
    }
  }, 30_000);

  it("caps sessions per client (clientInfo.name + bearer) with 429 naming the cap and DELETE /mcp; other clients are not affected", async () => {
    const b = await broker("  max_sessions_per_client: 3\n");
    const same = [await agent(b, "busy-client"), await agent(b, "busy-client"), await agent(b, "busy-client")];
    const extra = new Client({ name: "busy-client", version: "0" });
    const refusal = await extra
      .connect(new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}` } } }))
      .then(
        () => undefined,
        (error: unknown) => ({
          status: error instanceof Error ? Reflect.get(error, "code") : undefined,
          message: error instanceof Error ? error.message : String(error),
        }),
      );
    expect(refusal?.status).toBe(429);
    expect(refusal?.message).toMatch(/client \\?"busy-client\\?" already has 3 open MCP sessions.*mcp\.max_sessions_per_client = 3.*DELETE \/mcp/);
    const raw = await initializeOnly(b, "busy-client");
    expect(raw.status).toBe(429);
    // Another client is not counted against this one's cap.
    expect((await call((await agent(b, "other-client")).client, "list_browsers")).isError).toBe(false);
    // Each of the three still works; one closed (DELETE /mcp) makes room for a new one.
    for (const s of same) expect((await call(s.client, "list_browsers")).isError).toBe(false);
    await same[0]?.transport.terminateSession();
    expect((await initializeOnly(b, "busy-client")).status).toBe(200);
  }, 30_000);
});

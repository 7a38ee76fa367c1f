// mcp/jsonWhenWhole.ts with the MCP SDK's own server and session transport (the ones the broker uses): a call that
// said nothing before its answer is one JSON object; progress, a request to the client or the transport's keep-alive
// comment before the answer start the stream as it came, and every message still arrives in order.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, EmptyResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { jsonWhenWhole } from "../../src/mcp/jsonWhenWhole.js";

const PROTOCOL = "2025-06-18";
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

/**
 * A session of the SDK's server whose tool "work" says `progress` notifications first, asks the client (`ping`), then
 * waits `ms`, then answers.
 */
async function session(keepAliveMs?: number): Promise<(body: unknown) => Promise<Response>> {
  const server = new Server({ name: "t", version: "0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { progress = 0, ms = 0, ping = false } = (request.params.arguments ?? {}) as { progress?: number; ms?: number; ping?: boolean };
    const token = request.params._meta?.progressToken;
    // A request to the client during the call (as an elicitation is): the call goes on once the client answered.
    if (ping) await extra.sendRequest({ method: "ping" }, EmptyResultSchema);
    for (let i = 1; i <= progress && token !== undefined; i++)
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: progress } });
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: "text", text: `done: ${"é€\n".repeat(3)}` }] };
  });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => "s1",
    ...(keepAliveMs === undefined ? {} : { keepAliveMs }),
  });
  await server.connect(transport);
  closers.push(() => server.close());
  const post = async (body: unknown, sessionId?: string) =>
    jsonWhenWhole(
      await transport.handleRequest(
        new Request("http://127.0.0.1/mcp", {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            ...(sessionId ? { "Mcp-Session-Id": sessionId, "Mcp-Protocol-Version": PROTOCOL } : {}),
          },
          body: JSON.stringify(body),
        }),
      ),
    );
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "c", version: "0" } },
  });
  expect(init.headers.get("content-type")).toBe("application/json");
  expect(init.headers.get("mcp-session-id")).toBe("s1");
  expect(await init.json()).toMatchObject({ id: 0, result: { serverInfo: { name: "t" } } });
  expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, "s1")).status).toBe(202);
  return (body) => post(body, "s1");
}

function call(id: number, args: Record<string, unknown>, progressToken?: string): unknown {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "work", arguments: args, ...(progressToken ? { _meta: { progressToken } } : {}) } };
}

/** The data of each event of an SSE body, parsed. */
async function events(response: Response): Promise<unknown[]> {
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const text = await response.text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line): unknown => JSON.parse(line.slice(6)));
}

describe("a call's answer as JSON when nothing else was said", () => {
  it("answers a call that said nothing with the one JSON-RPC response, its text whole (line breaks, non-ASCII)", async () => {
    const post = await session();
    const response = await post(call(1, { ms: 20 }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("mcp-session-id")).toBe("s1");
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: `done: ${"é€\n".repeat(3)}` }] } });
  });

  it("streams a call that sends progress first: the progress, then the answer, in order", async () => {
    const post = await session();
    expect(await events(await post(call(2, { progress: 2 }, "p")))).toEqual([
      expect.objectContaining({ method: "notifications/progress", params: expect.objectContaining({ progressToken: "p", progress: 1 }) }),
      expect.objectContaining({ method: "notifications/progress", params: expect.objectContaining({ progress: 2 }) }),
      expect.objectContaining({ id: 2, result: expect.objectContaining({ content: expect.any(Array) }) }),
    ]);
  });

  it("streams a call that asks the client something at once, before the client answers it (no wait for the answer)", async () => {
    const post = await session();
    const response = await post(call(6, { ping: true }));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const asked = JSON.parse(/^data: (.*)$/m.exec(first)![1]!) as { id: number; method: string };
    expect(asked.method).toBe("ping");
    expect((await post({ jsonrpc: "2.0", id: asked.id, result: {} })).status).toBe(202);
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toMatch(/^event: message\ndata: \{.*"id":6/);
  });

  it("streams a long call once the transport's keep-alive comment comes before its answer", async () => {
    const post = await session(30);
    const response = await post(call(3, { ms: 200 }));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    expect(text.startsWith(": keepalive\n\n")).toBe(true);
    expect(await events(new Response(text, { headers: { "content-type": "text/event-stream" } }))).toEqual([expect.objectContaining({ id: 3 })]);
  });

  it("streams a batch of two calls (two answers are not one object), and leaves a notification's 202 alone", async () => {
    const post = await session();
    const answers = await events(await post([call(4, {}), call(5, { ms: 10 })]));
    expect(answers.map((a) => (a as { id: number }).id).sort()).toEqual([4, 5]);
    const notified = await post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 99 } });
    expect(notified.status).toBe(202);
  });
});

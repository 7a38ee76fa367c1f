// The page library against a spec-level client written here: plain JSON-RPC 2.0 over a WebSocket, the way any
// MCP client would speak to the page (the broker is one). The library dials out; this test's server accepts.
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer, type WebSocket as Ws } from "ws";
import { createServer, type PageServer, type SocketLike } from "../src/index.js";
import { retryDelay } from "../src/transport.js";

interface Peer {
  socket: Ws;
  protocol: string;
  messages: Array<Record<string, unknown>>;
  request(method: string, params?: unknown): Promise<Record<string, unknown>>;
  notify(method: string, params?: unknown): void;
  next(predicate: (m: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

/** A listening "broker": each accepted page socket becomes a Peer. */
async function listen(): Promise<{ endpoint: string; peers: Peer[]; nextPeer(): Promise<Peer>; wss: WebSocketServer }> {
  const wss = new WebSocketServer({ port: 0, handleProtocols: (protocols) => [...protocols][0] ?? false });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const peers: Peer[] = [];
  const waiting: Array<(peer: Peer) => void> = [];
  let ids = 0;
  wss.on("connection", (socket) => {
    const messages: Array<Record<string, unknown>> = [];
    const listeners = new Set<() => void>();
    socket.on("message", (data) => {
      messages.push(JSON.parse(String(data)) as Record<string, unknown>);
      for (const listener of [...listeners]) listener();
    });
    const next: Peer["next"] = (predicate, timeoutMs = 3000) =>
      new Promise((resolve, reject) => {
        const seen = new Set<Record<string, unknown>>();
        const check = (): void => {
          const found = messages.find((m) => !seen.has(m) && predicate(m));
          if (!found) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no such message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    const peer: Peer = {
      socket,
      protocol: socket.protocol,
      messages,
      request(method, params) {
        const id = ++ids;
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) }));
        return next((m) => m.id === id);
      },
      notify(method, params) {
        socket.send(JSON.stringify({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) }));
      },
      next,
    };
    peers.push(peer);
    waiting.shift()?.(peer);
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  );
  const address = wss.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    endpoint: `ws://127.0.0.1:${port}/page`,
    peers,
    wss,
    nextPeer: () => new Promise((resolve) => waiting.push(resolve)),
  };
}

const nodeSocket = (endpoint: string, protocols?: string[]): SocketLike => new WebSocket(endpoint, protocols);

async function connected(
  options: { tokens?: string[] } = {},
): Promise<{ server: PageServer; peer: Peer; broker: Awaited<ReturnType<typeof listen>>; attempts: number[] }> {
  const broker = await listen();
  const attempts: number[] = [];
  let made = 0;
  const server = createServer({
    endpoint: broker.endpoint,
    serverInfo: { name: "test-page", version: "1.2.3" },
    instructions: "Orders of the signed-in user.",
    backoff: { initialMs: 20, maxMs: 100 },
    createSocket: ({ endpoint, attempt }) => {
      attempts.push(attempt);
      const token = options.tokens?.[made++];
      return nodeSocket(endpoint, token ? [`bearer.${token}`] : undefined);
    },
  });
  cleanups.push(() => server.close());
  const first = broker.nextPeer();
  await server.connect();
  return { server, peer: await first, broker, attempts };
}

const initialize = (peer: Peer, protocolVersion = "2025-06-18") =>
  peer.request("initialize", { protocolVersion, capabilities: {}, clientInfo: { name: "spec-client", version: "0" } });

describe("lifecycle", () => {
  it("negotiates the protocol version the client asks for, down to 2025-03-26, else answers with its newest", async () => {
    const { peer } = await connected();
    for (const asked of ["2025-11-25", "2025-06-18", "2025-03-26"]) {
      const { result } = await initialize(peer, asked);
      expect(result).toMatchObject({
        protocolVersion: asked,
        serverInfo: { name: "test-page", version: "1.2.3" },
        instructions: "Orders of the signed-in user.",
      });
      expect((result as { capabilities: unknown }).capabilities).toEqual({ tools: { listChanged: true }, prompts: { listChanged: true } });
    }
    expect((await initialize(peer, "2024-11-05")).result).toMatchObject({ protocolVersion: "2025-11-25" });
    expect(await peer.request("ping")).toEqual({ jsonrpc: "2.0", id: expect.any(Number), result: {} });
  });

  it("answers an unknown method, a non-JSON frame and a batch with JSON-RPC errors", async () => {
    const { peer } = await connected();
    expect((await peer.request("resources/list")).error).toMatchObject({ code: -32601 });
    peer.socket.send("not json");
    expect((await peer.next((m) => m.id === null && (m.error as { code: number }).code === -32700)).error).toMatchObject({
      message: expect.stringContaining("not JSON"),
    });
    peer.socket.send(JSON.stringify([{ jsonrpc: "2.0", id: 99, method: "ping" }]));
    expect((await peer.next((m) => m.id === null && (m.error as { code: number }).code === -32600)).error).toBeTruthy();
  });
});

describe("tools", () => {
  it("lists what is registered and calls handlers: text, structured content, JSON, a full result, a thrown error", async () => {
    const { server, peer } = await connected();
    server.registerTool({
      name: "echo",
      title: "Echo",
      description: "Echoes q.",
      inputSchema: { type: "object", properties: { q: { type: "string" } } },
      annotations: { readOnlyHint: true },
      handler: ({ q }) => `you said ${String(q)}`,
    });
    server.registerTool({
      name: "total",
      description: "The cart total.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object", properties: { euros: { type: "number" } } },
      handler: () => ({ euros: 42.5 }),
    });
    server.registerTool({ name: "rows", description: "Rows.", inputSchema: { type: "object" }, handler: () => [1, 2] });
    server.registerTool({
      name: "image",
      description: "A result as is.",
      inputSchema: { type: "object" },
      handler: () => ({ content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }),
    });
    server.registerTool({
      name: "boom",
      description: "Fails.",
      inputSchema: { type: "object" },
      handler: () => Promise.reject(new Error("no orders service")),
    });
    server.registerTool({
      name: "bad_output",
      description: "Declares an output schema, returns a string.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object" },
      handler: () => "oops",
    });
    await initialize(peer);

    const list = (await peer.request("tools/list")).result as { tools: Array<Record<string, unknown>> };
    expect(list.tools.map((t) => t.name)).toEqual(["echo", "total", "rows", "image", "boom", "bad_output"]);
    expect(list.tools[0]).toEqual({
      name: "echo",
      title: "Echo",
      description: "Echoes q.",
      inputSchema: { type: "object", properties: { q: { type: "string" } } },
      annotations: { readOnlyHint: true },
    });
    expect(list.tools[1]).toHaveProperty("outputSchema");

    const call = async (name: string, args?: unknown) => (await peer.request("tools/call", { name, arguments: args })).result;
    expect(await call("echo", { q: "hi" })).toEqual({ content: [{ type: "text", text: "you said hi" }] });
    expect(await call("total")).toEqual({ content: [{ type: "text", text: '{"euros":42.5}' }], structuredContent: { euros: 42.5 } });
    expect(await call("rows")).toEqual({ content: [{ type: "text", text: "[1,2]" }] });
    expect(await call("image")).toEqual({ content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] });
    expect(await call("boom")).toEqual({ content: [{ type: "text", text: "no orders service" }], isError: true });
    expect(await call("bad_output")).toMatchObject({ isError: true });

    expect((await peer.request("tools/call", { name: "nope" })).error).toMatchObject({ code: -32602, message: "Unknown tool: nope" });
    expect((await peer.request("tools/call", { name: "echo", arguments: "x" })).error).toMatchObject({ code: -32602 });
  });

  it("refuses bad registrations up front", async () => {
    const server = createServer({ endpoint: "ws://127.0.0.1:1/page", serverInfo: { name: "x", version: "0" } });
    const ok = { description: "d", inputSchema: { type: "object" as const }, handler: () => "" };
    expect(() => server.registerTool({ ...ok, name: "has space" })).toThrow(/1-128 characters/);
    expect(() => server.registerTool({ ...ok, name: "x".repeat(129) })).toThrow(/1-128 characters/);
    expect(() => server.registerTool({ ...ok, name: "t", inputSchema: { type: "string" } as never })).toThrow(/inputSchema/);
    server.registerTool({ ...ok, name: "t" });
    expect(() => server.registerTool({ ...ok, name: "t" })).toThrow(/already registered/);
  });

  it("sends tools/list_changed on each change once initialized, coalescing changes made in one tick", async () => {
    const { server, peer } = await connected();
    const tool = { description: "d", inputSchema: { type: "object" as const }, handler: () => "" };
    server.registerTool({ ...tool, name: "before_init" });
    await initialize(peer);
    peer.notify("notifications/initialized");
    const changes = () => peer.messages.filter((m) => m.method === "notifications/tools/list_changed").length;
    expect(changes()).toBe(0);
    const off = server.registerTool({ ...tool, name: "a" });
    await peer.next((m) => m.method === "notifications/tools/list_changed");
    expect(changes()).toBe(1);
    off();
    off(); // idempotent: no second change
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(changes()).toBe(2);
    server.registerTool({ ...tool, name: "b" });
    server.registerTool({ ...tool, name: "c" });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(changes()).toBe(3);
    const list = (await peer.request("tools/list")).result as { tools: Array<{ name: string }> };
    expect(list.tools.map((t) => t.name)).toEqual(["before_init", "b", "c"]);
  });

  it("runs concurrent calls by id, and notifications/cancelled aborts the handler's signal with no answer sent", async () => {
    const { server, peer } = await connected();
    let aborted: unknown;
    server.registerTool({
      name: "slow",
      description: "Waits for its signal.",
      inputSchema: { type: "object" },
      handler: (_args, { signal }) =>
        new Promise((resolve) => {
          signal.addEventListener("abort", () => {
            aborted = signal.reason;
            resolve("finished anyway");
          });
        }),
    });
    server.registerTool({
      name: "wait",
      description: "Waits ms.",
      inputSchema: { type: "object" },
      handler: async ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(`waited ${String(ms)}`), Number(ms))),
    });
    await initialize(peer);
    const long = peer.request("tools/call", { name: "wait", arguments: { ms: 300 } });
    const short = peer.request("tools/call", { name: "wait", arguments: { ms: 10 } });
    const order: string[] = [];
    await Promise.all([long.then(() => order.push("long")), short.then(() => order.push("short"))]);
    expect(order).toEqual(["short", "long"]);

    peer.socket.send(JSON.stringify({ jsonrpc: "2.0", id: "c-1", method: "tools/call", params: { name: "slow" } }));
    await new Promise((resolve) => setTimeout(resolve, 30));
    peer.notify("notifications/cancelled", { requestId: "c-1", reason: "the user stopped it" });
    await expect.poll(() => (aborted as Error | undefined)?.message).toBe("the user stopped it");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(peer.messages.some((m) => m.id === "c-1")).toBe(false);
  });
});

describe("prompts", () => {
  it("lists prompts, gets fixed and argument-made text, and says list_changed", async () => {
    const { server, peer } = await connected();
    await initialize(peer);
    server.registerPrompt({ name: "weekly", description: "This week's report.", content: "Summarise this week's orders." });
    await peer.next((m) => m.method === "notifications/prompts/list_changed");
    server.registerPrompt({ name: "region", arguments: [{ name: "region", required: true }], content: ({ region }) => `Orders in ${region}.` });
    const list = (await peer.request("prompts/list")).result as { prompts: unknown[] };
    expect(list.prompts).toEqual([
      { name: "weekly", description: "This week's report." },
      { name: "region", arguments: [{ name: "region", required: true }] },
    ]);
    expect((await peer.request("prompts/get", { name: "weekly" })).result).toEqual({
      description: "This week's report.",
      messages: [{ role: "user", content: { type: "text", text: "Summarise this week's orders." } }],
    });
    expect((await peer.request("prompts/get", { name: "region", arguments: { region: "EU" } })).result).toMatchObject({
      messages: [{ content: { text: "Orders in EU." } }],
    });
    expect((await peer.request("prompts/get", { name: "region" })).error).toMatchObject({ code: -32602, message: "Missing required argument: region" });
    expect((await peer.request("prompts/get", { name: "nope" })).error).toMatchObject({ code: -32602 });
  });
});

describe("reconnect", () => {
  it("dials again after a drop with a fresh socket (a fresh token) and keeps its registrations; a handler in flight is aborted", async () => {
    const { server, peer, broker, attempts } = await connected({ tokens: ["t-1", "t-2", "t-3"] });
    expect(peer.protocol).toBe("bearer.t-1");
    let signalOnDrop: AbortSignal | undefined;
    server.registerTool({
      name: "hang",
      description: "Never answers.",
      inputSchema: { type: "object" },
      handler: (_a, { signal }) => ((signalOnDrop = signal), new Promise(() => {})),
    });
    await initialize(peer);
    void peer.request("tools/call", { name: "hang" }).catch(() => {});
    await expect.poll(() => signalOnDrop).toBeDefined();
    const second = broker.nextPeer();
    peer.socket.terminate();
    const again = await second;
    expect(again.protocol).toBe("bearer.t-2");
    expect(signalOnDrop?.aborted).toBe(true);
    await initialize(again);
    expect(((await again.request("tools/list")).result as { tools: Array<{ name: string }> }).tools.map((t) => t.name)).toEqual(["hang"]);
    expect(attempts).toEqual([0, 1]);
    expect(server.state).toBe("open");
  });

  it("keeps trying while the broker is down, with growing jittered delays, and connects when it is back", async () => {
    const broker = await listen();
    const port = Number(new URL(broker.endpoint).port);
    await new Promise<void>((resolve) => broker.wss.close(() => resolve()));
    const attempts: number[] = [];
    const server = createServer({
      endpoint: broker.endpoint,
      serverInfo: { name: "p", version: "0" },
      backoff: { initialMs: 20, maxMs: 80 },
      createSocket: ({ endpoint, attempt }) => (attempts.push(attempt), nodeSocket(endpoint)),
    });
    cleanups.push(() => server.close());
    const open = server.connect();
    await expect.poll(() => attempts.length, { timeout: 3000 }).toBeGreaterThanOrEqual(4);
    expect(attempts.slice(0, 4)).toEqual([0, 1, 2, 3]);
    const back = new WebSocketServer({ port });
    cleanups.push(() => new Promise<void>((resolve) => (back.clients.forEach((c) => c.terminate()), back.close(() => resolve()))));
    await open;
    expect(server.state).toBe("open");
  });

  it("retry delays are jittered in the upper half of an exponential ceiling, capped at 30 s by default", () => {
    expect(retryDelay(1, {}, () => 0)).toBe(125);
    expect(retryDelay(1, {}, () => 1)).toBe(250);
    expect(retryDelay(3, {}, () => 0.5)).toBe(750);
    expect(retryDelay(30, {}, () => 1)).toBe(30_000);
    expect(retryDelay(30, {}, () => 0)).toBe(15_000);
  });

  it("close() stops for good: no more dialling, calls in flight aborted", async () => {
    const { server, broker } = await connected();
    server.close();
    expect(server.state).toBe("closed");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(broker.peers).toHaveLength(1);
  });

  it("the token option puts bearer.<token> in the one subprotocol, fetched per connect", async () => {
    const broker = await listen();
    const original = globalThis.WebSocket;
    (globalThis as { WebSocket: unknown }).WebSocket = WebSocket;
    cleanups.push(() => ((globalThis as { WebSocket: unknown }).WebSocket = original));
    let n = 0;
    const server = createServer({ endpoint: broker.endpoint, serverInfo: { name: "p", version: "0" }, token: async () => `tok-${++n}` });
    cleanups.push(() => server.close());
    const first = broker.nextPeer();
    await server.connect();
    expect((await first).protocol).toBe("bearer.tok-1");
  });
});

it("the minified bundle of the high-level API is under 8 KB gzipped", async () => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("../src/index.ts", import.meta.url))],
    bundle: true,
    minify: true,
    format: "esm",
    write: false,
    platform: "browser",
  });
  const bytes = gzipSync(result.outputFiles[0]!.contents).length;
  expect(bytes).toBeGreaterThan(1000); // it is the library, not an empty file
  expect(bytes).toBeLessThan(8 * 1024);
});

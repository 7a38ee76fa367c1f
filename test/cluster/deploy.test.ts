// The infrastructure a team's brokers run on (issue 16 §3), before any broker is in it: a throwaway Redis (test/redis.ts)
// that wants its password, and nginx running the documented deployment config (deploy/nginx.conf, through
// test/nginx.ts) in front of two plain Node HTTP + WebSocket servers standing in for brokers. What the config
// promises: round robin, WebSockets on /bridge and /page, /mcp streamed unbuffered, the headers a broker checks,
// /health and /ready passed through, a dead upstream skipped for new requests and sockets, and a reload.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { startNginx, type TestNginx } from "../nginx.js";
import { raw } from "../rawHttp.js";
import { waitFor } from "../harness.js";
import { redisReplies, startRedis, type TestRedis } from "../redis.js";

describe("test/redis.ts", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("answers PING once AUTH carries the password from its URL", async () => {
    expect(redis.url).toBe(`redis://:${redis.password}@127.0.0.1:${redis.port}`);
    const password = decodeURIComponent(new URL(redis.url).password);
    expect(await redisReplies(redis.port, [["AUTH", password], ["PING"], ["SET", "k", "v"], ["GET", "k"]])).toEqual(["+OK", "+PONG", "+OK", "v"]);
  });

  it("refuses a wrong password, and any command without one", async () => {
    const [wrong] = await redisReplies(redis.port, [["AUTH", `${redis.password}x`]]);
    expect(wrong).toMatch(/^-WRONGPASS/);
    const [none] = await redisReplies(redis.port, [["PING"]]);
    expect(none).toMatch(/^-NOAUTH/);
  });

  it("keeps nothing on disk, each on its own port, and is gone after kill()", async () => {
    const other = await startRedis();
    expect(other.port).not.toBe(redis.port);
    expect(
      await redisReplies(other.port, [
        ["AUTH", other.password],
        ["CONFIG", "GET", "save"],
        ["CONFIG", "GET", "appendonly"],
      ]),
    ).toEqual(["+OK", ["save", ""], ["appendonly", "no"]]);
    other.kill();
    await expect(redisReplies(other.port, [["PING"]], 1000)).rejects.toThrow();
    await other.stop();
  });
});

/** A stand-in broker: says who answered, streams /mcp until told to finish, echoes WebSocket messages with its name. */
interface Upstream {
  name: string;
  port: number;
  server: Server;
  /** Requests seen, with the headers a broker reads. */
  seen: Array<{ path: string; host?: string; forwardedFor?: string; forwardedProto?: string; forwardedHost?: string }>;
  /** Ends the /mcp stream in flight. */
  finishStream?: () => void;
  close(): Promise<void>;
}

async function startUpstream(name: string): Promise<Upstream> {
  const wss = new WebSocketServer({ noServer: true });
  const upstream: Upstream = { name, port: 0, server: createServer(), seen: [], close: async () => undefined };
  upstream.server.on("request", (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const header = (key: string) => (typeof req.headers[key] === "string" ? req.headers[key] : undefined);
    upstream.seen.push({
      path,
      host: header("host"),
      forwardedFor: header("x-forwarded-for"),
      forwardedProto: header("x-forwarded-proto"),
      forwardedHost: header("x-forwarded-host"),
    });
    if (path === "/mcp") {
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      res.write(`event: message\ndata: first from ${name}\n\n`);
      upstream.finishStream = () => res.end(`event: message\ndata: last from ${name}\n\n`);
      return;
    }
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end(`${path} ${name}`);
  });
  upstream.server.on("upgrade", (req, socket, head) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/bridge" && path !== "/page") return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => ws.on("message", (data) => ws.send(`${name}${path}:${data.toString()}`)));
  });
  await new Promise<void>((resolve) => upstream.server.listen(0, "127.0.0.1", resolve));
  upstream.port = (upstream.server.address() as AddressInfo).port;
  upstream.close = async () => {
    for (const client of wss.clients) client.terminate();
    upstream.server.closeAllConnections();
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  };
  return upstream;
}

/** A GET on a connection of its own: what a new client gets (a pooled socket may be one nginx closes on a reload). */
async function text(url: string): Promise<string> {
  const response = await raw(url);
  expect(response.status).toBe(200);
  return response.body;
}

/** Opens a WebSocket, sends "hi", resolves with the echo (which names the upstream) and the open socket. */
async function echo(url: string): Promise<{ reply: string; ws: WebSocket }> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const reply = new Promise<string>((resolve) => ws.once("message", (data: Buffer) => resolve(data.toString())));
  ws.send("hi");
  return { reply: await reply, ws };
}

describe("nginx with deploy/nginx.conf (test/nginx.ts)", () => {
  let a: Upstream;
  let b: Upstream;
  let nginx: TestNginx;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    [a, b] = await Promise.all([startUpstream("a"), startUpstream("b")]);
    nginx = await startNginx([a.port, b.port]);
  });
  afterAll(async () => {
    for (const ws of sockets) ws.terminate();
    await nginx?.stop();
    await Promise.all([a?.close(), b?.close()]);
  });

  it("spreads requests over both brokers in turn, with no stickiness", async () => {
    const answers: string[] = [];
    for (let i = 0; i < 10; i++) answers.push(await text(`${nginx.url}/health`));
    expect(answers.filter((answer) => answer === "/health a")).toHaveLength(5);
    expect(answers.filter((answer) => answer === "/health b")).toHaveLength(5);
    expect(new Set([await text(`${nginx.url}/ready`), await text(`${nginx.url}/ready`)])).toEqual(new Set(["/ready a", "/ready b"]));
  });

  it("passes the public Host (without the port: mcp.allowed_hosts lists the bare name) and X-Forwarded-* (the host with the port the browser used)", async () => {
    await text(`${nginx.url}/dashboard`);
    const seen = [...a.seen, ...b.seen].find((request) => request.path === "/dashboard");
    expect(seen).toEqual({
      path: "/dashboard",
      host: "127.0.0.1",
      forwardedFor: "127.0.0.1",
      forwardedProto: "http",
      forwardedHost: `127.0.0.1:${nginx.port}`,
    });
  });

  it("upgrades /bridge and /page to WebSockets on either broker", async () => {
    const replies: string[] = [];
    for (const path of ["/bridge", "/bridge", "/page", "/page"]) {
      const { reply, ws } = await echo(`ws://127.0.0.1:${nginx.port}${path}`);
      sockets.push(ws);
      replies.push(reply);
    }
    expect(replies.sort()).toEqual(["a/bridge:hi", "a/page:hi", "b/bridge:hi", "b/page:hi"]);
  });

  it("streams /mcp unbuffered: the first event arrives while the response is still open", async () => {
    const response = await fetch(`${nginx.url}/mcp`, { method: "POST", body: "{}" });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body?.getReader();
    if (!reader) throw new Error("no body");
    const first = await Promise.race([
      reader.read(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the first event did not arrive within 10 s: nginx buffers /mcp")), 10_000)),
    ]);
    const firstText = new TextDecoder().decode(first.value);
    expect(firstText).toMatch(/^event: message\ndata: first from [ab]\n\n$/);
    const from = firstText.endsWith("a\n\n") ? a : b;
    // Only now does the broker end its response.
    from.finishStream?.();
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += new TextDecoder().decode(chunk.value);
    expect(rest).toBe(`event: message\ndata: last from ${from.name}\n\n`);
  });

  it("sends new requests and new sockets to the live broker once one is gone; sockets on the live one stay", async () => {
    const onB = sockets.filter((_, i) => i === 0 || i === 1);
    await a.close();
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) answers.push(await text(`${nginx.url}/health`));
    expect(answers).toEqual(Array(6).fill("/health b"));
    // A POST refused by the dead broker before it was sent is safe to send to the other.
    const post = await fetch(`${nginx.url}/mcp`, { method: "POST", body: "{}" });
    b.finishStream?.();
    expect(await post.text()).toContain("first from b");
    const replies: string[] = [];
    for (const path of ["/bridge", "/bridge", "/bridge", "/page"]) {
      const { reply, ws } = await echo(`ws://127.0.0.1:${nginx.port}${path}`);
      sockets.push(ws);
      replies.push(reply);
    }
    expect(replies).toEqual(["b/bridge:hi", "b/bridge:hi", "b/bridge:hi", "b/page:hi"]);
    // The sockets opened earlier: those on a were closed with it, those on b still echo.
    await waitFor("the socket on the gone broker to close", () => onB.some((ws) => ws.readyState === WebSocket.CLOSED) || undefined);
    const open = onB.filter((ws) => ws.readyState === WebSocket.OPEN);
    expect(open).toHaveLength(1);
    const still = open[0];
    if (!still) throw new Error("no socket left open");
    const reply = new Promise<string>((resolve) => still.once("message", (data: Buffer) => resolve(data.toString())));
    still.send("again");
    expect(await reply).toBe("b/bridge:again");
  });

  it("takes a new list of brokers on setUpstreams (a reload)", async () => {
    const c = await startUpstream("c");
    try {
      await nginx.setUpstreams([c.port]);
      const answers: string[] = [];
      for (let i = 0; i < 4; i++) answers.push(await text(`${nginx.url}/health`));
      expect(answers).toEqual(Array(4).fill("/health c"));
    } finally {
      await c.close();
    }
  });
});

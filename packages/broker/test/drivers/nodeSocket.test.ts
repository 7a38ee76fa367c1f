// The CDP driver's own WebSocket client (drivers/cdp/nodeSocket.ts) and the client above it, against a real WebSocket
// server (ws) on loopback: ordinary messages both ways, fragments, pings and closes, and the one thing it is for: a
// message past the cap is skipped as it streams, its call fails too_large (or its event is named), and the connection
// carries on.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket as ServerSocket } from "ws";
import { CdpClient, type CdpOversize } from "../../src/drivers/cdp/cdpClient.js";
import { nodeCdpSocket } from "../../src/drivers/cdp/nodeSocket.js";

const MiB = 1024 * 1024;
let closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
});

/** A WebSocket server on loopback; `serve` gets each connection. */
async function server(serve: (socket: ServerSocket) => void): Promise<string> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await once(wss, "listening");
  wss.on("connection", serve);
  closers.push(async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/devtools/browser/x`;
}

/** The client socket, with what it reported. */
async function open(url: string, maxPayload = MiB) {
  const socket = nodeCdpSocket(url, { maxPayload });
  const got = {
    messages: [] as unknown[],
    oversize: [] as CdpOversize[],
    closed: undefined as { code: number; reason: string } | undefined,
    errors: [] as string[],
  };
  socket.addEventListener("message", ({ data }) => got.messages.push(data));
  socket.addEventListener("oversize", (event) => got.oversize.push(event));
  socket.addEventListener("close", (event) => (got.closed = event));
  socket.addEventListener("error", (event) => got.errors.push(String(Reflect.get(event as object, "message"))));
  closers.push(async () => socket.close());
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", resolve);
    socket.addEventListener("close", () => reject(new Error(`closed before open: ${got.errors.join("; ")}`)));
  });
  return { socket, got };
}

async function until<T>(what: string, probe: () => T | undefined, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the Node DevTools socket", () => {
  it("carries text both ways, joins fragments, answers pings, and hears the server's close", async () => {
    let peer: ServerSocket | undefined;
    const heard: string[] = [];
    const pongs: string[] = [];
    const url = await server((socket) => {
      peer = socket;
      socket.on("message", (data) => heard.push(String(data)));
      socket.on("pong", (data) => pongs.push(String(data)));
    });
    const { socket, got } = await open(url);
    expect(socket.readyState).toBe(1);
    socket.send('{"id":1,"method":"Browser.getVersion"}');
    socket.send("é".repeat(70_000)); // a 64-bit length, and UTF-8 through the mask
    await until("the server to hear both", () => (heard.length === 2 ? true : undefined));
    expect(heard).toEqual(['{"id":1,"method":"Browser.getVersion"}', "é".repeat(70_000)]);

    peer!.send("first half, ", { fin: false });
    peer!.send("second half", { fin: true });
    peer!.ping("are you there");
    await until("the joined message and the pong", () => (got.messages.length === 1 && pongs.length === 1 ? true : undefined));
    expect(got.messages).toEqual(["first half, second half"]);
    expect(pongs).toEqual(["are you there"]);

    peer!.close(4000, "going away now");
    const closed = await until("the close", () => got.closed);
    expect(closed).toEqual({ code: 4000, reason: "going away now" });
    expect(socket.readyState).toBe(3);
  });

  it("skips a message past the cap as it streams, says what it was, and carries on", async () => {
    let peer: ServerSocket | undefined;
    const url = await server((socket) => (peer = socket));
    const { socket, got } = await open(url, MiB);
    const huge = `{"id":7,"result":{"value":"${"y".repeat(3 * MiB)}"},"sessionId":"ABC123"}`;
    // Sent in fragments too, as Chrome may: the cap is on the message, not the frame.
    peer!.send(huge.slice(0, 700_000), { fin: false });
    peer!.send(huge.slice(700_000), { fin: true });
    peer!.send('{"id":8,"result":{}}');
    await until("the next message", () => (got.messages.length === 1 ? true : undefined));
    expect(got.messages).toEqual(['{"id":8,"result":{}}']);
    expect(got.oversize).toHaveLength(1);
    expect(got.oversize[0]!.bytes).toBe(Buffer.byteLength(huge));
    expect(got.oversize[0]!.head.startsWith('{"id":7,"result":{"value":"yyy')).toBe(true);
    expect(got.oversize[0]!.tail.endsWith('yyy"},"sessionId":"ABC123"}')).toBe(true);
    expect(got.oversize[0]!.head.length).toBeLessThanOrEqual(512);
    expect(socket.readyState).toBe(1);
    expect(got.closed).toBeUndefined();
  });

  it("refuses an endpoint that does not upgrade, naming the answer", async () => {
    const http: Server = createServer((_req, res) => res.writeHead(404).end("no such browser"));
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => http.close(() => resolve())));
    const result = await CdpClient.connect(`ws://127.0.0.1:${(http.address() as AddressInfo).port}/devtools/browser/secret-id`, {
      timeoutMs: 1000,
      socket: nodeCdpSocket,
    });
    expect(result.ok).toBe(false);
    const message = result.ok ? "" : result.error.message;
    expect(message).toContain("Unexpected server response: 404");
    expect(message).not.toContain("secret-id");
  });
});

describe("the DevTools client over it", () => {
  it("fails the one call whose answer is too large, delivers the others, names a skipped event, and stays connected", async () => {
    const url = await server((socket) => {
      socket.on("message", (data) => {
        const { id, method, sessionId } = JSON.parse(String(data)) as { id: number; method: string; sessionId?: string };
        if (method === "Runtime.evaluate") {
          // A page's dialog text past the cap first (an event of a session), then the huge answer, then the event's
          // ordinary neighbour.
          socket.send(`{"method":"Page.javascriptDialogOpening","params":{"message":"${"z".repeat(2 * MiB)}","type":"alert"},"sessionId":"${sessionId}"}`);
          socket.send(`{"id":${id},"result":{"result":{"type":"string","value":"${"x".repeat(2 * MiB)}"}},"sessionId":"${sessionId}"}`);
          socket.send(`{"method":"Page.loadEventFired","params":{"timestamp":1},"sessionId":"${sessionId}"}`);
        } else socket.send(JSON.stringify({ id, result: { product: "Chrome/156" }, ...(sessionId ? { sessionId } : {}) }));
      });
    });
    const connected = await CdpClient.connect(url, { timeoutMs: 5000, socket: nodeCdpSocket, maxPayload: MiB });
    if (!connected.ok) throw new Error(connected.error.message);
    const client = connected.value;
    closers.push(async () => client.close());
    const skipped: Array<[string, string | undefined]> = [];
    client.onOversize((method, sessionId) => skipped.push([method, sessionId]));
    const loads: unknown[] = [];
    client.on("Page.loadEventFired", (params) => loads.push(params), "S1");

    const [big, small] = await Promise.all([client.send("Runtime.evaluate", { expression: "huge" }, "S1"), client.send("Browser.getVersion")]);
    expect(big.ok).toBe(false);
    if (!big.ok) {
      expect(big.error.kind).toBe("too_large");
      expect(big.error.message).toBe("Runtime.evaluate: the browser's answer is 2 MiB, more than the 1 MiB the DevTools link takes");
    }
    expect(small).toEqual({ ok: true, value: { product: "Chrome/156" } });
    await until("the load event", () => (loads.length === 1 ? true : undefined));
    expect(skipped).toEqual([["Page.javascriptDialogOpening", "S1"]]);
    expect(client.closed).toBe(false);
    expect(await client.send("Browser.getVersion")).toEqual({ ok: true, value: { product: "Chrome/156" } });
  });
});

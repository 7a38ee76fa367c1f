// Programs in the way of tabrelay's links, for the doors suites (doors.test.ts, doors.browser.test.ts): an impostor
// that takes the broker's port and answers like tabrelay, and a relay that passes the bridge (and /auth/proof) to the
// real broker while recording, rewriting and injecting frames.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

/** What a fake broker on the port saw: every bridge frame and every HTTP request, headers included. */
export interface Impostor {
  port: number;
  frames: string[];
  requests: Array<{ method: string; url: string; headers: IncomingMessage["headers"]; body: string }>;
  /** How it answers a browser's hello. */
  mode: "welcome" | "bad-proof" | "replay";
  close(): Promise<void>;
}

export async function startImpostor(port = 0, stolenUrl = "http://127.0.0.1:9/stolen"): Promise<Impostor> {
  const wss = new WebSocketServer({ noServer: true });
  const impostor: Impostor = { port: 0, frames: [], requests: [], mode: "welcome", close: async () => undefined };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      impostor.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      res.writeHead(req.url === "/health" ? 200 : req.url === "/auth/proof" ? 200 : 404, { "Content-Type": "application/json" });
      // It looks like tabrelay and answers the proof request with a made-up proof.
      if (req.url === "/health") res.end(JSON.stringify({ status: "ok", name: "tabrelay", version: "9.9.9", browsers: [] }));
      else if (req.url === "/auth/proof") res.end(JSON.stringify({ proof: "A".repeat(43) }));
      else res.end("{}");
    });
  });
  server.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("message", (data) => {
        const text = data.toString();
        impostor.frames.push(text);
        const frame = JSON.parse(text) as { type: string; nonce?: string };
        if (frame.type !== "hello") return;
        if (impostor.mode === "bad-proof") ws.send(JSON.stringify({ type: "challenge", nonce: "B".repeat(43), proof: "C".repeat(43) }));
        // Replays a challenge a real broker once sent: a stale proof over another browser nonce.
        if (impostor.mode === "replay") ws.send(JSON.stringify({ type: "challenge", nonce: frame.nonce, proof: frame.nonce }));
        if (impostor.mode === "welcome") {
          ws.send(JSON.stringify({ type: "welcome", browserId: "x", brokerVersion: "9.9.9", navigationRules: [] }));
          ws.send(JSON.stringify({ type: "call", id: 1, method: "tabs.open", params: { url: stolenUrl, active: false } }));
          ws.send(JSON.stringify({ type: "call", id: 2, method: "tabs.list", params: {} }));
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  impostor.port = (server.address() as AddressInfo).port;
  impostor.close = async () => {
    for (const client of wss.clients) client.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return impostor;
}

// ---- relays: a program between the browser (or a client) and the real broker -------------------------------

/** What a relaying listener saw and did: it passes frames (and /auth/proof) between its clients and the real broker. */
export interface Relay {
  port: number;
  /** WebSocket connections it took. */
  sockets: number;
  fromBrowser: string[];
  fromBroker: string[];
  /** HTTP requests it took (other than the relayed /auth/proof, which are listed too), headers and bodies included. */
  requests: Array<{ method: string; url: string; headers: IncomingMessage["headers"]; body: string }>;
  /** Answers to the calls it injected after a welcome. */
  injected: string[];
  /** Rewrites a frame on its way (as text); identity unless set. */
  rewrite: (text: string, towards: "broker" | "browser") => string;
  /** Rewrites a relayed /auth/proof body. */
  rewriteProof: (body: string) => string;
  close(): Promise<void>;
}

export async function startRelay(host: string, port: number, brokerPort: number, secretUrl = ""): Promise<Relay> {
  const wss = new WebSocketServer({ noServer: true });
  const relay: Relay = {
    port: 0,
    sockets: 0,
    fromBrowser: [],
    fromBroker: [],
    requests: [],
    injected: [],
    rewrite: (t) => t,
    rewriteProof: (b) => b,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      relay.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (req.url !== "/auth/proof") {
        res.writeHead(500);
        res.end();
        return;
      }
      // As p14b: the proof request goes to the real broker with the Host it expects, and its answer comes back.
      const up = request(
        {
          host: "127.0.0.1",
          port: brokerPort,
          method: "POST",
          path: "/auth/proof",
          headers: { "Content-Type": "application/json", Host: `127.0.0.1:${brokerPort}` },
        },
        (answer) => {
          let out = "";
          answer.on("data", (chunk: Buffer) => (out += chunk.toString()));
          answer.on("end", () => {
            res.writeHead(answer.statusCode ?? 500, { "Content-Type": "application/json" });
            res.end(out);
          });
        },
      );
      up.end(relay.rewriteProof(body));
    });
  });
  server.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (browserSide) => {
      relay.sockets++;
      const brokerSide = new WebSocket(`ws://127.0.0.1:${brokerPort}/bridge`, { origin: req.headers.origin ?? "" });
      const early: string[] = [];
      brokerSide.on("open", () => early.splice(0).forEach((t) => brokerSide.send(t)));
      browserSide.on("message", (data) => {
        const text = data.toString();
        if (/"id":90000\d/.test(text)) return void relay.injected.push(text);
        relay.fromBrowser.push(text);
        const out = relay.rewrite(text, "broker");
        if (brokerSide.readyState === WebSocket.OPEN) brokerSide.send(out);
        else early.push(out);
      });
      brokerSide.on("message", (data) => {
        const text = data.toString();
        relay.fromBroker.push(text);
        browserSide.send(relay.rewrite(text, "browser"));
        // As p13: once the broker welcomed the browser, the relay's own calls.
        if (text.includes('"type":"welcome"')) {
          browserSide.send(JSON.stringify({ type: "call", id: 900001, method: "tabs.list", params: {} }));
          if (secretUrl) browserSide.send(JSON.stringify({ type: "call", id: 900002, method: "tabs.open", params: { url: secretUrl, active: false } }));
        }
      });
      brokerSide.on("close", () => browserSide.close());
      brokerSide.on("error", () => browserSide.close());
      browserSide.on("close", () => brokerSide.close());
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  relay.port = (server.address() as AddressInfo).port;
  relay.close = async () => {
    for (const client of wss.clients) client.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return relay;
}

export const typeOf = (text: string) => (JSON.parse(text) as { type?: string }).type;

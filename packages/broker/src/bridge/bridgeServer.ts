import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { MAX_FRAME_BYTES, PROTOCOL_VERSION, type BrowserToBroker, type NavigationRule, type RejectFrame, type WelcomeFrame, type WireError } from "@tabrelay/protocol";
import { WebSocketServer, type WebSocket } from "ws";
import { safeEqual } from "../util/secrets.js";
import type { Logger } from "../util/log.js";
import { BrowserConnection, type BrowserRegistry } from "./registry.js";

export interface BridgeServerOptions {
  registry: BrowserRegistry;
  pairingToken: string;
  extensionIds: string[];
  callTimeoutMs: number;
  brokerVersion: string;
  /** The read policy for the network layer, sent in the welcome frame: the browser enforces it before serving calls. */
  navigationRules: () => NavigationRule[];
  log: Logger;
  /** How long a socket may stay unauthenticated before it is closed. */
  helloTimeoutMs?: number;
}

/** The `/bridge` endpoint: only our extension's origin, only with the pairing token, sent as the first frame. */
export class BridgeServer {
  readonly #wss: WebSocketServer;
  readonly #options: BridgeServerOptions;
  readonly #origins: Set<string>;

  constructor(options: BridgeServerOptions) {
    this.#options = options;
    this.#origins = new Set(options.extensionIds.map((id) => `chrome-extension://${id}`));
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const origin = request.headers.origin;
    if (!origin || !this.#origins.has(origin)) {
      this.#options.log.warn(`bridge: refused a connection from origin ${JSON.stringify(origin ?? null)}`);
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nbridge: origin not allowed\n");
      return;
    }
    this.#wss.handleUpgrade(request, socket, head, (ws) => this.#onSocket(ws));
  }

  #onSocket(ws: WebSocket): void {
    const { registry, log } = this.#options;
    let connection: BrowserConnection | undefined;
    const helloTimer = setTimeout(() => reject(ws, { code: "unauthorized", message: "no hello frame with a pairing token within the time allowed" }), this.#options.helloTimeoutMs ?? 5000);

    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      let frame: BrowserToBroker;
      try {
        frame = JSON.parse(data.toString()) as BrowserToBroker;
      } catch {
        return;
      }
      if (!connection) {
        clearTimeout(helloTimer);
        if (frame.type !== "hello" || typeof frame.token !== "string" || !safeEqual(frame.token, this.#options.pairingToken)) {
          log.warn("bridge: refused a browser with a wrong or missing pairing token");
          reject(ws, { code: "unauthorized", message: "wrong pairing token; run `tabrelay pair` and enter the code it prints" });
          return;
        }
        if (frame.protocol !== PROTOCOL_VERSION) {
          reject(ws, { code: "unauthorized", message: `protocol ${String(frame.protocol)} is not supported (broker speaks ${PROTOCOL_VERSION}); update the extension or the broker` });
          return;
        }
        if (typeof frame.browserId !== "string" || !/^[\w-]{8,64}$/.test(frame.browserId)) {
          reject(ws, { code: "invalid_params", message: "hello frame lacks a valid browserId" });
          return;
        }
        connection = new BrowserConnection(
          {
            browserId: frame.browserId,
            label: typeof frame.label === "string" && frame.label ? frame.label.slice(0, 80) : "browser",
            userAgent: String(frame.userAgent ?? "").slice(0, 300),
            extensionVersion: String(frame.extensionVersion ?? "").slice(0, 40),
            connectedAt: Date.now(),
            kind: "extension",
          },
          { send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason) },
          this.#options.callTimeoutMs,
        );
        const welcome: WelcomeFrame = { type: "welcome", browserId: frame.browserId, brokerVersion: this.#options.brokerVersion, navigationRules: this.#options.navigationRules() };
        ws.send(JSON.stringify(welcome));
        registry.add(connection);
        log.info(`bridge: browser "${connection.info.label}" (${connection.info.browserId}) connected`);
        return;
      }
      switch (frame.type) {
        case "result":
          connection.onResult(frame);
          return;
        case "event":
          registry.emit("event", connection, frame);
          return;
        case "ping":
          ws.send(JSON.stringify({ type: "pong", at: frame.at }));
          return;
        default:
          return;
      }
    });

    ws.on("close", () => {
      clearTimeout(helloTimer);
      if (connection) {
        registry.remove(connection);
        log.info(`bridge: browser "${connection.info.label}" (${connection.info.browserId}) disconnected`);
      }
    });
    ws.on("error", (error) => log.warn(`bridge: socket error: ${error.message}`));
  }

  close(): void {
    for (const client of this.#wss.clients) client.terminate();
    this.#wss.close();
  }
}

function reject(ws: WebSocket, error: WireError): void {
  const frame: RejectFrame = { type: "reject", error };
  try {
    ws.send(JSON.stringify(frame));
  } finally {
    ws.close(4401, error.code);
  }
}

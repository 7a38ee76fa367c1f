import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  MAX_FRAME_BYTES,
  NONCE_PATTERN,
  PROTOCOL_VERSION,
  bridgeProof,
  newNonce,
  proofsEqual,
  type BridgeTranscript,
  type BrowserToBroker,
  type ChallengeFrame,
  type NavigationRule,
  type RejectFrame,
  type WelcomeFrame,
  type WireError,
} from "@tabrelay/protocol";
import { WebSocketServer, type WebSocket } from "ws";
import type { Logger } from "../../util/log.js";
import type { BrowserRegistry } from "../registry.js";
import { BrowserConnection } from "./connection.js";

export interface BridgeServerOptions {
  registry: BrowserRegistry;
  pairingToken: string;
  extensionIds: string[];
  callTimeoutMs: number;
  brokerVersion: string;
  /** The read policy for the network layer, sent in the welcome frame: the browser enforces it before serving calls. */
  navigationRules: () => NavigationRule[];
  log: Logger;
  /** How long the handshake may take before the socket is closed. */
  helloTimeoutMs?: number;
}

/**
 * The `/bridge` endpoint: only our extension's origin, and only a browser that proves it knows the pairing secret
 * after we proved it first (protocol handshake.ts); the secret itself never crosses the socket.
 */
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
    // Set once the browser's hello was answered with our challenge: the proof the browser owes us is over these.
    let pending: (BridgeTranscript & { extensionVersion: string }) | undefined;
    let busy = false;
    const authTimer = setTimeout(() => reject(ws, { code: "unauthorized", message: "the handshake did not finish within the time allowed" }), this.#options.helloTimeoutMs ?? 5000);

    const handshake = async (frame: BrowserToBroker): Promise<void> => {
      if (!pending) {
        if (frame.type !== "hello") return reject(ws, { code: "unauthorized", message: "the first frame must be hello" });
        if (typeof Reflect.get(frame, "token") === "string" || frame.protocol !== PROTOCOL_VERSION) {
          // A protocol-2 extension sent its pairing code in the clear: it reached us, but must not stay in use.
          log.warn(`bridge: refused an extension that speaks protocol ${String(frame.protocol)} (this broker speaks ${PROTOCOL_VERSION})`);
          return reject(ws, {
            code: "unauthorized",
            message:
              Number(frame.protocol) < PROTOCOL_VERSION
                ? `this extension is too old for the broker (bridge protocol ${String(frame.protocol)}, the broker needs ${PROTOCOL_VERSION}, which never sends the pairing code): update the tabrelay extension (chrome://extensions, reload it from the new tabrelay's packages/extension/dist), then pair again`
                : `this extension speaks bridge protocol ${String(frame.protocol)}, newer than the broker's ${PROTOCOL_VERSION}: update tabrelay on the broker's machine`,
          });
        }
        if (typeof frame.browserId !== "string" || !/^[\w-]{8,64}$/.test(frame.browserId) || typeof frame.nonce !== "string" || !NONCE_PATTERN.test(frame.nonce)) {
          return reject(ws, { code: "invalid_params", message: "hello frame lacks a valid browserId or nonce" });
        }
        const transcript = { browserNonce: frame.nonce, brokerNonce: newNonce(), browserId: frame.browserId };
        pending = { ...transcript, extensionVersion: String(frame.extensionVersion ?? "").slice(0, 40) };
        const challenge: ChallengeFrame = { type: "challenge", nonce: transcript.brokerNonce, proof: await bridgeProof(this.#options.pairingToken, "broker", transcript) };
        ws.send(JSON.stringify(challenge));
        return;
      }
      clearTimeout(authTimer);
      const expected = await bridgeProof(this.#options.pairingToken, "browser", pending);
      if (frame.type !== "auth" || typeof frame.proof !== "string" || !proofsEqual(frame.proof, expected)) {
        log.warn("bridge: refused a browser that does not know the pairing code");
        return reject(ws, { code: "unauthorized", message: "wrong pairing code; run `tabrelay pair` and enter the code it prints" });
      }
      connection = new BrowserConnection(
        {
          browserId: pending.browserId,
          label: typeof frame.label === "string" && frame.label ? frame.label.slice(0, 80) : "browser",
          userAgent: String(frame.userAgent ?? "").slice(0, 300),
          extensionVersion: pending.extensionVersion,
          connectedAt: Date.now(),
          kind: "extension",
        },
        { send: (text) => ws.send(text), close: (code, reason) => ws.close(code, reason) },
        this.#options.callTimeoutMs,
      );
      const welcome: WelcomeFrame = { type: "welcome", browserId: pending.browserId, brokerVersion: this.#options.brokerVersion, navigationRules: this.#options.navigationRules() };
      ws.send(JSON.stringify(welcome));
      registry.add(connection);
      log.info(`bridge: browser "${connection.info.label}" (${connection.info.browserId}) connected`);
    };

    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      let frame: BrowserToBroker;
      try {
        frame = JSON.parse(data.toString()) as BrowserToBroker;
      } catch {
        return;
      }
      if (!connection) {
        // One handshake step at a time: a frame sent before our challenge went out is not an answer to it.
        if (busy) return reject(ws, { code: "unauthorized", message: "a frame arrived before the challenge was answered" });
        busy = true;
        void handshake(frame)
          .catch((error: unknown) => reject(ws, { code: "internal", message: `handshake failed: ${error instanceof Error ? error.message : String(error)}` }))
          .finally(() => (busy = false));
        return;
      }
      switch (frame.type) {
        case "result":
          connection.onResult(frame);
          return;
        case "event":
          connection.onEvent(frame);
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
      clearTimeout(authTimer);
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

import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  FRAME_MAC_CHARS,
  MAX_FRAME_BYTES,
  NONCE_PATTERN,
  PROTOCOL_VERSION,
  bridgeProof,
  frameKeys,
  newNonce,
  proofsEqual,
  provenEndpoint,
  socketEndpoint,
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
import { DEFAULT_USER_ID, type Principal } from "../../users/principal.js";

export interface BridgeServerOptions {
  registry: BrowserRegistry;
  /**
   * The key the handshake proves with, and whose browser it will be, for the pairing id the browser names in hello
   * (users/users.ts pairingKey): the broker's own code without an id; undefined for an unknown or revoked one.
   */
  pairingKey(pairingId: string | undefined): Promise<{ key: string; owner: Principal } | undefined>;
  /** The extension ids allowed to dial (read at each connection: config.yaml's bridge.extension_ids, live). */
  extensionIds: () => readonly string[];
  /** Where `bridge.extension_ids` is set (the config file's path), for the refusal of another extension id. */
  configPath?: string;
  /** How long one command may take, read as each browser connects. */
  callTimeoutMs: () => number;
  brokerVersion: string;
  /** The read policy for the network layer, sent in the welcome frame: the browser enforces it before serving calls. */
  /** The rules a browser of this user gets in its welcome: its user's read policy (config/userPolicies.ts). */
  navigationRules: (owner: Principal) => NavigationRule[];
  log: Logger;
  /** How long the handshake may take before the socket is closed. */
  helloTimeoutMs?: number;
}

/**
 * A Firefox add-on's origin. Firefox gives every installed add-on a random UUID of its own per profile, so the bridge
 * cannot pin tabrelay's as it pins a Chrome extension's id (bridge.extension_ids): it takes any add-on's, which no web
 * page can send. Either way the pairing handshake below is the boundary, as against any program on this machine
 * (which can send any Origin).
 */
const FIREFOX_EXTENSION = /^moz-extension:\/\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The `/bridge` endpoint: only our extension's origin, and only a browser that proves it knows the pairing secret
 * after we proved it first (protocol handshake.ts); the secret itself never crosses the socket. The proofs name the
 * endpoint this socket reached (its local address, never a header), so the browser refuses them when it dialled a
 * relay elsewhere; every frame after them is sealed under a per-connection key, and one that fails its check closes
 * the socket before anything in it is read.
 */
export class BridgeServer {
  readonly #wss: WebSocketServer;
  readonly #options: BridgeServerOptions;

  constructor(options: BridgeServerOptions) {
    this.#options = options;
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const origin = request.headers.origin;
    const allowed = this.#options.extensionIds();
    if (!origin || !(allowed.some((allowedId) => origin === `chrome-extension://${allowedId}`) || FIREFOX_EXTENSION.test(origin))) {
      const id = /^chrome-extension:\/\/([a-p]{32})$/.exec(origin ?? "")?.[1];
      this.#options.log.warn(
        id === undefined
          ? `bridge: refused a connection from origin ${JSON.stringify(origin ?? null)}`
          : // A tabrelay extension loaded from another folder than the bundled one (the store zip unpacked) has an id of its own.
            `bridge: refused the extension ${id}: its id is not in bridge.extension_ids. If it is a tabrelay extension you installed, add it in ${this.#options.configPath ?? "config.yaml"}: bridge: { extension_ids: [${[...allowed, id].join(", ")}] }`,
      );
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nbridge: origin not allowed\n");
      return;
    }
    const own = socketEndpoint(request.socket.localAddress ?? "", request.socket.localPort ?? 0);
    this.#wss.handleUpgrade(request, socket, head, (ws) => this.#onSocket(ws, own));
  }

  #onSocket(ws: WebSocket, own: string): void {
    const { registry, log } = this.#options;
    let connection: BrowserConnection | undefined;
    // Set once the browser's hello was answered with our challenge: the proof the browser owes us is over these.
    let pending: (BridgeTranscript & { extensionVersion: string; key: string; owner: Principal }) | undefined;
    let link: SealedLink | undefined;
    let busy = false;
    const authTimer = setTimeout(
      () => reject(ws, { code: "unauthorized", message: "the handshake did not finish within the time allowed" }),
      this.#options.helloTimeoutMs ?? 5000,
    );

    const handshake = async (frame: BrowserToBroker): Promise<void> => {
      if (!pending) {
        if (frame.type !== "hello") return reject(ws, { code: "unauthorized", message: "the first frame must be hello" });
        if (typeof Reflect.get(frame, "token") === "string" || frame.protocol !== PROTOCOL_VERSION) {
          // A protocol-2 extension sent its pairing code in the clear; a protocol-3 one serves any frame on a socket
          // once the handshake passed. Either way: tell it to update, and serve it nothing.
          log.warn(`bridge: refused an extension that speaks protocol ${String(frame.protocol)} (this broker speaks ${PROTOCOL_VERSION})`);
          return reject(ws, {
            code: "unauthorized",
            message:
              Number(frame.protocol) < PROTOCOL_VERSION
                ? `this extension is too old for the broker (bridge protocol ${String(frame.protocol)}, the broker needs ${PROTOCOL_VERSION}, which binds the pairing to the broker's address and authenticates every frame, so no program relaying the socket can use it): update the tabrelay extension (chrome://extensions, reload it from the new tabrelay's packages/extension/dist), then pair again`
                : `this extension speaks bridge protocol ${String(frame.protocol)}, newer than the broker's ${PROTOCOL_VERSION}: update tabrelay on the broker's machine`,
          });
        }
        if (
          typeof frame.browserId !== "string" ||
          !/^[\w-]{8,64}$/.test(frame.browserId) ||
          typeof frame.nonce !== "string" ||
          !NONCE_PATTERN.test(frame.nonce)
        ) {
          return reject(ws, { code: "invalid_params", message: "hello frame lacks a valid browserId or nonce" });
        }
        const pairingId = typeof frame.pairing === "string" ? frame.pairing : undefined;
        const pairing = await this.#options.pairingKey(pairingId);
        if (!pairing) {
          log.warn(`bridge: refused a browser whose pairing code is unknown or revoked (pairing ${JSON.stringify(pairingId?.slice(0, 40))})`);
          return reject(ws, {
            code: "unauthorized",
            message:
              "this pairing code is unknown or was revoked; ask the broker's admin for a new one (`tabrelay users pair NAME`) and enter it in the extension",
          });
        }
        const transcript = { browserNonce: frame.nonce, brokerNonce: newNonce(), browserId: frame.browserId, endpoint: provenEndpoint(frame.endpoint, own) };
        pending = { ...transcript, extensionVersion: String(frame.extensionVersion ?? "").slice(0, 40), key: pairing.key, owner: pairing.owner };
        link = new SealedLink(await frameKeys(pairing.key, transcript));
        const challenge: ChallengeFrame = {
          type: "challenge",
          nonce: transcript.brokerNonce,
          endpoint: transcript.endpoint,
          proof: await bridgeProof(pairing.key, "broker", transcript),
        };
        ws.send(JSON.stringify(challenge));
        return;
      }
      clearTimeout(authTimer);
      const expected = await bridgeProof(pending.key, "browser", pending);
      if (frame.type !== "auth" || typeof frame.proof !== "string" || !proofsEqual(frame.proof, expected) || !link) {
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
          product: frame.product === "firefox" ? "firefox" : "chrome",
          ...(pending.owner.user !== DEFAULT_USER_ID ? { owner: pending.owner.user, ownerName: pending.owner.name } : {}),
        },
        { send: (text) => sealed.send(text), close: (code, reason) => ws.close(code, reason) },
        this.#options.callTimeoutMs(),
      );
      if (!registry.admits(connection.info)) {
        log.warn(`bridge: refused browser ${connection.info.browserId}: another user's browser is connected with that id`);
        connection = undefined;
        return reject(ws, {
          code: "unauthorized",
          message: "another user's browser is connected with this browser id; reinstall the extension to get a new one",
        });
      }
      const welcome: WelcomeFrame = {
        type: "welcome",
        browserId: pending.browserId,
        brokerVersion: this.#options.brokerVersion,
        navigationRules: this.#options.navigationRules(pending.owner),
      };
      sealed.send(JSON.stringify(welcome));
      registry.add(connection);
      log.info(`bridge: browser "${connection.info.label}" (${connection.info.browserId}) connected`);
    };

    const sealed = {
      send: (text: string) => {
        if (link) ws.send(link.seal(text));
      },
    };
    ws.on("message", (data, isBinary) => {
      let text: string;
      // The browser's sealed frames come as binary messages (protocol FrameSealer); before our challenge, only text.
      if (isBinary && !link) return;
      if (link) {
        // After our challenge, only sealed frames: one that fails (injected, changed, replayed, out of order) ends the link.
        const opened = link.open(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
        if (opened === undefined) {
          log.warn(
            `bridge: closed a socket whose frame failed its check (not sealed by the browser that proved itself, or out of sequence)${connection ? ` (browser "${connection.info.label}")` : ""}`,
          );
          if (!connection)
            return reject(ws, {
              code: "unauthorized",
              message: "wrong pairing code (or a frame not sealed with it); run `tabrelay pair` and enter the code it prints",
            });
          ws.terminate();
          return;
        }
        text = opened;
      } else text = data.toString();
      let frame: BrowserToBroker;
      try {
        frame = JSON.parse(text) as BrowserToBroker;
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
          sealed.send(JSON.stringify({ type: "pong", at: frame.at }));
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

/**
 * One socket's frame MACs (protocol handshake.ts: `<mac>.<seq>.<json>`, HMAC-SHA256 over `<seq>.<json>` under the
 * direction's key), with node:crypto: synchronous, so frames are sealed and checked in the order they come, and a
 * received frame's MAC is taken over its bytes as they arrived, without decoding them first.
 */
class SealedLink {
  readonly #in: Uint8Array;
  readonly #out: Uint8Array;
  #inSeq = 0;
  #outSeq = 0;

  constructor(keys: Record<"browser>broker" | "broker>browser", Uint8Array>) {
    this.#in = keys["browser>broker"];
    this.#out = keys["broker>browser"];
  }

  seal(json: string): string {
    const body = `${this.#outSeq++}.`;
    const mac = createHmac("sha256", this.#out).update(body).update(json).digest("base64url");
    return `${mac}.${body}${json}`;
  }

  /** The frame's JSON text, or undefined when it is not the next frame sealed by the other end. */
  open(data: Buffer): string | undefined {
    const prefix = Buffer.from(`${this.#inSeq++}.`);
    const bodyAt = FRAME_MAC_CHARS + 1;
    if (data.length < bodyAt + prefix.length || data[FRAME_MAC_CHARS] !== 0x2e || !data.subarray(bodyAt, bodyAt + prefix.length).equals(prefix))
      return undefined;
    const given = Buffer.from(data.subarray(0, FRAME_MAC_CHARS).toString("latin1"), "base64url");
    const mac = createHmac("sha256", this.#in).update(data.subarray(bodyAt)).digest();
    if (given.length !== mac.length || !timingSafeEqual(given, mac)) return undefined;
    return data.toString("utf8", bodyAt + prefix.length);
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

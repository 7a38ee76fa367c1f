// A browser stand-in that speaks the real bridge protocol over a real WebSocket, for fast broker tests.
// It never replaces the real extension in the end-to-end suite.
import { BUILTIN_EXTENSION_ID } from "../packages/broker/src/index.js";
import {
  FrameOpener,
  FrameSealer,
  PROTOCOL_VERSION,
  bridgeProof,
  canonicalEndpoint,
  frameKeys,
  newNonce,
  pairingIdOf,
  proofsEqual,
  type BridgeCall,
  type BridgeMethod,
  type BrokerToBrowser,
  type ParamsOf,
  type ResultOf,
  type TabInfo,
  type WireError,
} from "../packages/protocol/src/index.js";
import WebSocket from "ws";
import { afterEach, beforeEach } from "vitest";
import { allowYaml, PAIRING_TOKEN, startBroker, type TestBroker } from "./harness.js";

export type StubHandler<M extends BridgeMethod> = (params: ParamsOf<M>) => ResultOf<M> | Promise<ResultOf<M>> | "never";
export type StubHandlers = { [M in BridgeMethod]?: StubHandler<M> };

export class StubError extends Error {
  constructor(readonly wire: WireError) {
    super(wire.message);
  }
}

export interface StubOptions {
  port: number;
  browserId?: string;
  label?: string;
  token?: string;
  origin?: string;
  handlers?: StubHandlers;
  sendHello?: boolean;
}

export class StubExtension {
  readonly calls: BridgeCall[] = [];
  readonly handlers: StubHandlers;
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly welcomed: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  rejected: WireError | undefined;
  /** Whether the broker's challenge proved it knows this stub's pairing token. */
  brokerProved: boolean | undefined;
  /** The endpoint the broker's challenge proved it is. */
  provenEndpoint: string | undefined;
  #sealer: FrameSealer | undefined;
  #opener: FrameOpener | undefined;

  constructor(options: StubOptions) {
    this.handlers = options.handlers ?? {};
    const url = `ws://127.0.0.1:${options.port}/bridge`;
    this.ws = new WebSocket(url, { origin: options.origin ?? `chrome-extension://${BUILTIN_EXTENSION_ID}` });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", () => resolve());
      this.ws.once("error", reject);
    });
    this.closed = new Promise((resolve) => this.ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
    let welcome: () => void = () => undefined;
    this.welcomed = new Promise((resolve) => (welcome = resolve));
    const browserId = options.browserId ?? "stub-browser-0001";
    const token = options.token ?? PAIRING_TOKEN;
    const nonce = newNonce();
    this.ws.on("open", () => {
      if (options.sendHello === false) return;
      const pairing = pairingIdOf(token);
      this.ws.send(
        JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, browserId, nonce, endpoint, extensionVersion: "0.0.0", ...(pairing ? { pairing } : {}) }),
      );
    });
    const endpoint = canonicalEndpoint(url) ?? url;
    // Frames are handled one at a time, in order, as the extension does: the proofs and the MACs are async.
    let queue = Promise.resolve();
    this.ws.on("message", (data) => {
      const raw = data.toString();
      queue = queue.then(async () => {
        const text = this.#opener ? await this.#opener.open(raw) : raw;
        if (text === undefined) {
          // A plain reject of our proof (a wrong token) is read; any other frame that fails its check ends the link.
          const plain = JSON.parse(raw) as BrokerToBrowser;
          if (plain.type === "reject") this.rejected = plain.error;
          else this.ws.close();
          return;
        }
        const frame = JSON.parse(text) as BrokerToBrowser;
        if (frame.type === "challenge") {
          const transcript = { browserNonce: nonce, brokerNonce: frame.nonce, browserId, endpoint };
          this.provenEndpoint = frame.endpoint;
          this.brokerProved = frame.endpoint === endpoint && proofsEqual(frame.proof, await bridgeProof(token, "broker", transcript));
          const keys = await frameKeys(token, transcript);
          this.#sealer = await FrameSealer.create(keys["browser>broker"]);
          this.#opener = await FrameOpener.create(keys["broker>browser"]);
          this.send({ type: "auth", proof: await bridgeProof(token, "browser", transcript), label: options.label ?? "stub", userAgent: "stub" });
        } else if (frame.type === "welcome") welcome();
        else if (frame.type === "reject") this.rejected = frame.error;
        else if (frame.type === "call") void this.#answer(frame);
      });
    });
  }

  async #answer(call: BridgeCall): Promise<void> {
    this.calls.push(call);
    const handler = this.handlers[call.method] as StubHandler<BridgeMethod> | undefined;
    try {
      if (!handler) throw new StubError({ code: "unknown_method", message: `stub has no ${call.method}` });
      const result = await handler(call.params);
      if (result === "never") return;
      this.send({ type: "result", id: call.id, ok: true, result });
    } catch (error) {
      const wire = error instanceof StubError ? error.wire : { code: "internal", message: String(error) };
      this.send({ type: "result", id: call.id, ok: false, error: wire });
    }
  }

  /** A frame to the broker, sealed as the extension seals it (plain before the broker's challenge). */
  send(frame: unknown): void {
    const text = JSON.stringify(frame);
    if (!this.#sealer) return this.ws.send(text);
    void this.#sealer.seal(text, (sealed) => {
      if (this.ws.readyState === WebSocket.OPEN) this.ws.send(sealed);
    });
  }

  close(): void {
    this.ws.close();
  }

  methods(): string[] {
    return this.calls.map((c) => c.method);
  }
}

/** A tab as a stub browser reports it. */
export function stubTab(tabId: number, url: string, extra: Partial<TabInfo> = {}): TabInfo {
  return { tabId, windowId: 1, url, title: "T", active: false, status: "complete", shared: false, ...extra };
}

/** What stubBrokerPerTest gives the tests of the describe block it is called in. */
export interface StubBroker {
  /** This test's broker. */
  readonly broker: TestBroker;
  /** A stub browser dialling this test's broker; closed after the test. */
  stub(options?: Omit<StubOptions, "port">): StubExtension;
}

/**
 * For each test of the enclosing describe block, a fresh broker (reads of 127.0.0.1 allowed and clicks on it
 * granted, an 800 ms call timeout, a 300 ms hello timeout) and the stub browsers the test starts on it; all
 * closed after the test.
 */
export function stubBrokerPerTest(): StubBroker {
  let current: TestBroker | undefined;
  const stubs: StubExtension[] = [];
  beforeEach(async () => {
    current = await startBroker({
      yaml: `${allowYaml()}  write:\n    click:\n      "127.0.0.1": { label: ".*" }\nbridge:\n  call_timeout_ms: 800\n`,
      helloTimeoutMs: 300,
    });
  });
  afterEach(async () => {
    for (const s of stubs.splice(0)) s.close();
    await current?.close();
    current = undefined;
  });
  return {
    get broker() {
      if (!current) throw new Error("stubBrokerPerTest: no broker outside a test");
      return current;
    },
    stub(options = {}) {
      const s = new StubExtension({ port: this.broker.port, ...options });
      stubs.push(s);
      return s;
    },
  };
}

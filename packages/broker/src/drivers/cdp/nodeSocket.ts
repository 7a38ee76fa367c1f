// The CDP driver's socket on Node: `ws`, as the WHATWG WebSocket API the client speaks (cdpClient.ts CdpSocket).
// Node 20 has no global WebSocket, so every Node caller of CdpBrowser.connect and CdpClient.connect passes this.
// Node-only: the runtime-neutral core never imports it (scripts/check-deps.mjs).
import { WebSocket, type RawData } from "ws";
import type { CdpSocket, CdpSocketFactory } from "./cdpClient.js";

type Listeners = {
  open: () => void;
  message: (event: { data: unknown }) => void;
  close: (event: { code: number; reason: string }) => void;
  error: (event: unknown) => void;
};

class NodeCdpSocket implements CdpSocket {
  readonly #ws: WebSocket;
  readonly #listeners: { [K in keyof Listeners]: Array<Listeners[K]> } = { open: [], message: [], close: [], error: [] };

  constructor(url: string, maxPayload: number) {
    // Past maxPayload ws closes the socket with 1009, which the client reports as the size cap.
    this.#ws = new WebSocket(url, { maxPayload, perMessageDeflate: false, followRedirects: false });
    this.#ws.on("open", () => {
      for (const listener of this.#listeners.open) listener();
    });
    this.#ws.on("message", (data: RawData, isBinary: boolean) => {
      const event = { data: isBinary ? data : rawText(data) };
      for (const listener of this.#listeners.message) listener(event);
    });
    this.#ws.on("close", (code: number, reason: Buffer) => {
      const event = { code, reason: reason.toString() };
      for (const listener of this.#listeners.close) listener(event);
    });
    // Always listened to: an 'error' event without a listener throws (EventEmitter).
    this.#ws.on("error", (error: Error) => {
      const event = { message: error.message, error };
      for (const listener of this.#listeners.error) listener(event);
    });
  }

  get readyState(): number {
    return this.#ws.readyState;
  }

  send(data: string): void {
    this.#ws.send(data);
  }

  close(code?: number, reason?: string): void {
    try {
      this.#ws.close(code, reason);
    } catch {
      this.#ws.terminate();
    }
    // A browser that does not finish the closing handshake must not keep the process alive (ws waits 30 s).
    setTimeout(() => this.#ws.terminate(), 1000).unref();
  }

  addEventListener<K extends keyof Listeners>(type: K, listener: Listeners[K]): void {
    this.#listeners[type].push(listener);
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

export const nodeCdpSocket: CdpSocketFactory = (url, { maxPayload }) => new NodeCdpSocket(url, maxPayload);

import { EventEmitter } from "node:events";
import type {
  BridgeEvent,
  BridgeMethod,
  BridgeResult,
  ParamsOf,
  Result,
  ResultOf,
  WireError,
} from "@tabrelay/protocol";
import { parseBridgeAnswer, parseWireError } from "../drivers/answers.js";

/** What the registry needs from a socket: send a frame, close it. Keeps ws out of this module. */
export interface BridgeSocket {
  send(frame: string): void;
  close(code: number, reason: string): void;
}

export interface BrowserInfo {
  browserId: string;
  label: string;
  userAgent: string;
  extensionVersion: string;
  connectedAt: number;
  kind: "extension" | "cdp";
}

/**
 * What tools need from a browser, whichever way it is driven (the extension over /bridge, or CDP).
 * Calls never throw: results are values. When the browser goes away every call in flight fails at
 * once with browser_disconnected.
 */
export interface BrowserDriver {
  readonly info: BrowserInfo;
  readonly closed: boolean;
  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<Result<ResultOf<M>>>;
  /** Ends the connection (a browser we started is shut down; an attached one is left running). */
  close(reason: string): void;
}

interface Pending {
  /** Parses the browser's answer to the call's method and settles the call with it. */
  answer: (frame: BridgeResult) => void;
  resolve: (result: Result<never>) => void;
}

export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** One connected browser. Calls in flight fail at once with browser_disconnected when it goes away. */
export class BrowserConnection implements BrowserDriver {
  readonly info: BrowserInfo;
  readonly #socket: BridgeSocket;
  readonly #pending = new Map<number, Pending>();
  readonly #defaultTimeoutMs: number;
  #nextId = 1;
  #closed = false;

  constructor(info: BrowserInfo, socket: BridgeSocket, defaultTimeoutMs: number) {
    this.info = info;
    this.#socket = socket;
    this.#defaultTimeoutMs = defaultTimeoutMs;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options: CallOptions = {}): Promise<Result<ResultOf<M>>> {
    if (this.#closed) return Promise.resolve(disconnected(this.info));
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? this.#defaultTimeoutMs;
    return new Promise<Result<ResultOf<M>>>((resolve) => {
      const settle = (result: Result<ResultOf<M>>) => {
        clearTimeout(timer);
        this.#pending.delete(id);
        options.signal?.removeEventListener("abort", onAbort);
        resolve(result);
      };
      // What the extension sends is parsed, never cast: a malformed answer is an internal error naming the field.
      const answer = (frame: BridgeResult) => {
        if (!frame.ok) return settle({ ok: false, error: parseWireError(method, frame.error) });
        const parsed = parseBridgeAnswer(method, frame.result);
        settle(parsed.ok ? parsed : { ok: false, error: { code: "internal", message: `the browser's answer to ${method} is malformed: ${parsed.problem}; check that the extension and the broker are the same version` } });
      };
      const timer = setTimeout(
        () => settle({ ok: false, error: { code: "timeout", message: `the browser did not answer ${method} within ${timeoutMs} ms` } }),
        timeoutMs,
      );
      const onAbort = () => settle({ ok: false, error: { code: "timeout", message: `${method} was cancelled by the client` } });
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, { answer, resolve: settle });
      try {
        this.#socket.send(JSON.stringify({ type: "call", id, method, params }));
      } catch {
        settle(disconnected(this.info));
      }
    });
  }

  /** A result frame from the browser. Late or unknown ids (already timed out) are dropped. */
  onResult(frame: BridgeResult): void {
    const pending = this.#pending.get(frame.id);
    if (!pending) return;
    pending.answer(frame);
  }

  /** The socket closed: fail everything in flight now, never after a timeout. */
  markClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const pending of [...this.#pending.values()]) pending.resolve(disconnected(this.info));
  }

  close(reason: string): void {
    this.markClosed();
    try {
      this.#socket.close(1000, reason);
    } catch {
      // already gone
    }
  }
}

function disconnected(info: BrowserInfo): { ok: false; error: WireError } {
  return {
    ok: false,
    error: {
      code: "browser_disconnected",
      message: `browser "${info.label}" (${info.browserId}) disconnected before answering; check that it is running, then call list_browsers and retry`,
    },
  };
}

export interface RegistryEvents {
  connected: [BrowserDriver];
  disconnected: [BrowserDriver];
  event: [BrowserDriver, BridgeEvent];
}

/** All connected browsers, by stable id. A new browser never evicts another; a reconnect replaces itself. */
export class BrowserRegistry extends EventEmitter<RegistryEvents> {
  readonly #browsers = new Map<string, BrowserDriver>();

  add(driver: BrowserDriver): void {
    const previous = this.#browsers.get(driver.info.browserId);
    // Same browser id: the extension reconnected (worker restart, network blip). The old socket is stale.
    if (previous && previous !== driver) previous.close("replaced by a newer connection from the same browser");
    this.#browsers.set(driver.info.browserId, driver);
    this.emit("connected", driver);
  }

  remove(driver: BrowserDriver): void {
    if (driver instanceof BrowserConnection) driver.markClosed();
    if (this.#browsers.get(driver.info.browserId) === driver) {
      this.#browsers.delete(driver.info.browserId);
      this.emit("disconnected", driver);
    }
  }

  list(): BrowserDriver[] {
    return [...this.#browsers.values()].sort((a, b) => b.info.connectedAt - a.info.connectedAt);
  }

  /** By id or label; without a selector, the most recently connected browser. */
  pick(selector?: string): Result<BrowserDriver> {
    const browsers = this.list();
    if (browsers.length === 0) {
      return {
        ok: false,
        error: {
          code: "not_connected",
          message: "no browser is connected to tabrelay; start one with `tabrelay launch` or pair your Chrome with `tabrelay pair`, then retry",
        },
      };
    }
    if (!selector) return { ok: true, value: browsers[0]! };
    const byId = browsers.find((b) => b.info.browserId === selector);
    if (byId) return { ok: true, value: byId };
    const byLabel = browsers.filter((b) => b.info.label === selector);
    if (byLabel.length === 1) return { ok: true, value: byLabel[0]! };
    if (byLabel.length > 1) {
      return { ok: false, error: { code: "unknown_browser", message: `several browsers are labelled "${selector}"; pass the browser id from list_browsers instead` } };
    }
    return { ok: false, error: { code: "unknown_browser", message: `no connected browser has id or label "${selector}"; call list_browsers to see them` } };
  }

  closeAll(reason: string): void {
    for (const driver of this.list()) {
      driver.close(reason);
      this.remove(driver);
    }
  }
}

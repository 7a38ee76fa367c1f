// The extension's side of the driver interface: one paired browser behind a /bridge socket. Calls become
// frames; answers are parsed with the same schemas as the CDP driver's (drivers/answers.ts).
import type { BridgeMethod, BridgeResult, ParamsOf, Result, ResultOf, WireError } from "@tabrelay/protocol";
import { parseBridgeAnswer, parseWireError } from "../answers.js";
import type { BrowserDriver, BrowserInfo, CallOptions } from "../driver.js";

/** What the registry needs from a socket: send a frame, close it. Keeps ws out of this module. */
export interface BridgeSocket {
  send(frame: string): void;
  close(code: number, reason: string): void;
}

interface Pending {
  /** Parses the browser's answer to the call's method and settles the call with it. */
  answer: (frame: BridgeResult) => void;
  resolve: (result: Result<never>) => void;
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

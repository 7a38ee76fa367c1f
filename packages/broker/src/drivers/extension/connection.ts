// The extension's side of the driver interface: one paired browser behind a /bridge socket. Calls become
// frames; answers are parsed with the same schemas as the CDP driver's (drivers/answers.ts).
import type { BridgeEvent, BridgeMethod, BridgeResult, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import { parseBridgeAnswer, parseWireError } from "../answers.js";
import { serve } from "../composed.js";
import { DocumentStatus } from "../documentStatus.js";
import { TabView } from "../tabView.js";
import type { BrowserDriver, BrowserInfo, CallOptions } from "../driver.js";
import { disconnected, PendingCalls } from "../pendingCalls.js";

/** What the registry needs from a socket: send a frame, close it. Keeps ws out of this module. */
export interface BridgeSocket {
  send(frame: string): void;
  close(code: number, reason: string): void;
}

/** One connected browser. Calls in flight fail at once with browser_disconnected when it goes away. */
export class BrowserConnection implements BrowserDriver {
  readonly info: BrowserInfo;
  readonly #socket: BridgeSocket;
  readonly calls: PendingCalls;
  readonly status = new DocumentStatus();
  readonly tabView = new TabView();
  /** Calls sent and not answered yet, by frame id: each parses the browser's answer to its own method. */
  readonly #answers = new Map<number, (frame: BridgeResult) => void>();
  readonly #defaultTimeoutMs: number;
  #nextId = 1;

  constructor(info: BrowserInfo, socket: BridgeSocket, defaultTimeoutMs: number) {
    this.info = info;
    this.#socket = socket;
    this.#defaultTimeoutMs = defaultTimeoutMs;
    this.calls = new PendingCalls(info);
  }

  get closed(): boolean {
    return this.calls.closed;
  }

  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options: CallOptions = {}): Promise<Result<ResultOf<M>>> {
    return serve(this, method, params, { ...options, timeoutMs: options.timeoutMs ?? this.#defaultTimeoutMs }, (m, p, o = {}) =>
      this.calls.run(m, { ...o, timeoutMs: o.timeoutMs ?? this.#defaultTimeoutMs }, (ended) => this.#send(m, p, ended)),
    );
  }

  #send<M extends BridgeMethod>(method: M, params: ParamsOf<M>, ended: Promise<void>): Promise<Result<ResultOf<M>>> {
    const id = this.#nextId++;
    void ended.then(() => this.#answers.delete(id));
    return new Promise((resolve) => {
      // What the extension sends is parsed, never cast: a malformed answer is an internal error naming the field.
      this.#answers.set(id, (frame) => {
        if (!frame.ok) return resolve({ ok: false, error: parseWireError(method, frame.error) });
        const parsed = parseBridgeAnswer(method, frame.result);
        resolve(
          parsed.ok
            ? parsed
            : {
                ok: false,
                error: {
                  code: "internal",
                  message: `the browser's answer to ${method} is malformed: ${parsed.problem}; check that the extension and the broker are the same version`,
                },
              },
        );
      });
      try {
        this.#socket.send(JSON.stringify({ type: "call", id, method, params }));
      } catch {
        resolve(disconnected(this.info));
      }
    });
  }

  /** A result frame from the browser. Late or unknown ids (already timed out) are dropped. */
  onResult(frame: BridgeResult): void {
    this.#answers.get(frame.id)?.(frame);
  }

  /** An event frame from the browser, before the broker's listeners get it. */
  onEvent(frame: BridgeEvent): void {
    this.status.observe(frame);
    this.tabView.observe(frame);
  }

  /** The socket closed: fail everything in flight now, never after a timeout. */
  markClosed(): void {
    this.calls.close();
  }

  close(reason: string, code = 1000): void {
    this.markClosed();
    try {
      this.#socket.close(code, reason);
    } catch {
      // already gone
    }
  }
}

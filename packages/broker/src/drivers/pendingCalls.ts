// Calls in flight, for every driver: each call ends with its answer, or with `timeout` when its time is up or the
// caller's signal aborts it, or with browser_disconnected the moment the browser goes away, whichever comes first,
// and exactly once. How an answer arrives (a /bridge frame, a DevTools exchange) is the driver's business.
import type { Result, WireError } from "@tabrelay/protocol";
import type { BrowserInfo, CallOptions } from "./driver.js";

export class PendingCalls {
  readonly #open = new Set<(error: WireError) => void>();
  readonly #info: BrowserInfo;
  #closed = false;

  constructor(info: BrowserInfo) {
    this.#info = info;
  }

  get size(): number {
    return this.#open.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs one call. `work` starts it and answers its result; `ended` resolves once the call is over, however it
   * ended, so the driver can drop what it keeps for it (a late answer then finds nothing).
   */
  run<T>(method: string, options: CallOptions & { timeoutMs: number }, work: (ended: Promise<void>) => Promise<Result<T>>): Promise<Result<T>> {
    if (this.#closed) return Promise.resolve(disconnected(this.#info));
    const { timeoutMs, signal } = options;
    if (signal?.aborted) return Promise.resolve(cancelled(method));
    let end: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (end = resolve));
    return new Promise<Result<T>>((resolve) => {
      let done = false;
      const settle = (result: Result<T>) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.#open.delete(fail);
        signal?.removeEventListener("abort", onAbort);
        end();
        resolve(result);
      };
      const fail = (error: WireError) => settle({ ok: false, error });
      const onAbort = () => settle(cancelled(method));
      const timer = setTimeout(() => fail({ code: "timeout", message: `the browser did not answer ${method} within ${timeoutMs} ms` }), timeoutMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#open.add(fail);
      work(ended).then(settle, (error: unknown) => fail({ code: "internal", message: error instanceof Error ? error.message : String(error) }));
    });
  }

  /** The browser went away: every call in flight fails now, never after its timeout, and later calls at once. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const error = disconnected(this.#info).error;
    for (const fail of [...this.#open]) fail(error);
  }
}

export function disconnected(info: BrowserInfo): { ok: false; error: WireError } {
  return {
    ok: false,
    error: {
      code: "browser_disconnected",
      message: `browser "${info.label}" (${info.browserId}) disconnected before answering; check that it is running, then call list_browsers and retry`,
    },
  };
}

function cancelled(method: string): { ok: false; error: WireError } {
  return { ok: false, error: { code: "timeout", message: `${method} was cancelled by the client` } };
}

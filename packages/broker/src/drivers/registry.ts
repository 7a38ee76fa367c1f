// Every connected browser, whichever driver runs it, by stable id.
import type { BridgeEvent, Result } from "@tabrelay/protocol";
import { Emitter } from "../util/emitter.js";
import type { BrowserDriver } from "./driver.js";
import { ownerOf } from "../users/principal.js";

export type RegistryEvents = {
  connected: [BrowserDriver];
  disconnected: [BrowserDriver];
  event: [BrowserDriver, BridgeEvent];
  /** A tab the broker closed itself (close_tab): no tab.removed comes from the browser for it. */
  tabClosed: [BrowserDriver, number];
};

/** All connected browsers, by stable id. A new browser never evicts another; a reconnect replaces itself. */
export class BrowserRegistry extends Emitter<RegistryEvents> {
  readonly #browsers = new Map<string, BrowserDriver>();
  /** When a call last picked each browser (epoch ms): a started browser nobody addresses is stopped (launch/sessions.ts). */
  readonly #picked = new Map<string, number>();

  /** Until when (epoch ms) a browser the broker's own process launched is on its way: calls wait for it (arrival). */
  #expectedUntil = 0;
  readonly #arrivals = new Set<() => void>();

  /**
   * A browser is on its way (`tabrelay start` just launched it): a call made before any browser connected waits for
   * it, up to `ms`, rather than fail with not_connected. `expect(0)`: it will not come (it exited); waiting calls go on.
   */
  expect(ms: number): void {
    this.#expectedUntil = ms > 0 ? Date.now() + ms : 0;
    if (ms <= 0) for (const arrived of [...this.#arrivals]) arrived();
  }

  /** Resolves once a browser connects, the expected one is no longer awaited, or `signal` aborts; at once when none is expected. */
  arrival(signal?: AbortSignal): Promise<void> {
    const left = this.#expectedUntil - Date.now();
    if (left <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#arrivals.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, left);
      this.#arrivals.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** Whether a browser with this id and owner may join now (add would take it): no other user's browser holds the id. */
  admits(info: { browserId: string; owner?: string }): boolean {
    const previous = this.#browsers.get(info.browserId);
    return !previous || ownerOf(previous.info) === ownerOf(info);
  }

  /**
   * Adds a browser; false (and the newcomer is closed) when another user's browser holds its id: a browser id is
   * chosen by the browser, so one user must not be able to push another's browser off by claiming its id.
   */
  add(driver: BrowserDriver): boolean {
    const previous = this.#browsers.get(driver.info.browserId);
    if (previous && previous !== driver && !this.admits(driver.info)) {
      driver.close("another user's browser is connected with this browser id");
      return false;
    }
    // Same browser id: the extension reconnected (worker restart, network blip). The old socket is stale.
    if (previous && previous !== driver) previous.close("replaced by a newer connection from the same browser");
    this.#browsers.set(driver.info.browserId, driver);
    this.emit("connected", driver);
    // A browser came: calls that find none from now on are told so at once.
    this.#expectedUntil = 0;
    for (const arrived of [...this.#arrivals]) arrived();
    return true;
  }

  remove(driver: BrowserDriver): void {
    driver.markClosed?.();
    if (this.#browsers.get(driver.info.browserId) === driver) {
      this.#browsers.delete(driver.info.browserId);
      this.#picked.delete(driver.info.browserId);
      this.emit("disconnected", driver);
    }
  }

  /** Newest first; with `owner`, only that user's browsers (another user's are not there at all for them). */
  list(owner?: string): BrowserDriver[] {
    const all = [...this.#browsers.values()].sort((a, b) => b.info.connectedAt - a.info.connectedAt);
    return owner === undefined ? all : all.filter((b) => ownerOf(b.info) === owner);
  }

  /** When a call last picked this browser (epoch ms), or undefined when none has. */
  lastPicked(browserId: string): number | undefined {
    return this.#picked.get(browserId);
  }

  /**
   * By id or label; without a selector, the most recently connected browser. The browser picked counts as used now.
   * With `owner`, among that user's browsers only: another user's browser id is unknown_browser, as if it did not exist.
   */
  pick(selector?: string, owner?: string): Result<BrowserDriver> {
    const picked = this.#pick(selector, owner);
    if (picked.ok) this.#picked.set(picked.value.info.browserId, Date.now());
    return picked;
  }

  #pick(selector: string | undefined, owner: string | undefined): Result<BrowserDriver> {
    const browsers = this.list(owner);
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
    if (byLabel.length > 1) return ambiguousBrowser(selector);
    return unknownBrowser(selector);
  }

  closeAll(reason: string): void {
    for (const driver of this.list()) {
      driver.close(reason);
      this.remove(driver);
    }
  }
}

/** Several of the user's browsers carry this label. */
export function ambiguousBrowser(selector: string): { ok: false; error: { code: "unknown_browser"; message: string } } {
  return {
    ok: false,
    error: { code: "unknown_browser", message: `several browsers are labelled "${selector}"; pass the browser id from list_browsers instead` },
  };
}

/** No browser of the user's has this id or label: the same words whether another user's has it or none does. */
export function unknownBrowser(selector: string): { ok: false; error: { code: "unknown_browser"; message: string } } {
  return { ok: false, error: { code: "unknown_browser", message: `no connected browser has id or label "${selector}"; call list_browsers to see them` } };
}

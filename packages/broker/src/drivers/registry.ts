// Every connected browser, whichever driver runs it, by stable id.
import { EventEmitter } from "node:events";
import type { BridgeEvent, Result } from "@tabrelay/protocol";
import type { BrowserDriver } from "./driver.js";
import { BrowserConnection } from "./extension/connection.js";

export interface RegistryEvents {
  connected: [BrowserDriver];
  disconnected: [BrowserDriver];
  event: [BrowserDriver, BridgeEvent];
  /** A tab the broker closed itself (close_tab): no tab.removed comes from the browser for it. */
  tabClosed: [BrowserDriver, number];
}

/** All connected browsers, by stable id. A new browser never evicts another; a reconnect replaces itself. */
export class BrowserRegistry extends EventEmitter<RegistryEvents> {
  readonly #browsers = new Map<string, BrowserDriver>();
  /** When a call last picked each browser (epoch ms): a started browser nobody addresses is stopped (launch/sessions.ts). */
  readonly #picked = new Map<string, number>();

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
      this.#picked.delete(driver.info.browserId);
      this.emit("disconnected", driver);
    }
  }

  list(): BrowserDriver[] {
    return [...this.#browsers.values()].sort((a, b) => b.info.connectedAt - a.info.connectedAt);
  }

  /** When a call last picked this browser (epoch ms), or undefined when none has. */
  lastPicked(browserId: string): number | undefined {
    return this.#picked.get(browserId);
  }

  /** By id or label; without a selector, the most recently connected browser. The browser picked counts as used now. */
  pick(selector?: string): Result<BrowserDriver> {
    const picked = this.#pick(selector);
    if (picked.ok) this.#picked.set(picked.value.info.browserId, Date.now());
    return picked;
  }

  #pick(selector?: string): Result<BrowserDriver> {
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

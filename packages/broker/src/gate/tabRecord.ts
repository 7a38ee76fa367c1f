// What the broker knows about each agent tab between calls: the off-policy navigation it last caught (a commit it
// reset, a request the network rules stopped) and the frames of the current document that were stopped. The gate
// (decisions.ts gateTab) reads it; enforce.ts writes it from the browser's events.
import type { CaughtNavigation } from "./decisions.js";

export interface Denial extends CaughtNavigation {
  at: number;
}

/**
 * Off-policy landings the broker caught from the browser's commit events (redirects, scripts, pages
 * opening tabs) and reset to about:blank. A tool that then finds the tab blank reports why.
 */
export class Denials {
  readonly #byTab = new Map<string, Denial>();

  record(browserId: string, tabId: number, denial: Omit<Denial, "at">): void {
    const key = `${browserId}:${tabId}`;
    // The error page of a stopped request commits at the URL it was stopped for: it stays a blocked request.
    const earlier = this.#byTab.get(key);
    const blocked = denial.blocked === true || (earlier?.blocked === true && earlier.url === denial.url);
    this.#byTab.set(key, { ...denial, ...(blocked ? { blocked } : {}), at: Date.now() });
  }

  /** The tab's recorded denial, left in place. */
  peek(browserId: string, tabId: number): Denial | undefined {
    return this.#byTab.get(`${browserId}:${tabId}`);
  }

  take(browserId: string, tabId: number): Denial | undefined {
    const key = `${browserId}:${tabId}`;
    const denial = this.#byTab.get(key);
    this.#byTab.delete(key);
    return denial;
  }

  forget(browserId: string, tabId: number): void {
    this.#byTab.delete(`${browserId}:${tabId}`);
    this.#frames.delete(`${browserId}:${tabId}`);
  }

  readonly #frames = new Map<string, Set<string>>();

  /** A frame of the tab's current document was stopped on its way to `url` (the network rules). */
  recordFrame(browserId: string, tabId: number, url: string): void {
    const key = `${browserId}:${tabId}`;
    const urls = this.#frames.get(key) ?? new Set<string>();
    if (urls.size < 1000) urls.add(url);
    this.#frames.set(key, urls);
  }

  /** How many frames of the tab's current document were stopped before they loaded (withheld, like refused frames). */
  stoppedFrames(browserId: string, tabId: number): number {
    return this.#frames.get(`${browserId}:${tabId}`)?.size ?? 0;
  }

  /** A new top document committed: its frames start afresh. */
  newDocument(browserId: string, tabId: number): void {
    this.#frames.delete(`${browserId}:${tabId}`);
  }
}

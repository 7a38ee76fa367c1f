// The HTTP status of each agent tab's top document, once for both drivers, from what they observe (BridgeEvents):
// a response (tab.response) is held until its document commits (tab.committed) and kept only if that document is
// the one it brought (same URL, fragments aside), or, told just after that commit (Firefox's order), taken by it; a document that commits without one (the back/forward cache, a
// service worker's answer) has no status. A status is never shown for another document than the one it came with.
import type { BridgeEvent } from "@tabrelay/protocol";

interface Response {
  url: string;
  status: number;
  /** When it was told (a response told before its tab's last commit belongs to no later document). */
  at: number;
}

/** How long after a document commits a response for its URL may still be its own, told late (Firefox). */
const LATE_RESPONSE_MS = 2000;

export class DocumentStatus {
  readonly #pending = new Map<number, Response>();
  readonly #current = new Map<number, Response>();
  /** Each tab's last committed document, with when, for a response told after its commit. */
  readonly #committed = new Map<number, { url: string; at: number }>();

  observe(frame: BridgeEvent): void {
    switch (frame.event) {
      case "tab.response": {
        const { tabId } = frame.params;
        const response = { url: withoutFragment(frame.params.url), status: frame.params.status, at: Date.now() };
        // Firefox may tell a document's commit before its response: a response for the URL that just committed,
        // with no status yet, is that document's, and no later one's.
        const last = this.#committed.get(tabId);
        if (last && last.url === response.url && response.at - last.at <= LATE_RESPONSE_MS && !this.#current.has(tabId)) {
          this.#current.set(tabId, response);
          this.#pending.delete(tabId);
          return;
        }
        this.#pending.set(tabId, response);
        return;
      }
      case "tab.committed": {
        const { tabId, url } = frame.params;
        // A blank document (a tab reset after a refused landing, a new tab's initial one) can commit after the next
        // page's response was seen: it brought no response and takes none away from the page that follows.
        if (url === "about:blank") {
          this.#current.delete(tabId);
          return;
        }
        const previous = this.#committed.get(tabId);
        this.#committed.set(tabId, { url: withoutFragment(url), at: Date.now() });
        const pending = this.#pending.get(tabId);
        this.#pending.delete(tabId);
        // A response told before the tab's previous commit was that document's or none's, never this one's.
        if (pending && pending.url === withoutFragment(url) && (!previous || pending.at >= previous.at)) this.#current.set(tabId, pending);
        else this.#current.delete(tabId);
        return;
      }
      case "tab.removed":
        this.forget(frame.params.tabId);
        return;
      default:
        return;
    }
  }

  /**
   * The status of a document whose commit the driver did not see (it was there before the driver connected: a
   * stateless host's next request), as the page itself reports it. Observed events take precedence.
   */
  seed(tabId: number, url: string, status: number): void {
    if (!this.#current.has(tabId) && !this.#pending.has(tabId)) this.#current.set(tabId, { url: withoutFragment(url), status, at: Date.now() });
  }

  /** The tab is gone (closed by the page, the person or the broker's tabs.close). */
  forget(tabId: number): void {
    this.#pending.delete(tabId);
    this.#current.delete(tabId);
    this.#committed.delete(tabId);
  }

  /** The status of the response that brought the tab's document at `url`, when it was seen. */
  of(tabId: number, url: string): number | undefined {
    const current = this.#current.get(tabId);
    return current && current.url === withoutFragment(url) ? current.status : undefined;
  }
}

/** A response's URL and a document's compare without the fragment (responses never carry one). */
function withoutFragment(url: string): string {
  return url.split("#")[0] ?? url;
}

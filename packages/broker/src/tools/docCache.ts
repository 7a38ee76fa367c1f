import type { Extracted } from "../extract/extract.js";

interface Entry {
  doc: Extracted;
  at: number;
}

/**
 * Recently extracted documents, so reading on with `offset` does not load the page again. Bounded by count and by
 * characters in all: a hostile page's megabytes of text must not pile up in a long-lived broker (a document larger
 * than the whole budget is not kept; reading on then loads it again).
 */
export class DocCache {
  readonly #entries = new Map<string, Entry>();
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #maxChars: number;
  #chars = 0;

  constructor(max = 32, ttlMs = 10 * 60_000, maxChars = 4 * 1024 * 1024) {
    this.#max = max;
    this.#ttlMs = ttlMs;
    this.#maxChars = maxChars;
  }

  get(key: string): Extracted | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.at > this.#ttlMs) {
      this.#delete(key);
      return undefined;
    }
    // Refresh recency.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.doc;
  }

  set(key: string, doc: Extracted): void {
    this.#delete(key);
    if (doc.markdown.length > this.#maxChars) return;
    this.#entries.set(key, { doc, at: Date.now() });
    this.#chars += doc.markdown.length;
    while (this.#entries.size > this.#max || this.#chars > this.#maxChars) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#delete(oldest);
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#chars = 0;
  }

  #delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#chars -= entry.doc.markdown.length;
    this.#entries.delete(key);
  }
}

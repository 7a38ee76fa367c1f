import type { Extracted } from "../extract/extract.js";

interface Entry {
  doc: Extracted;
  at: number;
}

/** Recently extracted documents, so reading on with `offset` does not load the page again. */
export class DocCache {
  readonly #entries = new Map<string, Entry>();
  readonly #max: number;
  readonly #ttlMs: number;

  constructor(max = 32, ttlMs = 10 * 60_000) {
    this.#max = max;
    this.#ttlMs = ttlMs;
  }

  get(key: string): Extracted | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.at > this.#ttlMs) {
      this.#entries.delete(key);
      return undefined;
    }
    // Refresh recency.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.doc;
  }

  set(key: string, doc: Extracted): void {
    this.#entries.delete(key);
    this.#entries.set(key, { doc, at: Date.now() });
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  clear(): void {
    this.#entries.clear();
  }
}

// The last snapshot of each tab (its rendered lines), which paging, find and code mode's refs read back: a store the
// tool context holds (tools/tool.ts), apart from the snapshot tool that fills it so the context need not import it.
import type { SnapshotNode } from "@tabrelay/protocol";

export interface Line {
  text: string;
  /** Lower-cased searchable text: role, name, value. */
  haystack: string;
  /** The element the line shows, and where its `[ref=...]` starts in `text` (code mode renames refs there). */
  node?: SnapshotNode;
  refAt?: number;
}

/**
 * A snapshot's lines, each rendered when first read: a call shows one page of a list that may hold thousands, and
 * only find reads them all.
 */
export class SnapshotLines {
  readonly #rendered: (Line | undefined)[];
  readonly #render: (index: number) => Line;

  constructor(length: number, render: (index: number) => Line) {
    this.#rendered = new Array<Line | undefined>(length);
    this.#render = render;
  }

  get length(): number {
    return this.#rendered.length;
  }

  at(index: number): Line {
    return (this.#rendered[index] ??= this.#render(index));
  }

  slice(start: number, end: number): Line[] {
    const out: Line[] = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.length); i++) out.push(this.at(i));
    return out;
  }

  all(): Line[] {
    return this.slice(0, this.length);
  }
}

export interface CachedSnapshot {
  revision: string;
  url: string;
  title: string;
  lines: SnapshotLines;
  /** A frame's walk stopped at the in-page node limit. */
  capped: boolean;
}

/** The last snapshot of each tab, so paging and find keep the refs of one revision valid. */
export class SnapshotCache {
  readonly #byTab = new Map<string, CachedSnapshot>();

  get(browserId: string, tabId: number): CachedSnapshot | undefined {
    return this.#byTab.get(`${browserId}:${tabId}`);
  }

  set(browserId: string, tabId: number, snapshot: CachedSnapshot): void {
    this.#byTab.set(`${browserId}:${tabId}`, snapshot);
    if (this.#byTab.size > 64) this.#byTab.delete(this.#byTab.keys().next().value ?? "");
  }

  /** The tab's page started another revision (a query): its last snapshot's refs are stale. */
  forget(browserId: string, tabId: number): void {
    this.#byTab.delete(`${browserId}:${tabId}`);
  }
}

// What the user has seen of each page tool: its fingerprint when first offered (trusted on first sight, as the user
// then sees it in the dashboard), and a tool whose description or schema changed since (a "rug pull") is held until
// the user approves the new version (dashboard, or `tabrelay pages approve`). Kept in the data dir as
// page-tools.json (0600, read with the same checks as the token files) so a restart forgets nothing.
import { statSync, unwatchFile, watchFile } from "node:fs";
import { join } from "node:path";
import { readOwnFile, writeSecretFile } from "../config/fileSafety.js";

export type ApprovalState = "approved" | "changed";

export interface ToolApproval {
  origin: string;
  name: string;
  /** The fingerprint the user approved (or first saw). */
  hash: string;
  /** The fingerprint the page offers now, when it differs from `hash`. */
  offered?: string;
  state: ApprovalState;
  firstSeen: number;
  approvedAt: number;
}

const FILE = "page-tools.json";
const MAX_ENTRIES = 10_000;

export class PageToolApprovals {
  readonly #path: string | undefined;
  readonly #warn: (message: string) => void;
  #entries = new Map<string, ToolApproval>();
  /** The file as last read or written (mtime and size): another writer's change (tabrelay pages approve) is read again. */
  #seen = "";

  /** `dataDir` undefined keeps approvals in memory only (tests of the pure parts). */
  constructor(dataDir: string | undefined, warn: (message: string) => void = () => {}) {
    this.#path = dataDir === undefined ? undefined : join(dataDir, FILE);
    this.#warn = warn;
    this.#load(true);
  }

  /** Calls `onChange` when another process (tabrelay pages approve) changed the file; returns the unwatch function. */
  watch(onChange: () => void, intervalMs = 1000): () => void {
    const path = this.#path;
    if (!path) return () => {};
    const listener = () => {
      if (this.#load(false)) onChange();
    };
    watchFile(path, { interval: intervalMs, persistent: false }, listener);
    return () => unwatchFile(path, listener);
  }

  /** Reads the file again if it changed since this process last read or wrote it; true when it did. */
  #load(first: boolean): boolean {
    if (!this.#path) return false;
    const stamp = stampOf(this.#path);
    if (!first && stamp === this.#seen) return false;
    const read = readOwnFile(this.#path, "token");
    if (!read.ok) {
      if (first) throw new Error(read.message);
      this.#warn(`${read.message}; page tool approvals unchanged`);
      return false;
    }
    for (const warning of read.warnings) this.#warn(warning);
    this.#seen = stamp;
    const entries = new Map<string, ToolApproval>();
    if (read.value !== undefined) {
      try {
        const parsed = JSON.parse(read.value) as { tools?: ToolApproval[] };
        for (const entry of parsed.tools ?? []) {
          if (typeof entry?.origin === "string" && typeof entry.name === "string" && typeof entry.hash === "string")
            entries.set(key(entry.origin, entry.name), entry);
        }
      } catch {
        this.#warn(`${this.#path} is not valid JSON; page tools will be treated as first seen (every approval starts again)`);
      }
    }
    this.#entries = entries;
    return true;
  }

  /**
   * The state of a tool as offered now: a first sight records and approves it; the approved fingerprint is
   * approved; any other is "changed" (held) until approve().
   */
  offered(origin: string, name: string, hash: string, now = Date.now()): ApprovalState {
    this.#load(false);
    const known = this.#entries.get(key(origin, name));
    if (!known) {
      if (this.#entries.size >= MAX_ENTRIES) return "changed";
      this.#entries.set(key(origin, name), { origin, name, hash, state: "approved", firstSeen: now, approvedAt: now });
      this.#save();
      return "approved";
    }
    if (known.hash === hash) {
      if (known.state !== "approved" || known.offered) {
        known.state = "approved";
        delete known.offered;
        this.#save();
      }
      return "approved";
    }
    if (known.offered !== hash || known.state !== "changed") {
      known.offered = hash;
      known.state = "changed";
      this.#save();
    }
    return "changed";
  }

  /** Approves what the page offers now; false when tabrelay knows no such tool or nothing changed. */
  approve(origin: string, name: string, now = Date.now()): boolean {
    this.#load(false);
    const known = this.#entries.get(key(origin, name));
    if (!known || known.state !== "changed" || !known.offered) return false;
    known.hash = known.offered;
    delete known.offered;
    known.state = "approved";
    known.approvedAt = now;
    this.#save();
    return true;
  }

  get(origin: string, name: string): ToolApproval | undefined {
    return this.#entries.get(key(origin, name));
  }

  list(): ToolApproval[] {
    return [...this.#entries.values()].map((e) => ({ ...e }));
  }

  #save(): void {
    if (!this.#path) return;
    writeSecretFile(this.#path, `${JSON.stringify({ version: 1, tools: [...this.#entries.values()] }, null, 1)}\n`);
    this.#seen = stampOf(this.#path);
  }
}

function key(origin: string, name: string): string {
  return `${origin}\n${name}`;
}

function stampOf(path: string): string {
  try {
    const stats = statSync(path);
    return `${stats.mtimeMs}:${stats.size}:${stats.ino}`;
  } catch {
    return "";
  }
}

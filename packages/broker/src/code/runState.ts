// What one code-mode run keeps between its commands: the browser and the current tab, the refs its own snapshots
// and queries minted (each with the revision that minted it), and how a command calls a tool. Every command goes
// through runTool, exactly as an MCP call: strict arguments, leases, the gate, its own audit record (with the run id).
import type { ErrorCode } from "@tabrelay/protocol";
import type { CallContext, Tool } from "../tools/tool.js";

/** A command's failure as the program sees it: a code from the one table and a message naming cause and next step. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function fail(code: ErrorCode, message: string): never {
  throw new CommandError(code, message);
}

/** Where a program's ref points: the tab, the page's ref and the revision of the snapshot or query that minted it. */
export interface MintedRef {
  tab: number;
  ref: string;
  revision: string;
}

/** A ref as a program holds it: the page's ref and the run's snapshot number (`e3@2`), unique within the run. */
export const PROGRAM_REF = /^((?:f\d+)?e\d+)@(\d+)$/;
/** How many snapshots' and queries' refs a run keeps (a run may take thousands of snapshots). */
const KEPT_GENERATIONS = 64;

/** A ref as the tools give it (`e3`, `f12e3`): not valid in a program. */
const TOOL_REF = /^(?:f\d+)?e\d+$/;

export class RunState {
  readonly run: string;
  readonly ctx: CallContext;
  readonly signal: AbortSignal;
  readonly browser: string | undefined;
  current: number | undefined;
  /** The element the last action targeted (press without a target presses there). */
  lastTarget: MintedRef | undefined;
  readonly #refs = new Map<string, MintedRef>();
  /** The names each snapshot or query minted, oldest first: the run keeps the last KEPT_GENERATIONS of them. */
  readonly #minted = new Map<number, string[]>();
  /** The last snapshot of each tab the program took: paging it (offset) keeps its refs. */
  readonly lastSnapshot = new Map<number, { revision: string; generation: number }>();
  /** The tabs the program opened and has not closed: closed when the run ends, unless it returned them (run.ts). */
  readonly opened = new Set<number>();
  #generation = 0;

  constructor(options: { run: string; ctx: CallContext; signal: AbortSignal; browser?: string | undefined; tab?: number | undefined }) {
    this.run = options.run;
    this.ctx = options.ctx;
    this.signal = options.signal;
    this.browser = options.browser;
    this.current = options.tab;
  }

  /** The tab a command acts on: the program's current tab. */
  tab(): number {
    if (this.current === undefined) {
      fail(
        "no_such_tab",
        "the program has no current tab: call browse.open(url) first, browse.tabs.select(id) for one of your tabs, or pass browser_run's tab",
      );
    }
    return this.current;
  }

  /** Runs a tool as one command of this run; its structured value, or its failure as a CommandError. */
  /**
   * Runs a tool for the run after it ended (its own signal may be aborted): the same runner and audit, the run's id,
   * a deadline of its own. Never throws: what it could not do is the answer's.
   */
  async after(tool: Tool, args: Record<string, unknown>): Promise<boolean> {
    const result = await this.ctx.runTool(tool, { ...args, ...(this.browser !== undefined ? { browser: this.browser } : {}) }, AbortSignal.timeout(10_000), {
      run: this.run,
    });
    return !result.isError;
  }

  async call(tool: Tool, args: Record<string, unknown>): Promise<unknown> {
    const result = await this.ctx.runTool(tool, { ...args, ...(this.browser !== undefined ? { browser: this.browser } : {}) }, this.signal, { run: this.run });
    if (result.isError) throw new CommandError(result.error?.code ?? "internal", result.error?.message ?? result.text);
    return result.value;
  }

  /** A new snapshot number, for the refs a snapshot or query mints. */
  nextGeneration(): number {
    this.#generation += 1;
    this.#minted.set(this.#generation, []);
    for (const [generation, names] of this.#minted) {
      if (generation > this.#generation - KEPT_GENERATIONS) break;
      for (const name of names) this.#refs.delete(name);
      this.#minted.delete(generation);
    }
    return this.#generation;
  }

  /** Records the page's ref minted under `revision` and returns the program's name for it. */
  mint(tab: number, ref: string, revision: string, generation: number): string {
    const name = `${ref}@${generation}`;
    this.#refs.set(name, { tab, ref, revision });
    this.#minted.get(generation)?.push(name);
    return name;
  }

  /** The page's ref and revision a program ref stands for; a ref this run never minted is an error saying what to pass. */
  resolveRef(name: string): MintedRef {
    const minted = this.#refs.get(name);
    if (minted) return minted;
    if (TOOL_REF.test(name)) {
      fail(
        "invalid_params",
        `${JSON.stringify(name)} is a ref as the tools give it; a program acts on refs from its own browse.snapshot() or browse.query() (they look like "e3@1"), or on a CSS selector`,
      );
    }
    const generation = Number(PROGRAM_REF.exec(name)?.[2] ?? 0);
    if (generation > 0 && generation <= this.#generation - KEPT_GENERATIONS) {
      fail(
        "stale_ref",
        `ref ${JSON.stringify(name)} is from snapshot ${generation} of this run, and the run keeps the refs of its last ${KEPT_GENERATIONS} snapshots and queries; call browse.snapshot() and use a ref from it`,
      );
    }
    return fail("stale_ref", `ref ${JSON.stringify(name)} was not made by this program's snapshots or queries; call browse.snapshot() and use a ref from it`);
  }
}

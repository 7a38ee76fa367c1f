// One browser_run: the program goes to the sandbox with the commands config allows and the run's budgets; each
// command it calls comes back here (dispatch) and runs as a tool call. The sandbox adds budgets, never a policy.
import { ERROR_CODES } from "@tabrelay/protocol";
import type { HostAnswer, HostCall, RunResult } from "@tabrelay/sandbox";
import { commandAllowed, type RunBudgets } from "../config/codeMode.js";
import type { BrokerConfig } from "../config/config.js";
import type { SandboxRunner } from "../tools/services.js";
import type { CallContext } from "../tools/tool.js";
import { COMMANDS, dispatch, type Command } from "./commands.js";
import { RunState } from "./runState.js";
import { closeTab } from "../tools/tabs.js";

/** The commands a program may call under this config (code_mode.allow / deny). */
export function allowedCommands(config: BrokerConfig): Command[] {
  return COMMANDS.filter((c) => commandAllowed(config.codeMode, c.name));
}

export interface ProgramRun {
  program: string;
  run: string;
  budgets: RunBudgets;
  browser?: string | undefined;
  tab?: number | undefined;
  /** The run's browser is stopped when it ends (browser_run's browser "new"): its tabs go with it, none is closed. */
  browserEndsWithRun?: boolean;
}

/**
 * Commands of one run that reach the browser at once; the rest wait their turn. A program can start hundreds with
 * Promise.all, which tool calls, one model turn each, never do: the user's browser and the broker's other sessions
 * see at most this many from a run.
 */
export const RUN_IN_FLIGHT = 4;

/** Tabs one run may open (open, tabs.new): a program looping over links cannot fill the user's browser with tabs. */
export const RUN_TABS = 20;

const OPENS_TAB = new Set(["open", "tabs.new"]);

export async function runProgram(ctx: CallContext, sandbox: SandboxRunner, spec: ProgramRun, signal: AbortSignal): Promise<RunResult> {
  const commands: string[] = allowedCommands(ctx.config).map((c) => c.name);
  // The whole run talks to one browser: the one named, else the newest when it starts (not whichever is newest later).
  // A command still running when the run ends (a program that returned without awaiting it, a budget) ends with it:
  // one held for the user's answer (policy.ask) is withdrawn rather than acting later, with no run around it.
  const ended = new AbortController();
  const state = new RunState({
    run: spec.run,
    ctx,
    signal: AbortSignal.any([signal, ended.signal]),
    browser: spec.browser ?? browserAtStart(ctx),
    tab: spec.tab,
  });
  const turns = new Turns(RUN_IN_FLIGHT);
  let tabsOpened = 0;
  const call = async (c: HostCall): Promise<HostAnswer> => {
    if (!commands.includes(c.command)) {
      return {
        ok: false,
        error: {
          code: "invalid_params",
          message: `browse.${c.command} is not a command this broker lets programs call (code_mode.allow / deny); browser_api lists those it does`,
        },
      };
    }
    if (!(await turns.take())) return { ok: false, error: { code: "cancelled", message: `browse.${c.command} was not run: the program had already ended` } };
    try {
      if (OPENS_TAB.has(c.command) && ++tabsOpened > RUN_TABS) {
        return {
          ok: false,
          error: {
            code: "budget_exceeded",
            message: `tabs budget exceeded: a run may open at most ${RUN_TABS} tabs; close the ones it is done with (browse.tabs.close) or split the work into several runs`,
          },
        };
      }
      return await dispatch(state, c.command, c.args);
    } finally {
      turns.give();
    }
  };
  let result: RunResult | undefined;
  try {
    const owner = ctx.session ? `session:${ctx.session.session}` : `user:${ctx.user.user}`;
    result = await sandbox.run({ program: spec.program, commands, budgets: spec.budgets }, call, signal, owner);
    return result.error ? { ...result, error: { code: tableCode(result.error.code), message: result.error.message } } : result;
  } finally {
    // Commands still waiting for a turn when the run ends (a budget, a program that returned without awaiting them)
    // never reach the browser.
    turns.close();
    ended.abort();
    // The program's own tabs go with it, unless it returned them (a failed run returned nothing): no run leaves
    // tabs behind as free tabs the next session could take.
    const kept = result?.status === "ok" ? returnedTabs(result.value) : new Set<number>();
    const closing = spec.browserEndsWithRun ? [] : [...state.opened].filter((tab) => !kept.has(tab)).map((tab) => state.after(closeTab, { tab }));
    // A stopped run answers at once: its tabs close behind it. Otherwise they are gone when the answer comes.
    if (!signal.aborted) await Promise.all(closing);
  }
}

/**
 * The tab ids a program's value hands back: a number that is the value itself, an element of an array, or the value
 * of a property named id, tab or tabId (what browse.open and browse.tabs.list give), at any depth.
 */
export function returnedTabs(value: unknown): Set<number> {
  const found = new Set<number>();
  const walk = (v: unknown, key: string | undefined, depth: number): void => {
    if (depth > 20) return;
    if (typeof v === "number") {
      if (key === undefined || key === "id" || key === "tab" || key === "tabId") found.add(v);
    } else if (Array.isArray(v)) for (const item of v) walk(item, undefined, depth + 1);
    else if (v && typeof v === "object") for (const [k, item] of Object.entries(v)) walk(item, k, depth + 1);
  };
  walk(value, undefined, 0);
  return found;
}

/** A first-come queue of `size` turns; once closed, those waiting and those who ask get none. */
class Turns {
  #free: number;
  #waiting: ((granted: boolean) => void)[] = [];
  #closed = false;

  constructor(size: number) {
    this.#free = size;
  }

  take(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next(true);
    else this.#free++;
  }

  close(): void {
    this.#closed = true;
    for (const waiting of this.#waiting.splice(0)) waiting(false);
  }
}

/** The sandbox's own outcomes in the one error table's codes (a failed command's code is already one of them). */
function tableCode(code: string): string {
  if (ERROR_CODES.some((known) => known === code)) return code;
  if (code === "sandbox_crashed" || code === "sandbox_closed") return "sandbox_unavailable";
  return "internal";
}

function browserAtStart(ctx: CallContext): string | undefined {
  return ctx.browsers()[0]?.browserId;
}

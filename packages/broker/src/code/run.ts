// One browser_run: the program goes to the sandbox with the commands config allows and the run's budgets; each
// command it calls comes back here (dispatch) and runs as a tool call. The sandbox adds budgets, never a policy.
import { ERROR_CODES } from "@tabrelay/protocol";
import type { HostAnswer, HostCall, RunRequest, RunResult } from "@tabrelay/sandbox";
import { commandAllowed, type RunBudgets } from "../config/codeMode.js";
import type { BrokerConfig } from "../config/config.js";
import type { CallContext } from "../tools/tool.js";
import { COMMANDS, dispatch, type Command } from "./commands.js";
import { RunState } from "./runState.js";

/** What runs programs: the sandbox pool (@tabrelay/sandbox), created by the broker on first use. */
export interface SandboxRunner {
  run(request: RunRequest, call: (c: HostCall) => Promise<HostAnswer>, signal?: AbortSignal): Promise<RunResult>;
  close(): Promise<void>;
}

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
}

export async function runProgram(ctx: CallContext, sandbox: SandboxRunner, spec: ProgramRun, signal: AbortSignal): Promise<RunResult> {
  const commands = allowedCommands(ctx.config).map((c) => c.name);
  // The whole run talks to one browser: the one named, else the newest when it starts (not whichever is newest later).
  const state = new RunState({ run: spec.run, ctx, signal, browser: spec.browser ?? browserAtStart(ctx), tab: spec.tab });
  const call = async (c: HostCall): Promise<HostAnswer> => {
    if (!commands.includes(c.command)) {
      return { ok: false, error: { code: "invalid_params", message: `browse.${c.command} is not a command this broker lets programs call (code_mode.allow / deny); browser_api lists those it does` } };
    }
    return dispatch(state, c.command, c.args);
  };
  const result = await sandbox.run({ program: spec.program, commands, budgets: spec.budgets }, call, signal);
  return result.error ? { ...result, error: { code: tableCode(result.error.code), message: result.error.message } } : result;
}

/** The sandbox's own outcomes in the one error table's codes (a failed command's code is already one of them). */
function tableCode(code: string): string {
  if (ERROR_CODES.some((known) => known === code)) return code;
  if (code === "sandbox_crashed" || code === "sandbox_closed") return "sandbox_unavailable";
  return "internal";
}

function browserAtStart(ctx: CallContext): string | undefined {
  const picked = ctx.registry.pick(undefined);
  return picked.ok ? picked.value.info.browserId : undefined;
}

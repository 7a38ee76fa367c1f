// The sandbox's contract with its host (the broker): what a run is asked, what the host answers for each command,
// and what the run gives back. Plain data only: everything crosses a worker boundary and, later, a Workers runtime.

/** Limits of one run. The host fills every field (its config default, lowered by the caller, capped by config). */
export interface Budgets {
  /** Wall clock of the whole run, host commands included (ms). Enforced inside (interrupt) and outside (watchdog). */
  wallMs: number;
  /** Interrupt-handler ticks the program may use (a proxy for instructions executed). */
  instructions: number;
  /** QuickJS heap (bytes). */
  memoryBytes: number;
  /** QuickJS stack (bytes); at most 256 KiB whatever is asked (deeper overflowed the host's stack when measured). */
  stackBytes: number;
  /** Host commands (browse.*) the program may call. */
  commands: number;
  /** Bytes of the returned value (as JSON) and the logs together. */
  outputBytes: number;
}

/** One call of a host command from the program: `browse.tabs.list()` is { command: "tabs.list", args: [] }. */
export interface HostCall {
  /** 1, 2, ... in the order the program made them. */
  seq: number;
  command: string;
  /** The program's arguments, copied as JSON. */
  args: unknown[];
}

export type HostAnswer = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };

export interface RunRequest {
  /** The program as the agent sent it: TypeScript (types are stripped) or JavaScript, the body of an async function. */
  program: string;
  /** The commands the program may call, as dotted paths ("open", "tabs.list", "mouse.click"); `browse` is built from them. */
  commands: string[];
  budgets: Budgets;
}

export type RunStatus = "ok" | "error" | "budget_exceeded";

export interface LogEntry {
  level: "info" | "warn" | "error";
  /** The arguments, each as a string (JSON for non-strings), joined by a space. */
  text: string;
}

export interface RunUsage {
  wallMs: number;
  instructions: number;
  memoryBytes: number;
  commands: number;
  outputBytes: number;
}

export interface RunResult {
  status: RunStatus;
  /** What the program returned, copied as JSON (undefined when it returned nothing or failed). */
  value?: unknown;
  logs: LogEntry[];
  /** Why the run failed: a program error (code "program_error", with its message and line), a budget
   * ("budget_exceeded", naming which: "wall clock", "instructions", "memory", "stack", "commands", "output"),
   * a value that cannot be copied ("value_not_copyable": cyclic, a function, too large), a syntax error
   * ("syntax_error"), or the failed command's own code when the program did not catch it. */
  error?: { code: string; message: string };
  /** The command whose failure ended the run (uncaught in the program), with its real error. */
  failedCall?: { command: string; args: unknown[]; error: { code: string; message: string } };
  usage: RunUsage;
}

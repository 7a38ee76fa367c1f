// Words for what stopped a run: a thrown value as the agent should read it (with its program line), and
// each budget's message, naming the limit and what to do next.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import { PROGRAM_FILE } from "./compile.js";
import type { Budgets } from "./types.js";

export type Budget = "wall clock" | "instructions" | "memory" | "stack" | "commands" | "output";

export interface Thrown {
  /** memory: QuickJS ran out (its "out of memory", or no error at all when it could not even build one). */
  kind: "memory" | "stack" | "other";
  text: string;
}

const MAX_TEXT = 2000;
const frame = new RegExp(`${PROGRAM_FILE.replace(".", "\\.")}:(\\d+)(?::(\\d+))?`);

export function describeThrown(ctx: QuickJSContext, handle: QuickJSHandle): Thrown {
  let dumped: unknown;
  try {
    dumped = ctx.dump(handle);
  } catch {
    return { kind: "other", text: "the program threw a value that cannot be described" };
  }
  if (dumped === null || dumped === undefined) {
    // QuickJS could not allocate the error object: measured, this is how a heap exhausted by many small objects ends.
    return { kind: "memory", text: "out of memory" };
  }
  if (typeof dumped === "object" && !Array.isArray(dumped)) {
    const name = "name" in dumped && typeof dumped.name === "string" ? dumped.name : undefined;
    const message = "message" in dumped && typeof dumped.message === "string" ? dumped.message : undefined;
    const stack = "stack" in dumped && typeof dumped.stack === "string" ? dumped.stack : "";
    if (message !== undefined) {
      if (name === "InternalError" && message === "out of memory") return { kind: "memory", text: message };
      if (name === "InternalError" && message === "stack overflow") return { kind: "stack", text: message };
      const at = frame.exec(stack) ?? frame.exec(message);
      const line = at ? ` (program line ${at[1]})` : "";
      return { kind: "other", text: clip(`${name ?? "Error"}: ${message}`) + line };
    }
  }
  let text: string;
  try {
    text = typeof dumped === "string" ? dumped : (JSON.stringify(dumped) ?? String(dumped));
  } catch {
    text = String(dumped);
  }
  return { kind: "other", text: `the program threw ${clip(text)} (not an Error, so no line is known)` };
}

const clip = (text: string): string => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}...` : text);

const mib = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(bytes < 1024 * 1024 ? 2 : 0)} MiB`;

export function budgetMessage(budget: Budget, budgets: Budgets): string {
  switch (budget) {
    case "wall clock":
      return `wall clock budget exceeded: the run took longer than ${budgets.wallMs} ms (commands included); do less per run, or ask for a larger wall-clock budget`;
    case "instructions":
      return `instructions budget exceeded: the program ran more than ${budgets.instructions} interrupt ticks of computation (an endless or very long loop?); compute less, or ask for a larger instructions budget`;
    case "memory":
      return `memory budget exceeded: the program needed more than ${mib(budgets.memoryBytes)} of heap; keep less data at once`;
    case "stack":
      return `stack budget exceeded: the program overflowed its ${Math.min(budgets.stackBytes, 256 * 1024) / 1024} KiB stack (endless or very deep recursion); use a loop instead`;
    case "commands":
      return `commands budget exceeded: the program called more than ${budgets.commands} browse.* commands; do fewer per run, or ask for a larger commands budget`;
    case "output":
      return `output budget exceeded: the logs and the returned value passed ${budgets.outputBytes} bytes; log less and return only what is needed`;
  }
}

const BUDGET_FIELDS = ["wallMs", "instructions", "memoryBytes", "stackBytes", "commands", "outputBytes"] as const;

/** Why these budgets cannot run a program (a field missing, negative or not a finite number), or undefined. */
export function budgetsProblem(budgets: Budgets | undefined): string | undefined {
  if (typeof budgets !== "object" || budgets === null) return "the run request has no budgets; the host must fill every budget";
  const bad = BUDGET_FIELDS.filter((field) => typeof budgets[field] !== "number" || !Number.isFinite(budgets[field]) || budgets[field] < 0);
  return bad.length > 0 ? `the run request's budgets ${bad.join(", ")} must be finite numbers >= 0; the host fills every budget from its config` : undefined;
}

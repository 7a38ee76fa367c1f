// code_mode: in config.yaml: whether browser_run runs programs, each budget's default and cap, and which browse
// commands a program may call. A per-call `budgets` argument may only lower a budget, never raise it past its cap.
import type { Budgets } from "@tabrelay/sandbox";
import { z } from "zod";

/** The budgets of one run, in the units the sandbox takes: its own contract's. */
export type RunBudgets = Budgets;

export interface CodeModeSettings {
  enabled: boolean;
  /** What a run gets when the call asks for nothing. */
  defaults: RunBudgets;
  /** The most a call may ask for. */
  caps: RunBudgets;
  /** Commands a program may call (dotted: "tabs.list"); empty: every command. */
  allow: string[];
  /** Commands a program may not call, whatever `allow` says. */
  deny: string[];
  /**
   * The most a run's result may hand the agent, in characters, its text and structuredContent counted together
   * (~4 characters a token: 100,000 is ~25,000 tokens). Past it the logs and the value are cut, with a marker saying
   * how much and where the whole output is (the run's audit record).
   */
  resultMaxChars: number;
  /** How refusals name where the config lives (BrokerConfig.configName). */
  configName?: string;
}

/** result_max_chars: its default and bounds. */
export const RESULT_MAX_CHARS = { default: 100_000, min: 10_000, max: 2_000_000 };

/** One budget: its config key, its key in the sandbox, its unit for people, and the built-in default and hard cap. */
export interface BudgetSpec {
  key: keyof RunBudgets;
  /** The key in config.yaml and in browser_run's `budgets` argument. */
  name: string;
  /** What it limits, for descriptions and errors. */
  what: string;
  /** The config unit -> the sandbox's unit. */
  scale: number;
  unit: string;
  default: number;
  /** The least a program can start with (measured: below these the sandbox cannot build its runtime). */
  min: number;
  /** The built-in ceiling: config may lower it, never raise it past this. */
  max: number;
}

export const BUDGETS: readonly BudgetSpec[] = [
  { key: "wallMs", name: "wall_ms", what: "wall clock, commands included", scale: 1, unit: "ms", default: 60_000, min: 100, max: 600_000 },
  // Measured on a 2-core machine: about 3,000-10,000 ticks a second of pure computation; 100,000 stops a runaway loop
  // within the default wall clock on a fast machine, and the wall clock stops it on a slow one.
  {
    key: "instructions",
    name: "instructions",
    what: "interpreter ticks (QuickJS's interrupt checks) of computation",
    scale: 1,
    unit: "ticks",
    default: 100_000,
    min: 1,
    max: 10_000_000,
  },
  { key: "memoryBytes", name: "memory_mb", what: "program heap", scale: 1024 * 1024, unit: "MiB", default: 32, min: 1, max: 256 },
  // The sandbox stops deeper stacks itself: more overflowed the host's stack when measured (issue 13).
  { key: "stackBytes", name: "stack_kb", what: "program stack", scale: 1024, unit: "KiB", default: 256, min: 16, max: 256 },
  { key: "commands", name: "commands", what: "browse.* calls", scale: 1, unit: "calls", default: 256, min: 0, max: 10_000 },
  { key: "outputBytes", name: "output_kb", what: "returned value and logs together", scale: 1024, unit: "KiB", default: 1024, min: 1, max: 16_384 },
];

const budgetShape = Object.fromEntries(BUDGETS.map((b) => [b.name, z.number().min(b.min).max(b.max).optional()]));

export const codeModeFileSchema = z
  .object({
    enabled: z.boolean().optional(),
    budgets: z.object(budgetShape).strict().optional(),
    caps: z.object(budgetShape).strict().optional(),
    allow: z.array(z.string().min(1)).optional(),
    deny: z.array(z.string().min(1)).optional(),
    result_max_chars: z.number().int().min(RESULT_MAX_CHARS.min).max(RESULT_MAX_CHARS.max).optional(),
  })
  .strict();

export type CodeModeFile = z.infer<typeof codeModeFileSchema>;

/**
 * The settings from the file, checked against the command names there are (`known`): an unknown command in
 * allow/deny, or a default above its cap, stops start-up with the key and the fix.
 */
export function codeModeSettings(file: CodeModeFile | undefined, known: readonly string[]): CodeModeSettings {
  const defaults = {} as RunBudgets;
  const caps = {} as RunBudgets;
  for (const b of BUDGETS) {
    const cap = file?.caps?.[b.name] ?? b.max;
    const given = file?.budgets?.[b.name];
    const value = given ?? Math.min(b.default, cap);
    if (value > cap)
      throw new Error(
        `code_mode.budgets.${b.name} is ${value} ${b.unit}, above its cap code_mode.caps.${b.name} (${cap} ${b.unit}); lower it or raise the cap`,
      );
    defaults[b.key] = Math.round(value * b.scale);
    caps[b.key] = Math.round(cap * b.scale);
  }
  for (const list of ["allow", "deny"] as const) {
    for (const name of file?.[list] ?? []) {
      if (!known.includes(name))
        throw new Error(`code_mode.${list} names ${JSON.stringify(name)}, which is not a browse command; the commands are: ${known.join(", ")}`);
    }
  }
  return {
    enabled: file?.enabled ?? true,
    defaults,
    caps,
    allow: file?.allow ?? [],
    deny: file?.deny ?? [],
    resultMaxChars: file?.result_max_chars ?? RESULT_MAX_CHARS.default,
  };
}

/** The budgets of one run: the config defaults, lowered where the call asks; asking more than a cap is an error message. */
export function runBudgets(
  settings: CodeModeSettings,
  asked: Partial<Record<string, number>> | undefined,
): { ok: true; budgets: RunBudgets } | { ok: false; message: string } {
  const budgets = { ...settings.defaults };
  for (const b of BUDGETS) {
    const value = asked?.[b.name];
    if (value === undefined) continue;
    const bytes = Math.round(value * b.scale);
    if (bytes > settings.caps[b.key]) {
      return {
        ok: false,
        message: `budgets.${b.name} is ${value} ${b.unit}, above its cap of ${settings.caps[b.key] / b.scale} ${b.unit} (code_mode.caps.${b.name} in ${settings.configName ?? "config.yaml"}): ask ${settings.caps[b.key] / b.scale} or less`,
      };
    }
    budgets[b.key] = bytes;
  }
  return { ok: true, budgets };
}

/** May a program call `command`? */
export function commandAllowed(settings: CodeModeSettings, command: string): boolean {
  return (settings.allow.length === 0 || settings.allow.includes(command)) && !settings.deny.includes(command);
}

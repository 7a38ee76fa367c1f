// A command's positional arguments, checked against its parameters (strict zod schemas): a call that does not fit
// fails with invalid_params naming the command, the argument, what it must be and what was given.
import { type z } from "zod";
import { fail } from "./runState.js";

export interface Param {
  name: string;
  /** Its TypeScript type, as the declarations show it. */
  type: string;
  schema: z.ZodType;
  optional?: boolean;
}

export function parseCall(command: string, params: readonly Param[], args: readonly unknown[]): unknown[] {
  const takes = params.length === 0 ? "no arguments" : `${params.length} argument${params.length === 1 ? "" : "s"} (${params.map((p) => p.name).join(", ")})`;
  // Trailing undefineds are what `f(a, undefined)` sends once copied: not extra arguments.
  let given = args.length;
  while (given > 0 && (args[given - 1] === undefined || args[given - 1] === null) && given > params.filter((p) => !p.optional).length) given--;
  if (given > params.length) fail("invalid_params", `browse.${command} takes ${takes}, got ${args.length}: remove the extra`);
  return params.map((param, i) => {
    const value = args[i] ?? undefined;
    if (value === undefined) {
      if (param.optional) return undefined;
      fail("invalid_params", `browse.${command} needs its argument \`${param.name}\` (${param.type}): add it`);
    }
    const parsed = param.schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    return fail("invalid_params", `browse.${command}: ${describe(param, issue, value)}`);
  });
}

function describe(param: Param, issue: z.core.$ZodIssue | undefined, value: unknown): string {
  const where = `\`${[param.name, ...(issue?.path ?? []).map(String)].join(".")}\``;
  const got = `got ${shown(issue ? at(value, issue.path) : value)}`;
  switch (issue?.code) {
    case "unrecognized_keys":
      return `${where} has unknown key${issue.keys.length === 1 ? "" : "s"} ${issue.keys.map((k) => `\`${k}\``).join(", ")} (${param.name} is ${param.type}): remove ${issue.keys.length === 1 ? "it" : "them"}`;
    case "invalid_type":
      return at(value, issue.path) === undefined
        ? `${where} is missing (${param.name} is ${param.type}): add it`
        : `${where} must be ${issue.expected}, ${got} (${param.name} is ${param.type}): fix it`;
    case "invalid_value":
      return `${where} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, ${got}: fix it`;
    case "too_small":
      return `${where} must be at least ${String(issue.minimum)}${issue.origin === "string" ? " characters long" : ""}, ${got}: fix it`;
    case "too_big":
      return `${where} must be at most ${String(issue.maximum)}${issue.origin === "string" ? " characters long" : ""}, ${got}: fix it`;
    default:
      return `${where} ${issue?.message ?? "does not fit"} (${param.name} is ${param.type}), ${got}: fix it`;
  }
}

function at(value: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>((v, key) => (v !== null && typeof v === "object" ? Reflect.get(v, key) : undefined), value);
}

function shown(value: unknown): string {
  const text = value === undefined ? "nothing" : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

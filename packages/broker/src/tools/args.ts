// A tool's arguments are checked here, against the same strict schema tools/list advertises, so a call with an
// unknown or ill-typed argument fails as a tool result (invalid_params) naming the field and the fix, and is
// audited like any other call.
import type { z } from "zod";
import { TabrelayError } from "../util/errors.js";

export interface ArgsSchema {
  tool: string;
  schema: z.ZodObject;
  /** The advertised JSON schema's properties, by field name: what the agent was told of each field. */
  fields: Readonly<Record<string, unknown>>;
}

/** The arguments parsed by the tool's strict schema, or invalid_params saying what to change. */
export function parseArgs<T>(spec: ArgsSchema & { schema: z.ZodType<T> }, args: unknown): T {
  const parsed = spec.schema.safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const given = args !== null && typeof args === "object" ? args : {};
  const problems = parsed.error.issues.map((issue) => describeIssue(spec, issue, given));
  const again = `call ${spec.tool} again`;
  throw new TabrelayError("invalid_params", problems.length === 1 ? `${problems[0]} and ${again}` : `${problems.join("; ")}; then ${again}`);
}

function describeIssue(spec: ArgsSchema, issue: z.core.$ZodIssue, given: object): string {
  const name = issue.path.map(String).join(".");
  const field = `\`${name || "arguments"}\``;
  const topField = issue.path.length === 1 ? advertised(spec.fields[String(issue.path[0])]) : undefined;
  if (issue.code === "unrecognized_keys") {
    // An object argument's own fields (budgets.wallMs) are named from its advertised schema, not the tool's.
    const owner = issue.path.length ? advertisedAt(spec.fields, issue.path) : undefined;
    const known = Object.keys(owner ? owner.properties : spec.fields);
    const keys = issue.keys.map((k) => `\`${name ? `${name}.` : ""}${k}\``).join(", ");
    const what = owner ? `\`${name}\`` : spec.tool;
    const takes = known.length ? `${what} takes ${known.join(", ")}` : `${what} takes no ${owner ? "fields" : "arguments"}`;
    return `unknown ${owner ? "field" : "argument"}${issue.keys.length === 1 ? "" : "s"} ${keys} (${takes}): remove ${issue.keys.length === 1 ? "it" : "them"}`;
  }
  const value: unknown = issue.path.reduce<unknown>((at, key) => (at !== null && typeof at === "object" ? Reflect.get(at, key) : undefined), given);
  if (value === undefined && issue.code === "invalid_type") {
    return `missing argument ${field}${topField?.description ? ` (${topField.description})` : ""}: add it`;
  }
  const got = `got ${shown(value)}`;
  switch (issue.code) {
    case "invalid_type":
      return `${field} must be ${expected(topField?.type ?? issue.expected)}, ${got}: fix it`;
    case "invalid_value":
      return `${field} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}, ${got}: fix it`;
    case "too_small":
      return issue.origin === "string"
        ? `${field} must be at least ${String(issue.minimum)} character${issue.minimum === 1 ? "" : "s"} long, ${got}: fix it`
        : `${field} must be at least ${String(issue.minimum)}, ${got}: fix it`;
    case "too_big":
      return issue.origin === "string"
        ? `${field} must be at most ${String(issue.maximum)} characters long: shorten it`
        : `${field} must be at most ${String(issue.maximum)}, ${got}: fix it`;
    default:
      return `${field}: ${issue.message}, ${got}: fix it`;
  }
}

/** The advertised object schema at `path` below the tool's fields, with its properties. */
function advertisedAt(fields: Readonly<Record<string, unknown>>, path: readonly PropertyKey[]): { properties: Record<string, unknown> } | undefined {
  let at: unknown = fields[String(path[0])];
  for (const key of path.slice(1)) at = at !== null && typeof at === "object" ? Reflect.get(Reflect.get(at, "properties") ?? {}, String(key)) : undefined;
  const properties: unknown = at !== null && typeof at === "object" ? Reflect.get(at, "properties") : undefined;
  return properties !== null && typeof properties === "object" ? { properties: properties as Record<string, unknown> } : undefined;
}

function advertised(schema: unknown): { type?: string; description?: string } {
  if (schema === null || typeof schema !== "object") return {};
  const type: unknown = Reflect.get(schema, "type");
  const description: unknown = Reflect.get(schema, "description");
  return { ...(typeof type === "string" ? { type } : {}), ...(typeof description === "string" ? { description } : {}) };
}

function expected(type: string): string {
  switch (type) {
    case "integer":
    case "int":
      return "an integer";
    case "number":
      return "a number";
    case "string":
      return "a string";
    case "boolean":
      return "true or false";
    case "object":
      return "an object";
    case "array":
      return "an array";
    default:
      return type;
  }
}

/** The value the agent sent, as JSON, cut short: it is echoed back only to name the mistake. */
function shown(value: unknown): string {
  const text = value === undefined ? "nothing" : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

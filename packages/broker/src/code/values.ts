// The structured values the tools hand a program (ToolResponse.structured), parsed at this boundary so the
// commands read them typed; a tool whose value no longer fits is a bug, reported as internal.
import { z } from "zod";
import { fail } from "./runState.js";

export const tabValue = z.object({ id: z.number(), url: z.string(), title: z.string(), status: z.string(), active: z.boolean(), free: z.boolean().optional() });
export type TabValue = z.infer<typeof tabValue>;

const nodeValue = z.object({
  ref: z.string().optional(),
  role: z.string(),
  name: z.string(),
  value: z.string().optional(),
  level: z.number().optional(),
  states: z.array(z.string()).optional(),
  hidden: z.boolean().optional(),
  offscreen: z.boolean().optional(),
});

export const snapshotValue = z.object({
  tab: z.number(),
  url: z.string(),
  title: z.string(),
  revision: z.string(),
  lines: z.array(z.object({ text: z.string(), refAt: z.number().optional(), node: nodeValue.optional() })),
  total: z.number(),
  offset: z.number(),
  capped: z.boolean(),
});

const matchValue = z.object({
  tag: z.string(),
  role: z.string(),
  name: z.string(),
  text: z.string(),
  attributes: z.record(z.string(), z.string()),
  hidden: z.string().optional(),
  ref: z.string().optional(),
  frame: z.string().optional(),
  states: z.array(z.string()).optional(),
  box: z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() }).optional(),
});
export type MatchValue = z.infer<typeof matchValue>;

export const queryValue = z.object({
  tab: z.number(),
  url: z.string(),
  revision: z.string(),
  total: z.number(),
  offset: z.number(),
  matches: z.array(matchValue),
  withheldFrames: z.number(),
  capped: z.boolean(),
});
export type QueryValue = z.infer<typeof queryValue>;

export const readValue = z.object({
  markdown: z.string(),
  title: z.string(),
  url: z.string(),
  mode: z.string(),
  total: z.number(),
  offset: z.number(),
  nextOffset: z.number().optional(),
});

export const screenshotValue = z.object({
  link: z.string(),
  width: z.number(),
  height: z.number(),
  pageUrl: z.string(),
  capturedAt: z.number(),
  expiresAt: z.number(),
});

export const waitValue = z.object({ matched: z.string(), elapsedMs: z.number(), url: z.string() });

export const actValue = z
  .object({
    done: z.string(),
    navigated: z.string().optional(),
    navigating: z.string().optional(),
    domChanged: z.number().optional(),
    focus: z.string().optional(),
    newTabs: z.array(z.number()).optional(),
    stopped: z.object({ url: z.string(), rule: z.string().optional() }).optional(),
    refsMayBeStale: z.boolean().optional(),
  })
  .strict();

/** A tool's value, as its schema reads it. */
export function valueOf<T>(schema: z.ZodType<T>, value: unknown, tool: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  return fail(
    "internal",
    `tabrelay's ${tool} gave a value code mode cannot read (${parsed.error.issues[0]?.message ?? "no value"}); report it, and use the ${tool} tool meanwhile`,
  );
}

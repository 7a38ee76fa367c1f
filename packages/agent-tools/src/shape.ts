// The one shape both entry points hand out: a tool object the Vercel AI SDK accepts (what `tool()` from `ai` returns:
// it is the identity, and its overloads differ between ai 6 and 7, so the object is written out), its input
// the JSON Schema tools/list advertises, its output what the model reads (the text, structured content, images).
import { jsonSchema, type Tool } from "ai";

/**
 * What one tabrelay tool call gives back: `execute`'s return value (in `generateText`'s `toolResults[].output`).
 * The model reads `text` (an error's text starts with its code and says the next step), then `structuredContent`
 * as JSON where the tool gives it (browser_run), then any images.
 *
 * @example
 * ```ts
 * const { steps } = await generateText({ model, tools: tabrelayTools({ broker }), stopWhen: stepCountIs(5), prompt });
 * for (const r of steps.flatMap((s) => s.toolResults)) {
 *   const out = r.output as TabrelayToolResult;
 *   if (out.isError) console.log(r.toolName, out.code); // e.g. "click write_denied"
 * }
 * ```
 */
export interface TabrelayToolResult {
  /** The result as tabrelay words it for a model; a failure's text starts with its code (`write_denied: ...`). */
  text: string;
  /** The call failed: the model receives `text` as an error result. */
  isError: boolean;
  /** A failed call's code (`stale_ref`, `write_denied`, `budget_exceeded`, ...), for programs that branch on it. */
  code?: string;
  /** browser_run's `{ run, status, value, logs, failedCall?, error?, usage }`. */
  structuredContent?: Record<string, unknown>;
  /** Base64 images a tool returned inline (screenshot, when asked for inline). */
  images?: { data: string; mimeType: string }[];
}

/**
 * A tabrelay tool as the AI SDK takes it.
 *
 * @example
 * ```ts
 * const tools: Record<string, TabrelayTool> = { ...tabrelayTools({ broker }), ...myOwnTools };
 * await streamText({ model, tools, prompt });
 * ```
 */
export type TabrelayTool = Tool<Record<string, unknown>, TabrelayToolResult>;

/**
 * Which tools to hand out: `only` these names, or all but `except` (both may be given: `only`, then less `except`).
 *
 * @example
 * ```ts
 * tabrelayTools({ broker, only: ["browser_run", "browser_api"] }); // code mode alone
 * tabrelayTools({ broker, except: ["screenshot"] });
 * ```
 */
export interface ToolFilter {
  /** Hand out only these tools (names as tools/list shows them: "open_tab", "snapshot", "browser_run", ...). */
  only?: readonly string[];
  /** Hand out every tool but these. */
  except?: readonly string[];
}

/** The tools `filter` keeps, in table order; a name no tool has is an error naming the tools there are. */
export function pick<T extends { name: string }>(tools: readonly T[], filter: ToolFilter): T[] {
  const names = new Set(tools.map((t) => t.name));
  const unknown = [...(filter.only ?? []), ...(filter.except ?? [])].filter((name) => !names.has(name));
  if (unknown.length > 0) {
    throw new Error(
      `@tabrelay/agent-tools: no tabrelay tool is called ${unknown.map((n) => JSON.stringify(n)).join(", ")}; check the spelling in only/except (the tools are: ${[...names].join(", ")})`,
    );
  }
  const only = filter.only ? new Set(filter.only) : undefined;
  const except = new Set(filter.except ?? []);
  return tools.filter((t) => (only ? only.has(t.name) : true) && !except.has(t.name));
}

export interface ToolDefinition {
  name: string;
  title?: string;
  description: string;
  /** The JSON Schema of the tool's arguments, as tools/list advertises it. */
  inputSchema: Record<string, unknown>;
  call(args: Record<string, unknown>, signal: AbortSignal | undefined): Promise<TabrelayToolResult>;
}

/**
 * An AI SDK tool for `def`. The arguments are not validated here: they reach the broker as the model sent them and
 * the tool's strict schema refuses what does not fit with an invalid_params result the model reads (and the audit
 * log records), as over MCP. A failure is returned, not thrown, so the model reads its code and next step as the
 * tool's error result, and the result stays in `toolResults` with its structured content.
 */
export function aiTool(def: ToolDefinition): TabrelayTool {
  const made: TabrelayTool = {
    ...(def.title ? { title: def.title } : {}),
    description: def.description,
    inputSchema: jsonSchema<Record<string, unknown>>(def.inputSchema),
    execute: (args, options) => def.call(args, options.abortSignal),
    toModelOutput: ({ output }) => modelOutput(output),
  };
  return made;
}

type ModelOutput = ReturnType<NonNullable<TabrelayTool["toModelOutput"]>>;

/** What the model reads of a result: the text (as an error when it failed), structured content as JSON, images. */
export function modelOutput(result: TabrelayToolResult): Awaited<ModelOutput> {
  const structured = result.structuredContent ? `structuredContent: ${JSON.stringify(result.structuredContent)}` : undefined;
  if (result.isError) return { type: "error-text", value: structured ? `${result.text}\n${structured}` : result.text };
  const images = result.images ?? [];
  if (!structured && images.length === 0) return { type: "text", value: result.text };
  return {
    type: "content",
    value: [
      { type: "text", text: result.text },
      ...(structured ? [{ type: "text" as const, text: structured }] : []),
      ...images.map((image) => ({ type: "image-data" as const, data: image.data, mediaType: image.mimeType })),
    ],
  };
}

/** A JSON value's plain-object form, for structured content coming back over the wire. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? Object.fromEntries(Object.entries(value)) : undefined;
}

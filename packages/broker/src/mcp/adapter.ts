// The only module that imports the MCP SDK at run time: it turns the tool table into an MCP server over
// Streamable HTTP (web-standard Request -> Response, no socket needed), and hands the session layer
// (mcp/httpSessions.ts) the transport it needs. stdio agents reach it through relay.ts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Tool as ListedTool,
} from "@modelcontextprotocol/sdk/types.js";
import { ERRORS, type ErrorInfo } from "@tabrelay/protocol";
import { z } from "zod";
import { runTool } from "../tools/runner.js";
import { IDEMPOTENCY_FIELD } from "../tools/idempotency.js";
import { checkBroker } from "./brokerProof.js";
import { COMMON_ERRORS, fields, UNTRUSTED_NOTE, type Tool, type ToolContext } from "../tools/tool.js";
import { VERSION } from "../version.js";
import { DEFAULT_PRINCIPAL, DEFAULT_USER_ID, type Principal } from "../users/principal.js";

const codes = (list: readonly string[]) => list.join(", ");

/** A code's short hint where it says more than its next step ("refused: do not retry, tell the user"). */
function extraHint(info: ErrorInfo): string {
  if (info.hint === undefined) return "";
  const words = (text: string) => text.toLowerCase().match(/[a-z_]+/g) ?? [];
  const next = new Set(words(info.next));
  return words(info.hint).some((w) => w !== "refused" && !next.has(w)) ? ` (${info.hint})` : "";
}

/**
 * What every tool has in common, said once here (InitializeResult.instructions) rather than in each description:
 * page content is untrusted, refs and revisions, the tab and browser rules, and every error code with its next
 * step, from the one table (packages/protocol/src/errors.ts). Each description says what is its own.
 */
export function instructions(tools: readonly Tool[]): string {
  // The writes that act on an element; browser_run is a write only through the commands its program calls.
  const writes = tools.filter((t) => t.kind === "write" && "ref" in t.input.shape).map((t) => t.name);
  const codeMode = tools.some((t) => t.name === "browser_run");
  return [
    "tabrelay reads and acts on the web through the user's own browser (their logins and cookies apply). Start with read_url for a one-shot read; open_tab + read_page keep a page open; snapshot or query a tab, then act on elements by ref.",
    `${UNTRUSTED_NOTE} Results fence page text between <page-content nonce=...> markers and quote strings a page wrote as «...» (page text). Reads are limited by the user's read policy, frames included (a refused frame is withheld and counted).`,
    "Tabs: only the agent's own tabs (opened by it or by its pages, or shared by the user) are listed and reachable; a tab argument is a tab id from open_tab or list_tabs. Every tool takes an optional browser: an id or label from list_browsers (default: the newest). A url argument is an absolute http(s) URL.",
    "Refs and revisions: snapshot and query give each actionable element a ref (e3; f12e3 inside a frame) and return a revision; an action takes a ref with its revision. A newer snapshot or query starts a new revision: older refs then fail with stale_ref, as they do once the page navigates or the element re-renders (its role or name changed, or it was removed).",
    `Writes (${codes(writes)}) need the user's write grant for the site and the element's label; the other tools need none. Actions report what changed. Every write (browser_run too) takes an optional ${IDEMPOTENCY_FIELD} (1-200 printable characters, no spaces): a retry with the same key and arguments within 24 h gets the first call's outcome and never acts twice; the same key with other arguments is idempotency_conflict.`,
    "Long results are cut where a marker names the offset to call the tool again with.",
    ...(codeMode
      ? ["Code mode: browser_run runs a program whose browse.* commands are these tools, under the same policy, leases and audit (browser_api gives its API)."]
      : []),
    `Errors: a failed call's text starts with its code. Any tool can fail with ${codes(COMMON_ERRORS.every)}; any that reaches a browser with ${codes(COMMON_ERRORS.browser)}; any taking a tab with ${codes(COMMON_ERRORS.tab)}; any taking a ref with ${codes(COMMON_ERRORS.ref)} (the page or the element's frame); writes with ${codes(COMMON_ERRORS.write)}. Each description names its other codes. What each code means, and the next step:`,
    ...ERRORS.map((e) => `- ${e.code}: ${e.meaning}. Next: ${e.next}${extraHint(e)}.`),
  ].join("\n");
}

const instructionTexts = new WeakMap<readonly Tool[], string>();

/** The instructions of a tool table, built once per table (a stateless host makes a server per request). */
function instructionsOf(tools: readonly Tool[]): string {
  let text = instructionTexts.get(tools);
  if (text === undefined) instructionTexts.set(tools, (text = instructions(tools)));
  return text;
}

/**
 * Tools and prompts that come and go while the broker runs (page tools: pages/tools.ts), each user's own: a user's
 * sessions list, call and hear of changes to theirs alone. With a source, the server says listChanged for tools and
 * prompts and sends both notifications on each change.
 */
export interface DynamicTools {
  /** Listed after the table's tools, each with the JSON Schema it was offered with. */
  listed(user: Principal): Array<Tool & { listedSchema: Record<string, unknown> }>;
  /** A tool of the user's by name, also one not listed now (its call says why it cannot run); another user's is undefined. */
  named(name: string, user: Principal): Tool | undefined;
  prompts(user: Principal): Array<{ name: string; description?: string; arguments?: Array<{ name: string; description?: string; required?: boolean }> }>;
  getPrompt(
    name: string,
    args: Record<string, string>,
    signal: AbortSignal,
    user: Principal,
  ): Promise<{ description?: string; messages: Array<{ role: "user" | "assistant"; content: { type: "text"; text: string } }> }>;
  /** Calls `listener` when what `user`'s agents see changed. */
  onChange(user: Principal, listener: () => void): () => void;
}

/**
 * tools/list and tools/call over the tool table. The SDK's low-level Server is used rather than McpServer because
 * McpServer validates arguments itself, before the call reaches runTool: a bad call then gets the SDK's own text
 * and leaves no audit record. Here the arguments go to runTool as sent, and the tool's strict schema (the one
 * advertised below) refuses what does not fit with invalid_params, audited like any other outcome.
 */
export function createMcpServer(
  ctx: ToolContext,
  tools: readonly Tool[],
  dynamic?: DynamicTools,
  inUse?: InUse,
  user?: Principal,
  knownClient?: string,
): Server {
  const caller = user ?? DEFAULT_PRINCIPAL;
  const capabilities = dynamic ? { tools: { listChanged: true }, prompts: { listChanged: true } } : { tools: {} };
  const server = new Server({ name: "tabrelay", version: VERSION }, { capabilities, instructions: instructionsOf(tools) });
  const listed = listing(tools);
  const byName = new Map(tools.map((t) => [t.name, t]));
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: dynamic ? [...listed, ...dynamic.listed(caller).map(listedDynamic)] : listed }));
  if (dynamic) {
    server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: dynamic.prompts(caller) }));
    server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
      inUse?.begin();
      try {
        return await dynamic.getPrompt(request.params.name, request.params.arguments ?? {}, extra.signal, caller);
      } catch (error) {
        throw new McpError(ErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
      } finally {
        inUse?.end();
      }
    });
    const stop = dynamic.onChange(caller, () => {
      void server.sendToolListChanged().catch(() => {});
      void server.sendPromptListChanged().catch(() => {});
    });
    const closed = server.onclose;
    server.onclose = () => {
      stop();
      closed?.();
    };
  }
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name) ?? dynamic?.named(request.params.name, caller);
    // The session's identity: its tabs are its own (gate/leases.ts) and its records name its client.
    const session = extra.sessionId
      ? { session: extra.sessionId, client: server.getClientVersion()?.name ?? knownClient ?? "unknown client", ...(user ? { user } : {}) }
      : undefined;
    if (!tool) {
      // Recorded, as any refused call: a name no tool of this user's has (another user's page tool as much as a
      // made-up one) is refused alike, in the record as in the answer.
      ctx.audit.record({
        time: Date.now(),
        tool: request.params.name,
        ...(caller.user !== DEFAULT_USER_ID ? { user: caller.name } : {}),
        ...(session ? { client: session.client } : {}),
        target: "unknown tool",
        decision: "refused",
        code: "invalid_params",
        durationMs: 0,
      });
      // A protocol fault, not a tool failure: JSON-RPC's invalid params, as the MCP spec asks for an unknown tool.
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(request.params.name)}; tools/list names the tools`);
    }
    inUse?.begin();
    // A call held for the user's answer (policy.ask) tells a client that asked for progress how long it has waited.
    const token = request.params._meta?.progressToken;
    const progress =
      token === undefined
        ? {}
        : {
            progress: (progress: number, total: number, message: string) =>
              void extra
                .sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total, message } })
                .catch(() => undefined),
          };
    // One more place to ask the user (policy.ask.elicit), where the client takes elicitations (form mode).
    const elicit = server.getClientCapabilities()?.elicitation
      ? {
          elicit: async (message: string, signal: AbortSignal): Promise<"once" | "deny" | undefined> => {
            const answer = await extra.sendRequest(
              {
                method: "elicitation/create",
                params: {
                  message,
                  requestedSchema: {
                    type: "object",
                    properties: {
                      answer: { type: "string", title: "Your answer", enum: ["once", "deny"], description: "once: allow this one action; deny: refuse it" },
                    },
                    required: ["answer"],
                  },
                },
              },
              ElicitResultSchema,
              { signal },
            );
            if (answer.action === "decline") return "deny";
            if (answer.action !== "accept") return undefined;
            const chosen = answer.content?.["answer"];
            return chosen === "once" || chosen === "deny" ? chosen : undefined;
          },
        }
      : {};
    const result = await runTool(tool, ctx, request.params.arguments, extra.signal, session, { ...progress, ...elicit }).finally(() => inUse?.end());
    const images = (result.images ?? []).map((i) => ({ type: "image" as const, data: i.data, mimeType: i.mimeType }));
    return {
      content: [{ type: "text" as const, text: result.text }, ...images],
      ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError,
    };
  });
  return server;
}

/** Told when a call (tools/call, prompts/get) starts and when it ends: a session with one running is in use. */
export interface InUse {
  begin(): void;
  end(): void;
}

/**
 * A page tool as listed: the page's own (cleaned) input schema; never its annotations (a page's readOnlyHint is not
 * trusted), so MCP's defaults hold: not read-only, destructive.
 */
function listedDynamic(tool: Tool & { listedSchema: Record<string, unknown> }): ListedTool {
  return { name: tool.name, description: tool.description, inputSchema: { ...tool.listedSchema, type: "object" as const } };
}

const listings = new WeakMap<readonly Tool[], ListedTool[]>();

/** Fields whose shared description (tools/tool.ts fields) the instructions give once for every tool. */
const SHARED_FIELDS = new Map([
  ["browser", fields.browser.description],
  ["tab", fields.tab.description],
  ["ref", fields.ref.description],
  ["revision", fields.revision.description],
  ["url", fields.url.description],
  ["offset", fields.offset.description],
  [IDEMPOTENCY_FIELD, fields.idempotencyKey.description],
]);

const schemas = new WeakMap<Tool, Record<string, unknown>>();

/**
 * A tool's input schema as agents are shown it (tools/list, and agent-tools' in-process tools): the strict schema
 * runTool parses with, less what says nothing to the model.
 */
export function advertisedInputSchema(tool: Tool): Record<string, unknown> {
  const known = schemas.get(tool);
  if (known) return known;
  // No $schema: the keywords used (type, properties, required, enum, bounds) read the same in draft-07 and in
  // 2020-12, MCP's default dialect.
  const { $schema: _dialect, ...schema }: Record<string, unknown> = z.toJSONSchema(tool.input, {
    target: "draft-7",
    io: "input",
    // An integer's safe range is zod's own bound (a JSON number past it is not exact anyway): not the tool's.
    override: ({ jsonSchema }) => {
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
      // Bounds no real value reaches (an offset of 10^8) tell the model nothing; runTool still enforces them.
      if (typeof jsonSchema.maximum === "number" && jsonSchema.maximum >= 1_000_000) delete jsonSchema.maximum;
      // The schema runTool parses with is strict: an unknown field is invalid_params naming it. Saying
      // additionalProperties: false on every object cost 28 characters a tool in every conversation.
      if (jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
      // A string that must not be empty: said by its description; runTool refuses an empty one.
      if (jsonSchema.minLength === 1) delete jsonSchema.minLength;
      // No count, offset or time is negative: a lower bound of 0 says nothing; runTool still refuses one below it.
      if (jsonSchema.minimum === 0) delete jsonSchema.minimum;
    },
  });
  // No title: it is for people (a client shows the name without one); the model reads name and description.
  // browser, tab, ref, revision, url and a long result's offset mean the same in every tool: said once, in the
  // instructions, not in each schema.
  for (const [field, shared] of SHARED_FIELDS) {
    const property = (schema.properties as Record<string, { description?: string }> | undefined)?.[field];
    if (property && property.description === shared) delete property.description;
  }
  // The key's form is said with its meaning, in the instructions; runTool enforces it.
  const key = (schema.properties as Record<string, { pattern?: string }> | undefined)?.[IDEMPOTENCY_FIELD];
  if (key) delete key.pattern;
  const advertised = { ...schema, type: "object" as const };
  schemas.set(tool, advertised);
  return advertised;
}

/** What tools/list shows, built once per tool table: each input schema is the strict one runTool parses with. */
function listing(tools: readonly Tool[]): ListedTool[] {
  const known = listings.get(tools);
  if (known) return known;
  const listed = tools.map((tool) => {
    const schema = advertisedInputSchema(tool);
    return {
      name: tool.name,
      description: tool.description,
      inputSchema: schema as ListedTool["inputSchema"],
      // MCP's defaults say the rest: readOnlyHint false, destructiveHint true, openWorldHint true. A write is
      // listed with no annotations (destructive by default); a read says readOnlyHint.
      ...(tool.kind === "read" ? { annotations: { readOnlyHint: true } } : {}),
    };
  });
  listings.set(tools, listed);
  return listed;
}

/** The transport of one HTTP session (mcp/httpSessions.ts). */
export type SessionTransport = WebStandardStreamableHTTPServerTransport;

export function sessionTransport(options: ConstructorParameters<typeof WebStandardStreamableHTTPServerTransport>[0]): SessionTransport {
  return new WebStandardStreamableHTTPServerTransport(options);
}

/** The clientInfo.name of an initialize request; undefined for any other body. */
export function initializingClient(body: unknown): string | undefined {
  const init = InitializeRequestSchema.safeParse(body);
  return init.success ? init.data.params.clientInfo.name : undefined;
}

/**
 * Marks a new transport as the one of an initialized session with this id. The SDK (1.x) has no public way to
 * (typescript-sdk #1658): its two private fields are set, and their absence (a changed SDK) fails loudly here, in
 * the cluster's tests, rather than quietly answering "Server not initialized".
 */
export function adoptSession(transport: WebStandardStreamableHTTPServerTransport, sessionId: string): void {
  if (!("_initialized" in transport))
    throw new Error("this MCP SDK's transport cannot take up a session opened elsewhere; pin @modelcontextprotocol/sdk to 1.x");
  Reflect.set(transport, "_initialized", true);
  Reflect.set(transport, "sessionId", sessionId);
}

/** A real SDK client, used by `tabrelay` itself (bench, smoke checks). */
export async function connectHttpClient(mcpUrl: string, token: string): Promise<Client> {
  const url = new URL(new URL(mcpUrl).pathname, await checkBroker(new URL(mcpUrl).origin, token));
  const client = new Client({ name: "tabrelay-cli", version: VERSION });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

/**
 * Stateless Streamable HTTP, for a host with no session registry (the Workers entry, packages/worker): a server and a
 * transport for this one request, no session id, answers as JSON (no SSE stream outlives the request). A GET or DELETE
 * has no session to serve: the transport answers 405. `parsedBody` is the request's JSON, read by the caller (which
 * looks at it to connect the call's browser first).
 */
export async function serveStateless(req: Request, ctx: ToolContext, tools: readonly Tool[], parsedBody: unknown): Promise<Response> {
  const server = createMcpServer(ctx, tools);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(req, parsedBody === undefined ? undefined : { parsedBody });
  } finally {
    await server.close();
  }
}

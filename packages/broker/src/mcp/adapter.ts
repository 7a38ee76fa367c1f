// The only module that imports the MCP SDK at run time: it turns the tool table into an MCP server over
// Streamable HTTP (web-standard Request -> Response, no socket needed). stdio agents reach it through relay.ts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
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
import { endSessionLeases } from "../gate/enforce.js";
import { runTool } from "../tools/runner.js";
import { readLimited } from "../http/body.js";
import { checkBroker } from "./brokerProof.js";
import { COMMON_ERRORS, fields, UNTRUSTED_NOTE, type Tool, type ToolContext } from "../tools/tool.js";
import { VERSION } from "../version.js";

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
    "Tabs: only the agent's own tabs (opened by it or by its pages, or shared by the user) are listed and reachable; a tab argument is a tab id from open_tab or list_tabs. Every tool takes an optional browser: an id or label from list_browsers (default: the newest).",
    "Refs and revisions: snapshot and query give each actionable element a ref (e3; f12e3 inside a frame) and return a revision; an action takes a ref with its revision. A newer snapshot or query starts a new revision: older refs then fail with stale_ref, as they do once the page navigates or the element re-renders (its role or name changed, or it was removed).",
    `Writes (${codes(writes)}) need the user's write grant for the site and the element's label; the other tools need none. Actions report what changed.`,
    "Long results are cut where a marker names the offset to call the tool again with.",
    ...(codeMode ? ["Code mode: browser_run runs a program whose browse.* commands are these tools, under the same policy, leases and audit (browser_api gives its API)."] : []),
    `Errors: a failed call's text starts with its code. Any tool can fail with ${codes(COMMON_ERRORS.every)}; any that reaches a browser with ${codes(COMMON_ERRORS.browser)}; any taking a tab with ${codes(COMMON_ERRORS.tab)}; any taking a ref with ${codes(COMMON_ERRORS.ref)} (the page or the element's frame); writes with ${codes(COMMON_ERRORS.write)}. Each description names its other codes. What each code means, and the next step:`,
    ...ERRORS.map((e) => `- ${e.code}: ${e.meaning}. Next: ${e.next}${extraHint(e)}.`),
  ].join("\n");
}

/**
 * Tools and prompts that come and go while the broker runs (page tools: pages/tools.ts). With a source, the server
 * says listChanged for tools and prompts and sends both notifications on each change.
 */
export interface DynamicTools {
  /** Listed after the table's tools, each with the JSON Schema it was offered with. */
  listed(): Array<Tool & { listedSchema: Record<string, unknown> }>;
  /** A tool by name, also one not listed now (its call says why it cannot run). */
  named(name: string): Tool | undefined;
  prompts(): Array<{ name: string; description?: string; arguments?: Array<{ name: string; description?: string; required?: boolean }> }>;
  getPrompt(name: string, args: Record<string, string>, signal: AbortSignal): Promise<{ description?: string; messages: Array<{ role: "user" | "assistant"; content: { type: "text"; text: string } }> }>;
  onChange(listener: () => void): () => void;
}

/**
 * tools/list and tools/call over the tool table. The SDK's low-level Server is used rather than McpServer because
 * McpServer validates arguments itself, before the call reaches runTool: a bad call then gets the SDK's own text
 * and leaves no audit record. Here the arguments go to runTool as sent, and the tool's strict schema (the one
 * advertised below) refuses what does not fit with invalid_params, audited like any other outcome.
 */
export function createMcpServer(ctx: ToolContext, tools: readonly Tool[], dynamic?: DynamicTools): Server {
  const capabilities = dynamic ? { tools: { listChanged: true }, prompts: { listChanged: true } } : { tools: {} };
  const server = new Server({ name: "tabrelay", version: VERSION }, { capabilities, instructions: instructions(tools) });
  const listed = listing(tools);
  const byName = new Map(tools.map((t) => [t.name, t]));
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: dynamic ? [...listed, ...dynamic.listed().map(listedDynamic)] : listed }));
  if (dynamic) {
    server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: dynamic.prompts() }));
    server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
      try {
        return await dynamic.getPrompt(request.params.name, request.params.arguments ?? {}, extra.signal);
      } catch (error) {
        throw new McpError(ErrorCode.InvalidParams, error instanceof Error ? error.message : String(error));
      }
    });
    const stop = dynamic.onChange(() => {
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
    const tool = byName.get(request.params.name) ?? dynamic?.named(request.params.name);
    // A protocol fault, not a tool failure: JSON-RPC's invalid params, as the MCP spec asks for an unknown tool.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(request.params.name)}; tools/list names the tools`);
    // The session's identity: its tabs are its own (gate/leases.ts) and its records name its client.
    const session = extra.sessionId ? { session: extra.sessionId, client: server.getClientVersion()?.name ?? "unknown client" } : undefined;
    const result = await runTool(tool, ctx, request.params.arguments, extra.signal, session);
    const images = (result.images ?? []).map((i) => ({ type: "image" as const, data: i.data, mimeType: i.mimeType }));
    return {
      content: [{ type: "text" as const, text: result.text }, ...images],
      ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
      isError: result.isError,
    };
  });
  return server;
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
    },
  });
  // No title: it is for people (a client shows the name without one); the model reads name and description.
  // browser and tab mean the same in every tool: said once, in the instructions, not in each schema.
  for (const [field, shared] of SHARED_FIELDS) {
    const property = (schema.properties as Record<string, { description?: string }> | undefined)?.[field];
    if (property && property.description === shared) delete property.description;
  }
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

/** How many HTTP sessions the broker keeps, and for how long an unused one lives. */
export interface SessionLimits {
  /** A session with no call in flight and no open GET stream expires after this long without a request. */
  idleMs: number;
  max: number;
  /** Per client: its clientInfo.name and bearer token. */
  maxPerClient: number;
}

interface HttpSession {
  transport: WebStandardStreamableHTTPServerTransport;
  client: string;
  clientKey: string;
  lastUsed: number;
  /** POSTs still being answered. */
  calls: number;
  /** GET (server-to-client) streams open. */
  streams: number;
}

const INIT_BODY_LIMIT = 4 * 1024 * 1024;

/**
 * Streamable HTTP sessions over web-standard Request -> Response (the SDK's web-standard transport), one MCP
 * server per session, as the SDK expects. Nothing here needs a socket: the door checks ran before, in the HTTP app.
 * A session in use (a call in flight, an open GET stream, or a request within the idle time) is never closed to
 * make room: idle ones expire, and a new session beyond a cap is refused with the cap and what to do.
 */
export class HttpSessions {
  readonly #sessions = new Map<string, HttpSession>();
  readonly #ctx: ToolContext;
  readonly #tools: readonly Tool[];
  readonly #limits: SessionLimits;
  #closingAll = false;

  readonly #dynamic: DynamicTools | undefined;

  constructor(ctx: ToolContext, tools: readonly Tool[], limits: SessionLimits = { idleMs: 30 * 60_000, max: 64, maxPerClient: 16 }, dynamic?: DynamicTools) {
    this.#ctx = ctx;
    this.#tools = tools;
    this.#limits = limits;
    this.#dynamic = dynamic;
  }

  /** Open sessions, once the idle ones expired. */
  get size(): number {
    this.#expireIdle();
    return this.#sessions.size;
  }

  async handle(req: Request): Promise<Response> {
    this.#expireIdle();
    const sessionId = req.headers.get("mcp-session-id");
    const existing = sessionId ? this.#sessions.get(sessionId) : undefined;
    if (existing) return this.#use(existing, req);
    if (sessionId) return jsonRpcError(404, "Session not found: it expired or the broker restarted; initialize a new session");
    if (req.method !== "POST") return jsonRpcError(400, "No session: send an initialize request first (POST /mcp)");
    const raw = await readLimited(req, INIT_BODY_LIMIT);
    if (raw === undefined) return jsonRpcError(413, `the request is over ${INIT_BODY_LIMIT / 1024 / 1024} MB; send a smaller one`);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return jsonRpcError(400, "Parse error: the body is not JSON; send an initialize request first (POST /mcp)", -32700);
    }
    const init = InitializeRequestSchema.safeParse(body);
    if (!init.success) return jsonRpcError(400, "No session: send an initialize request first (POST /mcp), without an Mcp-Session-Id header");
    const id = typeof body === "object" && body !== null ? Reflect.get(body, "id") : undefined;
    const requestId = typeof id === "string" || typeof id === "number" ? id : null;
    const client = init.data.params.clientInfo.name;
    const clientKey = `${req.headers.get("authorization") ?? ""}\n${client}`;
    const refusal = this.#admit(client, clientKey);
    if (refusal) return jsonRpcError(refusal.status, refusal.message, -32000, requestId);
    const session: HttpSession = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => {
          this.#sessions.set(sid, session);
        },
      }),
      client,
      clientKey,
      lastUsed: Date.now(),
      calls: 0,
      streams: 0,
    };
    session.transport.onclose = () => {
      const sid = session.transport.sessionId;
      if (sid && this.#sessions.get(sid) === session) this.#sessions.delete(sid);
      // The session ended (DELETE /mcp, or expired): its leases end and the tabs it opened close. A broker
      // shutting down leaves them open: the agents did not end their sessions.
      if (sid && !this.#closingAll) endSessionLeases(this.#ctx, sid);
    };
    const server = createMcpServer(this.#ctx, this.#tools, this.#dynamic);
    await server.connect(session.transport);
    return this.#use(session, req, body);
  }

  /** Closes every session (their streams end; a call still running is aborted and its answer is lost). */
  async closeAll(): Promise<void> {
    this.#closingAll = true;
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  /** Idle sessions first make room; a session in use never does. */
  #admit(client: string, clientKey: string): { status: 429 | 503; message: string } | undefined {
    const idleMinutes = formatMinutes(this.#limits.idleMs);
    const mine = [...this.#sessions.values()].filter((s) => s.clientKey === clientKey).length;
    if (mine >= this.#limits.maxPerClient) {
      return {
        status: 429,
        message:
          `tabrelay: client ${JSON.stringify(client)} already has ${mine} open MCP sessions, the most one client may have (mcp.max_sessions_per_client = ${this.#limits.maxPerClient}). ` +
          `Close the sessions it no longer uses (DELETE /mcp with their Mcp-Session-Id header; an SDK client: transport.terminateSession()), or wait: a session unused for ${idleMinutes} (mcp.session_idle_minutes) expires`,
      };
    }
    if (this.#sessions.size >= this.#limits.max) {
      return {
        status: 503,
        message:
          `tabrelay: the broker already has ${this.#sessions.size} open MCP sessions (mcp.max_sessions = ${this.#limits.max}), all in use within the last ${idleMinutes}; none was closed to make room. ` +
          `Close the sessions no longer used (DELETE /mcp with their Mcp-Session-Id header), retry once idle ones expire (mcp.session_idle_minutes), or raise mcp.max_sessions`,
      };
    }
    return undefined;
  }

  #expireIdle(): void {
    const cutoff = Date.now() - this.#limits.idleMs;
    for (const [sid, s] of this.#sessions) {
      if (s.calls === 0 && s.streams === 0 && s.lastUsed < cutoff) {
        this.#sessions.delete(sid);
        void s.transport.close();
      }
    }
  }

  /** Hands the request to the session's transport, counting it in use until its response ends. */
  async #use(session: HttpSession, req: Request, parsedBody?: unknown): Promise<Response> {
    session.lastUsed = Date.now();
    const kind = req.method === "GET" ? "streams" : "calls";
    session[kind]++;
    let response: Response;
    try {
      response = await session.transport.handleRequest(req, parsedBody === undefined ? undefined : { parsedBody });
    } catch (error) {
      session[kind]--;
      throw error;
    }
    return whenBodyEnds(response, () => {
      session[kind]--;
      session.lastUsed = Date.now();
    });
  }
}

/** The same response, calling `done` once its body was read to the end or cancelled (the client went away). */
function whenBodyEnds(response: Response, done: () => void): Response {
  const source = response.body;
  if (!source) {
    done();
    return response;
  }
  let finished = false;
  const finish = () => {
    if (!finished) {
      finished = true;
      done();
    }
  };
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

function formatMinutes(ms: number): string {
  const minutes = ms / 60_000;
  return minutes >= 1 && Number.isInteger(minutes) ? `${minutes} minute${minutes === 1 ? "" : "s"}` : `${Math.round(ms / 1000)} s`;
}

function jsonRpcError(status: number, message: string, code = -32000, id: string | number | null = null): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }), { status, headers: { "Content-Type": "application/json" } });
}

/** A real SDK client, used by `tabrelay` itself (bench, smoke checks). */
export async function connectHttpClient(mcpUrl: string, token: string): Promise<Client> {
  const url = new URL(new URL(mcpUrl).pathname, await checkBroker(new URL(mcpUrl).origin, token));
  const client = new Client({ name: "tabrelay-cli", version: VERSION });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

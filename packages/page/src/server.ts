import { createTransport, type Backoff, type CreateSocket, type DropInfo, type Transport } from "./transport.js";
import {
  JSONRPC,
  PAGE_MCP_VERSIONS,
  PAGE_TOKEN_PROTOCOL_PREFIX,
  type CallToolResult,
  type ContentBlock,
  type GetPromptResult,
  type ImplementationInfo,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonSchema,
  type PageMcpPrompt,
  type PageToolInfo,
  type PromptArgument,
  type ToolAnnotations,
} from "./wire.js";

/** What a tool's handler is given beside its arguments. */
export interface ToolCallContext {
  /** Aborted when the agent cancels the call or the connection to the broker drops. */
  signal: AbortSignal;
  requestId: JsonRpcId;
}

/**
 * One tool the page offers. The handler's return value becomes the result: a string is its text; a value with
 * an `outputSchema` is its `structuredContent` (and its JSON text); any other value is its JSON text; a full MCP
 * result (`{ content: [...] }`) is passed on as it is. A thrown error becomes an `isError` result with its message.
 *
 * @example
 * server.registerTool({
 *   name: "search_orders",
 *   description: "Searches the signed-in user's orders by product name.",
 *   inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
 *   handler: async ({ q }, { signal }) => (await fetch(`/api/orders?q=${encodeURIComponent(String(q))}`, { signal })).json(),
 * });
 */
export interface ToolDefinition<Args extends Record<string, unknown> = Record<string, unknown>> {
  /** 1-128 characters of `[A-Za-z0-9_.-]` (tabrelay shortens and namespaces it by your origin for agents). */
  name: string;
  title?: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
  handler(args: Args, context: ToolCallContext): unknown;
}

/**
 * One prompt the page offers: fixed text, or text made from the agent's arguments.
 *
 * @example
 * server.registerPrompt({ name: "weekly_report", description: "Drafts this week's sales report.", content: "Summarise the orders of the last 7 days by region." });
 */
export interface PromptDefinition {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
  content: string | ((args: Record<string, string>) => string | Promise<string>);
}

export type ServerState = "idle" | "connecting" | "open" | "closed";

export interface ServerOptions {
  /** The broker's page endpoint, e.g. `ws://127.0.0.1:8765/page` (`wss://` for a broker elsewhere). */
  endpoint: string;
  serverInfo: ImplementationInfo;
  /** Told to the agent in the initialize result. */
  instructions?: string;
  /** A page token (from `POST /page-tokens` or `tabrelay page-token`), or a function fetching a fresh one per connect. Ignored with `createSocket`. */
  token?: string | (() => string | Promise<string>);
  /** Full control of each (re)connect's socket; called every time. */
  createSocket?: CreateSocket;
  backoff?: Backoff;
  onStateChange?(state: ServerState, info?: DropInfo): void;
  /** tabrelay refused part of what the page offers (over a cap, a bad schema): one line each. Default: console.warn. */
  onRefused?(lines: string[]): void;
}

/** A page's MCP server, connected out to tabrelay. */
export interface PageServer {
  /** Adds a tool; returns the function that removes it. A name already registered throws. */
  registerTool<Args extends Record<string, unknown> = Record<string, unknown>>(tool: ToolDefinition<Args>): () => void;
  /** Adds a prompt; returns the function that removes it. */
  registerPrompt(prompt: PromptDefinition): () => void;
  /** Starts dialling the broker (and again after each drop); resolves when the socket is first open. */
  connect(): Promise<void>;
  /** Disconnects for good, aborting calls in flight. */
  close(): void;
  readonly state: ServerState;
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Creates the page's MCP server. Registrations made before or after `connect()` survive reconnects.
 *
 * @example
 * import { createServer } from "@tabrelay/page";
 * const server = createServer({ endpoint: "ws://127.0.0.1:8765/page", serverInfo: { name: "shop", version: "1.0.0" }, token: () => fetchToken() });
 * server.registerTool({ name: "cart_total", description: "The cart's total in euros.", inputSchema: { type: "object" }, handler: () => cart.total() });
 * await server.connect();
 */
export function createServer(options: ServerOptions): PageServer {
  const tools = new Map<string, ToolDefinition>();
  const prompts = new Map<string, PromptDefinition>();
  const inFlight = new Map<JsonRpcId, AbortController>();
  let state: ServerState = "idle";
  let initialized = false;
  let pending: { tools: boolean; prompts: boolean } | undefined;
  let opened: (() => void) | undefined;
  const firstOpen = new Promise<void>((resolve) => (opened = resolve));

  const setState = (next: ServerState, info?: DropInfo): void => {
    state = next;
    options.onStateChange?.(next, info);
  };
  const send = (message: JsonRpcMessage): void => {
    transport.send(JSON.stringify(message));
  };
  const reply = (id: JsonRpcId, result: unknown): void => send({ jsonrpc: "2.0", id, result });
  const replyError = (id: JsonRpcId | null, code: number, message: string): void => send({ jsonrpc: "2.0", id, error: { code, message } });

  const changed = (kind: "tools" | "prompts"): void => {
    if (!initialized) return;
    if (pending) {
      pending[kind] = true;
      return;
    }
    pending = { tools: kind === "tools", prompts: kind === "prompts" };
    queueMicrotask(() => {
      const due = pending;
      pending = undefined;
      if (!due || !initialized) return;
      if (due.tools) send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
      if (due.prompts) send({ jsonrpc: "2.0", method: "notifications/prompts/list_changed" });
    });
  };

  const abortAll = (reason: string): void => {
    for (const controller of inFlight.values()) controller.abort(new Error(reason));
    inFlight.clear();
  };

  const transport: Transport = createTransport({
    endpoint: options.endpoint,
    createSocket: options.createSocket ?? tokenSocket(options.token),
    backoff: options.backoff,
    onOpen() {
      setState("open");
      opened?.();
    },
    onDrop(info) {
      initialized = false;
      abortAll("the connection to tabrelay dropped");
      setState("connecting", info);
    },
    onMessage(text) {
      void handle(text);
    },
  });

  async function handle(text: string): Promise<void> {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      replyError(null, JSONRPC.parseError, "Parse error: not JSON");
      return;
    }
    if (!isObject(message) || message.jsonrpc !== "2.0" || Array.isArray(message)) {
      replyError(null, JSONRPC.invalidRequest, "Invalid Request: one JSON-RPC 2.0 message per frame");
      return;
    }
    const { id, method, params } = message as { id?: JsonRpcId; method?: unknown; params?: unknown };
    if (typeof method !== "string") return; // a response: this server sends no requests
    if (id === undefined || id === null) {
      notified(method, params);
      return;
    }
    if (typeof id !== "string" && typeof id !== "number") {
      replyError(null, JSONRPC.invalidRequest, "Invalid Request: id must be a string or a number");
      return;
    }
    try {
      const result = await answer(id, method, isObject(params) ? params : {});
      if (result !== CANCELLED) reply(id, result);
    } catch (error) {
      if (error instanceof RpcError) replyError(id, error.code, error.message);
      else replyError(id, JSONRPC.internalError, messageOf(error));
    }
  }

  function notified(method: string, params: unknown): void {
    if (method === "notifications/initialized") initialized = true;
    if (method === "notifications/tabrelay/refused" && isObject(params) && Array.isArray(params.refused)) {
      const lines = params.refused.map(String);
      if (options.onRefused) options.onRefused(lines);
      else console.warn(`@tabrelay/page: tabrelay refused ${lines.join("; ")}`);
    }
    if (method === "notifications/cancelled" && isObject(params)) {
      const requestId = params.requestId as JsonRpcId;
      const controller = inFlight.get(requestId);
      if (controller) {
        inFlight.delete(requestId);
        controller.abort(new Error(typeof params.reason === "string" ? params.reason : "cancelled by the client"));
      }
    }
  }

  async function answer(id: JsonRpcId, method: string, params: Record<string, unknown>): Promise<unknown> {
    switch (method) {
      case "initialize": {
        const asked = params.protocolVersion;
        const protocolVersion = (PAGE_MCP_VERSIONS as readonly unknown[]).includes(asked) ? (asked as string) : PAGE_MCP_VERSIONS[0];
        initialized = true; // list changes from here on; a client that never sends initialized still hears them
        return {
          protocolVersion,
          capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } },
          serverInfo: options.serverInfo,
          ...(options.instructions ? { instructions: options.instructions } : {}),
        };
      }
      case "ping":
        return {};
      case "tools/list":
        return { tools: [...tools.values()].map(toolInfo) };
      case "tools/call":
        return callTool(id, params);
      case "prompts/list":
        return { prompts: [...prompts.values()].map(promptInfo) };
      case "prompts/get":
        return getPrompt(params);
      default:
        throw new RpcError(JSONRPC.methodNotFound, `Method not found: ${method}`);
    }
  }

  async function callTool(id: JsonRpcId, params: Record<string, unknown>): Promise<CallToolResult | typeof CANCELLED> {
    const name = params.name;
    const tool = typeof name === "string" ? tools.get(name) : undefined;
    if (!tool) throw new RpcError(JSONRPC.invalidParams, `Unknown tool: ${String(name)}`);
    const args = params.arguments === undefined ? {} : params.arguments;
    if (!isObject(args)) throw new RpcError(JSONRPC.invalidParams, "arguments must be an object");
    const controller = new AbortController();
    inFlight.set(id, controller);
    try {
      const value = await tool.handler(args, { signal: controller.signal, requestId: id });
      if (controller.signal.aborted) return CANCELLED;
      return resultOf(value, tool.outputSchema !== undefined);
    } catch (error) {
      if (controller.signal.aborted) return CANCELLED;
      return { content: [{ type: "text", text: messageOf(error) }], isError: true };
    } finally {
      if (inFlight.get(id) === controller) inFlight.delete(id);
    }
  }

  async function getPrompt(params: Record<string, unknown>): Promise<GetPromptResult> {
    const prompt = typeof params.name === "string" ? prompts.get(params.name) : undefined;
    if (!prompt) throw new RpcError(JSONRPC.invalidParams, `Unknown prompt: ${String(params.name)}`);
    const args = isObject(params.arguments) ? (params.arguments as Record<string, string>) : {};
    for (const arg of prompt.arguments ?? []) {
      if (arg.required && typeof args[arg.name] !== "string") throw new RpcError(JSONRPC.invalidParams, `Missing required argument: ${arg.name}`);
    }
    const text = typeof prompt.content === "string" ? prompt.content : await prompt.content(args);
    return { ...(prompt.description ? { description: prompt.description } : {}), messages: [{ role: "user", content: { type: "text", text } }] };
  }

  return {
    registerTool(tool) {
      checkTool(tool);
      if (tools.has(tool.name)) throw new Error(`@tabrelay/page: a tool named "${tool.name}" is already registered; unregister it first`);
      const entry = tool as unknown as ToolDefinition;
      tools.set(tool.name, entry);
      changed("tools");
      return () => {
        if (tools.get(tool.name) !== entry) return;
        tools.delete(tool.name);
        changed("tools");
      };
    },
    registerPrompt(prompt) {
      if (typeof prompt.name !== "string" || !TOOL_NAME.test(prompt.name))
        throw new Error(`@tabrelay/page: a prompt name is 1-128 characters of A-Z a-z 0-9 _ . - (got ${JSON.stringify(prompt.name)})`);
      if (prompts.has(prompt.name)) throw new Error(`@tabrelay/page: a prompt named "${prompt.name}" is already registered; unregister it first`);
      prompts.set(prompt.name, prompt);
      changed("prompts");
      return () => {
        if (prompts.get(prompt.name) !== prompt) return;
        prompts.delete(prompt.name);
        changed("prompts");
      };
    },
    connect() {
      if (state === "idle") {
        setState("connecting");
        transport.start();
      }
      return firstOpen;
    },
    close() {
      initialized = false;
      abortAll("the page closed its tabrelay server");
      transport.close();
      setState("closed");
    },
    get state() {
      return state;
    },
  };
}

const CANCELLED = Symbol("cancelled");

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function tokenSocket(token: ServerOptions["token"]): CreateSocket | undefined {
  if (token === undefined) return undefined;
  return async ({ endpoint }) => {
    const value = typeof token === "function" ? await token() : token;
    return new WebSocket(endpoint, [PAGE_TOKEN_PROTOCOL_PREFIX + value]);
  };
}

function checkTool(tool: ToolDefinition): void {
  if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name))
    throw new Error(`@tabrelay/page: a tool name is 1-128 characters of A-Z a-z 0-9 _ . - (got ${JSON.stringify(tool.name)})`);
  if (typeof tool.description !== "string") throw new Error(`@tabrelay/page: tool "${tool.name}" needs a description (a string)`);
  if (!isObject(tool.inputSchema) || tool.inputSchema.type !== "object")
    throw new Error(`@tabrelay/page: tool "${tool.name}" needs an inputSchema of type "object"`);
  if (tool.outputSchema !== undefined && (!isObject(tool.outputSchema) || tool.outputSchema.type !== "object"))
    throw new Error(`@tabrelay/page: tool "${tool.name}": an outputSchema is of type "object"`);
  if (typeof tool.handler !== "function") throw new Error(`@tabrelay/page: tool "${tool.name}" needs a handler function`);
}

function toolInfo(tool: ToolDefinition): PageToolInfo {
  const { name, title, description, inputSchema, outputSchema, annotations, _meta } = tool;
  return {
    name,
    ...(title ? { title } : {}),
    description,
    inputSchema,
    ...(outputSchema ? { outputSchema } : {}),
    ...(annotations ? { annotations } : {}),
    ...(_meta ? { _meta } : {}),
  };
}

function promptInfo(prompt: PromptDefinition): PageMcpPrompt {
  const { name, title, description } = prompt;
  return { name, ...(title ? { title } : {}), ...(description ? { description } : {}), ...(prompt.arguments ? { arguments: prompt.arguments } : {}) };
}

function resultOf(value: unknown, structured: boolean): CallToolResult {
  if (isCallToolResult(value)) return value;
  if (typeof value === "string" && !structured) return { content: [{ type: "text", text: value }] };
  if (value === undefined && !structured) return { content: [] };
  if (structured && (!isObject(value) || Array.isArray(value))) {
    return { content: [{ type: "text", text: "the tool has an outputSchema, so its handler must return an object (its structuredContent)" }], isError: true };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return { content: [{ type: "text", text: `the tool's result is not JSON: ${messageOf(error)}` }], isError: true };
  }
  const content: ContentBlock[] = [{ type: "text", text: text ?? "null" }];
  return structured ? { content, structuredContent: value as Record<string, unknown> } : { content };
}

function isCallToolResult(value: unknown): value is CallToolResult {
  return isObject(value) && Array.isArray(value.content) && value.content.every((block) => isObject(block) && typeof block.type === "string");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

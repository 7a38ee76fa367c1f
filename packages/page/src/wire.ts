/**
 * Wire types between tabrelay's broker and a page that offers its own MCP tools (page tools, over the broker's
 * `/page` WebSocket). They live here, not in @tabrelay/protocol, so that this package has no dependency at all;
 * the broker imports them from `@tabrelay/page/wire`. On that socket the page is the MCP server and the broker its
 * client: JSON-RPC 2.0 messages, one per text frame, in the subset of MCP that page tools need (lifecycle, ping,
 * tools, prompts, cancellation, list changes). This package implements the server side; the broker the client.
 *
 * @example
 * // broker -> page
 * const call: JsonRpcRequest<"tools/call"> = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "search_orders", arguments: { q: "shoes" } } };
 * // page -> broker
 * const reply: JsonRpcResponse<CallToolResult> = { jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text: "2 orders" }] } };
 */

/** MCP protocol versions a page server speaks, newest first. `initialize` echoes the client's when it is one of these, else answers with the first. */
export const PAGE_MCP_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;
export type PageMcpVersion = (typeof PAGE_MCP_VERSIONS)[number];

/** Prefix of the one WebSocket subprotocol that carries the page token: `bearer.<token>` (the broker echoes it back). Never a query string. */
export const PAGE_TOKEN_PROTOCOL_PREFIX = "bearer.";

export type JsonRpcId = string | number;

/** JSON-RPC 2.0 error codes the page server answers with. */
export const JSONRPC = { parseError: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internalError: -32603 } as const;

export interface ImplementationInfo {
  name: string;
  version: string;
  title?: string;
}

export interface InitializeParams {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  clientInfo: ImplementationInfo;
}

export interface InitializeResult {
  protocolVersion: string;
  capabilities: { tools?: { listChanged?: boolean }; prompts?: { listChanged?: boolean } };
  serverInfo: ImplementationInfo;
  instructions?: string;
}

/** A JSON Schema object (the page's own; the broker treats every word of it as page content). */
export type JsonSchema = { type: "object"; properties?: Record<string, unknown>; required?: string[]; [key: string]: unknown };

export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface PageToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
}

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name: string; mimeType?: string; description?: string };

export interface CallToolParams {
  name: string;
  arguments?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface PromptArgument {
  name: string;
  description?: string;
  required?: boolean;
}

export interface PageMcpPrompt {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
}

export interface PromptMessage {
  role: "user" | "assistant";
  content: { type: "text"; text: string };
}

export interface GetPromptResult {
  description?: string;
  messages: PromptMessage[];
}

/** What each method takes and answers (requests), or takes (notifications: no result). */
export interface PageMcpMethods {
  initialize: { params: InitializeParams; result: InitializeResult };
  ping: { params: Record<string, never> | undefined; result: Record<string, never> };
  "tools/list": { params: { cursor?: string } | undefined; result: { tools: PageToolInfo[]; nextCursor?: string } };
  "tools/call": { params: CallToolParams; result: CallToolResult };
  "prompts/list": { params: { cursor?: string } | undefined; result: { prompts: PageMcpPrompt[]; nextCursor?: string } };
  "prompts/get": { params: { name: string; arguments?: Record<string, string> }; result: GetPromptResult };
}

export interface PageMcpNotifications {
  "notifications/initialized": Record<string, never> | undefined;
  "notifications/cancelled": { requestId: JsonRpcId; reason?: string };
  "notifications/tools/list_changed": Record<string, never> | undefined;
  "notifications/prompts/list_changed": Record<string, never> | undefined;
}

export type PageMcpMethod = keyof PageMcpMethods;

export interface JsonRpcRequest<M extends PageMcpMethod = PageMcpMethod> {
  jsonrpc: "2.0";
  id: JsonRpcId;
  method: M;
  params?: PageMcpMethods[M]["params"];
}

export interface JsonRpcNotification<M extends keyof PageMcpNotifications = keyof PageMcpNotifications> {
  jsonrpc: "2.0";
  method: M;
  params?: PageMcpNotifications[M];
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type JsonRpcResponse<R = unknown> = { jsonrpc: "2.0"; id: JsonRpcId; result: R } | { jsonrpc: "2.0"; id: JsonRpcId | null; error: JsonRpcErrorObject };

export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/**
 * `@tabrelay/page`: a web app offers its own MCP tools and prompts to AI agents through tabrelay. The page is the
 * MCP server; it dials tabrelay's `/page` WebSocket (with a short-lived page token) and the broker offers its
 * tools to agents, namespaced by the page's origin and under the user's policy (a call needs a grant).
 *
 * Entry points: this one (the high-level server), `@tabrelay/page/transport` (the reconnecting WebSocket) and
 * `@tabrelay/page/wire` (the JSON-RPC / MCP types on the socket). No runtime dependencies.
 *
 * @example
 * import { createServer } from "@tabrelay/page";
 * const server = createServer({
 *   endpoint: "ws://127.0.0.1:8765/page",
 *   serverInfo: { name: "orders", version: "1.0.0" },
 *   token: async () => (await (await fetch("/api/tabrelay-token")).json()).token,
 * });
 * server.registerTool({
 *   name: "search_orders",
 *   description: "Searches the signed-in user's orders.",
 *   inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
 *   handler: async ({ q }) => (await fetch("/api/orders?q=" + encodeURIComponent(String(q)))).json(),
 * });
 * await server.connect();
 */
export {
  createServer,
  type PageServer,
  type PromptDefinition,
  type ServerOptions,
  type ServerState,
  type ToolCallContext,
  type ToolDefinition,
} from "./server.js";
export type { Backoff, CreateSocket, DropInfo, SocketLike, SocketRequest } from "./transport.js";
export type { CallToolResult, ContentBlock, JsonSchema, ToolAnnotations } from "./wire.js";

// The broker's Node HTTP server: its routes (the app's fetch) on Node's http module through @hono/node-server, the
// POSTs to /mcp counted while they are answered (answering.ts), whole JSON answers in one write (wholeAnswer.ts),
// keep-alive longer than a load balancer's, and the WebSocket upgrades handed to the broker by path.
import { createServer, ServerResponse, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import type { Answering } from "./answering.js";
import { sendWhole } from "./wholeAnswer.js";

/** What @hono/node-server hands the routes beside the request (the Node request and response). */
export type NodeBindings = Parameters<Parameters<typeof getRequestListener>[0]>[1];

export interface NodeServerParts {
  /** The routes (the broker's Hono app). */
  fetch: (request: Request, env: NodeBindings) => Response | Promise<Response>;
  answering: Answering;
  /** A WebSocket upgrade to `path` (its query left out): the broker accepts it or ends the socket. */
  upgrade(path: string, req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export function createNodeServer(parts: NodeServerParts): Server {
  // A request without a Host header still reaches the routes (and /mcp's Host check refuses it).
  const listener = getRequestListener(
    async (req, env) => sendWhole(await parts.fetch(req, env), env.outgoing instanceof ServerResponse ? env.outgoing : undefined),
    { overrideGlobalObjects: false, hostname: "host.invalid" },
  );
  const server = createServer((req, res) => {
    if (req.method === "POST" && pathOf(req) === "/mcp") parts.answering.track(res);
    void listener(req, res);
  });
  // Behind a load balancer that keeps idle connections to the broker (nginx 60 s, most cloud ones 60 s), the broker
  // keeps them longer, so it never closes one the balancer is about to reuse (a 502 for that request).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => parts.upgrade(pathOf(req), req, socket, head));
  return server;
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

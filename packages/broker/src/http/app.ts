// The broker's HTTP surface, every route declared once, over hono's fetch core: web-standard Request -> Response
// throughout (/mcp too, on the MCP SDK's web-standard transport), so a test calls app.request(...) without a socket
// and the same app can later run on a Workers-style runtime. The door checks (Host, Origin, bearer token; the
// dashboard's own) run on the headers alone, before any body is read. The only Node object a route looks at is the
// peer address @hono/node-server's bindings carry (the dashboard's login throttle), and it does without one.
// WebSockets (/bridge) are not served here: they stay on the node server's 'upgrade' event.
import type { HttpBindings } from "@hono/node-server";
import { Hono, type Context } from "hono";
import type { Dashboard } from "../dashboard/dashboard.js";
import { answerProof } from "../mcp/brokerProof.js";
import type { Logger } from "../util/log.js";

/** A door check's refusal: 403 (Host or Origin) or 401 (bearer token). */
export interface Refusal {
  status: 401 | 403;
  message: string;
}

/** What the routes need from the broker. */
export interface HttpSurface {
  /** DNS rebinding (Host), cross-site pages (Origin), then the bearer token: from the headers alone. */
  guard(headers: Headers): Refusal | undefined;
  /** The /health body, already redacted. */
  health(): unknown;
  /** The MCP token the /auth/proof answer is derived from. */
  mcpToken: string;
  /** POST /browsers, guarded by the broker itself (its refusals are JSON). */
  registerBrowser(req: Request): Promise<Response>;
  /** Code mode's browse API (GET /api.d.ts, /api.md), behind the same door checks as /mcp. */
  apiDocs(): { declarations: string; guide: string };
  /** POST /page-tokens: a page token for one origin (page tools), after the door checks passed; absent without pages. */
  pageTokens?: ((req: Request) => Promise<Response>) | undefined;
  /** Streamable HTTP MCP (sessions, SSE streams, DELETE), after the door checks passed. */
  mcp(req: Request): Promise<Response>;
  /** The local screenshot store's handler (undefined for a path it does not serve), when screenshots are stored locally. */
  screenshots?: ((req: Request) => Promise<Response> | undefined) | undefined;
  dashboard: Dashboard;
  log: Logger;
}

/** The bindings @hono/node-server passes; absent when the app is called through its fetch core alone. */
type Env = { Bindings: Partial<HttpBindings> };

/** The broker's routes; `app.request(url, init)` calls them without a socket. */
export type HttpApp = Hono<Env>;

const TEXT = { "Content-Type": "text/plain; charset=utf-8" } as const;

export function createHttpApp(surface: HttpSurface): HttpApp {
  const app = new Hono<Env>();

  app.get("/health", () => json(200, surface.health()));

  if (surface.screenshots) {
    const screenshots = surface.screenshots;
    app.all("/shots/*", async (c, next) => (await screenshots(c.req.raw)) ?? next());
  }

  const refused = (headers: Headers): Response | undefined => {
    const refusal = surface.guard(headers);
    if (!refusal) return undefined;
    return new Response(`${refusal.message}\n`, {
      status: refusal.status,
      headers: { ...TEXT, ...(refusal.status === 401 ? { "WWW-Authenticate": 'Bearer realm="tabrelay"' } : {}) },
    });
  };

  app.all("/mcp", async (c) => refused(c.req.raw.headers) ?? surface.mcp(c.req.raw));

  app.get("/api.d.ts", (c) => refused(c.req.raw.headers) ?? new Response(surface.apiDocs().declarations, { headers: { "Content-Type": "application/typescript; charset=utf-8", "Cache-Control": "no-store" } }));
  app.get("/api.md", (c) => refused(c.req.raw.headers) ?? new Response(surface.apiDocs().guide, { headers: { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "no-store" } }));

  app.post("/browsers", (c) => surface.registerBrowser(c.req.raw));
  app.post("/page-tokens", (c) => {
    const pageTokens = surface.pageTokens;
    if (!pageTokens) return refused(c.req.raw.headers) ?? json(404, { error: "page tools are off: config.yaml names no pages.allowed_origins" });
    return refused(c.req.raw.headers) ?? pageTokens(c.req.raw);
  });
  app.post("/auth/proof", (c) => answerProof(c.req.raw, surface.mcpToken, c.env?.incoming?.socket));

  const dashboard = async (c: Context<Env>) => {
    const peer = { remoteAddress: c.env?.incoming?.socket.remoteAddress ?? "unknown" };
    return (await surface.dashboard.handle(c.req.raw, peer)) ?? notFound();
  };
  for (const path of ["/", "/login", "/logout", "/dashboard/*"]) app.all(path, dashboard);

  app.notFound(() => notFound());
  app.onError((error, c) => {
    surface.log.error(`http: ${c.req.method} ${c.req.path} failed: ${errorText(error)}`);
    return new Response("internal error\n", { status: 500, headers: TEXT });
  });
  return app;
}

function json(status: number, value: unknown): Response {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
}

function notFound(): Response {
  return new Response("not found\n", { status: 404, headers: TEXT });
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

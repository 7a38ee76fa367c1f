// The broker's HTTP surface, every route declared once, over hono's fetch core: web-standard Request -> Response
// throughout (/mcp too, on the MCP SDK's web-standard transport), so a test calls app.request(...) without a socket
// and the same app can later run on a Workers-style runtime. The door checks (Host, Origin, bearer token; the
// dashboard's own) run on the headers alone, before any body is read. The only Node object a route looks at is the
// peer address @hono/node-server's bindings carry (the dashboard's login throttle), and it does without one.
// WebSockets (/bridge) are not served here: they stay on the node server's 'upgrade' event.
import type { HttpBindings } from "@hono/node-server";
import { Hono, type Context } from "hono";
import type { Dashboard } from "./dashboard/dashboard.js";
import { challengeHeader, type Admission, type Refusal, type ResourceMetadata } from "./http/admission.js";
import { answerProof } from "./mcp/brokerProof.js";
import type { Logger } from "./util/log.js";
import type { Principal } from "./users/principal.js";
import { noSuchScreenshot, shotOwner } from "./screenshots/link.js";

/** What the routes need from the broker. */
export interface HttpSurface {
  /** DNS rebinding (Host), cross-site pages (Origin), then the bearer token (whose user it is): from the headers alone. */
  authenticate(headers: Headers, peerAddress?: string): Promise<Admission>;
  /**
   * RFC 9728 protected-resource metadata (OAuth mode); its `admit` is the Host check alone (DNS rebinding): the
   * document is public, no token.
   */
  resourceMetadata?: ResourceMetadata | undefined;
  /** The /health body, already redacted. */
  health(): unknown;
  /** GET /ready, for a load balancer: whether this broker can take new work now, and if not why. */
  ready(): { ok: boolean; reasons: string[] };
  /** The MCP token the /auth/proof answer is derived from. */
  mcpToken: string;
  /** POST /browsers, guarded by the broker itself (its refusals are JSON). */
  registerBrowser(req: Request): Promise<Response>;
  /** Code mode's browse API (GET /api.d.ts, /api.md), behind the same door checks as /mcp. */
  apiDocs(): { declarations: string; guide: string };
  /** POST /page-tokens: a page token for one origin (page tools), after the door checks passed; absent without pages. */
  pageTokens?: ((req: Request, principal: Principal) => Promise<Response>) | undefined;
  /** Streamable HTTP MCP (sessions, SSE streams, DELETE), after the door checks passed, for their user. */
  mcp(req: Request, principal: Principal): Promise<Response>;
  /** The local screenshot store's handler (undefined for a path it does not serve), when screenshots are stored locally. */
  screenshots?: ((req: Request) => Promise<Response> | undefined) | undefined;
  dashboard: Dashboard;
  log: Logger;
}

/** The bindings @hono/node-server passes; absent when the app is called through its fetch core alone. */
type Env = { Bindings: Partial<HttpBindings> };

/** The broker's routes; `app.request(url, init)` calls them without a socket. */
export type { Admission, Refusal, ResourceMetadata };

export type HttpApp = Hono<Env>;

const TEXT = { "Content-Type": "text/plain; charset=utf-8" } as const;

/** The TCP peer's address, when the request came over a socket. */
const peerOf = (c: Context<Env>): string | undefined => c.env?.incoming?.socket.remoteAddress;

export function createHttpApp(surface: HttpSurface): HttpApp {
  const app = new Hono<Env>();

  app.get("/health", () => json(200, surface.health()));
  // Readiness, beside liveness (/health): 503 while draining, or while the store or the cluster's Redis is away.
  app.get("/ready", () => {
    const ready = surface.ready();
    return json(ready.ok ? 200 : 503, ready.ok ? { ready: true } : { ready: false, reasons: ready.reasons });
  });

  if (surface.screenshots) {
    const screenshots = surface.screenshots;
    app.all("/shots/*", async (c, next) => {
      // A named user's link (screenshots/link.ts) takes their token too: without one it is refused as /mcp refuses,
      // and with another user's it leads nowhere, as a made-up link does.
      const owner = shotOwner(new URL(c.req.url));
      if (owner !== undefined) {
        const admission = await surface.authenticate(c.req.raw.headers, peerOf(c));
        if (!admission.ok) return refused(admission.refusal);
        if (admission.principal.user !== owner) return noSuchScreenshot();
      }
      return (await screenshots(c.req.raw)) ?? next();
    });
  }

  /** The route's answer for whoever passed the door checks, or the refusal. */
  const admitted = async (c: Context<Env>, serve: (principal: Principal) => Response | Promise<Response>): Promise<Response> => {
    const admission = await surface.authenticate(c.req.raw.headers, peerOf(c));
    return admission.ok ? serve(admission.principal) : refused(admission.refusal);
  };

  app.all("/mcp", (c) => admitted(c, (principal) => surface.mcp(c.req.raw, principal)));

  app.get("/api.d.ts", (c) =>
    admitted(
      c,
      () => new Response(surface.apiDocs().declarations, { headers: { "Content-Type": "application/typescript; charset=utf-8", "Cache-Control": "no-store" } }),
    ),
  );
  app.get("/api.md", (c) =>
    admitted(c, () => new Response(surface.apiDocs().guide, { headers: { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "no-store" } })),
  );

  app.post("/browsers", (c) => surface.registerBrowser(c.req.raw));
  app.post("/page-tokens", (c) =>
    admitted(c, (principal) =>
      surface.pageTokens ? surface.pageTokens(c.req.raw, principal) : json(404, { error: "page tools are off: config.yaml names no pages.allowed_origins" }),
    ),
  );
  const metadata = surface.resourceMetadata;
  if (metadata) {
    // Public by design (RFC 9728): a client learns here which authorization server issues tokens for this broker.
    for (const path of metadata.paths) {
      app.get(path, (c) => {
        const refusal = metadata.admit(c.req.raw.headers);
        return refusal ? refused(refusal) : json(200, metadata.document());
      });
    }
  }
  app.post("/auth/proof", (c) => answerProof(c.req.raw, surface.mcpToken, c.env?.incoming?.socket));

  const dashboard = async (c: Context<Env>) => {
    const peer = { remoteAddress: peerOf(c) ?? "unknown" };
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

/** A door check's refusal as plain text, with its challenge. */
function refused(refusal: Refusal): Response {
  return new Response(`${refusal.message}\n`, { status: refusal.status, headers: { ...TEXT, ...challengeHeader(refusal) } });
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

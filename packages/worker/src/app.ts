// The stateless app: tabrelay's CDP tools, policy and audit over HTTP with no state kept between requests, so any
// instance serves any request (Cloudflare Workers, a Vercel function). Every request that calls a tool connects to its
// browser over the DevTools protocol (the runtime's WebSocket), runs the call under the same gate as the Node broker,
// and disconnects; the browser and its tabs outlive the request, and so do the in-page refs (the isolated world of the
// in-page script is found again by name on the next connection).
//
// Routes (all but /health need the MCP bearer token):
//   POST /mcp            stateless Streamable HTTP MCP (JSON answers; GET and DELETE: 405)
//   GET  /api.d.ts|md    code mode's browse API
//   POST /browser        a browser from the configured provider -> { browser: "<provider>:<id>" }
//   GET  /browser        its tabs (?browser=, or the X-Tabrelay-Browser header)
//   DELETE /browser      shuts it down (idempotent, from any instance)
//   POST /screen         one picture of a tab ({ browser?, tab? }), then disconnect
import {
  apiDocs,
  BrowserRegistry,
  captureForPerson,
  DocCache,
  Denials,
  enforceOnCommit,
  readLimited,
  serveStateless,
  SnapshotCache,
  TabrelayError,
  type BrowserDriver,
  type ToolContext,
} from "@tabrelay/broker/core";
import { Hono, type Context } from "hono";
import { RequestAudit } from "./audit.js";
import { handleText, parseHandle, type BrowserHandle } from "./browsers.js";
import { connectBrowser, unavailableBrowser } from "./connect.js";
import { settingsOf, type Platform, type WorkerEnv, type WorkerSettings } from "./env.js";

/** The most a request body may hold (a tool call's arguments: a program is at most 200,000 characters). */
const BODY_MAX = 4 * 1024 * 1024;
const HANDLE_HEADER = "x-tabrelay-browser";

type App = Hono<{ Bindings: WorkerEnv }>;

export function createApp(platform: Platform): App {
  const app: App = new Hono<{ Bindings: WorkerEnv }>();

  app.get("/health", () => json({ ok: true, service: "tabrelay-worker" }, 200));

  // Start-up validation: the first request of an instance reads the bindings; a bad one answers every request with
  // the binding it names (and the instance logs it once).
  app.use("*", async (c, next) => {
    const settings = settingsOf(c.env, platform);
    if (!settings.ok) return json({ error: "config", message: settings.message }, 500);
    const refusal = guard(c.req.raw.headers, settings.value);
    if (refusal)
      return new Response(`${refusal.message}\n`, {
        status: refusal.status,
        headers: { "Content-Type": "text/plain; charset=utf-8", ...(refusal.status === 401 ? { "WWW-Authenticate": 'Bearer realm="tabrelay"' } : {}) },
      });
    return next();
  });

  const settingsIn = (c: Context<{ Bindings: WorkerEnv }>): WorkerSettings => {
    const s = settingsOf(c.env, platform);
    if (!s.ok) throw new Error(s.message);
    return s.value;
  };

  app.all("/mcp", async (c) => {
    if (c.req.method !== "POST")
      return rpcError(405, "this server is stateless: POST each JSON-RPC message to /mcp (no GET stream, no session to DELETE)", -32000);
    const settings = settingsIn(c);
    const body = await readJson(c.req.raw);
    if (!body.ok) return rpcError(body.status, body.message, -32700);
    const wanted = browserWanted(body.value, c.req.header(HANDLE_HEADER), settings);
    const request = crypto.randomUUID();
    const audit = new RequestAudit(request, settings.audit, (text) => settings.secrets.redact(text));
    const ctx = requestContext(settings, audit, platform);
    let driver: BrowserDriver | undefined;
    let temporary: BrowserHandle | undefined;
    try {
      if (wanted && !wanted.ok) driver = unavailableBrowser(undefined, wanted.error, settings);
      else if (wanted) {
        let handle = wanted.value;
        if (wanted.temporary && settings.source) {
          // browser_run's browser "new" (or a provider with no default browser): made for this run, ended after it.
          const made = await settings.source.create().then(
            (h) => ({ ok: true as const, h }),
            (error: unknown) => ({ ok: false as const, error }),
          );
          if (made.ok) handle = temporary = made.h;
          else driver = unavailableBrowser(undefined, made.error, settings);
        }
        driver ??= await connectBrowser(handle, settings, platform, ctx).catch((error: unknown) => unavailableBrowser(handle, error, settings));
        if (wanted.temporary && temporary) nameBrowser(body.value, handleText(temporary));
      }
      if (driver) ctx.registry.add(driver);
      return await serveStateless(c.req.raw, ctx, settings.tools, body.value);
    } finally {
      driver?.close("the request was answered");
      if (temporary) {
        const made = temporary;
        keepAlive(
          c,
          settings.source
            ?.stop(made)
            .catch((error: unknown) =>
              settings.log.warn(`a temporary browser ${handleText(made)} could not be ended: ${error instanceof Error ? error.message : String(error)}`),
            ) ?? Promise.resolve(),
        );
      }
      keepAlive(c, audit.flush(platform.fetch));
    }
  });

  app.get(
    "/api.d.ts",
    (c) =>
      new Response(apiDocs(settingsIn(c).config).declarations, {
        headers: { "Content-Type": "application/typescript; charset=utf-8", "Cache-Control": "no-store" },
      }),
  );
  app.get(
    "/api.md",
    (c) => new Response(apiDocs(settingsIn(c).config).guide, { headers: { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "no-store" } }),
  );

  app.post("/browser", async (c) => {
    const settings = settingsIn(c);
    if (!settings.source) return json({ error: "no_browser_source", message: noSource }, 409);
    const handle = await settings.source.create();
    return json({ browser: handleText(handle), provider: handle.provider }, 201);
  });

  app.delete("/browser", async (c) => {
    const settings = settingsIn(c);
    const handle = handleOf(c, settings);
    if (!handle.ok) return json({ error: handle.code, message: handle.message }, 400);
    if (!settings.source) return json({ error: "no_browser_source", message: noSource }, 409);
    const outcome = await settings.source.stop(handle.value);
    return json({ browser: handleText(handle.value), stopped: outcome === "stopped", ...(outcome === "already_gone" ? { already: "gone" } : {}) }, 200);
  });

  app.get("/browser", async (c) => {
    const settings = settingsIn(c);
    const handle = handleOf(c, settings);
    if (!handle.ok) return json({ error: handle.code, message: handle.message }, 400);
    const ctx = requestContext(settings, new RequestAudit(crypto.randomUUID(), {}, (t) => settings.secrets.redact(t)), platform);
    const driver = await connectBrowser(handle.value, settings, platform, ctx);
    try {
      const listed = await driver.call("tabs.list", {});
      if (!listed.ok) return json({ error: listed.error.code, message: settings.secrets.redact(listed.error.message) }, 502);
      const tabs = listed.value.tabs.map((t) => ({ id: t.tabId, url: t.url, title: t.title }));
      return new Response(settings.secrets.redact(JSON.stringify({ browser: handleText(handle.value), tabs })), {
        headers: { "Content-Type": "application/json", "Cache-Control": "no-store" },
      });
    } finally {
      driver.close("the request was answered");
    }
  });

  app.post("/screen", async (c) => {
    const settings = settingsIn(c);
    const body = await readJson(c.req.raw);
    const asked = body.ok && body.value && typeof body.value === "object" ? body.value : {};
    const handleArg = Reflect.get(asked, "browser");
    const handle = handleOf(c, settings, typeof handleArg === "string" ? handleArg : undefined);
    if (!handle.ok) return json({ error: handle.code, message: handle.message }, 400);
    const audit = new RequestAudit(crypto.randomUUID(), settings.audit, (t) => settings.secrets.redact(t));
    const ctx = requestContext(settings, audit, platform);
    const driver = await connectBrowser(handle.value, settings, platform, ctx);
    try {
      const tabArg = Reflect.get(asked, "tab");
      const tabs = await driver.call("tabs.list", {});
      if (!tabs.ok) return json({ error: tabs.error.code, message: settings.secrets.redact(tabs.error.message) }, 502);
      const tab = typeof tabArg === "number" ? tabs.value.tabs.find((t) => t.tabId === tabArg) : (tabs.value.tabs.find((t) => t.active) ?? tabs.value.tabs[0]);
      if (!tab)
        return json(
          {
            error: "no_such_tab",
            message: typeof tabArg === "number" ? `tab ${tabArg} is not in this browser; GET /browser lists its tabs` : "the browser has no tab to show",
          },
          404,
        );
      // What the read policy refuses to read is not shown either: before the capture, nor what the capture showed.
      const shot = await captureForPerson(settings.config.policy, driver, tab, true);
      if (!shot.ok && shot.error.code === "policy_denied") {
        audit.record({
          time: Date.now(),
          browser: handleText(handle.value),
          tab: tab.tabId,
          tool: "screen",
          decision: "refused",
          code: "policy_denied",
          durationMs: 0,
        });
        return json({ error: "policy_denied", message: settings.secrets.redact(shot.error.message) }, 403);
      }
      if (!shot.ok) return json({ error: shot.error.code, message: settings.secrets.redact(shot.error.message) }, 502);
      audit.record({ time: Date.now(), browser: handleText(handle.value), tab: tab.tabId, tool: "screen", decision: "allowed", durationMs: 0 });
      return new Response(base64Bytes(shot.value.png), { headers: { "Content-Type": "image/png", "Cache-Control": "no-store" } });
    } finally {
      driver.close("the request was answered");
      keepAlive(c, audit.flush(platform.fetch));
    }
  });

  app.onError((error, c) => {
    if (error instanceof TabrelayError)
      return json({ error: error.code, message: redactIn(c, platform, error.message) }, error.code === "not_connected" ? 502 : 400);
    console.error(
      `tabrelay-worker: ${c.req.method} ${c.req.path} failed: ${redactIn(c, platform, error instanceof Error ? (error.stack ?? error.message) : String(error))}`,
    );
    return json({ error: "internal", message: "tabrelay hit an unexpected error; the log has it" }, 500);
  });
  app.notFound(() =>
    json({ error: "not_found", message: "no such route: POST /mcp, GET /api.d.ts, GET /api.md, POST|GET|DELETE /browser, POST /screen, GET /health" }, 404),
  );
  return app;
}

const noSource = "no browser provider is configured: set TABRELAY_CDP_URL (a DevTools endpoint), or TABRELAY_PROVIDER=browserbase|kernel with its API key";

/** One request's tool context: fresh caches, the request's audit, a registry holding at most the call's browser. */
function requestContext(settings: WorkerSettings, audit: RequestAudit, platform: Platform): ToolContext {
  const ctx: ToolContext = {
    registry: new BrowserRegistry(),
    config: settings.config,
    docs: new DocCache(),
    denials: new Denials(),
    snapshots: new SnapshotCache(),
    audit,
    log: settings.log,
    secrets: settings.secrets,
    ...(platform.sandbox ? { sandbox: platform.sandbox } : {}),
    ...(settings.screenshots ? { screenshots: settings.screenshots } : {}),
  };
  // The read policy on every commit the browser reports while the request runs (a page's own navigation included).
  enforceOnCommit(ctx);
  return ctx;
}

/**
 * The browser a request's tool calls need: the handle in the first tools/call's `browser` argument, else the
 * X-Tabrelay-Browser header, else the provider's default. Undefined when the request calls no tool.
 */
function browserWanted(
  body: unknown,
  header: string | undefined,
  settings: WorkerSettings,
): { ok: true; value: BrowserHandle; temporary?: true } | { ok: false; error: TabrelayError } | undefined {
  const call = toolCall(body);
  if (!call) return undefined;
  const named: unknown = call.args ? Reflect.get(call.args, "browser") : undefined;
  const source = settings.source;
  // A program with a browser of its own: "new", or none named where the provider has no default browser.
  if (call.name === "browser_run" && source && (named === "new" || (named === undefined && header === undefined && !source.defaultHandle))) {
    return source.defaultHandle && named === undefined
      ? { ok: true, value: source.defaultHandle }
      : { ok: true, value: { provider: source.provider, id: "new" }, temporary: true };
  }
  const text = typeof named === "string" ? named : header;
  if (text !== undefined) {
    const handle = parseHandle(text);
    if (!handle)
      return {
        ok: false,
        error: new TabrelayError(
          "unknown_browser",
          `browser ${JSON.stringify(text.slice(0, 80))} is not a browser handle ("<provider>:<id>", from POST /browser)`,
        ),
      };
    return { ok: true, value: handle };
  }
  const fallback = source?.defaultHandle;
  return fallback
    ? { ok: true, value: fallback }
    : {
        ok: false,
        error: new TabrelayError(
          "not_connected",
          `no browser named and none by default: POST /browser first and pass its handle (the X-Tabrelay-Browser header or the tool's browser argument), or ${noSource.replace(/^no browser provider is configured: /, "")}`,
        ),
      };
}

/** The request's tools/call (its tool's name and arguments), if it makes one. */
function toolCall(body: unknown): { name: unknown; args: object | undefined; params: object } | undefined {
  const messages = Array.isArray(body) ? body : [body];
  const call: unknown = messages.find((m) => m && typeof m === "object" && Reflect.get(m, "method") === "tools/call");
  const params: unknown = call && typeof call === "object" ? Reflect.get(call, "params") : undefined;
  if (!params || typeof params !== "object") return undefined;
  const args: unknown = Reflect.get(params, "arguments");
  return { name: Reflect.get(params, "name"), args: args && typeof args === "object" ? args : undefined, params };
}

/** The temporary browser's handle in place of "new" (or of no browser), so the run's commands address it. */
function nameBrowser(body: unknown, handle: string): void {
  const call = toolCall(body);
  if (call) Reflect.set(call.params, "arguments", { ...(call.args ?? {}), browser: handle });
}

function handleOf(
  c: Context<{ Bindings: WorkerEnv }>,
  settings: WorkerSettings,
  given?: string,
): { ok: true; value: BrowserHandle } | { ok: false; code: string; message: string } {
  if (!settings.source) return { ok: false, code: "no_browser_source", message: noSource };
  const text = given ?? c.req.query("browser") ?? c.req.header(HANDLE_HEADER);
  if (text === undefined)
    return settings.source.defaultHandle
      ? { ok: true, value: settings.source.defaultHandle }
      : { ok: false, code: "invalid_params", message: "name the browser: ?browser=<handle> or the X-Tabrelay-Browser header (POST /browser gives a handle)" };
  const handle = parseHandle(text);
  return handle
    ? { ok: true, value: handle }
    : { ok: false, code: "unknown_browser", message: `${JSON.stringify(text.slice(0, 80))} is not a browser handle ("<provider>:<id>")` };
}

/** The door: the bearer token, then the Origin (a browser page's request must come from an allowed origin), then Host. */
function guard(headers: Headers, settings: WorkerSettings): { status: 401 | 403; message: string } | undefined {
  const origin = headers.get("origin");
  if (origin !== null && !settings.config.allowedOrigins.includes(origin)) {
    return { status: 403, message: `tabrelay: Origin ${JSON.stringify(origin.slice(0, 100))} is not allowed (mcp.allowed_origins in TABRELAY_CONFIG)` };
  }
  const host = headers.get("host");
  if (settings.allowedHosts.length > 0 && (host === null || !settings.allowedHosts.includes(host.toLowerCase()))) {
    return { status: 403, message: `tabrelay: Host ${JSON.stringify((host ?? "").slice(0, 100))} is not this deployment's (TABRELAY_ALLOWED_HOSTS)` };
  }
  const auth = headers.get("authorization") ?? "";
  const token = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim();
  if (!token || !settings.tokenMatches(token)) {
    return { status: 401, message: "tabrelay: missing or wrong bearer token: send Authorization: Bearer <TABRELAY_MCP_TOKEN>" };
  }
  return undefined;
}

async function readJson(req: Request): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > BODY_MAX) return { ok: false, status: 413, message: `the request body is ${declared} bytes, over the ${BODY_MAX} this server reads` };
  // Read up to the cap and no further (a chunked body declares no length): the transport gets the parsed value.
  const text = await readLimited(req.clone(), BODY_MAX);
  if (text === undefined) return { ok: false, status: 413, message: `the request body is over the ${BODY_MAX} bytes this server reads` };
  try {
    return { ok: true, value: text === "" ? undefined : (JSON.parse(text) as unknown) };
  } catch {
    return { ok: false, status: 400, message: "Parse error: the body is not JSON" };
  }
}

function keepAlive(c: Context<{ Bindings: WorkerEnv }>, work: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    // No execution context (Node): the work runs on its own; nothing waits for it.
    void work;
  }
}

function redactIn(c: Context<{ Bindings: WorkerEnv }>, platform: Platform, text: string): string {
  const s = settingsOf(c.env, platform);
  return s.ok ? s.value.secrets.redact(text) : text;
}

function base64Bytes(base64: string): Uint8Array<ArrayBuffer> {
  const binary = atob(base64);
  const bytes = new Uint8Array(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function json(value: unknown, status: number): Response {
  return new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
}

function rpcError(status: number, message: string, code: number): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), { status, headers: { "Content-Type": "application/json" } });
}

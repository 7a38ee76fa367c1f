import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { BridgeServer } from "./drivers/extension/bridgeServer.js";
import { PageTools } from "./pages/index.js";
import type { BrowserDriver } from "./drivers/driver.js";
import { BrowserRegistry } from "./drivers/registry.js";
import { isLoopback, type BrokerConfig } from "./config/config.js";
import { HttpSessions } from "./mcp/adapter.js";
import { getRequestListener } from "@hono/node-server";
import { AuditLog } from "./audit/auditLog.js";
import { Dashboard } from "./dashboard/dashboard.js";
import type { DashboardChat } from "./dashboard/chat.js";
import { readLimited } from "./http/body.js";
import { createHttpApp, type HttpApp, type Refusal } from "./http/app.js";
import { LocalScreenshotStore, S3ScreenshotStore, type ScreenshotStore } from "./screenshots/store.js";
import { DocCache } from "./tools/docCache.js";
import { toolsFor } from "./tools/index.js";
import { apiDocs } from "./tools/run.js";
import { lazySandbox } from "./code/sandbox.js";
import { enforceOnCommit } from "./gate/enforce.js";
import { Denials } from "./gate/tabRecord.js";
import { SnapshotCache } from "./tools/snapshot.js";
import type { ToolContext } from "./tools/tool.js";
import { TabrelayError } from "./util/errors.js";
import { safeEqual, SecretRegistry } from "./util/secrets.js";
import { createLogger, redactingLogger, type Logger } from "./util/log.js";
import { PROVIDER_KEY_VARS } from "./launch/providers.js";
import { CHAT_KEY_VARS } from "./config/chat.js";
import { BrowserSessions } from "./launch/sessions.js";
import { VERSION } from "./version.js";

export interface BrokerOptions {
  config: BrokerConfig;
  log?: Logger;
  /** Tests shorten the unauthenticated-socket timeout. */
  helloTimeoutMs?: number;
}

/** The broker: /mcp for agents, /bridge for browsers, /health for humans and scripts. */
export class Broker {
  readonly config: BrokerConfig;
  readonly registry = new BrowserRegistry();
  readonly context: ToolContext;
  readonly audit: AuditLog;
  /** Every exit (tool results, audit records, log lines, the dashboard, /health, /browsers) redacts through it. */
  readonly secrets = new SecretRegistry();
  readonly #log: Logger;
  readonly #http: Server;
  readonly #bridge: BridgeServer;
  readonly #sessions: HttpSessions;
  readonly #dashboard: Dashboard;
  /** The HTTP routes (all but the WebSocket upgrades), callable without a socket through `app.request`. */
  readonly app: HttpApp;
  #port: number | undefined;
  #allowedHosts = new Set<string>();
  #allowedOrigins: Set<string>;
  #baseUrl = "";
  readonly #screenshots: ScreenshotStore | undefined;
  readonly #localShots: LocalScreenshotStore | undefined;
  /** CDP endpoints attached or being attached: the same endpoint twice is the same browser. */
  readonly #cdpEndpoints = new Map<string, Promise<BrowserDriver>>();
  readonly #answering = new Answering();
  /** Code mode's sandbox pool: started by the first browser_run, closed with the broker. */
  readonly #sandbox = lazySandbox();
  /** The browsers the model starts (config `browsers:`); absent without a source. */
  readonly #browserSessions: BrowserSessions | undefined;
  /** Tools web pages offer over /page; absent unless config names pages.allowed_origins. */
  readonly pages: PageTools | undefined;
  #closing = false;

  constructor(options: BrokerOptions) {
    this.config = options.config;
    this.secrets.register(this.config.mcpToken, "mcp token");
    this.secrets.register(this.config.pairingToken, "pairing token");
    // A hosted provider's key is a secret whether or not this broker creates the session (the CLI does).
    for (const name of PROVIDER_KEY_VARS) this.secrets.register(process.env[name]?.trim(), "provider key");
    for (const name of CHAT_KEY_VARS) this.secrets.register(process.env[name]?.trim(), "model key");
    this.#log = redactingLogger(options.log ?? createLogger(), this.secrets);
    this.audit = AuditLog.open(this.config.dataDir, this.secrets);
    const shots = this.config.screenshots;
    if (shots.enabled && shots.s3) {
      const accessKeyId = process.env["AWS_ACCESS_KEY_ID"];
      const secretAccessKey = process.env["AWS_SECRET_ACCESS_KEY"];
      this.#screenshots = new S3ScreenshotStore({
        ...shots.s3,
        ttlMs: shots.ttlMs,
        ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
      });
    } else if (shots.enabled) {
      // A fresh key per start: links die with the broker, and the key is never written anywhere.
      this.#localShots = new LocalScreenshotStore({
        dir: join(this.config.dataDir, "screenshots"),
        publicBaseUrl: () => this.#baseUrl,
        key: randomBytes(32),
        ttlMs: shots.ttlMs,
        quotaBytes: shots.quotaBytes,
      });
      this.#screenshots = this.#localShots;
    }
    const source = this.config.browserSource;
    this.#browserSessions = source
      ? new BrowserSessions({ settings: source, registry: this.registry, attach: (endpoint, opts) => this.attachCdp(endpoint, opts), secrets: this.secrets, log: this.#log })
      : undefined;
    this.pages =
      this.config.pages.allowedOrigins.length > 0
        ? new PageTools({
            dataDir: this.config.dataDir,
            ...(this.config.pages.webmcp ? { webmcp: this.registry } : {}),
            mcpToken: this.config.mcpToken,
            allowedOrigins: this.config.pages.allowedOrigins,
            policy: () => this.config.pages.toolPolicy,
            callTimeoutMs: this.config.pages.callTimeoutMs,
            tokenTtlSeconds: this.config.pages.tokenTtlSeconds,
            audit: this.audit,
            log: this.#log,
          })
        : undefined;
    this.context = {
      registry: this.registry,
      config: this.config,
      docs: new DocCache(),
      denials: new Denials(),
      snapshots: new SnapshotCache(),
      ...(this.#screenshots ? { screenshots: this.#screenshots } : {}),
      audit: this.audit,
      log: this.#log,
      secrets: this.secrets,
      sandbox: this.#sandbox,
      ...(this.#browserSessions ? { sessions: this.#browserSessions } : {}),
      ...(this.pages ? { pageTools: this.pages.programs } : {}),
    };
    enforceOnCommit(this.context);
    this.#allowedOrigins = new Set(this.config.allowedOrigins);
    this.#sessions = new HttpSessions(this.context, toolsFor(this.config), this.config.mcpSessions, this.pages?.dynamic);
    this.#bridge = new BridgeServer({
      registry: this.registry,
      pairingToken: this.config.pairingToken,
      extensionIds: this.config.extensionIds,
      callTimeoutMs: this.config.callTimeoutMs,
      brokerVersion: VERSION,
      navigationRules: () => this.config.policy.navigationRules(),
      log: this.#log,
      ...(options.helloTimeoutMs ? { helloTimeoutMs: options.helloTimeoutMs } : {}),
    });
    this.#dashboard = new Dashboard({
      registry: this.registry,
      audit: this.audit,
      config: this.config,
      log: this.#log,
      secrets: this.secrets,
      onEmergencyStop: () => this.registry.closeAll("emergency stop from the dashboard"),
      port: () => this.#port,
      pages: this.pages,
    });
    this.app = createHttpApp({
      guard: (headers) => this.#guardMcp(headers),
      health: () => this.#health(),
      mcpToken: this.config.mcpToken,
      registerBrowser: (req) => this.#registerCdpBrowser(req),
      pageTokens: this.pages ? (req) => this.#mintPageToken(req) : undefined,
      mcp: (req) => this.#sessions.handle(req),
      apiDocs: () => apiDocs(this.config),
      screenshots: this.#localShots ? (req) => this.#localShots?.handle(req) : undefined,
      dashboard: this.#dashboard,
      log: this.#log,
    });
    // A request without a Host header still reaches the routes (and /mcp's Host check refuses it).
    const listener = getRequestListener(this.app.fetch, { overrideGlobalObjects: false, hostname: "host.invalid" });
    this.#http = createServer((req, res) => {
      if (req.method === "POST" && pathOf(req) === "/mcp") this.#answering.track(res);
      void listener(req, res);
    });
    this.#http.on("upgrade", (req, socket, head) => {
      // After an emergency stop, browsers stay out until the user resumes from the dashboard; a refused
      // upgrade (rather than an accepted-then-closed socket) lets the extension back off.
      if (pathOf(req) === "/bridge" && this.#dashboard.stopped) socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\nstopped from the dashboard\n");
      else if (pathOf(req) === "/bridge") this.#bridge.handleUpgrade(req, socket, head);
      else if (pathOf(req) === "/page" && this.pages) this.pages.socket.handleUpgrade(req, socket, head);
      else socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
    });
  }

  /** The dashboard's chat panel: a chat from @tabrelay/chat (which the broker cannot import: it depends on the broker). */
  mountDashboardChat(chat: DashboardChat): void {
    this.#dashboard.mountChat(chat);
  }

  /** POST /page-tokens {origin, ttl_seconds?} -> {token, expires_at}: what an app's backend hands its page. */
  async #mintPageToken(req: Request): Promise<Response> {
    const reply = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
    let body: { origin?: unknown; ttl_seconds?: unknown };
    try {
      body = (await req.json()) as typeof body;
    } catch {
      return reply(400, { error: 'the body must be JSON: {"origin": "https://app.example", "ttl_seconds": 600}' });
    }
    if (typeof body?.origin !== "string") return reply(400, { error: 'origin is missing: {"origin": "https://app.example"}' });
    const ttl = body.ttl_seconds;
    if (ttl !== undefined && (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 10 || ttl > 86_400)) return reply(400, { error: "ttl_seconds is a whole number of seconds from 10 to 86400" });
    try {
      const minted = this.pages!.mint(body.origin, ttl as number | undefined);
      return reply(200, { token: minted.token, expires_at: new Date(minted.expiresAt).toISOString() });
    } catch (error) {
      return reply(403, { error: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Open MCP sessions over HTTP. */
  get mcpSessions(): number {
    return this.#sessions.size;
  }

  /** Listens; rejects with EADDRINUSE when another process owns the port. */
  async listen(): Promise<{ port: number; url: string }> {
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      this.#http.once("error", onError);
      this.#http.listen(this.config.port, this.config.host, () => {
        this.#http.off("error", onError);
        resolve();
      });
    });
    const { port } = this.#http.address() as AddressInfo;
    this.#port = port;
    const host = this.config.host.includes(":") ? `[${this.config.host}]` : this.config.host;
    const names = isLoopback(this.config.host) ? [host, "localhost", "127.0.0.1", "[::1]"] : [host];
    this.#allowedHosts = new Set([...names.map((n) => `${n}:${port}`.toLowerCase()), ...this.config.allowedHosts.map((h) => h.toLowerCase())]);
    this.#baseUrl = `http://${host}:${port}`;
    return { port, url: this.#baseUrl };
  }

  /**
   * Drives a browser over the DevTools protocol (a local Chromium we launched, or an attached endpoint).
   * The endpoint is a credential: it is never logged nor shown to the model. Attaching an endpoint that is
   * already attached (or being attached) gives the same browser, never a second entry for it.
   */
  attachCdp(endpoint: string, options: { label: string; ownsBrowser: boolean }): Promise<BrowserDriver> {
    if (this.#closing) return Promise.reject(new TabrelayError("not_connected", "the broker is shutting down"));
    // Registered before anything can quote it (an error from the connect, a log line), and kept after the
    // browser detaches: an endpoint left running still opens that browser.
    this.secrets.register(endpoint, "cdp endpoint");
    const pending = this.#cdpEndpoints.get(endpoint);
    if (pending) return pending;
    const attach = this.#attachCdp(endpoint, options);
    this.#cdpEndpoints.set(endpoint, attach);
    attach.then(
      (driver) => {
        // Gone already (its browser closed during the attach): a later attach starts afresh.
        if (!this.registry.list().includes(driver)) this.#cdpEndpoints.delete(endpoint);
      },
      () => this.#cdpEndpoints.delete(endpoint),
    );
    return attach;
  }

  async #attachCdp(endpoint: string, options: { label: string; ownsBrowser: boolean }): Promise<BrowserDriver> {
    const holder: { driver?: BrowserDriver } = {};
    // Loaded on first use: a broker serving only the extension never pays for the CDP driver's memory.
    const { CdpBrowser } = await import("./drivers/cdp/cdpBrowser.js");
    const socketUrl = await resolveCdpEndpoint(endpoint);
    this.secrets.register(socketUrl, "cdp endpoint");
    const driver = await CdpBrowser.connect(socketUrl, {
      label: options.label,
      ownsBrowser: options.ownsBrowser,
      callTimeoutMs: this.config.callTimeoutMs,
      // Navigation requests (documents of the top frame and of frames, redirect hops included) must be
      // readable before they are sent; other requests are cut off only for explicitly denied origins, so
      // pages can still load from their CDNs.
      requestPolicy: (url, kind) => (kind === "navigation" ? this.config.policy.check(url).ok : !this.config.policy.isDenied(url)),
      ...(this.config.pages.webmcp && this.pages ? { webmcpOrigins: this.config.pages.allowedOrigins } : {}),
      onEvent: (frame) => {
        if (holder.driver) this.registry.emit("event", holder.driver, frame);
      },
      onClose: () => {
        this.#cdpEndpoints.delete(endpoint);
        if (holder.driver) this.registry.remove(holder.driver);
      },
    });
    if (this.#closing) {
      driver.close("the broker is shutting down");
      throw new TabrelayError("not_connected", "the broker is shutting down");
    }
    holder.driver = driver;
    this.registry.add(driver);
    this.#log.info(`cdp: browser "${options.label}" attached${options.ownsBrowser ? "" : " (left running when tabrelay stops)"}`);
    return driver;
  }

  async close(): Promise<void> {
    this.#closing = true;
    // The browsers the model started end first: their processes and provider sessions, not only their sockets.
    await this.#browserSessions?.closeAll();
    this.registry.closeAll("broker shutting down");
    this.#bridge.close();
    this.pages?.close();
    await this.#answering.settled(2000);
    await this.#sessions.closeAll();
    this.#http.closeAllConnections();
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
    await this.#screenshots?.close();
    await this.#sandbox.close();
    this.audit.close();
  }

  /**
   * POST /browsers {"endpoint": "ws://...", "label": "..."}: `tabrelay launch --cdp` hands the broker a browser it
   * started (the launcher owns it: the broker never kills it, and forgets it when its DevTools socket closes).
   * Guarded like /mcp. The endpoint is a credential: it is neither logged nor echoed.
   */
  async #registerCdpBrowser(req: Request): Promise<Response> {
    const reply = (status: number, body: object) =>
      new Response(`${JSON.stringify(this.secrets.redactValue(body))}\n`, { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
    const refusal = this.#guardMcp(req.headers);
    if (refusal) return reply(refusal.status, { error: { code: refusal.status === 401 ? "unauthorized" : "forbidden", message: refusal.message } });
    if (this.#dashboard.stopped) return reply(503, { error: { code: "stopped", message: "the broker was stopped from the dashboard; resume there first" } });
    if (this.#closing) return reply(503, { error: { code: "not_connected", message: "the broker is shutting down" } });
    const raw = await readLimited(req, 16 * 1024);
    let endpoint: unknown;
    let label: unknown;
    try {
      const body: unknown = raw === undefined ? undefined : JSON.parse(raw);
      endpoint = body && typeof body === "object" ? Reflect.get(body, "endpoint") : undefined;
      label = body && typeof body === "object" ? Reflect.get(body, "label") : undefined;
    } catch {
      // reported below
    }
    if (typeof endpoint !== "string" || (label !== undefined && (typeof label !== "string" || label.length > 100))) {
      return reply(400, { error: { code: "invalid_request", message: 'send JSON {"endpoint": "ws://... or http://host:port", "label": "<= 100 characters"} (at most 16 KiB)' } });
    }
    try {
      const known = this.#cdpEndpoints.has(endpoint);
      const driver = await this.attachCdp(endpoint, { label: typeof label === "string" && label.trim() ? label.trim() : "launched Chromium (CDP)", ownsBrowser: false });
      return reply(known ? 200 : 201, { id: driver.info.browserId, label: driver.info.label });
    } catch (error) {
      const code = error instanceof TabrelayError ? error.code : "not_connected";
      return reply(502, { error: { code, message: `could not attach the browser: ${error instanceof Error ? error.message : String(error)}` } });
    }
  }

  /** Checked before the body is read: DNS rebinding (Host), cross-site pages (Origin), then the token. */
  #guardMcp(headers: Headers): Refusal | undefined {
    const host = (headers.get("host") ?? "").toLowerCase();
    if (!this.#allowedHosts.has(host)) return { status: 403, message: `Host ${JSON.stringify(host)} is not allowed (DNS rebinding protection); connect to ${[...this.#allowedHosts][0] ?? ""}` };
    const origin = headers.get("origin");
    // The broker's own origin (the Host just checked) is same-origin, not cross-site: a page the broker serves, or
    // a client that sends Origin on every request (the MCP conformance suite does). The bearer is still required.
    if (origin !== null && origin !== `http://${host}` && !this.#allowedOrigins.has(origin)) {
      return { status: 403, message: `Origin ${JSON.stringify(origin)} is not allowed; add it to mcp.allowed_origins in config.yaml if you trust it` };
    }
    const auth = headers.get("authorization") ?? "";
    const match = /^Bearer (.+)$/i.exec(auth);
    if (!match?.[1] || !safeEqual(match[1], this.config.mcpToken)) {
      return { status: 401, message: "missing or wrong bearer token; use the Authorization header printed by `tabrelay serve`" };
    }
    return undefined;
  }

  #health(): unknown {
    const browsers = this.registry.list().map((b) => ({ id: b.info.browserId, label: b.info.label, kind: b.info.kind, extensionVersion: b.info.extensionVersion, connectedAt: new Date(b.info.connectedAt).toISOString() }));
    const health = this.audit.health();
    const audit = health.ok
      ? { ok: true, failures: health.failures }
      : { ok: false, failures: health.failures, error: health.error, since: new Date(health.since ?? Date.now()).toISOString(), writes: "refused until the audit log can be written again" };
    return this.secrets.redactValue({ status: health.ok ? "ok" : "degraded", name: "tabrelay", version: VERSION, browsers, audit });
  }
}

/**
 * POSTs to /mcp whose response has not ended yet: requests (tool calls) still being answered. On shutdown the
 * broker fails its browser calls at once, then waits for these answers (up to a grace period) before closing the
 * sessions: the SDK's client keeps waiting for a POST's answer until its own timeout (60 s) when the stream ends
 * without one. Counted here, at the socket, so an answer counts as given once it has left for the client.
 */
class Answering {
  readonly #pending = new Set<Promise<void>>();

  track(res: ServerResponse): void {
    const answered = new Promise<void>((resolve) => res.once("close", () => resolve()));
    this.#pending.add(answered);
    void answered.then(() => this.#pending.delete(answered));
  }

  async settled(graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all([...this.#pending]), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** Accepts the browser's ws:// endpoint, or its http://host:port DevTools address (resolved via /json/version). */
async function resolveCdpEndpoint(endpoint: string): Promise<string> {
  if (/^wss?:\/\//i.test(endpoint)) return endpoint;
  if (!/^https?:\/\//i.test(endpoint)) throw new TabrelayError("not_connected", "a CDP endpoint is a ws://, wss://, http:// or https:// URL");
  try {
    const response = await fetch(new URL("/json/version", endpoint), { signal: AbortSignal.timeout(5000) });
    const body: unknown = await response.json();
    const ws = body && typeof body === "object" ? Reflect.get(body, "webSocketDebuggerUrl") : undefined;
    if (typeof ws !== "string") throw new Error("no webSocketDebuggerUrl in /json/version");
    return ws;
  } catch (error) {
    // The message names neither the URL nor its parts: it may carry a token.
    throw new TabrelayError("not_connected", `could not reach the CDP endpoint's /json/version (${error instanceof Error ? error.message : String(error)})`);
  }
}

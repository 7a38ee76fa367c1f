// The dashboard: a page at `/` where the user sees what the agent does (browsers, tabs, a live picture, the
// audit log, the policy) and can pull the emergency stop. Behind a login that takes the access token; the
// session cookie opens only the dashboard, never /mcp (that door takes the bearer header alone).
import { createHash, createHmac, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TabInfo, WireError } from "@tabrelay/protocol";
import type { AuditLog, StoredAuditRecord } from "../audit/auditLog.js";
import type { BrowserRegistry } from "../bridge/registry.js";
import { isLoopback, type BrokerConfig } from "../config/config.js";
import { builtExtensionDir } from "../launch/chromium.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import { safeEqual, type SecretRegistry } from "../util/secrets.js";
import { VERSION } from "../version.js";
import { LoginThrottle, type LoginScope } from "./loginThrottle.js";
import { DASHBOARD_CSS, DASHBOARD_JS, dashboardPage, loginPage } from "./page.js";

export interface DashboardOptions {
  registry: BrowserRegistry;
  audit: AuditLog;
  config: BrokerConfig;
  log: Logger;
  /** The broker's secrets registry: every JSON answer and audit event is redacted through it. */
  secrets: SecretRegistry;
  /** Disconnects every browser. The dashboard also turns reconnecting browsers away until the user resumes. */
  onEmergencyStop: () => void;
}

const SESSION_TTL_S = 12 * 60 * 60;
const MAX_SESSIONS = 64;
const LOGIN_FORM_TTL_S = 30 * 60;
const BODY_MAX_BYTES = 8 * 1024;
const TABS_FRESH_MS = 800;
const TABS_TIMEOUT_MS = 3_000;
/** chrome.tabs.captureVisibleTab allows two captures a second per browser; the preview takes at most one. */
const CAPTURE_INTERVAL_MS = 1_000;
const CAPTURE_TIMEOUT_MS = 5_000;
const AUDIT_POLL_MS = 500;
const AUDIT_BACKLOG = 200;
const AUDIT_BATCH = 500;
const HEARTBEAT_MS = 15_000;
const MAX_STREAMS_PER_SESSION = 8;
const TEXT_MAX = 2_000;

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "same-origin",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
};

/**
 * Tokens that open the dashboard. Today only the MCP token; a separate `dashboard.token` from the config
 * file joins this list when the config grows one.
 */
function dashboardTokens(config: BrokerConfig): string[] {
  return [config.mcpToken].filter((token) => token.length > 0);
}

interface Session {
  /** SHA-256 of the cookie value: the map never holds the id itself. */
  key: string;
  csrf: string;
  expiresAt: number;
  streams: Set<ServerResponse>;
}

/** Whatever the registry holds (an extension connection today), so the dashboard follows it. */
type ConnectedBrowser = ReturnType<BrowserRegistry["list"]>[number];

type Outcome<T> = { ok: true; value: T } | { ok: false; error: WireError };

interface TabView {
  tabId: number;
  windowId: number;
  url: string;
  title: string;
  active: boolean;
  status: string;
  shared: boolean;
}

type Preview = { ok: true; png: string; width: number; height: number; url: string; capturedAt: number } | { ok: false; error: WireError };

interface CaptureSlot {
  tabId: number;
  startAt: number;
  result: Promise<Preview>;
}

export class Dashboard {
  readonly #registry: BrowserRegistry;
  readonly #audit: AuditLog;
  readonly #config: BrokerConfig;
  readonly #log: Logger;
  readonly #secrets: SecretRegistry;
  readonly #onEmergencyStop: () => void;
  readonly #sessions = new Map<string, Session>();
  readonly #loginThrottle = new LoginThrottle();
  /** Signs the pre-session CSRF nonce, so a cookie set by another page on this host cannot forge the form field. */
  readonly #loginKey = randomBytes(32);
  readonly #tabsCache = new WeakMap<ConnectedBrowser, { at: number; result: Promise<Outcome<TabView[]>> }>();
  readonly #captures = new WeakMap<ConnectedBrowser, CaptureSlot>();
  #stoppedAt: number | undefined;
  #turnedAway = 0;

  constructor(options: DashboardOptions) {
    this.#registry = options.registry;
    this.#audit = options.audit;
    this.#config = options.config;
    this.#log = options.log;
    this.#secrets = options.secrets;
    this.#onEmergencyStop = options.onEmergencyStop;
    // The extension reconnects within a second of being closed; a stop that lasted that long would be no stop.
    this.#registry.on("connected", (connection) => {
      if (this.#stoppedAt === undefined) return;
      if (this.#turnedAway++ === 0) this.#log.warn(`dashboard: emergency stop in effect; turning away browser "${connection.info.label}" and any other until resumed`);
      connection.close("emergency stop in effect; resume from the tabrelay dashboard");
      this.#registry.remove(connection);
    });
  }

  /** True when the emergency stop is in effect. */
  get stopped(): boolean {
    return this.#stoppedAt !== undefined;
  }

  /** Serves `/`, `/login`, `/logout` and `/dashboard/*`; false for any other path (the caller answers it). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    // The raw path, as the broker routes it: no dot-segment or `//host` resolution.
    const target = req.url ?? "/";
    const q = target.indexOf("?");
    const path = q === -1 ? target : target.slice(0, q);
    const query = new URLSearchParams(q === -1 ? "" : target.slice(q + 1));
    const method = req.method ?? "GET";
    const route = ROUTES.find((r) => r.path === path);
    if (!route) return false;

    const host = this.#checkedHost(req);
    if (host === undefined) {
      sendText(res, 403, "dashboard: this Host is not the broker's own (DNS rebinding protection); open the dashboard at the address tabrelay printed\n");
      return true;
    }
    if (!route.methods.includes(method)) {
      sendText(res, 405, `dashboard: ${method} is not allowed here\n`, { Allow: route.methods.join(", ") });
      return true;
    }
    if (route.kind === "asset") {
      const [type, body] = path.endsWith(".css") ? ["text/css; charset=utf-8", DASHBOARD_CSS] : ["text/javascript; charset=utf-8", DASHBOARD_JS];
      send(res, 200, type, body, { "Cache-Control": "no-cache" });
      return true;
    }

    const session = this.#session(req);
    const origin = `${isTls(req) ? "https" : "http"}://${host}`;
    const post = method === "POST";
    // Fetch metadata, where the browser sends it: API calls and form posts must come from this very origin.
    if ((post || route.kind === "api") && !fetchSiteOk(req)) {
      sendJsonOrText(res, route.kind, 403, "this request came from another site");
      return true;
    }
    if (post && !sameOrigin(req, origin)) {
      sendJsonOrText(res, route.kind, 403, "Origin (or Referer) is missing or is not this dashboard's own");
      return true;
    }

    switch (path) {
      case "/":
        if (!session) redirect(res, "/login");
        else send(res, 200, "text/html; charset=utf-8", dashboardPage({ csrf: session.csrf, version: VERSION }), { "Cache-Control": "no-store" });
        return true;
      case "/login":
        if (post) await this.#login(req, res);
        else if (session) redirect(res, "/");
        else this.#sendLogin(req, res, 200);
        return true;
      case "/logout": {
        const form = await readForm(req, res);
        if (form === undefined) return true;
        if (session && safeEqual(form.get("csrf") ?? "", session.csrf)) this.#endSession(session);
        else if (session) {
          sendText(res, 403, "dashboard: missing or wrong CSRF token\n");
          return true;
        }
        redirect(res, "/login", [clearCookie(sessionCookieName(req), isTls(req))]);
        return true;
      }
    }

    // API routes: a session, and for anything that changes state, its CSRF token.
    if (!session) {
      this.#json(res, 401, { error: "not logged in, or the session expired; log in again at /login" });
      return true;
    }
    if (post) {
      const form = await readForm(req, res);
      if (form === undefined) return true;
      const token = headerValue(req, "x-csrf-token") ?? form.get("csrf") ?? "";
      if (!safeEqual(token, session.csrf)) {
        this.#json(res, 403, { error: "missing or wrong CSRF token; reload the dashboard" });
        return true;
      }
    }
    switch (path) {
      case "/dashboard/api/state":
        this.#json(res, 200, await this.#state());
        return true;
      case "/dashboard/api/config":
        // The pairing code is shown to the logged-in user on purpose (they enter it in the extension's popup);
        // it is the one secret any exit shows, and it is set after the rest of the view is redacted.
        sendJson(res, 200, { ...this.#secrets.redactValue(this.#configView(req)), pairingToken: this.#config.pairingToken });
        return true;
      case "/dashboard/api/preview":
        await this.#preview(query, res);
        return true;
      case "/dashboard/api/audit":
        this.#auditStream(req, query, res, session);
        return true;
      case "/dashboard/api/stop":
        this.#json(res, 200, this.#stop());
        return true;
      case "/dashboard/api/resume":
        this.#json(res, 200, this.#resume());
        return true;
    }
    return false;
  }

  /** Every JSON answer goes through the secrets registry: tab titles, URLs and errors come from pages and browsers. */
  #json(res: ServerResponse, status: number, value: unknown): void {
    sendJson(res, status, this.#secrets.redactValue(value));
  }

  // ---- login, sessions ----

  async #login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req, res);
    if (form === undefined) return;
    const address = remoteAddress(req);
    const now = Date.now();
    // Once limited, not even a right token is checked: the answer must not tell a guesser anything.
    const limit = this.#loginThrottle.check({ address }, now);
    if (!limit.ok) {
      const seconds = Math.ceil(limit.waitMs / 1000);
      this.#sendLogin(req, res, 429, `${LIMITED_BECAUSE[limit.scope]} Wait ${seconds} s, then try again.`, { "Retry-After": String(seconds) });
      return;
    }
    const nonce = cookieValue(req, loginCookieName(req)) ?? "";
    if (!nonce || !safeEqual(form.get("csrf") ?? "", this.#signLoginNonce(nonce))) {
      this.#sendLogin(req, res, 403, "The login form expired. Enter the token again.");
      return;
    }
    const given = form.get("token") ?? "";
    let accepted = false;
    for (const token of dashboardTokens(this.#config)) accepted = safeEqual(given.trim(), token) || accepted;
    if (!accepted) {
      this.#loginThrottle.failed({ address }, now);
      this.#log.warn(`dashboard: refused a login from ${address} (wrong token)`);
      this.#sendLogin(req, res, 401, "That token was not accepted.");
      return;
    }
    const id = randomBytes(32).toString("base64url");
    this.#pruneSessions(now);
    while (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.values().next().value;
      if (!oldest) break;
      this.#endSession(oldest);
    }
    const session: Session = { key: hashId(id), csrf: randomBytes(32).toString("base64url"), expiresAt: now + SESSION_TTL_S * 1000, streams: new Set() };
    this.#sessions.set(session.key, session);
    this.#log.info(`dashboard: login from ${address}`);
    const secure = isTls(req);
    redirect(res, "/", [
      `${sessionCookieName(req)}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_S}${secure ? "; Secure" : ""}`,
      clearCookie(loginCookieName(req), secure, "/login"),
    ]);
  }

  #sendLogin(req: IncomingMessage, res: ServerResponse, status: number, error?: string, headers: Record<string, string> = {}): void {
    const nonce = randomBytes(24).toString("base64url");
    const cookie = `${loginCookieName(req)}=${nonce}; HttpOnly; SameSite=Strict; Path=/login; Max-Age=${LOGIN_FORM_TTL_S}${isTls(req) ? "; Secure" : ""}`;
    send(res, status, "text/html; charset=utf-8", loginPage({ csrf: this.#signLoginNonce(nonce), ...(error ? { error } : {}) }), {
      "Cache-Control": "no-store",
      "Set-Cookie": cookie,
      ...headers,
    });
  }

  #signLoginNonce(nonce: string): string {
    return createHmac("sha256", this.#loginKey).update(nonce).digest("base64url");
  }

  #session(req: IncomingMessage): Session | undefined {
    const id = cookieValue(req, sessionCookieName(req));
    if (!id) return undefined;
    const session = this.#sessions.get(hashId(id));
    if (!session) return undefined;
    if (session.expiresAt <= Date.now()) {
      this.#endSession(session);
      return undefined;
    }
    return session;
  }

  #endSession(session: Session): void {
    this.#sessions.delete(session.key);
    for (const stream of session.streams) endStream(stream, "expired");
    session.streams.clear();
  }

  #pruneSessions(now: number): void {
    for (const session of [...this.#sessions.values()]) if (session.expiresAt <= now) this.#endSession(session);
  }

  /** The Host header, if it names this broker (the same rule as /mcp's DNS-rebinding check). */
  #checkedHost(req: IncomingMessage): string | undefined {
    const host = (req.headers.host ?? "").toLowerCase();
    const port = req.socket.localPort;
    if (!host || port === undefined) return undefined;
    const configured = this.#config.host.includes(":") ? `[${this.#config.host}]` : this.#config.host;
    const names = isLoopback(this.#config.host) ? [configured, "localhost", "127.0.0.1", "[::1]"] : [configured];
    const allowed = [...names.map((n) => `${n}:${port}`.toLowerCase()), ...this.#config.allowedHosts.map((h) => h.toLowerCase())];
    return allowed.includes(host) ? host : undefined;
  }

  // ---- what the page shows ----

  async #state(): Promise<unknown> {
    const browsers = await Promise.all(
      this.#registry.list().map(async (b) => {
        const tabs = await this.#tabs(b);
        return {
          id: b.info.browserId,
          label: pageString(b.info.label),
          kind: b.info.kind,
          extensionVersion: b.info.extensionVersion,
          connectedAt: b.info.connectedAt,
          ...(tabs.ok ? { tabs: tabs.value } : { tabs: [], tabsError: tabs.error }),
        };
      }),
    );
    return { version: VERSION, now: Date.now(), stopped: this.#stoppedAt !== undefined, stoppedAt: this.#stoppedAt ?? null, browsers, audit: this.#audit.health() };
  }

  /** tabs.list, shared by every open dashboard for a moment so that viewers do not multiply bridge calls. */
  #tabs(connection: ConnectedBrowser): Promise<Outcome<TabView[]>> {
    const cached = this.#tabsCache.get(connection);
    if (cached && Date.now() - cached.at < TABS_FRESH_MS) return cached.result;
    const result = connection.call("tabs.list", {}, { timeoutMs: TABS_TIMEOUT_MS }).then(
      (r): Outcome<TabView[]> => (r.ok ? { ok: true, value: r.value.tabs.map(tabView) } : r),
      (error: unknown): Outcome<TabView[]> => ({ ok: false, error: { code: "internal", message: errorText(error) } }),
    );
    this.#tabsCache.set(connection, { at: Date.now(), result });
    return result;
  }

  /** The config as the page shows it, without the pairing code (added by the route, unredacted). */
  #configView(req: IncomingMessage): Record<string, unknown> {
    const config = this.#config;
    let extensionDir: string | null = null;
    let extensionDirError: string | null = null;
    try {
      extensionDir = builtExtensionDir();
    } catch (error) {
      extensionDirError = errorText(error);
    }
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    const port = req.socket.localPort ?? config.port;
    return {
      version: VERSION,
      configFile: existsSync(config.configPath) ? config.configPath : null,
      configPathChecked: config.configPath,
      readPolicy: config.policy.describe(),
      writePolicy: config.writePolicy.describe(),
      bridgeUrl: `ws://${host}:${port}/bridge`,
      extensionDir,
      extensionDirError,
    };
  }

  async #preview(query: URLSearchParams, res: ServerResponse): Promise<void> {
    const browserId = query.get("browser") ?? "";
    const tabId = Number(query.get("tab") ?? Number.NaN);
    if (!browserId || !Number.isSafeInteger(tabId)) {
      this.#json(res, 400, { error: "pass browser (an id) and tab (a tab id)" });
      return;
    }
    const connection = this.#registry.list().find((b) => b.info.browserId === browserId);
    if (!connection) {
      this.#json(res, 200, { ok: false, error: { code: "unknown_browser", message: "that browser is not connected" } });
      return;
    }
    // Only tabs the agent may see: the same list the page shows, never any other tab of the user's.
    const tabs = await this.#tabs(connection);
    if (!tabs.ok) {
      this.#json(res, 200, { ok: false, error: tabs.error });
      return;
    }
    if (!tabs.value.some((t) => t.tabId === tabId)) {
      this.#json(res, 200, { ok: false, error: { code: "no_such_tab", message: `tab ${tabId} is not one of the agent's tabs (any more)` } });
      return;
    }
    this.#json(res, 200, await this.#capture(connection, tabId));
  }

  /** At most one capture a second per browser, shared by every viewer; the agent keeps the rest of Chrome's quota. */
  #capture(connection: ConnectedBrowser, tabId: number): Promise<Preview> {
    const now = Date.now();
    const last = this.#captures.get(connection);
    if (last && last.tabId === tabId && now - last.startAt < CAPTURE_INTERVAL_MS) return last.result;
    const startAt = last ? Math.max(now, last.startAt + CAPTURE_INTERVAL_MS) : now;
    const previous = last?.result;
    const result = (async (): Promise<Preview> => {
      if (previous) await previous;
      const wait = startAt - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
      const r = await connection.call("page.capture", { tabId, activate: false }, { timeoutMs: CAPTURE_TIMEOUT_MS });
      if (!r.ok) return { ok: false, error: { code: r.error.code, message: String(r.error.message) } };
      const v = r.value;
      if (typeof v.png !== "string" || !/^[A-Za-z0-9+/]+={0,2}$/.test(v.png)) return { ok: false, error: { code: "invalid_image", message: "the browser's capture was not base64 PNG data" } };
      return { ok: true, png: v.png, width: Number(v.width) || 0, height: Number(v.height) || 0, url: pageString(v.url), capturedAt: Number(v.capturedAt) || Date.now() };
    })().catch((error: unknown): Preview => ({ ok: false, error: { code: "internal", message: errorText(error) } }));
    this.#captures.set(connection, { tabId, startAt, result });
    return result;
  }

  /** Server-Sent Events: the audit records after `after` (or Last-Event-ID), then new ones as they are written. */
  #auditStream(req: IncomingMessage, query: URLSearchParams, res: ServerResponse, session: Session): void {
    const resumeFrom = Number(headerValue(req, "last-event-id") ?? query.get("after") ?? Number.NaN);
    let afterId = Number.isSafeInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : undefined;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Accel-Buffering": "no",
    });
    res.write("retry: 2000\n\n");
    if (session.streams.size >= MAX_STREAMS_PER_SESSION) {
      const oldest = session.streams.values().next().value;
      if (oldest) {
        session.streams.delete(oldest);
        endStream(oldest, "replaced");
      }
    }
    session.streams.add(res);
    const pump = (): void => {
      if (res.writableEnded || res.destroyed) return;
      if (session.expiresAt <= Date.now() || !this.#sessions.has(session.key)) {
        this.#endSession(session);
        endStream(res, "expired");
        return;
      }
      let records: StoredAuditRecord[];
      try {
        records = afterId === undefined ? this.#audit.list({ limit: AUDIT_BACKLOG }) : this.#audit.list({ afterId, limit: AUDIT_BATCH });
      } catch (error) {
        this.#log.warn(`dashboard: audit stream: ${errorText(error)}`);
        endStream(res, "unavailable");
        return;
      }
      const last = records[records.length - 1];
      if (last) afterId = last.id;
      else afterId ??= 0;
      if (records.length > 0) res.write(`event: audit\nid: ${afterId}\ndata: ${JSON.stringify(this.#secrets.redactValue(records))}\n\n`);
    };
    pump();
    res.write("event: ready\ndata: {}\n\n");
    const poll = setInterval(pump, AUDIT_POLL_MS).unref();
    const heartbeat = setInterval(() => {
      if (!res.writableEnded && !res.destroyed) res.write(": keep-alive\n\n");
    }, HEARTBEAT_MS).unref();
    res.on("close", () => {
      clearInterval(poll);
      clearInterval(heartbeat);
      session.streams.delete(res);
    });
  }

  // ---- emergency stop ----

  #stop(): unknown {
    const disconnected = this.#registry.list().map((b) => ({ id: b.info.browserId, label: b.info.label }));
    this.#stoppedAt ??= Date.now();
    this.#turnedAway = 0;
    try {
      this.#onEmergencyStop();
    } catch (error) {
      this.#log.error(`dashboard: emergency stop: ${errorText(error)}`);
    }
    // Whatever the callback did, nothing stays connected.
    for (const connection of this.#registry.list()) {
      connection.close("emergency stop from the dashboard");
      this.#registry.remove(connection);
    }
    this.#log.warn(`dashboard: EMERGENCY STOP: disconnected ${disconnected.length} browser(s); browsers are turned away until resumed from the dashboard`);
    return { stopped: true, stoppedAt: this.#stoppedAt, disconnected, remaining: this.#registry.list().length };
  }

  #resume(): unknown {
    const wasStopped = this.#stoppedAt !== undefined;
    this.#stoppedAt = undefined;
    if (wasStopped) this.#log.warn(`dashboard: emergency stop lifted; browsers may connect again (${this.#turnedAway} reconnect(s) were turned away)`);
    return { stopped: false, wasStopped };
  }
}

const LIMITED_BECAUSE: Readonly<Record<LoginScope, string>> = {
  "this machine": "Too many wrong tokens from this machine.",
  "this address": "Too many wrong tokens from this address.",
  "this dashboard": "Too many wrong tokens were tried on this dashboard.",
};

// ---- routes ----

interface Route {
  path: string;
  methods: readonly string[];
  kind: "page" | "asset" | "api";
}

const ROUTES: readonly Route[] = [
  { path: "/", methods: ["GET", "HEAD"], kind: "page" },
  { path: "/login", methods: ["GET", "HEAD", "POST"], kind: "page" },
  { path: "/logout", methods: ["POST"], kind: "page" },
  { path: "/dashboard/app.js", methods: ["GET", "HEAD"], kind: "asset" },
  { path: "/dashboard/app.css", methods: ["GET", "HEAD"], kind: "asset" },
  { path: "/dashboard/api/state", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/config", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/preview", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/audit", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/stop", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/resume", methods: ["POST"], kind: "api" },
];

// ---- HTTP helpers ----

function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "Content-Type": type, "Content-Length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

function sendText(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  send(res, status, "text/plain; charset=utf-8", body, { "Cache-Control": "no-store", ...headers });
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value), { "Cache-Control": "no-store" });
}

function sendJsonOrText(res: ServerResponse, kind: Route["kind"], status: number, message: string): void {
  if (kind === "api") sendJson(res, status, { error: message });
  else sendText(res, status, `dashboard: ${message}\n`);
}

function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.writeHead(303, { ...SECURITY_HEADERS, Location: location, "Cache-Control": "no-store", "Content-Length": 0, ...(cookies.length ? { "Set-Cookie": cookies } : {}) });
  res.end();
}

function endStream(res: ServerResponse, reason: string): void {
  if (res.writableEnded || res.destroyed) return;
  res.end(`event: ${reason}\ndata: {}\n\n`);
}

/** The form fields of a urlencoded body (empty for other types); undefined when it answered 413 itself. */
async function readForm(req: IncomingMessage, res: ServerResponse): Promise<URLSearchParams | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > BODY_MAX_BYTES) {
    sendText(res, 413, "dashboard: request body too large\n", { Connection: "close" });
    req.resume();
    return undefined;
  }
  const body = await new Promise<string | undefined>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_MAX_BYTES) {
        req.removeAllListeners("data");
        req.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
  if (body === undefined) {
    sendText(res, 413, "dashboard: request body too large\n", { Connection: "close" });
    return undefined;
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  return type === "application/x-www-form-urlencoded" ? new URLSearchParams(body) : new URLSearchParams();
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Origin must be exactly this dashboard's (so `null` never passes); without Origin, Referer's origin must be. */
function sameOrigin(req: IncomingMessage, expected: string): boolean {
  const origin = headerValue(req, "origin");
  if (origin !== undefined) return origin.toLowerCase() === expected;
  const referer = headerValue(req, "referer");
  if (!referer) return false;
  try {
    return new URL(referer).origin.toLowerCase() === expected;
  } catch {
    return false;
  }
}

function fetchSiteOk(req: IncomingMessage): boolean {
  const site = headerValue(req, "sec-fetch-site");
  return site === undefined || site === "same-origin" || site === "none";
}

function cookieValue(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Cookies are not separated by port: name them by port so that two brokers on one host keep their own. */
function sessionCookieName(req: IncomingMessage): string {
  return `tabrelay_session_${req.socket.localPort ?? 0}`;
}

function loginCookieName(req: IncomingMessage): string {
  return `tabrelay_login_${req.socket.localPort ?? 0}`;
}

function clearCookie(name: string, secure: boolean, path = "/"): string {
  return `${name}=; HttpOnly; SameSite=Strict; Path=${path}; Max-Age=0${secure ? "; Secure" : ""}`;
}

function isTls(req: IncomingMessage): boolean {
  return "encrypted" in req.socket && req.socket.encrypted === true;
}

function remoteAddress(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? "unknown";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

function hashId(id: string): string {
  return createHash("sha256").update(id).digest("hex");
}

function tabView(tab: TabInfo): TabView {
  return {
    tabId: Number(tab.tabId),
    windowId: Number(tab.windowId),
    url: pageString(tab.url),
    title: pageString(tab.title),
    active: tab.active === true,
    status: text(tab.status),
    shared: tab.shared === true,
  };
}

function text(value: unknown): string {
  const s = typeof value === "string" ? value : value === undefined || value === null ? "" : String(value);
  return s.length > TEXT_MAX ? `${s.slice(0, TEXT_MAX - 1)}…` : s;
}

/** A string a page (or a browser) chose: one line, without the controls that hide or reorder text. */
function pageString(value: unknown): string {
  return plainLine(text(value));
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// The dashboard: a page at `/` where the user sees what the agent does (browsers, tabs, a live picture, the
// audit log, the policy) and can pull the emergency stop. Behind a login that takes the access token; the
// session cookie opens only the dashboard, never /mcp (that door takes the bearer header alone).
import { createHash, createHmac, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import type { TabInfo, WireError } from "@tabrelay/protocol";
import type { AuditLog, StoredAuditRecord } from "../audit/auditLog.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { isLoopback, type BrokerConfig } from "../config/config.js";
import { builtExtensionDir } from "../launch/chromium.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import { safeEqual, type SecretRegistry } from "../util/secrets.js";
import { VERSION } from "../version.js";
import { LoginThrottle, type LoginScope } from "./loginThrottle.js";
import {
  clearCookie,
  cookieValue,
  fetchSiteOk,
  loginCookieName,
  readForm,
  redirect,
  sameOrigin,
  SECURITY_HEADERS,
  send,
  sendJson,
  sendJsonOrText,
  sendText,
  sessionCookieName,
} from "./http.js";
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
  /** The port the broker listens on (the Host check and the cookie names use it); undefined before it listens. */
  port: () => number | undefined;
}

/** What a request's connection tells, beyond the request itself. */
export interface Peer {
  /** The client's address (the login throttle counts by it). */
  remoteAddress: string;
}

/** An open audit stream, ended when its session ends or another replaces it. */
interface Stream {
  end(reason: string): void;
}

const SESSION_TTL_S = 12 * 60 * 60;
const MAX_SESSIONS = 64;
const LOGIN_FORM_TTL_S = 30 * 60;
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
  streams: Set<Stream>;
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
  readonly #port: () => number | undefined;
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
    this.#port = options.port;
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

  /** Serves `/`, `/login`, `/logout` and `/dashboard/*`; undefined for any other path (the caller answers it). */
  async handle(req: Request, peer: Peer): Promise<Response | undefined> {
    const url = new URL(req.url);
    const path = url.pathname;
    const query = url.searchParams;
    const method = req.method;
    const route = ROUTES.find((r) => r.path === path);
    if (!route) return undefined;
    const port = this.#port();

    const host = this.#checkedHost(req, port);
    if (host === undefined) {
      return sendText(403, "dashboard: this Host is not the broker's own (DNS rebinding protection); open the dashboard at the address tabrelay printed\n");
    }
    if (!route.methods.includes(method)) {
      return sendText(405, `dashboard: ${method} is not allowed here\n`, { Allow: route.methods.join(", ") });
    }
    if (route.kind === "asset") {
      const [type, body] = path.endsWith(".css") ? ["text/css; charset=utf-8", DASHBOARD_CSS] : ["text/javascript; charset=utf-8", DASHBOARD_JS];
      return send(200, type, body, { "Cache-Control": "no-cache" });
    }

    const tls = url.protocol === "https:";
    const session = this.#session(req, port);
    const origin = `${tls ? "https" : "http"}://${host}`;
    const post = method === "POST";
    // Fetch metadata, where the browser sends it: API calls and form posts must come from this very origin.
    if ((post || route.kind === "api") && !fetchSiteOk(req)) return sendJsonOrText(route.kind, 403, "this request came from another site");
    if (post && !sameOrigin(req, origin)) return sendJsonOrText(route.kind, 403, "Origin (or Referer) is missing or is not this dashboard's own");

    switch (path) {
      case "/":
        if (!session) return redirect("/login");
        return send(200, "text/html; charset=utf-8", dashboardPage({ csrf: session.csrf, version: VERSION }), { "Cache-Control": "no-store" });
      case "/login":
        if (post) return await this.#login(req, peer, port, tls);
        if (session) return redirect("/");
        return this.#sendLogin(port, tls, 200);
      case "/logout": {
        const form = await readForm(req);
        if (form instanceof Response) return form;
        if (session && safeEqual(form.get("csrf") ?? "", session.csrf)) this.#endSession(session);
        else if (session) return sendText(403, "dashboard: missing or wrong CSRF token\n");
        return redirect("/login", [clearCookie(sessionCookieName(port), tls)]);
      }
    }

    // API routes: a session, and for anything that changes state, its CSRF token.
    if (!session) return this.#json(401, { error: "not logged in, or the session expired; log in again at /login" });
    if (post) {
      const form = await readForm(req);
      if (form instanceof Response) return form;
      const token = req.headers.get("x-csrf-token") ?? form.get("csrf") ?? "";
      if (!safeEqual(token, session.csrf)) return this.#json(403, { error: "missing or wrong CSRF token; reload the dashboard" });
    }
    switch (path) {
      case "/dashboard/api/state":
        return this.#json(200, await this.#state());
      case "/dashboard/api/config":
        // The pairing code is shown to the logged-in user on purpose (they enter it in the extension's popup);
        // it is the one secret any exit shows, and it is set after the rest of the view is redacted.
        return sendJson(200, { ...this.#secrets.redactValue(this.#configView(port)), pairingToken: this.#config.pairingToken });
      case "/dashboard/api/preview":
        return await this.#preview(query);
      case "/dashboard/api/audit":
        return this.#auditStream(req, query, session);
      case "/dashboard/api/stop":
        return this.#json(200, this.#stop());
      case "/dashboard/api/resume":
        return this.#json(200, this.#resume());
    }
    return undefined;
  }

  /** Every JSON answer goes through the secrets registry: tab titles, URLs and errors come from pages and browsers. */
  #json(status: number, value: unknown): Response {
    return sendJson(status, this.#secrets.redactValue(value));
  }

  // ---- login, sessions ----

  async #login(req: Request, peer: Peer, port: number | undefined, tls: boolean): Promise<Response> {
    const form = await readForm(req);
    if (form instanceof Response) return form;
    const address = remoteAddress(peer);
    const now = Date.now();
    // Once limited, not even a right token is checked: the answer must not tell a guesser anything.
    const limit = this.#loginThrottle.check({ address }, now);
    if (!limit.ok) {
      const seconds = Math.ceil(limit.waitMs / 1000);
      return this.#sendLogin(port, tls, 429, `${LIMITED_BECAUSE[limit.scope]} Wait ${seconds} s, then try again.`, { "Retry-After": String(seconds) });
    }
    const nonce = cookieValue(req, loginCookieName(port)) ?? "";
    if (!nonce || !safeEqual(form.get("csrf") ?? "", this.#signLoginNonce(nonce))) return this.#sendLogin(port, tls, 403, "The login form expired. Enter the token again.");
    const given = form.get("token") ?? "";
    let accepted = false;
    for (const token of dashboardTokens(this.#config)) accepted = safeEqual(given.trim(), token) || accepted;
    if (!accepted) {
      this.#loginThrottle.failed({ address }, now);
      this.#log.warn(`dashboard: refused a login from ${address} (wrong token)`);
      return this.#sendLogin(port, tls, 401, "That token was not accepted.");
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
    return redirect("/", [
      `${sessionCookieName(port)}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_S}${tls ? "; Secure" : ""}`,
      clearCookie(loginCookieName(port), tls, "/login"),
    ]);
  }

  #sendLogin(port: number | undefined, tls: boolean, status: number, error?: string, headers: Record<string, string> = {}): Response {
    const nonce = randomBytes(24).toString("base64url");
    const cookie = `${loginCookieName(port)}=${nonce}; HttpOnly; SameSite=Strict; Path=/login; Max-Age=${LOGIN_FORM_TTL_S}${tls ? "; Secure" : ""}`;
    return send(status, "text/html; charset=utf-8", loginPage({ csrf: this.#signLoginNonce(nonce), ...(error ? { error } : {}) }), {
      "Cache-Control": "no-store",
      "Set-Cookie": cookie,
      ...headers,
    });
  }

  #signLoginNonce(nonce: string): string {
    return createHmac("sha256", this.#loginKey).update(nonce).digest("base64url");
  }

  #session(req: Request, port: number | undefined): Session | undefined {
    const id = cookieValue(req, sessionCookieName(port));
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
    for (const stream of session.streams) stream.end("expired");
    session.streams.clear();
  }

  #pruneSessions(now: number): void {
    for (const session of [...this.#sessions.values()]) if (session.expiresAt <= now) this.#endSession(session);
  }

  /** The Host header, if it names this broker (the same rule as /mcp's DNS-rebinding check). */
  #checkedHost(req: Request, port: number | undefined): string | undefined {
    const host = (req.headers.get("host") ?? "").toLowerCase();
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
  #configView(listening: number | undefined): Record<string, unknown> {
    const config = this.#config;
    let extensionDir: string | null = null;
    let extensionDirError: string | null = null;
    try {
      extensionDir = builtExtensionDir();
    } catch (error) {
      extensionDirError = errorText(error);
    }
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    const port = listening ?? config.port;
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

  async #preview(query: URLSearchParams): Promise<Response> {
    const browserId = query.get("browser") ?? "";
    const tabId = Number(query.get("tab") ?? Number.NaN);
    if (!browserId || !Number.isSafeInteger(tabId)) {
      return this.#json(400, { error: "pass browser (an id) and tab (a tab id)" });
    }
    const connection = this.#registry.list().find((b) => b.info.browserId === browserId);
    if (!connection) {
      return this.#json(200, { ok: false, error: { code: "unknown_browser", message: "that browser is not connected" } });
    }
    // Only tabs the agent may see: the same list the page shows, never any other tab of the user's.
    const tabs = await this.#tabs(connection);
    if (!tabs.ok) {
      return this.#json(200, { ok: false, error: tabs.error });
    }
    if (!tabs.value.some((t) => t.tabId === tabId)) {
      return this.#json(200, { ok: false, error: { code: "no_such_tab", message: `tab ${tabId} is not one of the agent's tabs (any more)` } });
    }
    return this.#json(200, await this.#capture(connection, tabId));
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
  #auditStream(req: Request, query: URLSearchParams, session: Session): Response {
    const resumeFrom = Number(req.headers.get("last-event-id") ?? query.get("after") ?? Number.NaN);
    let afterId = Number.isSafeInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : undefined;
    const encoder = new TextEncoder();
    let closed = false;
    let poll: ReturnType<typeof setInterval> | undefined;
    let heartbeat: ReturnType<typeof setInterval> | undefined;
    let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
    const stop = (): void => {
      closed = true;
      clearInterval(poll);
      clearInterval(heartbeat);
      session.streams.delete(stream);
    };
    const write = (chunk: string): void => {
      if (!closed) controller?.enqueue(encoder.encode(chunk));
    };
    const stream: Stream = {
      end: (reason) => {
        if (closed) return;
        write(`event: ${reason}\ndata: {}\n\n`);
        stop();
        controller?.close();
      },
    };
    const pump = (): void => {
      if (closed) return;
      if (session.expiresAt <= Date.now() || !this.#sessions.has(session.key)) {
        this.#endSession(session);
        stream.end("expired");
        return;
      }
      let records: StoredAuditRecord[];
      try {
        records = afterId === undefined ? this.#audit.list({ limit: AUDIT_BACKLOG }) : this.#audit.list({ afterId, limit: AUDIT_BATCH });
      } catch (error) {
        this.#log.warn(`dashboard: audit stream: ${errorText(error)}`);
        stream.end("unavailable");
        return;
      }
      const last = records[records.length - 1];
      if (last) afterId = last.id;
      else afterId ??= 0;
      if (records.length > 0) write(`event: audit\nid: ${afterId}\ndata: ${JSON.stringify(this.#secrets.redactValue(records))}\n\n`);
    };
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
        write("retry: 2000\n\n");
        if (session.streams.size >= MAX_STREAMS_PER_SESSION) {
          const oldest = session.streams.values().next().value;
          if (oldest) {
            session.streams.delete(oldest);
            oldest.end("replaced");
          }
        }
        session.streams.add(stream);
        pump();
        write("event: ready\ndata: {}\n\n");
        if (closed) return;
        poll = setInterval(pump, AUDIT_POLL_MS).unref();
        heartbeat = setInterval(() => write(": keep-alive\n\n"), HEARTBEAT_MS).unref();
      },
      // The client went away.
      cancel: stop,
    });
    return new Response(body, {
      status: 200,
      headers: { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" },
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

function remoteAddress(peer: Peer): string {
  const address = peer.remoteAddress;
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

// The dashboard: a page at `/` where the user sees what the agent does (browsers, tabs, a live picture, the
// audit log, the policy) and can pull the emergency stop. Behind a login that takes a dashboard token, never an MCP
// token (an agent holds that one); the session cookie opens only the dashboard, never /mcp (that door takes the
// bearer header alone).
// This module holds the routes and their door checks, and the emergency stop; the login and sessions are in
// sessions.ts, the API the page calls in api.ts (its audit stream in auditStream.ts), the HTML in page.ts.
import type { AuditLog } from "../audit/auditLog.js";
import type { ClusterLink } from "../tools/clusterLink.js";
import type { Forwarding } from "../http/forwarded.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import type { PageToolRegistry } from "../pages/registry.js";
import { isLoopback, type BrokerConfig } from "../config/config.js";
import type { ConfigStatus } from "../config/reload.js";
import type { Logger } from "../util/log.js";
import { safeEqual, type SecretRegistry } from "../util/secrets.js";
import { VERSION } from "../version.js";
import { DashboardApi } from "./api.js";
import type { AuditSource } from "./auditStream.js";
import { CHAT_FORM_MAX_BYTES, ChatRoutes, type DashboardChat } from "./chat.js";
import { clearCookie, fetchSiteOk, readForm, redirect, sameOrigin, send, sendJson, sendJsonOrText, sendText, sessionCookieName } from "./http.js";
import { CLIENT_ASSETS, dashboardPage } from "./page.js";
import { DashboardSessions, type Peer } from "./sessions.js";
import type { Principal } from "../users/principal.js";
import type { AskDesk } from "../gate/asks.js";
import type { DashboardUsers } from "./api.js";

export type { Peer } from "./sessions.js";

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
  /** Page tools (absent unless config names pages.allowed_origins): listed, and a changed one approved, here. */
  pages?: { registry: PageToolRegistry } | undefined;
  /** Whose forwarded headers are believed (mcp.trusted_proxies): the load balancer's scheme, host and client address. */
  forwarding: Forwarding;
  /** Whose a dashboard token is (users/users.ts authenticateDashboard): the broker's own dashboard token or a user's. */
  authenticate: (token: string) => Promise<Principal | undefined>;
  /** Signs the login form's nonce (sessions.ts): the same on every broker of a cluster. */
  loginKey: Uint8Array;
  /** Whether a login another broker of the cluster opened is still good (its user not revoked since). */
  stillValid: (principal: Principal) => Promise<boolean>;
  /** The team's users, for an admin: listed and revoked from the dashboard. */
  users: DashboardUsers;
  /** config.yaml as the broker last read it; undefined where nothing watches a file. */
  configStatus: () => ConfigStatus | undefined;
  /** The questions put to the user (policy.ask): shown and answered here. */
  asks: AskDesk;
}

export class Dashboard {
  readonly #registry: BrowserRegistry;
  readonly #config: BrokerConfig;
  readonly #log: Logger;
  readonly #secrets: SecretRegistry;
  readonly #onEmergencyStop: () => void;
  readonly #port: () => number | undefined;
  readonly #sessions: DashboardSessions;
  readonly #forwarding: Forwarding;
  readonly #api: DashboardApi;
  readonly #chat: ChatRoutes;
  #stoppedAt: number | undefined;
  #turnedAway = 0;
  #link: ClusterLink | undefined;

  constructor(options: DashboardOptions) {
    this.#registry = options.registry;
    this.#config = options.config;
    this.#log = options.log;
    this.#secrets = options.secrets;
    this.#onEmergencyStop = options.onEmergencyStop;
    this.#port = options.port;
    this.#forwarding = options.forwarding;
    this.#sessions = new DashboardSessions({
      log: options.log,
      authenticate: options.authenticate,
      loginKey: options.loginKey,
      stillValid: options.stillValid,
    });
    this.#api = new DashboardApi({
      registry: options.registry,
      audit: options.audit,
      config: options.config,
      log: options.log,
      secrets: options.secrets,
      sessions: this.#sessions,
      stoppedAt: () => this.#stoppedAt,
      stop: () => this.#stop(),
      resume: () => this.#resume(),
      users: options.users,
      configStatus: options.configStatus,
      asks: options.asks,
      ...(options.pages ? { pages: { registry: options.pages.registry, policy: () => options.config.pages.toolPolicy } } : {}),
    });
    this.#chat = new ChatRoutes({ config: options.config, log: options.log, secrets: options.secrets });
    // The extension reconnects within a second of being closed; a stop that lasted that long would be no stop.
    this.#registry.on("connected", (connection) => {
      if (this.#stoppedAt === undefined) return;
      if (this.#turnedAway++ === 0)
        this.#log.warn(`dashboard: emergency stop in effect; turning away browser "${connection.info.label}" and any other until resumed`);
      connection.close("emergency stop in effect; resume from the tabrelay dashboard");
      this.#registry.remove(connection);
    });
  }

  /**
   * A cluster member's dashboard: logins good on every broker, the browsers of every broker shown (and on PostgreSQL,
   * `sharedAudit`: every broker's records in the activity view), and one emergency
   * stop for the whole cluster (a browser turned away here would otherwise redial through the load balancer to a
   * broker that had not heard of it).
   */
  useCluster(link: ClusterLink, sharedAudit?: AuditSource): void {
    this.#link = link;
    this.#sessions.useCluster(link);
    this.#api.useCluster(link, sharedAudit);
    link.emergencyStop.onChange((at) =>
      at === undefined ? this.#resumeHere("another broker of the cluster") : this.#stopHere(at, "another broker of the cluster"),
    );
    const at = link.emergencyStop.at;
    if (at !== undefined) this.#stopHere(at, "the cluster (in effect when this broker joined)");
  }

  /** Gives the dashboard its chat panel (the CLI mounts @tabrelay/chat's when a model key is configured). */
  mountChat(chat: DashboardChat): void {
    this.#chat.mount(chat);
  }

  /** The users with a dashboard open. */
  users(): Set<string> {
    return this.#sessions.users();
  }

  /** Logs a revoked user's dashboards out. */
  endUser(user: string): void {
    this.#sessions.endUser(user);
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

    const checked = this.#checkedHost(req, port);
    if (checked === undefined) {
      return sendText(403, "dashboard: this Host is not the broker's own (DNS rebinding protection); open the dashboard at the address tabrelay printed\n");
    }
    if (!route.methods.includes(method)) {
      return sendText(405, `dashboard: ${method} is not allowed here\n`, { Allow: route.methods.join(", ") });
    }
    const asset = CLIENT_ASSETS.get(path);
    if (asset) return send(200, asset.type, asset.body, { "Cache-Control": "no-cache" });
    // `tabrelay ask` on the broker's machine: the dashboard credential as a bearer header, no cookie, no session.
    if (route.bearer && req.headers.has("authorization") && !req.headers.has("cookie")) return await this.#bearer(req, peer, path, checked);

    // Behind a TLS load balancer (deploy/nginx.conf) the broker is reached over plain HTTP: the balancer's
    // X-Forwarded-Proto and -Host say what the browser used, for the Origin check and the cookies' Secure flag, and
    // its X-Real-IP which client the login throttle counts; believed from a peer of mcp.trusted_proxies only.
    const arrival = this.#forwarding.arrival(req.headers, peer.remoteAddress, checked);
    const { tls, origin } = arrival;
    // The cookies' names carry the port the browser uses (brokers on one machine must not share them): behind a load
    // balancer that is the balancer's, the same whichever broker answers.
    const cookiePort = arrival.proxied ? Number(/:(\d+)$/.exec(arrival.host)?.[1] ?? (tls ? 443 : 80)) : port;
    const post = method === "POST";
    // Fetch metadata, where the browser sends it: API calls and form posts must come from this very origin.
    if ((post || route.kind === "api") && !fetchSiteOk(req)) return sendJsonOrText(route.kind, 403, "this request came from another site");
    if (post && !sameOrigin(req, origin)) return sendJsonOrText(route.kind, 403, "Origin (or Referer) is missing or is not this dashboard's own");
    const session = await this.#sessions.of(req, cookiePort);

    switch (path) {
      case "/":
        if (!session) return redirect("/login");
        return send(200, "text/html; charset=utf-8", dashboardPage({ csrf: session.csrf, version: VERSION }), { "Cache-Control": "no-store" });
      case "/login":
        // Behind the load balancer every request comes from it: its X-Real-IP names the client the login throttle counts.
        if (post) return await this.#sessions.login(req, { remoteAddress: arrival.client ?? peer.remoteAddress }, cookiePort, tls);
        if (session) return redirect("/");
        return this.#sessions.loginForm(cookiePort, tls, 200);
      case "/logout": {
        const form = await readForm(req);
        if (form instanceof Response) return form;
        if (session && safeEqual(form.get("csrf") ?? "", session.csrf)) await this.#sessions.end(session);
        else if (session) return sendText(403, "dashboard: missing or wrong CSRF token\n");
        return redirect("/login", [clearCookie(sessionCookieName(cookiePort), tls)]);
      }
    }

    // API routes: a session, and for anything that changes state, its CSRF token.
    if (!session) return this.#json(401, { error: "not logged in, or the session expired; log in again at /login" });
    let form: URLSearchParams | undefined;
    if (post) {
      const read = await readForm(req, path === "/dashboard/api/chat" ? CHAT_FORM_MAX_BYTES : undefined);
      if (read instanceof Response) return read;
      const token = req.headers.get("x-csrf-token") ?? read.get("csrf") ?? "";
      if (!safeEqual(token, session.csrf)) return this.#json(403, { error: "missing or wrong CSRF token; reload the dashboard" });
      form = read;
    }
    if (path.startsWith("/dashboard/api/chat")) return this.#chat.handle(path, session, form);
    // What reaches every user's browsers at once (the emergency stop, the team's users) is an admin's.
    if (ADMIN_ONLY.has(path) && session.principal.role !== "admin") {
      return this.#json(403, { error: `only an admin can do this (${session.principal.name} is a member); ask an admin of this broker` });
    }
    return this.#api.handle(path, req, query, session, port, form);
  }

  #json(status: number, value: unknown): Response {
    return sendJson(status, this.#secrets.redactValue(value));
  }

  /** A bearer request to a route that takes one (the questions, for `tabrelay ask`), answered as the session's would be. */
  async #bearer(req: Request, peer: Peer, path: string, host: string): Promise<Response> {
    const arrival = this.#forwarding.arrival(req.headers, peer.remoteAddress, host);
    const principal = await this.#sessions.bearer(req, { remoteAddress: arrival.client ?? peer.remoteAddress });
    if (!("user" in principal)) return sendJson(principal.status, { error: principal.message });
    let form: URLSearchParams | undefined;
    if (req.method === "POST") {
      const read = await readForm(req);
      if (read instanceof Response) return read;
      form = read;
    }
    return (await this.#api.asks(path, principal, form, "cli")) ?? this.#json(404, { error: "not found" });
  }

  /** The Host header, lower-cased, if it names this broker (the same rule as /mcp's DNS-rebinding check). */
  #checkedHost(req: Request, port: number | undefined): string | undefined {
    const host = (req.headers.get("host") ?? "").toLowerCase();
    if (!host || port === undefined) return undefined;
    const configured = this.#config.host.includes(":") ? `[${this.#config.host}]` : this.#config.host;
    const names = isLoopback(this.#config.host) ? [configured, "localhost", "127.0.0.1", "[::1]"] : [configured];
    if (names.some((n) => `${n}:${port}`.toLowerCase() === host)) return host;
    return this.#config.allowedHosts.some((h) => h.toLowerCase() === host) ? host : undefined;
  }

  // ---- emergency stop ----

  async #stop(): Promise<unknown> {
    const at = this.#stoppedAt ?? Date.now();
    const disconnected = this.#stopHere(at, "the dashboard");
    let cluster: unknown;
    if (this.#link) {
      // Every other broker stops too; if Redis cannot take it, this broker is stopped and the page says the rest are not.
      cluster = await this.#link.emergencyStop.set(at).then(
        () => ({ ok: true, brokers: this.#link?.peers().length ?? 0 }),
        (error: unknown) => ({
          ok: false,
          error: `the other brokers could not be told (${error instanceof Error ? error.message : String(error)}); stop again, or stop them one by one`,
        }),
      );
    }
    return { stopped: true, stoppedAt: this.#stoppedAt, disconnected, remaining: this.#registry.list().length, ...(cluster ? { cluster } : {}) };
  }

  /** Puts the stop in effect on this broker: every browser here disconnected, and turned away until resumed. */
  #stopHere(at: number, by: string): Array<{ id: string; label: string }> {
    const disconnected = this.#registry.list().map((b) => ({ id: b.info.browserId, label: b.info.label }));
    const already = this.#stoppedAt !== undefined;
    this.#stoppedAt ??= at;
    if (!already) this.#turnedAway = 0;
    try {
      this.#onEmergencyStop();
    } catch (error) {
      this.#log.error(`dashboard: emergency stop: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Whatever the callback did, nothing stays connected.
    for (const connection of this.#registry.list()) {
      connection.close("emergency stop from the dashboard");
      this.#registry.remove(connection);
    }
    this.#log.warn(
      `dashboard: EMERGENCY STOP from ${by}: disconnected ${disconnected.length} browser(s); browsers are turned away until resumed from the dashboard`,
    );
    return disconnected;
  }

  async #resume(): Promise<unknown> {
    const wasStopped = this.#resumeHere("the dashboard");
    let cluster: unknown;
    if (this.#link) {
      cluster = await this.#link.emergencyStop.set(undefined).then(
        () => ({ ok: true, brokers: this.#link?.peers().length ?? 0 }),
        (error: unknown) => ({
          ok: false,
          error: `the other brokers could not be told (${error instanceof Error ? error.message : String(error)}); resume again`,
        }),
      );
    }
    return { stopped: false, wasStopped, ...(cluster ? { cluster } : {}) };
  }

  #resumeHere(by: string): boolean {
    const wasStopped = this.#stoppedAt !== undefined;
    this.#stoppedAt = undefined;
    if (wasStopped)
      this.#log.warn(`dashboard: emergency stop lifted from ${by}; browsers may connect again (${this.#turnedAway} reconnect(s) were turned away)`);
    return wasStopped;
  }
}

// ---- routes ----

interface Route {
  path: string;
  methods: readonly string[];
  kind: "page" | "asset" | "api";
  /** Also reached with the dashboard credential as a bearer header (`tabrelay ask`), without a session. */
  bearer?: true;
}

const ROUTES: readonly Route[] = [
  { path: "/", methods: ["GET", "HEAD"], kind: "page" },
  { path: "/login", methods: ["GET", "HEAD", "POST"], kind: "page" },
  { path: "/logout", methods: ["POST"], kind: "page" },
  ...[...CLIENT_ASSETS.keys()].map((path): Route => ({ path, methods: ["GET", "HEAD"], kind: "asset" })),
  { path: "/dashboard/api/state", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/config", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/preview", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/audit", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/stop", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/resume", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/pages/approve", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/chat", methods: ["GET", "POST"], kind: "api" },
  { path: "/dashboard/api/chat/stop", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/chat/reset", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/users", methods: ["GET"], kind: "api" },
  { path: "/dashboard/api/users/revoke", methods: ["POST"], kind: "api" },
  { path: "/dashboard/api/asks", methods: ["GET"], kind: "api", bearer: true },
  { path: "/dashboard/api/asks/answer", methods: ["POST"], kind: "api", bearer: true },
  { path: "/dashboard/api/policy", methods: ["POST"], kind: "api" },
];

const ADMIN_ONLY = new Set([
  "/dashboard/api/stop",
  "/dashboard/api/resume",
  "/dashboard/api/pages/approve",
  "/dashboard/api/users",
  "/dashboard/api/users/revoke",
  "/dashboard/api/policy",
]);

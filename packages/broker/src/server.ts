import { createHash, randomBytes } from "node:crypto";
import type { Server } from "node:http";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { BridgeServer } from "./drivers/extension/bridgeServer.js";
import { PageTools } from "./pages/index.js";
import type { BrowserDriver } from "./drivers/driver.js";
import { BrowserRegistry } from "./drivers/registry.js";
import { isLoopback, type NodeBrokerConfig } from "./config/config.js";
import { HttpSessions } from "./mcp/httpSessions.js";
import { Answering } from "./http/answering.js";
import type { Cluster } from "./cluster/cluster.js";
import { openStore } from "./users/open.js";
import { brokerIdentity } from "./cluster/identity.js";
import { createNodeServer } from "./http/nodeServer.js";
import { AuditLog } from "./audit/auditLog.js";
import { Dashboard } from "./dashboard/dashboard.js";
import { loginKeyFrom } from "./dashboard/sessions.js";
import { openAskDesk } from "./dashboard/browserDoor.js";
import type { DashboardChat } from "./dashboard/chat.js";
import { createHttpApp, type HttpApp } from "./app.js";
import { dashboardTeam } from "./dashboard/team.js";
import { Door } from "./http/door.js";
import { Forwarding } from "./http/forwarded.js";
import { registerBrowser } from "./http/registerBrowser.js";
import { OAuthResource } from "./auth/oauth.js";
import { Users } from "./users/users.js";
import { DEFAULT_USER_ID, ownerOf } from "./users/principal.js";
import type { User } from "./store/store.js";
import { LocalScreenshotStore, S3ScreenshotStore, type ScreenshotStore } from "./screenshots/store.js";
import { DocCache } from "./tools/docCache.js";
import { toolsFor } from "./catalog.js";
import { apiDocs } from "./code/browserRun.js";
import { lazySandbox } from "./code/sandbox.js";
import { useNodeExtractRunner } from "./extract/nodeRunner.js";
import { warmExtraction } from "./extract/runner.js";
import { enforceOnCommit } from "./gate/enforce.js";
import { tabLeases } from "./gate/leases.js";
import { Denials } from "./gate/tabRecord.js";
import type { AskDesk } from "./gate/asks.js";
import { ReadAllowances } from "./gate/readAllowances.js";
import { SnapshotCache } from "./tools/snapshotCache.js";
import { answerStartedBrowsers } from "./tools/sessions.js";
import type { ToolContext } from "./tools/tool.js";
import { Idempotency } from "./tools/idempotency.js";
import { AuditShipper } from "./audit/shipper.js";
import { configFor } from "./config/userPolicies.js";
import { ConfigReloader, type ConfigStatus } from "./config/reload.js";
import { announceReload } from "./liveConfig.js";
import { healthOf } from "./http/health.js";
import { TabrelayError } from "./util/errors.js";
import { SecretRegistry } from "./util/secrets.js";
import { redactingLogger, type Logger } from "./util/log.js";
import { createLogger } from "./util/stderrLog.js";
import { PROVIDER_KEY_VARS } from "./launch/providers.js";
import { CHAT_KEY_VARS } from "./config/chat.js";
import { BrowserSessions } from "./launch/sessions.js";
import { VERSION } from "./version.js";
import { CdpAttacher, type CdpAttachOptions } from "./cdpAttach.js";

/** How often the broker looks for users revoked outside it (their browsers are then disconnected). */
/** How soon the open streams and browsers of a user revoked elsewhere are ended (a request of theirs is refused at once). */
const USER_SWEEP_MS = 1000;
/** Where RFC 9728 metadata is looked for: the path-suffixed URL for /mcp, and the root one some clients try first. */

export interface BrokerOptions {
  config: NodeBrokerConfig;
  log?: Logger;
  /** Tests shorten the unauthenticated-socket timeout. */
  helloTimeoutMs?: number;
  /** Re-read config.yaml when it changes (config/reload.ts); default true. */
  watchConfig?: boolean;
}

/** The broker: /mcp for agents, /bridge for browsers, /health for humans and scripts. */
export class Broker {
  readonly config: NodeBrokerConfig;
  readonly registry = new BrowserRegistry();
  readonly context: ToolContext;
  readonly audit: AuditLog;
  /** The questions put to the user (policy.ask), answered from the dashboard or `tabrelay ask`. */
  readonly asks: AskDesk;
  /** The sites the user allowed once for a tab (policy.ask.read): the gate's judges and both drivers' networks. */
  readonly readAllowances = new ReadAllowances();
  /** Who the MCP tokens and pairing codes belong to (the implicit user, and a team's users in the store). */
  readonly users: Users;
  /** Whose forwarded headers are believed: mcp.trusted_proxies (http/forwarded.ts), one rule for the door and the dashboard. */
  readonly #forwarding: Forwarding;
  /** Who may come in through /mcp, /browsers and /page-tokens (http/door.ts); the dashboard's login has its own token. */
  readonly #door: Door;
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
  #baseUrl = "";
  readonly #screenshots: ScreenshotStore | undefined;
  readonly #localShots: LocalScreenshotStore | undefined;
  /** CDP endpoints attached or being attached: the same endpoint twice is the same browser. */
  readonly #cdp: CdpAttacher;
  readonly #answering = new Answering();
  /** Code mode's sandbox pool: started by the first browser_run, closed with the broker. */
  readonly #sandbox = lazySandbox();
  /** The browsers the model starts (config `browsers:`); absent without a source. */
  readonly #browserSessions: BrowserSessions | undefined;
  /** Tools web pages offer over /page; absent unless config names pages.allowed_origins. */
  readonly pages: PageTools | undefined;
  #closing = false;
  #draining = false;
  #shipper: AuditShipper | undefined;
  /**
   * How the cluster's presence and the shared audit log name this broker: config's cluster.broker_id, else an id kept
   * in the data dir (the same across restarts, so its copied audit records continue where they stopped).
   */
  get brokerId(): string {
    return (this.#brokerId ??= this.config.cluster.brokerId ?? brokerIdentity(this.config.dataDir));
  }
  #brokerId: string | undefined;
  #cluster: Cluster | undefined;
  #sweep: ReturnType<typeof setInterval> | undefined;
  /** config.yaml, watched while the broker listens. */
  #reloader: ConfigReloader | undefined;
  readonly #watchConfig: boolean;

  constructor(options: BrokerOptions) {
    this.config = options.config;
    this.#watchConfig = (options.watchConfig ?? true) && this.config.dataDir !== "";
    // Reads convert on worker threads, which the runtime-neutral core cannot choose itself.
    useNodeExtractRunner();
    // A browser that connects is read soon: a worker loads the conversion libraries meanwhile (ended if idle).
    this.registry.on("connected", () => warmExtraction());
    this.secrets.register(this.config.mcpToken, "mcp token");
    this.secrets.register(this.config.dashboardToken, "dashboard token");
    this.secrets.register(this.config.pairingToken, "pairing token");
    // A hosted provider's key is a secret whether or not this broker creates the session (the CLI does).
    for (const name of PROVIDER_KEY_VARS) this.secrets.register(process.env[name]?.trim(), "provider key");
    for (const name of CHAT_KEY_VARS) this.secrets.register(process.env[name]?.trim(), "model key");
    this.#log = redactingLogger(options.log ?? createLogger(), this.secrets);
    this.audit = AuditLog.open(this.config.dataDir, this.secrets);
    this.#cdp = new CdpAttacher({
      registry: this.registry,
      config: () => this.config,
      secrets: this.secrets,
      log: this.#log,
      webmcp: () => this.config.pages.webmcp && this.pages !== undefined,
      closing: () => this.#closing,
      readAllowances: this.readAllowances,
    });
    this.secrets.register(this.config.store.postgresUrl, "secret");
    this.secrets.register(this.config.cluster.redisUrl, "secret");
    this.users = new Users({
      store: openStore(this.config),
      mcpToken: this.config.mcpToken,
      dashboardToken: this.config.dashboardToken,
      pairingToken: this.config.pairingToken,
      secrets: this.secrets,
    });
    this.#forwarding = new Forwarding(this.config.trustedProxies, this.#log);
    this.#door = new Door({
      users: this.users,
      oauth: this.config.oauth ? new OAuthResource({ ...this.config.oauth, resourceName: "tabrelay" }) : undefined,
      issuer: this.config.oauth?.issuer,
      allowedOrigins: this.config.allowedOrigins,
      forwarding: this.#forwarding,
      log: this.#log,
    });
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
      ? new BrowserSessions({
          settings: source,
          registry: this.registry,
          attach: (endpoint, opts) => this.attachCdp(endpoint, opts),
          secrets: this.secrets,
          log: this.#log,
        })
      : undefined;
    this.pages =
      this.config.pages.allowedOrigins.length > 0
        ? new PageTools({
            dataDir: this.config.dataDir,
            ...(this.config.pages.webmcp ? { webmcp: this.registry } : {}),
            mcpToken: this.config.mcpToken,
            allowedOrigins: this.config.pages.allowedOrigins,
            callTimeoutMs: this.config.pages.callTimeoutMs,
            tokenTtlSeconds: this.config.pages.tokenTtlSeconds,
            audit: this.audit,
            log: this.#log,
          })
        : undefined;
    // The questions put to the user (policy.ask), and the extension's notifications and popup that show them.
    this.asks = openAskDesk({ registry: this.registry, audit: this.audit, config: this.config, log: this.#log }, this.readAllowances);
    this.context = {
      registry: this.registry,
      config: this.config,
      asks: this.asks,
      readAllowances: this.readAllowances,
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
      idempotency: new Idempotency(() => this.users.store()),
    };
    enforceOnCommit(this.context);
    this.#sessions = new HttpSessions(this.context, toolsFor(this.config), this.config.mcpSessions, this.pages?.dynamic);
    this.#bridge = new BridgeServer({
      registry: this.registry,
      pairingKey: (id) => this.users.pairingKey(id),
      extensionIds: () => this.config.extensionIds,
      configPath: this.config.configPath,
      callTimeoutMs: () => this.config.callTimeoutMs,
      brokerVersion: VERSION,
      navigationRules: (owner) => configFor(this.config, owner.name).policy.navigationRules(),
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
      forwarding: this.#forwarding,
      // A dashboard token only: never what /mcp takes (an MCP token, an OAuth access token), which agents hold.
      authenticate: (token) => this.users.authenticateDashboard(token),
      loginKey: loginKeyFrom(this.config.mcpToken),
      stillValid: (principal) => this.users.stillLive(principal),
      users: dashboardTeam({
        users: this.users,
        registry: this.registry,
        remoteBrowsers: (user) => this.#cluster?.remoteBrowsers(user).length ?? 0,
        revoke: async (name) => ({ name: (await this.revokeUser(name)).name }),
      }),
      configStatus: () => this.#reloader?.status(),
      asks: this.asks,
    });
    this.app = createHttpApp({
      authenticate: (headers, peerAddress) => this.#door.authenticate(headers, peerAddress),
      resourceMetadata: this.#door.resourceMetadata(),
      health: () => healthOf(this.registry, this.audit, this.secrets),
      ready: () => this.#ready(),
      mcpToken: this.config.mcpToken,
      registerBrowser: (req) =>
        registerBrowser(req, {
          door: this.#door,
          secrets: this.secrets,
          refusal: () =>
            this.#dashboard.stopped
              ? { code: "stopped", message: "the broker was stopped from the dashboard; resume there first" }
              : this.#closing
                ? { code: "not_connected", message: "the broker is shutting down" }
                : undefined,
          known: (endpoint) => this.#cdp.known(endpoint),
          attach: (endpoint, options) => this.attachCdp(endpoint, { ...options, ownsBrowser: false }),
        }),
      pageTokens: this.pages?.answerTokenRequest.bind(this.pages),
      mcp: (req, principal) => this.#sessions.handle(req, principal),
      apiDocs: () => apiDocs(this.config),
      screenshots: this.#localShots ? (req) => this.#localShots?.handle(req) : undefined,
      dashboard: this.#dashboard,
      log: this.#log,
    });
    this.#http = createNodeServer({
      fetch: (req, env) => this.app.fetch(req, env),
      answering: this.#answering,
      upgrade: (path, req, socket, head) => {
        // After an emergency stop, browsers stay out until the user resumes from the dashboard; a refused
        // upgrade (rather than an accepted-then-closed socket) lets the extension back off. 403, not 503: the stop is
        // the whole cluster's, so there is no other broker to try, and a load balancer counts a 503 as this broker
        // failing (deploy/nginx.conf: proxy_next_upstream http_503, max_fails=1) and would bench every broker in turn,
        // agents and the dashboard's resume included. 503 means one thing here: this broker is going, try another.
        if (path === "/bridge" && this.#dashboard.stopped) socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\nstopped from the dashboard\n");
        // Draining: a browser dialling in goes to another broker (the load balancer retries elsewhere).
        else if (this.#draining || this.#closing) socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\ndraining\n");
        else if (path === "/bridge") this.#bridge.handleUpgrade(req, socket, head);
        else if (path === "/page" && this.pages) this.pages.socket.handleUpgrade(req, socket, head);
        else socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
      },
    });
  }

  /** The dashboard's chat panel: a chat from @tabrelay/chat (which the broker cannot import: it depends on the broker). */
  mountDashboardChat(chat: DashboardChat): void {
    this.#dashboard.mountChat(chat);
  }

  /**
   * Revokes a user: their tokens and dashboard logins stop working at the next request and their browsers are
   * disconnected now (on this broker; after `tabrelay users revoke` against the store, the sweep ends their browsers
   * and open dashboard streams within USER_SWEEP_MS, and any request of theirs is refused at once).
   */
  async revokeUser(idOrName: string): Promise<User> {
    const user = await this.users.revoke(idOrName);
    this.#disconnectUser(user.id, "its user was revoked");
    this.#dashboard.endUser(user.id);
    return user;
  }

  #disconnectUser(userId: string, reason: string): void {
    for (const driver of this.registry.list(userId)) {
      driver.close(reason);
      this.registry.remove(driver);
    }
  }

  /** Disconnects the browsers of users revoked elsewhere (the CLI, another broker sharing the store). */
  async #sweepRevoked(): Promise<void> {
    const owners = new Set([...this.registry.list().map((b) => ownerOf(b.info)), ...this.#dashboard.users()].filter((o) => o !== DEFAULT_USER_ID));
    if (owners.size === 0) return;
    const store = await this.users.store();
    for (const owner of owners) {
      const user = await store.user(owner);
      if (!user || user.revokedAt !== undefined) {
        this.#disconnectUser(owner, "its user was revoked");
        this.#dashboard.endUser(owner);
      }
    }
  }

  /** config.yaml as the broker last read it: in force, or a refused change's line and reason; undefined if unwatched. */
  configStatus(): ConfigStatus | undefined {
    return this.#reloader?.status();
  }

  /** Open MCP sessions over HTTP. */
  get mcpSessions(): number {
    return this.#sessions.size;
  }

  /** Listens; rejects with EADDRINUSE when another process owns the port. */
  async listen(): Promise<{ port: number; url: string }> {
    // A store that cannot be opened (PostgreSQL unreachable, a newer schema) stops the start with its reason.
    const store = await this.users.store();
    if (store.engine === "postgres") {
      // A team's shared store: this broker's audit records are copied there too (audit/shipper.ts).
      this.#shipper = new AuditShipper(this.audit, store, this.brokerId, this.#log);
      this.#shipper.start();
    }
    if (this.config.cluster.redisUrl) await this.#joinCluster(this.config.cluster.redisUrl);
    // Tab leases kept in the shared store: a browser that moves to another broker stays held as it was.
    if (this.config.cluster.redisUrl && store.engine === "postgres")
      tabLeases(this.registry, this.config).share(store, this.registry, (message) => this.#log.warn(message));
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
    this.#door.allowHosts([...names.map((n) => `${n}:${port}`), ...this.config.allowedHosts]);
    this.#baseUrl = `http://${host}:${port}`;
    if (this.#watchConfig) {
      this.#reloader = new ConfigReloader({
        config: this.config,
        onReload: (outcome) => announceReload(outcome, { config: this.config, registry: this.registry, audit: this.audit, log: this.#log }),
      });
      this.#reloader.start();
    }
    this.#sweep = setInterval(
      () =>
        void this.#sweepRevoked().catch((error: unknown) =>
          this.#log.warn(`users: could not check for revoked users: ${error instanceof Error ? error.message : String(error)}`),
        ),
      USER_SWEEP_MS,
    );
    this.#sweep.unref();
    return { port, url: this.#baseUrl };
  }

  /**
   * Drives a browser over the DevTools protocol (a local Chromium we launched, or an attached endpoint): cdpAttach.ts.
   */
  attachCdp(endpoint: string, options: CdpAttachOptions): Promise<BrowserDriver> {
    if (this.#closing) return Promise.reject(new TabrelayError("not_connected", "the broker is shutting down"));
    return this.#cdp.attach(endpoint, options);
  }

  /**
   * Graceful stop for a cluster member (SIGTERM): not ready any more and no new browser, the calls in flight
   * here (from /mcp and forwarded from other brokers) finish for up to `graceMs`, then the browsers are told to
   * reconnect (close code 1012, "draining": the extension dials again at once, through the load balancer, to another
   * broker), and the broker closes.
   */
  async drain(graceMs = 10_000): Promise<void> {
    this.#draining = true;
    await this.#cluster?.drain();
    const until = Date.now() + graceMs;
    while (Date.now() < until && (this.#answering.open > 0 || (this.#cluster?.running ?? 0) > 0)) await new Promise((resolve) => setTimeout(resolve, 50));
    // Out of the cluster before the browsers go, so that no broker lists them once a call failed for their going.
    await this.#cluster?.leave();
    for (const browser of this.registry.list()) browser.close("draining", 1012);
    await this.close();
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweep);
    this.#reloader?.close();
    // Out of the cluster first: its browsers withdrawn and a goodbye said, so other brokers fail calls at once.
    await this.#cluster?.leave();
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
    await this.#shipper?.stop();
    await this.users.store().then(
      (store) => store.close(),
      () => undefined,
    );
    this.audit.close();
  }

  /** Loaded only for a cluster member: a single broker never pays for Redis. */
  async #joinCluster(redisUrl: string): Promise<void> {
    const [{ Cluster }, { runForwarded }, { programTools }] = await Promise.all([
      import("./cluster/cluster.js"),
      import("./tools/runner.js"),
      import("./catalog.js"),
    ]);
    const fingerprint = createHash("sha256").update(`${this.config.mcpToken}\n${this.config.pairingToken}`).digest("hex").slice(0, 16);
    const cluster = await Cluster.join({ redisUrl, registry: this.registry, log: this.#log, fingerprint, brokerId: this.brokerId });
    const byName = new Map([...toolsFor(this.config), ...programTools].map((tool) => [tool.name, tool]));
    cluster.onCall(async (call, signal) => {
      // A page tool of a page connected here (pages/clustered.ts), looked up here only: never carried on again.
      const tool = byName.get(call.tool) ?? this.pages?.localTool(call.tool, call.user.user);
      if (!tool)
        return {
          result: { text: `invalid_params: this broker has no tool ${call.tool} (brokers of different versions?)`, isError: true },
          dispatched: false,
          unknown: false,
        };
      return runForwarded(tool, this.context, call, signal);
    });
    // DELETE /mcp on any broker ends the session on all of them (this one included): leases end, its tabs close.
    cluster.sessions.onEnded((id) => this.#sessions.endShared(id));
    this.pages?.useCluster(cluster);
    const store = await this.users.store();
    this.#dashboard.useCluster(cluster, store.engine === "postgres" ? (options) => store.audit(options) : undefined);
    if (this.#browserSessions) answerStartedBrowsers(cluster, this.#browserSessions);
    this.#cluster = cluster;
    this.context.cluster = cluster;
  }

  /** Ready for new work: not draining nor closing, the store opened, the cluster's Redis answering. */
  #ready(): { ok: boolean; reasons: string[] } {
    const reasons: string[] = [];
    if (this.#closing) reasons.push("shutting down");
    if (this.#draining) reasons.push("draining");
    const cluster = this.#cluster?.ready;
    if (cluster && !cluster.ok && cluster.reason !== "draining") reasons.push(`cluster: ${cluster.reason ?? "not ready"}`);
    return { ok: reasons.length === 0, reasons };
  }
}

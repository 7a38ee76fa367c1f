// The dashboard's API under /dashboard/api/: what the page shows (browsers and their agent tabs, a live picture of
// one, the config and policy, the audit stream) and the emergency stop's two buttons. Every route here is reached
// only with a session, and a POST only with its CSRF token (dashboard.ts checks both). Every JSON answer goes
// through the secrets registry: tab titles, URLs and errors come from pages and browsers.
import { existsSync } from "node:fs";
import type { TabInfo, WireError } from "@tabrelay/protocol";
import type { AuditLog } from "../audit/auditLog.js";
import type { ClusterLink } from "../tools/clusterLink.js";
import type { BrokerConfig } from "../config/config.js";
import type { ConfigStatus } from "../config/reload.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { tabLeases } from "../gate/leases.js";
import { builtExtensionDir } from "../launch/chromium.js";
import type { PageToolRegistry } from "../pages/registry.js";
import { gatePageTool, type PageToolPolicy } from "../gate/decisions.js";
import type { Logger } from "../util/log.js";
import { plainLine } from "../util/pageText.js";
import type { SecretRegistry } from "../util/secrets.js";
import { VERSION } from "../version.js";
import { DEFAULT_USER_ID } from "../users/principal.js";
import { configFor } from "../config/userPolicies.js";
import { captureForPerson } from "../gate/stage.js";
import { auditStream, type AuditSource } from "./auditStream.js";
import { answerEverywhere, answerPeersAsks, listEverywhere } from "./asksApi.js";
import type { Answerer, AskDesk } from "../gate/asks.js";
import type { Principal } from "../users/principal.js";
import { policyEdit, policyView } from "./policyApi.js";
import { sendJson } from "./http.js";
import type { DashboardSessions, Session } from "./sessions.js";

const TABS_FRESH_MS = 800;
const TABS_TIMEOUT_MS = 3_000;
/** chrome.tabs.captureVisibleTab allows two captures a second per browser; the preview takes at most one. */
const CAPTURE_INTERVAL_MS = 1_000;
const CAPTURE_TIMEOUT_MS = 5_000;
const TEXT_MAX = 2_000;
/** What the page shows of a page tool's strings (the registry already caps them at offer.ts's PAGE_LIMITS). */
const PAGE_TOOL_TEXT_MAX = { name: 200, title: 200, description: 1_000 } as const;
const HASH_SHOWN = 12;
/** How long a dashboard waits for another broker of the cluster to describe its browsers. */
const PEER_TIMEOUT_MS = TABS_TIMEOUT_MS + 500;

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
  /** The MCP client whose session holds the tab (gate/leases.ts), and since when; null for a free tab. */
  owner: { client: string; since: number } | null;
}

type Preview = { ok: true; png: string; width: number; height: number; url: string; capturedAt: number } | { ok: false; error: WireError };

interface CaptureSlot {
  tabId: number;
  startAt: number;
  result: Promise<Preview>;
}

export interface DashboardApiOptions {
  registry: BrowserRegistry;
  audit: AuditLog;
  config: BrokerConfig;
  log: Logger;
  secrets: SecretRegistry;
  sessions: DashboardSessions;
  /** When the emergency stop took effect; undefined while it is not in effect. */
  stoppedAt: () => number | undefined;
  /** The emergency stop and its lifting: what the stop and resume routes answer. */
  stop: () => Promise<unknown>;
  resume: () => Promise<unknown>;
  /** Tools web pages offer (absent unless config names pages.allowed_origins), and who may call them. */
  pages?: { registry: PageToolRegistry; policy: () => PageToolPolicy };
  users: DashboardUsers;
  /** config.yaml as the broker last read it (config/reload.ts); undefined where nothing watches a file. */
  configStatus: () => ConfigStatus | undefined;
  /** The questions put to the user (policy.ask, gate/asks.ts). */
  asks: AskDesk;
}

/** The team's users as an admin's dashboard manages them (the broker implements it over users/users.ts). */
export interface DashboardUsers {
  list(): Promise<unknown>;
  /** Revokes a user and disconnects their browsers; a UserError's message is shown. */
  revoke(name: string): Promise<{ name: string }>;
}

export class DashboardApi {
  readonly #options: DashboardApiOptions;
  readonly #tabsCache = new WeakMap<ConnectedBrowser, { at: number; result: Promise<Outcome<TabView[]>> }>();
  readonly #captures = new WeakMap<ConnectedBrowser, CaptureSlot>();
  #link: ClusterLink | undefined;
  /** Every broker's audit records, as the shared store holds them (a cluster on PostgreSQL): the activity view's source. */
  #sharedAudit: AuditSource | undefined;

  constructor(options: DashboardApiOptions) {
    this.#options = options;
  }

  /**
   * A cluster member's dashboard shows the browsers of every broker: it asks the others for theirs (and for a
   * picture of a tab of one), and answers their questions about its own, for the same user only.
   */
  useCluster(link: ClusterLink, sharedAudit?: AuditSource): void {
    this.#link = link;
    this.#sharedAudit = sharedAudit;
    link.answer("dashboard.browsers", async (body) => {
      const owner = ownerIn(body);
      return owner === null ? undefined : await this.#browsers(owner);
    });
    answerPeersAsks(link, this.#options.asks, this.#options.log);
    link.answer("dashboard.preview", async (body) => {
      const owner = ownerIn(body);
      if (owner === null || !body || typeof body !== "object") return undefined;
      return await this.#localPreview(String(Reflect.get(body, "browser") ?? ""), Number(Reflect.get(body, "tab")), owner);
    });
  }

  /** Answers an API path (undefined for a path that is not one); `port` is the one the broker listens on. */
  async handle(
    path: string,
    req: Request,
    query: URLSearchParams,
    session: Session,
    port: number | undefined,
    form?: URLSearchParams,
  ): Promise<Response | undefined> {
    const { config, secrets } = this.#options;
    // A member sees their own browsers and records; an admin every user's.
    const scope = session.principal.role === "admin" ? undefined : session.principal;
    switch (path) {
      case "/dashboard/api/state":
        return this.#json(200, await this.#state(scope?.user));
      case "/dashboard/api/config":
        // The pairing code is shown to the logged-in user on purpose (they enter it in the extension's popup);
        // it is the one secret any exit shows, and it is set after the rest of the view is redacted. It is the
        // broker's own (the implicit user's): a team's user got theirs from `tabrelay users add`, and sees none here.
        return sendJson(200, {
          ...secrets.redactValue(this.#configView(port, session.principal.name)),
          pairingToken: session.principal.user === DEFAULT_USER_ID ? config.pairingToken : null,
          policy: session.principal.role === "admin" ? secrets.redactValue(policyView(config)) : null,
        });
      case "/dashboard/api/preview":
        return await this.#preview(query, scope?.user);
      case "/dashboard/api/audit":
        return auditStream({ ...this.#options, ...(this.#sharedAudit ? { sharedAudit: this.#sharedAudit } : {}) }, req, query, session, scope?.name);
      case "/dashboard/api/users":
        return this.#json(200, await this.#options.users.list());
      case "/dashboard/api/users/revoke": {
        const name = form?.get("name") ?? "";
        if (!name) return this.#json(400, { error: "pass name (the user to revoke)" });
        if (name === session.principal.name)
          return this.#json(400, { error: "you cannot revoke yourself here; another admin can, or `tabrelay users revoke` on the broker's machine" });
        try {
          const revoked = await this.#options.users.revoke(name);
          this.#options.log.warn(`dashboard: ${session.principal.name} revoked user ${revoked.name}`);
          return this.#json(200, { revoked: true, name: revoked.name });
        } catch (error) {
          return this.#json(404, { error: errorText(error) });
        }
      }
      case "/dashboard/api/stop":
        return this.#json(200, await this.#options.stop());
      case "/dashboard/api/resume":
        return this.#json(200, await this.#options.resume());
      case "/dashboard/api/pages/approve":
        return this.#approvePageTool(form ?? new URLSearchParams());
      case "/dashboard/api/asks":
      case "/dashboard/api/asks/answer":
        return await this.asks(path, session.principal, form, "dashboard");
      case "/dashboard/api/policy":
        return policyEdit(this.#options, form ?? new URLSearchParams(), session.principal);
    }
    return undefined;
  }

  /** The questions put to the user (asksApi.ts): listed, or answered, through a person's door. */
  async asks(path: string, principal: Principal, form: URLSearchParams | undefined, via: Answerer["via"]): Promise<Response | undefined> {
    const { asks, log } = this.#options;
    if (path === "/dashboard/api/asks") return this.#json(200, await listEverywhere(asks, this.#link, principal));
    if (path !== "/dashboard/api/asks/answer") return undefined;
    const answered = await answerEverywhere(asks, this.#link, principal, form ?? new URLSearchParams(), via, log);
    return this.#json(answered.status, answered.body);
  }

  /** Every JSON answer goes through the secrets registry: tab titles, URLs and errors come from pages and browsers. */
  #json(status: number, value: unknown): Response {
    return sendJson(status, this.#options.secrets.redactValue(value));
  }

  async #state(owner: string | undefined): Promise<unknown> {
    const { audit } = this.#options;
    const link = this.#link;
    let browsers = await this.#browsers(owner);
    let unreachable: string[] = [];
    if (link) {
      // Every other live broker's browsers, asked at once; one that does not answer in time is named, not waited for.
      const here = browsers.map((b) => ({ ...b, broker: link.brokerId }));
      const peers = link.peers();
      const answers = await Promise.all(peers.map((peer) => link.ask(peer, "dashboard.browsers", { owner: owner ?? null }, PEER_TIMEOUT_MS)));
      const theirs = answers.flatMap((answer, i) => (Array.isArray(answer) ? answer.map((b: Record<string, unknown>) => ({ ...b, broker: peers[i]! })) : []));
      unreachable = peers.filter((_, i) => !Array.isArray(answers[i]));
      const merged: Array<Record<string, unknown>> = [...here, ...theirs];
      browsers = merged.sort((a, b) => Number(b.connectedAt) - Number(a.connectedAt));
    }
    const stoppedAt = this.#options.stoppedAt();
    return {
      version: VERSION,
      now: Date.now(),
      stopped: stoppedAt !== undefined,
      stoppedAt: stoppedAt ?? null,
      browsers,
      ...(link ? { broker: link.brokerId, unreachable } : {}),
      audit: audit.health(),
      pages: owner === undefined ? this.#pagesView() : null,
      // The broker's own file: its admin's to see (a member's view has no policy to edit).
      config: owner === undefined ? (this.#options.configStatus() ?? null) : null,
    };
  }

  /** This broker's browsers of `owner` (every user's: undefined), each with its agent tabs and who holds them. */
  async #browsers(owner: string | undefined): Promise<Array<Record<string, unknown>>> {
    const { registry } = this.#options;
    return await Promise.all(
      registry.list(owner).map(async (b) => {
        const tabs = await this.#tabs(b);
        const leases = tabLeases(registry, this.#options.config);
        const now = Date.now();
        const owned = (t: TabView): TabView => {
          const lease = leases.holder(b.info.browserId, t.tabId, now);
          return { ...t, owner: lease ? { client: pageString(lease.client), since: lease.since } : null };
        };
        return {
          id: b.info.browserId,
          label: pageString(b.info.label),
          kind: b.info.kind,
          extensionVersion: b.info.extensionVersion,
          connectedAt: b.info.connectedAt,
          owner: b.info.owner ?? DEFAULT_USER_ID,
          ...(tabs.ok ? { tabs: tabs.value.map(owned) } : { tabs: [], tabsError: tabs.error }),
        };
      }),
    );
  }

  /** The pages connected over /page and every tool they offer, held ones included; null when page tools are off. */
  #pagesView(): unknown {
    const pages = this.#options.pages;
    if (!pages) return null;
    const policy = pages.policy();
    const approvals = pages.registry.approvals();
    return {
      pages: pages.registry
        .pages()
        .map((p) => ({ origin: pageString(p.origin), server: pageCapped(p.server, PAGE_TOOL_TEXT_MAX.name), since: p.since, tools: p.tools })),
      tools: pages.registry.tools().map((t) => {
        const approved = t.state === "changed" ? approvals.get(t.origin, t.name)?.hash : undefined;
        return {
          origin: pageString(t.origin),
          name: pageCapped(t.name, PAGE_TOOL_TEXT_MAX.name),
          agentName: t.agentName,
          title: pageCapped(t.info.title ?? "", PAGE_TOOL_TEXT_MAX.title),
          description: pageCapped(t.info.description ?? "", PAGE_TOOL_TEXT_MAX.description),
          hash: t.hash.slice(0, HASH_SHOWN),
          approvedHash: approved ? approved.slice(0, HASH_SHOWN) : null,
          state: t.state,
          granted: gatePageTool(policy, t.origin, t.name).ok,
        };
      }),
    };
  }

  /** The user approves a held (changed) page tool: what its page offers now is offered to agents again. */
  #approvePageTool(form: URLSearchParams): Response {
    const pages = this.#options.pages;
    if (!pages) return this.#json(404, { error: "page tools are not configured (pages.allowed_origins in config.yaml)" });
    const origin = form.get("origin") ?? "";
    const name = form.get("name") ?? "";
    if (!origin || !name) return this.#json(400, { error: "pass origin and name (the page tool to approve)" });
    if (!pages.registry.approve(origin, name)) {
      return this.#json(409, { error: "nothing to approve: no page offers a changed version of that tool now (it is approved already, or gone)" });
    }
    this.#options.log.info(`dashboard: the user approved the changed page tool ${JSON.stringify(plainLine(name))} of ${plainLine(origin)}`);
    const tool = pages.registry.tools().find((t) => t.origin === origin && t.name === name);
    return this.#json(200, { approved: true, origin, name, state: tool?.state ?? "approved", hash: tool ? tool.hash.slice(0, HASH_SHOWN) : null });
  }

  /** tabs.list, shared by every open dashboard for a moment so that viewers do not multiply bridge calls. */
  #tabs(connection: ConnectedBrowser, fresh = false): Promise<Outcome<TabView[]>> {
    const cached = this.#tabsCache.get(connection);
    if (!fresh && cached && Date.now() - cached.at < TABS_FRESH_MS) return cached.result;
    const result = connection.call("tabs.list", {}, { timeoutMs: TABS_TIMEOUT_MS }).then(
      (r): Outcome<TabView[]> => (r.ok ? { ok: true, value: r.value.tabs.map(tabView) } : r),
      (error: unknown): Outcome<TabView[]> => ({ ok: false, error: { code: "internal", message: errorText(error) } }),
    );
    this.#tabsCache.set(connection, { at: Date.now(), result });
    return result;
  }

  /** The config as the page shows it, without the pairing code (added by the route, unredacted). */
  #configView(listening: number | undefined, userName: string): Record<string, unknown> {
    const config = this.#options.config;
    // The policy the signed-in user is held to: the base, with their own section where config `users:` has one.
    const policies = configFor(config, userName);
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
      readPolicy: policies.policy.describe(),
      writePolicy: [...policies.writePolicy.describe(), ...policies.ask.describe()],
      bridgeUrl: `ws://${host}:${port}/bridge`,
      extensionDir,
      extensionDirError,
    };
  }

  async #preview(query: URLSearchParams, owner: string | undefined): Promise<Response> {
    const browserId = query.get("browser") ?? "";
    const tabId = Number(query.get("tab") ?? Number.NaN);
    if (!browserId || !Number.isSafeInteger(tabId)) {
      return this.#json(400, { error: "pass browser (an id) and tab (a tab id)" });
    }
    const here = this.#options.registry.list(owner).some((b) => b.info.browserId === browserId);
    const holder = here ? undefined : this.#link?.holderOf(browserId);
    if (holder && this.#link) {
      // Another broker holds it: that broker checks the owner and takes the picture (one a second, as here).
      const answer = await this.#link.ask(
        holder,
        "dashboard.preview",
        { owner: owner ?? null, browser: browserId, tab: tabId },
        PEER_TIMEOUT_MS + CAPTURE_TIMEOUT_MS,
      );
      return this.#json(
        200,
        answer ?? { ok: false, error: { code: "browser_disconnected", message: `the broker holding that browser (${holder}) did not answer; try again` } },
      );
    }
    return this.#json(200, await this.#localPreview(browserId, tabId, owner));
  }

  /** A picture of one of the agent's tabs of a browser connected here, or why not. */
  async #localPreview(browserId: string, tabId: number, owner: string | undefined): Promise<Preview> {
    const connection = this.#options.registry.list(owner).find((b) => b.info.browserId === browserId);
    if (!connection || !Number.isSafeInteger(tabId)) {
      return { ok: false, error: { code: "unknown_browser", message: "that browser is not connected" } };
    }
    // Only tabs the agent may see: the same list the page shows, never any other tab of the user's.
    let tabs = await this.#tabs(connection);
    // A tab opened since the list was cached (a moment ago, for the page's poll): asked again before saying no.
    if (tabs.ok && !tabs.value.some((t) => t.tabId === tabId)) tabs = await this.#tabs(connection, true);
    if (!tabs.ok) return { ok: false, error: tabs.error };
    const tab = tabs.value.find((t) => t.tabId === tabId);
    if (!tab) {
      return { ok: false, error: { code: "no_such_tab", message: `tab ${tabId} is not one of the agent's tabs (any more)` } };
    }
    return await this.#capture(connection, tab);
  }

  /** At most one capture a second per browser, shared by every viewer; the agent keeps the rest of Chrome's quota. */
  #capture(connection: ConnectedBrowser, tab: TabView): Promise<Preview> {
    const tabId = tab.tabId;
    const now = Date.now();
    const last = this.#captures.get(connection);
    if (last && last.tabId === tabId && now - last.startAt < CAPTURE_INTERVAL_MS) return last.result;
    const startAt = last ? Math.max(now, last.startAt + CAPTURE_INTERVAL_MS) : now;
    const previous = last?.result;
    const result = (async (): Promise<Preview> => {
      if (previous) await previous;
      const wait = startAt - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
      // What the browser's user's read policy refuses is not shown here either (gate/stage.ts, as the Worker's /screen).
      const policy = configFor(this.#options.config, connection.info.ownerName).policy;
      const r = await captureForPerson(policy, connection, tab, false, { timeoutMs: CAPTURE_TIMEOUT_MS });
      if (!r.ok) return { ok: false, error: { code: r.error.code, message: String(r.error.message) } };
      const v = r.value;
      if (typeof v.png !== "string" || !/^[A-Za-z0-9+/]+={0,2}$/.test(v.png))
        return { ok: false, error: { code: "invalid_image", message: "the browser's capture was not base64 PNG data" } };
      return {
        ok: true,
        png: v.png,
        width: Number(v.width) || 0,
        height: Number(v.height) || 0,
        url: pageString(v.url),
        capturedAt: Number(v.capturedAt) || Date.now(),
      };
    })().catch((error: unknown): Preview => ({ ok: false, error: { code: "internal", message: errorText(error) } }));
    this.#captures.set(connection, { tabId, startAt, result });
    return result;
  }
}

/** The user a question from another broker is about: a user id, undefined for every user (an admin's), null if neither. */
function ownerIn(body: unknown): string | undefined | null {
  if (!body || typeof body !== "object" || !("owner" in body)) return null;
  const owner: unknown = Reflect.get(body, "owner");
  return typeof owner === "string" && owner !== "" ? owner : owner === null ? undefined : null;
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
    owner: null,
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

/** A page's string cut to `max` characters (code points): one line, nothing hidden or reordered. */
function pageCapped(value: string, max: number): string {
  const chars = Array.from(plainLine(value));
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

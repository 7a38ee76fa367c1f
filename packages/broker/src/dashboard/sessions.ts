// The dashboard's door: the login form (the dashboard token, a signed CSRF nonce, the login throttle) and the sessions
// it opens (a cookie naming a session the broker keeps in memory, its CSRF token, the audit streams it holds open).
// In a cluster (tools/clusterLink.ts) a login is also kept in the cluster's directory, so that whichever broker the load
// balancer picks for the next request knows it, and a logout on one broker ends it on all.
import { createHash, createHmac, randomBytes } from "node:crypto";
import type { ClusterLink, Directory } from "../tools/clusterLink.js";
import { canonicalAddress } from "../util/addresses.js";
import type { Logger } from "../util/log.js";
import { safeEqual } from "../util/secrets.js";
import type { Principal } from "../users/principal.js";
import { clearCookie, cookieValue, loginCookieName, readForm, redirect, send, sessionCookieName } from "./http.js";
import { LoginThrottle, type LoginScope } from "./loginThrottle.js";
import { loginPage } from "./page.js";

/** What a request's connection tells, beyond the request itself. */
export interface Peer {
  /** The client's address (the login throttle counts by it). */
  remoteAddress: string;
}

/** An open audit stream, ended when its session ends or another replaces it. */
export interface Stream {
  end(reason: string): void;
}

export interface Session {
  /** SHA-256 of the cookie value: the map never holds the id itself. */
  key: string;
  csrf: string;
  expiresAt: number;
  streams: Set<Stream>;
  /** Whose token opened the session: a member sees only their own browsers and records; an admin everything. */
  principal: Principal;
  /** Called once when the session ends (logout, expiry, eviction): what else it holds lets go (the chat's conversation). */
  onEnd: Set<() => void>;
}

/** A login as every broker of a cluster keeps it (the id's hash is its key). */
export interface SharedLogin {
  principal: Principal;
  csrf: string;
  expiresAt: number;
}

export interface DashboardSessionsOptions {
  log: Logger;
  /**
   * Says whose a dashboard token is (the broker's own dashboard token, or a user's `trd_`: users/users.ts). Never an
   * MCP token nor an OAuth access token: agents hold those, and the dashboard is where the person answers for them.
   */
  authenticate: (token: string) => Promise<Principal | undefined>;
  /**
   * Signs the login form's CSRF nonce. The brokers of a cluster share it (derived from the secrets they share), so a
   * form one broker served is accepted by the broker the load balancer sends its POST to.
   */
  loginKey: Uint8Array;
  /** Whether a login another broker opened is still good here (its user not revoked since). */
  stillValid: (principal: Principal) => Promise<boolean>;
}

/**
 * The key that signs the login form's nonce, derived from the MCP token every broker of a cluster shares (/ready names
 * one that differs). An agent that holds the token can sign a login form, no more: the login takes a dashboard token.
 */
export function loginKeyFrom(mcpToken: string): Uint8Array {
  return createHmac("sha256", mcpToken).update("tabrelay dashboard login form").digest();
}

const SESSION_TTL_S = 12 * 60 * 60;
/** What a broker of a cluster tells the others of a wrong token (its source and when). */
const LOGIN_FAILED = "dashboard.login-failed";
const MAX_SESSIONS = 64;
const LOGIN_FORM_TTL_S = 30 * 60;

const LIMITED_BECAUSE: Readonly<Record<LoginScope, string>> = {
  "this machine": "Too many wrong tokens from this machine.",
  "this address": "Too many wrong tokens from this address.",
  "this dashboard": "Too many wrong tokens were tried on this dashboard.",
};

export class DashboardSessions {
  readonly #log: Logger;
  readonly #sessions = new Map<string, Session>();
  readonly #loginThrottle = new LoginThrottle();
  /** Signs the pre-session CSRF nonce, so a cookie set by another page on this host cannot forge the form field. */
  readonly #loginKey: Uint8Array;
  readonly #authenticate: (token: string) => Promise<Principal | undefined>;
  readonly #stillValid: (principal: Principal) => Promise<boolean>;
  /** The cluster's copy of every login, when this broker is a member. */
  #shared: Directory<SharedLogin> | undefined;
  #link: ClusterLink | undefined;

  constructor(options: DashboardSessionsOptions) {
    this.#log = options.log;
    this.#authenticate = options.authenticate;
    this.#loginKey = options.loginKey;
    this.#stillValid = options.stillValid;
  }

  /**
   * Joins the cluster: logins are kept in its directory from now on (one ended on another broker ends here too),
   * and wrong tokens count on every broker, so that guesses spread over the brokers are held to the same limits.
   */
  useCluster(link: ClusterLink): void {
    // "dashboard-2": logins since the dashboard took its own credential. One an older broker kept (it may have been
    // opened with the MCP token an agent holds) is never taken on, though it lives on in Redis until it expires.
    const directory = link.directory<SharedLogin>("dashboard-2");
    this.#shared = directory;
    this.#link = link;
    link.onBroadcast(LOGIN_FAILED, (body) => {
      const failure = body as { address?: unknown; at?: unknown } | undefined;
      if (typeof failure?.address === "string" && typeof failure.at === "number")
        this.#loginThrottle.failed({ address: failure.address }, Math.min(failure.at, Date.now()));
    });
    directory.onEnded((key) => {
      const session = this.#sessions.get(key);
      if (session) this.#forget(session);
    });
  }

  /** POST /login: the token from the form, checked once the throttle and the form's CSRF nonce allow it. */
  async login(req: Request, peer: Peer, port: number | undefined, tls: boolean): Promise<Response> {
    const form = await readForm(req);
    if (form instanceof Response) return form;
    const address = remoteAddress(peer);
    const now = Date.now();
    // Once limited, not even a right token is checked: the answer must not tell a guesser anything.
    const limit = this.#loginThrottle.check({ address }, now);
    if (!limit.ok) {
      const seconds = Math.ceil(limit.waitMs / 1000);
      return this.loginForm(port, tls, 429, `${LIMITED_BECAUSE[limit.scope]} Wait ${seconds} s, then try again.`, { "Retry-After": String(seconds) });
    }
    const nonce = cookieValue(req, loginCookieName(port)) ?? "";
    if (!nonce || !safeEqual(form.get("csrf") ?? "", this.#signLoginNonce(nonce)))
      return this.loginForm(port, tls, 403, "The login form expired. Enter the token again.");
    const given = (form.get("token") ?? "").trim();
    const principal = given ? await this.#authenticate(given) : undefined;
    if (!principal) {
      this.#loginThrottle.failed({ address }, now);
      this.#link?.broadcast(LOGIN_FAILED, { address, at: now });
      this.#log.warn(`dashboard: refused a login from ${address} (wrong token)`);
      // The same words for every wrong token (an MCP token included): the answer tells a guesser nothing.
      return this.loginForm(port, tls, 401, "That token was not accepted. The dashboard takes a dashboard token, not an MCP token.");
    }
    const id = randomBytes(32).toString("base64url");
    this.#prune(now);
    while (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.values().next().value;
      if (!oldest) break;
      // Alone, the oldest login ends; in a cluster only this broker's copy goes (taken on again when next used).
      this.#forget(oldest);
    }
    const session: Session = {
      key: hashId(id),
      csrf: randomBytes(32).toString("base64url"),
      expiresAt: now + SESSION_TTL_S * 1000,
      streams: new Set(),
      onEnd: new Set(),
      principal,
    };
    if (this.#shared) {
      try {
        await this.#shared.save(session.key, { principal, csrf: session.csrf, expiresAt: session.expiresAt }, SESSION_TTL_S * 1000);
      } catch (error) {
        // Logged in on this broker only, the next request on another would be logged out: refuse, and say why.
        this.#log.warn(`dashboard: a login could not be kept in the cluster: ${error instanceof Error ? error.message : String(error)}`);
        return this.loginForm(port, tls, 503, "The broker cannot reach the cluster's Redis just now. Try again in a moment.");
      }
    }
    this.#sessions.set(session.key, session);
    this.#log.info(`dashboard: login from ${address} as ${principal.name}`);
    return redirect("/", [
      `${sessionCookieName(port)}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_S}${tls ? "; Secure" : ""}`,
      clearCookie(loginCookieName(port), tls, "/login"),
    ]);
  }

  /**
   * A person's command on the broker's machine (`tabrelay ask`) calling an API route with the dashboard credential as
   * a bearer header: the same credential and the same throttle as the login form, no session (nothing ambient for
   * another site to ride, so no CSRF token). Returns the principal, or the answer refusing it.
   */
  async bearer(req: Request, peer: Peer): Promise<Principal | { status: number; message: string; headers?: Record<string, string> }> {
    const address = remoteAddress(peer);
    const now = Date.now();
    const header = req.headers.get("authorization") ?? "";
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    // The right credential is taken whatever the throttle says: wrong ones from an agent on this machine must not lock
    // the person's own command out (a 192-bit token is no guess; the failures are still counted and limited).
    const principal = token ? await this.#authenticate(token) : undefined;
    if (principal) return principal;
    const limit = this.#loginThrottle.check({ address }, now);
    if (!limit.ok) {
      const seconds = Math.ceil(limit.waitMs / 1000);
      return { status: 429, message: `${LIMITED_BECAUSE[limit.scope]} Wait ${seconds} s, then try again.`, headers: { "Retry-After": String(seconds) } };
    }
    this.#loginThrottle.failed({ address }, now);
    this.#link?.broadcast(LOGIN_FAILED, { address, at: now });
    this.#log.warn(`dashboard: refused a bearer request from ${address} (not the dashboard credential)`);
    return { status: 401, message: "that is not the dashboard credential (the dashboard-token file in the data dir); an MCP token is refused here" };
  }

  /** The login page, with a fresh signed nonce in its form and the matching cookie. */
  loginForm(port: number | undefined, tls: boolean, status: number, error?: string, headers: Record<string, string> = {}): Response {
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

  /** The live session the request's cookie names, if any (an expired one is ended on the way). */
  async of(req: Request, port: number | undefined): Promise<Session | undefined> {
    const id = cookieValue(req, sessionCookieName(port));
    if (!id) return undefined;
    const key = hashId(id);
    const cached = this.#sessions.get(key);
    const session = cached ?? (await this.#adopt(key));
    if (!session) return undefined;
    if (session.expiresAt <= Date.now()) {
      void this.end(session);
      return undefined;
    }
    // In a cluster a login ended on another broker (a logout, a revocation) is gone from Redis at once, while the
    // message telling this broker may still be on its way: the cluster's copy is what counts. (Redis away: the copy
    // here stands, rather than logging everyone out.)
    if (
      cached &&
      this.#shared &&
      (await this.#shared.find(key).then(
        (found) => found === undefined,
        () => false,
      ))
    ) {
      this.#forget(session);
      return undefined;
    }
    // A user revoked in the store (`tabrelay users revoke`, another broker) is out at their next request, as their
    // tokens are: not at the next sweep. A store that cannot say keeps the door shut.
    if (cached && !(await this.#stillValid(session.principal).catch(() => false))) {
      void this.end(session);
      return undefined;
    }
    return session;
  }

  /** True while the session is open and not expired. */
  live(session: Session): boolean {
    return session.expiresAt > Date.now() && this.#sessions.has(session.key);
  }

  /** A login another broker of the cluster opened, taken on here; undefined when there is none (or it is no good). */
  async #adopt(key: string): Promise<Session | undefined> {
    const shared = await this.#shared?.find(key).catch(() => undefined);
    if (!shared || typeof shared.csrf !== "string" || typeof shared.expiresAt !== "number" || typeof shared.principal?.user !== "string") return undefined;
    if (shared.expiresAt <= Date.now()) return undefined;
    if (!(await this.#stillValid(shared.principal).catch(() => false))) {
      await this.#shared?.end(key).catch(() => undefined);
      return undefined;
    }
    // Raced by another request of the same page: one local copy.
    const raced = this.#sessions.get(key);
    if (raced) return raced;
    // The cache is bounded; a copy let go here stays good on the cluster (and is taken on again when used).
    while (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.values().next().value;
      if (!oldest) break;
      this.#forget(oldest);
    }
    const session: Session = { key, csrf: shared.csrf, expiresAt: shared.expiresAt, principal: shared.principal, streams: new Set(), onEnd: new Set() };
    this.#sessions.set(key, session);
    return session;
  }

  /** Ends the session and every stream it holds open, on every broker of a cluster (resolved once Redis took it). */
  async end(session: Session): Promise<void> {
    this.#forget(session);
    await this.#shared
      ?.end(session.key)
      .catch((error: unknown) => this.#log.warn(`dashboard: ending a login in the cluster: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** Lets go of this broker's copy of a session: its streams end, what it holds is released. */
  #forget(session: Session): void {
    this.#sessions.delete(session.key);
    for (const stream of session.streams) stream.end("expired");
    session.streams.clear();
    for (const hook of session.onEnd) hook();
    session.onEnd.clear();
  }

  /** The users with a dashboard open (the broker's sweep checks they are still live). */
  users(): Set<string> {
    return new Set([...this.#sessions.values()].map((s) => s.principal.user));
  }

  /** Ends every session of a user (revoked): their dashboards log out at once. */
  endUser(user: string): void {
    for (const session of [...this.#sessions.values()]) if (session.principal.user === user) void this.end(session);
  }

  #prune(now: number): void {
    for (const session of [...this.#sessions.values()]) if (session.expiresAt <= now) void this.end(session);
  }
}

/** The client's address in one form however it was written (IPv4-mapped IPv6 as IPv4). */
function remoteAddress(peer: Peer): string {
  return canonicalAddress(peer.remoteAddress) ?? peer.remoteAddress;
}

function hashId(id: string): string {
  return createHash("sha256").update(id).digest("hex");
}

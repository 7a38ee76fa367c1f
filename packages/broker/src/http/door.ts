// The broker's door: who may come in through /mcp, /browsers and /page-tokens (not the dashboard: its login takes a
// dashboard token, which no agent holds; users/users.ts authenticateDashboard). Checked in this order, before any body
// is read: DNS rebinding (the Host header names this broker), cross-site pages (the Origin is this broker's or one
// config trusts), then whose the bearer token is: a static token (the broker's own, or a user's from the store) or, in
// OAuth mode, an access token of the configured issuer acting as its subject's user.
import type { OAuthResource } from "../auth/oauth.js";
import type { Users } from "../users/users.js";
import type { Logger } from "../util/log.js";
import type { Admission, Refusal, ResourceMetadata } from "./admission.js";
import type { Forwarding } from "./forwarded.js";

/** Where RFC 9728 metadata is looked for: the path-suffixed URL for /mcp, and the root one some clients try first. */
const METADATA_PATHS = ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"];

export interface DoorOptions {
  users: Users;
  /** OAuth resource-server mode (config `auth.oauth`), and its issuer. */
  oauth: OAuthResource | undefined;
  issuer: string | undefined;
  /** Origins config trusts besides the broker's own (mcp.allowed_origins). */
  allowedOrigins: readonly string[];
  /** Whose forwarded headers are believed (mcp.trusted_proxies): the broker's own origin behind a TLS load balancer. */
  forwarding: Forwarding;
  log: Logger;
}

export class Door {
  readonly #options: DoorOptions;
  readonly #users: Users;
  readonly #allowedOrigins: Set<string>;
  /** The Host values that name this broker: empty until it listens (its port is part of them). */
  #allowedHosts = new Set<string>();

  constructor(options: DoorOptions) {
    this.#options = options;
    this.#users = options.users;
    this.#allowedOrigins = new Set(options.allowedOrigins);
  }

  /** The names (host:port, and config's mcp.allowed_hosts) the Host header may carry, once the broker listens. */
  allowHosts(hosts: readonly string[]): void {
    this.#allowedHosts = new Set(hosts.map((h) => h.toLowerCase()));
  }

  /**
   * Checked before the body is read: DNS rebinding (Host), cross-site pages (Origin), then whose token it is.
   * `peerAddress`: the TCP peer's, when the request came over a socket (a trusted proxy's forwarded scheme counts).
   */
  async authenticate(headers: Headers, peerAddress?: string): Promise<Admission> {
    const refusal = this.#doorChecks(headers, peerAddress);
    if (refusal) return { ok: false, refusal };
    const match = /^Bearer (.+)$/i.exec(headers.get("authorization") ?? "");
    return this.#admit(match?.[1]);
  }

  /**
   * Whose a bearer token is: a static token (the broker's own, or a user's from the store) first; then, in OAuth mode
   * only, an access token from the configured issuer, for this broker, acting as the live user with its subject.
   * The token itself never appears in a refusal nor in the log.
   */
  async #admit(token: string | undefined): Promise<Admission> {
    const principal = token ? await this.#users.authenticate(token) : undefined;
    if (principal) return { ok: true, principal };
    const oauth = this.#options.oauth;
    const issuer = this.#options.issuer;
    if (!oauth || issuer === undefined)
      return {
        ok: false,
        refusal: {
          status: 401,
          message: "missing or wrong bearer token; use the Authorization header printed by `tabrelay serve` (or your own from `tabrelay users token NAME`)",
        },
      };
    const staticToo = "or use a static token (`tabrelay users token NAME`)";
    if (!token)
      return {
        ok: false,
        refusal: {
          status: 401,
          message: `missing bearer token; get an access token from ${issuer} (${oauth.metadataUrl()} names it), ${staticToo}`,
          challenge: oauth.challenge(),
        },
      };
    const grant = await oauth.verify(token);
    if (!grant.ok) {
      if (grant.detail !== undefined) this.#options.log.warn(`oauth: refused an access token: ${grant.description}: ${grant.detail}`);
      const challenge = oauth.challenge(grant);
      if (grant.error === "insufficient_scope")
        return { ok: false, refusal: { status: 403, message: `insufficient_scope: ${grant.description}; ask ${issuer} for a token with it`, challenge } };
      return {
        ok: false,
        refusal: { status: 401, message: `invalid_token: ${grant.description}; get a new access token from ${issuer}, ${staticToo}`, challenge },
      };
    }
    const user = await this.#users.bySubject(grant.subject);
    if (user) return { ok: true, principal: user };
    // A valid token for no live user: signing in again would not help (403, no challenge); an admin must act.
    const subject = JSON.stringify(grant.subject.length > 255 ? `${grant.subject.slice(0, 255)}…` : grant.subject);
    const known = await (await this.#users.store()).userBySubject(grant.subject);
    if (known)
      return {
        ok: false,
        refusal: {
          status: 403,
          message: `forbidden: user "${known.name}" (OAuth subject ${subject}) was revoked; an admin of this broker decides whether you get access again`,
        },
      };
    return {
      ok: false,
      refusal: {
        status: 403,
        message: `forbidden: no user of this broker has OAuth subject ${subject}; an admin adds one with \`tabrelay users add NAME --subject ${subject}\``,
      },
    };
  }

  /** RFC 9728 metadata (OAuth mode only): public (no token), but behind the Host check like every route. */
  resourceMetadata(): ResourceMetadata | undefined {
    const oauth = this.#options.oauth;
    if (!oauth) return undefined;
    const paths = [...new Set([new URL(oauth.metadataUrl()).pathname, ...METADATA_PATHS])];
    return { paths, admit: (headers) => this.#hostCheck(headers), document: () => oauth.metadata() };
  }

  /** DNS rebinding: the Host header must name this broker. */
  #hostCheck(headers: Headers): Refusal | undefined {
    const host = (headers.get("host") ?? "").toLowerCase();
    if (!this.#allowedHosts.has(host))
      return { status: 403, message: `Host ${JSON.stringify(host)} is not allowed (DNS rebinding protection); connect to ${[...this.#allowedHosts][0] ?? ""}` };
    return undefined;
  }

  /** DNS rebinding (Host) and cross-site pages (Origin): before any credential is looked at. */
  #doorChecks(headers: Headers, peerAddress: string | undefined): Refusal | undefined {
    const hostRefusal = this.#hostCheck(headers);
    if (hostRefusal) return hostRefusal;
    const host = (headers.get("host") ?? "").toLowerCase();
    const origin = headers.get("origin");
    // The broker's own origin (the Host just checked; behind a trusted TLS load balancer, https and the port the browser
    // used: the dashboard's rule) is same-origin, not cross-site: a page the broker serves, or a client that sends
    // Origin on every request (the MCP conformance suite does). The bearer is still required.
    const own = origin === `http://${host}` || (origin !== null && origin === this.#options.forwarding.arrival(headers, peerAddress, host).origin);
    if (origin !== null && !own && !this.#allowedOrigins.has(origin)) {
      return { status: 403, message: `Origin ${JSON.stringify(origin)} is not allowed; add it to mcp.allowed_origins in config.yaml if you trust it` };
    }
    return undefined;
  }
}

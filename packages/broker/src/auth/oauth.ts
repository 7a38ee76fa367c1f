// The broker as an OAuth 2.1 resource server (MCP authorization spec, revisions 2025-06-18 and 2025-11-25): it accepts
// JWT access tokens from one authorization server, bound to this broker by audience (RFC 8707), and describes itself
// in an RFC 9728 protected-resource metadata document. Runtime-neutral: web fetch and jose, no node: module.
import { createRemoteJWKSet, customFetch, decodeJwt, errors, jwtVerify } from "jose";
import type { FlattenedJWSInput, JWSHeaderParameters, JWTPayload, RemoteJWKSet } from "jose";

export interface OAuthSettings {
  /** The authorization server's issuer identifier; a token's `iss` must equal it exactly. */
  issuer: string;
  /**
   * This MCP server's canonical URI (MCP authorization, "Canonical Server URI"): the URL of the MCP endpoint as
   * clients reach it, e.g. `https://tabrelay.example.com/mcp`, with no fragment, no query and no trailing slash. It is
   * the `resource` of the metadata document, and a token's `aud` must name it (scheme and host compare
   * case-insensitively, a default port is ignored, the path compares exactly).
   */
  resource: string;
  /** The issuer's JWKS; by default its `jwks_uri` as discovered from the issuer's metadata. */
  jwksUrl?: string;
  /** Scopes every token must carry; also published as `scopes_supported` and in challenges. */
  scopes?: string[];
  /** A human-readable name for the metadata document. */
  resourceName?: string;
}

export interface OAuthOptions {
  fetch?: typeof fetch;
  /** Leeway for `exp` and `nbf`, in seconds (default 0). */
  clockToleranceSec?: number;
  /** How long after a JWKS fetch an unknown `kid` does not cause another fetch, in seconds (default 30). */
  jwksCooldownSec?: number;
  /** The clock `exp` and `nbf` are checked against, in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

export interface OAuthGrant {
  ok: true;
  /** The token's `sub`: the broker's user. */
  subject: string;
  scopes: string[];
  /** The token's `exp`, in seconds since the epoch. */
  expiresAt: number;
  clientId?: string;
}

export interface OAuthFailure {
  ok: false;
  /** `invalid_token` answers 401, `insufficient_scope` 403 (RFC 6750 section 3.1). */
  error: "invalid_token" | "insufficient_scope";
  /** Short, safe to send as `error_description`; never contains the token. */
  description: string;
  /** What went wrong underneath (e.g. why the issuer's keys could not be fetched): for the broker's log only. */
  detail?: string;
}

export type OAuthResult = OAuthGrant | OAuthFailure;

/**
 * Asymmetric signatures only. The keys come from the issuer's public JWKS; an HS* token "signed" with anything public
 * (or guessable) and an unsigned `alg: none` token are refused before any key is looked up.
 */
const ALGORITHMS = ["RS256", "PS256", "ES256", "EdDSA"];
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
const FETCH_TIMEOUT_MS = 5000;

/** Thrown by key resolution when the issuer's metadata or JWKS cannot be had: not the token's fault. */
class KeysUnavailable extends Error {}

/**
 * Verifies access tokens for one resource (this broker's /mcp) from one issuer, and renders the metadata and
 * challenges that point clients at that issuer. Settings are checked once, here: a bad one throws.
 *
 * @example
 * const oauth = new OAuthResource({ issuer: "https://id.example.com", resource: "https://tabrelay.example.com/mcp" });
 * const r = await oauth.verify(bearer);
 * if (!r.ok) return new Response(null, { status: r.error === "insufficient_scope" ? 403 : 401, headers: { "WWW-Authenticate": oauth.challenge(r) } });
 */
export class OAuthResource {
  readonly #issuer: string;
  readonly #resource: string;
  readonly #jwksUrl: URL | undefined;
  readonly #scopes: string[];
  readonly #name: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #tolerance: number;
  readonly #cooldownMs: number;
  readonly #now: () => number;
  #keySet: Promise<RemoteJWKSet> | undefined;

  constructor(settings: OAuthSettings, options: OAuthOptions = {}) {
    this.#issuer = settings.issuer;
    secureUrl(settings.issuer, "oauth issuer");
    const resource = secureUrl(settings.resource, "oauth resource");
    if (resource.search || settings.resource.includes("#"))
      throw new Error(`oauth resource ${settings.resource} must not carry a query or a fragment (RFC 8707 section 2)`);
    this.#resource = canonical(resource);
    this.#jwksUrl = settings.jwksUrl === undefined ? undefined : secureUrl(settings.jwksUrl, "oauth jwksUrl");
    this.#scopes = settings.scopes ?? [];
    for (const s of this.#scopes)
      if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)) throw new Error(`oauth scope ${JSON.stringify(s)} is not a valid scope token (RFC 6749 section 3.3)`);
    this.#name = settings.resourceName;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#tolerance = options.clockToleranceSec ?? 0;
    this.#cooldownMs = (options.jwksCooldownSec ?? 30) * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Checks a bearer token; never throws. Each check below names what it defends against. */
  async verify(token: string): Promise<OAuthResult> {
    // Unverified claims only serve to reject early: a token from another issuer never makes us fetch keys.
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      return invalid("token is not a JWT access token");
    }
    if (unverified.iss !== this.#issuer) return invalid("token is not from this resource's authorization server");
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, (header, jws) => this.#key(header, jws), {
        algorithms: ALGORITHMS,
        // A token minted by another issuer that shares our issuer's keys (a multi-tenant provider) is still refused.
        issuer: this.#issuer,
        // A token without `exp` would be valid forever once leaked.
        requiredClaims: ["exp", "sub"],
        clockTolerance: this.#tolerance,
        currentDate: new Date(this.#now()),
      }));
    } catch (error) {
      return failure(error);
    }
    // Audience binding (RFC 8707; MCP "Token Handling"): a token the same issuer minted for another service must not
    // work here, or any service could replay the tokens it receives (the confused deputy / token passthrough).
    const audiences = typeof claims.aud === "string" ? [claims.aud] : (claims.aud ?? []);
    if (!audiences.some((aud) => canonicalOf(aud) === this.#resource)) return invalid("token audience is not this resource");
    // The subject is the broker's user: no subject, no user.
    if (typeof claims.sub !== "string" || claims.sub === "") return invalid("token has no subject");
    const scopes = scopesOf(claims);
    const missing = this.#scopes.filter((s) => !scopes.includes(s));
    if (missing.length > 0) return { ok: false, error: "insufficient_scope", description: `token lacks scope ${missing.join(" ")}` };
    const clientId = typeof claims.client_id === "string" ? claims.client_id : typeof claims.azp === "string" ? claims.azp : undefined;
    // requiredClaims made jose check that exp is present and numeric.
    const grant: OAuthGrant = { ok: true, subject: claims.sub, scopes, expiresAt: claims.exp ?? 0 };
    if (clientId !== undefined) grant.clientId = clientId;
    return grant;
  }

  /** The RFC 9728 protected-resource metadata document (section 2). */
  metadata(): Record<string, unknown> {
    return {
      resource: this.#resource,
      authorization_servers: [this.#issuer],
      bearer_methods_supported: ["header"],
      ...(this.#scopes.length > 0 ? { scopes_supported: this.#scopes } : {}),
      ...(this.#name !== undefined ? { resource_name: this.#name } : {}),
    };
  }

  /** Where the metadata lives (RFC 9728 section 3.1): the well-known prefix inserted before the resource's path. */
  metadataUrl(): string {
    const url = new URL(this.#resource);
    return `${url.origin}${WELL_KNOWN}${url.pathname === "/" ? "" : url.pathname}`;
  }

  /** The `WWW-Authenticate` value for a 401 or 403 (RFC 9728 section 5.1, RFC 6750 section 3). */
  challenge(error?: { error: string; description: string }): string {
    const params = [`resource_metadata=${quote(this.metadataUrl())}`];
    if (this.#scopes.length > 0) params.push(`scope=${quote(this.#scopes.join(" "))}`);
    if (error) params.push(`error=${quote(error.error)}`, `error_description=${quote(error.description)}`);
    return `Bearer ${params.join(", ")}`;
  }

  /** The verification key for a token, from the issuer's JWKS (jose refetches it for an unknown kid, past a cooldown). */
  async #key(header: JWSHeaderParameters, jws: FlattenedJWSInput) {
    const keySet = await this.#keys();
    try {
      return await keySet(header, jws);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      throw new KeysUnavailable(`fetching the JWKS failed: ${messageOf(error)}`);
    }
  }

  #keys(): Promise<RemoteJWKSet> {
    this.#keySet ??= this.#discoverJwksUrl().then(
      (url) =>
        createRemoteJWKSet(url, {
          cooldownDuration: this.#cooldownMs,
          timeoutDuration: FETCH_TIMEOUT_MS,
          [customFetch]: (href, init) => this.#fetch(href, init),
        }),
      (error: unknown) => {
        this.#keySet = undefined; // an unreachable issuer is retried on the next token
        throw error;
      },
    );
    return this.#keySet;
  }

  /** OpenID discovery, then RFC 8414 metadata; the document must name our issuer (RFC 8414 section 3.3: mix-up). */
  async #discoverJwksUrl(): Promise<URL> {
    if (this.#jwksUrl) return this.#jwksUrl;
    const issuer = new URL(this.#issuer);
    const path = issuer.pathname === "/" ? "" : issuer.pathname;
    const candidates = [
      `${this.#issuer.replace(/\/$/, "")}/.well-known/openid-configuration`,
      `${issuer.origin}/.well-known/oauth-authorization-server${path}`,
      ...(path ? [`${issuer.origin}/.well-known/openid-configuration${path}`] : []),
    ];
    const failures: string[] = [];
    for (const url of candidates) {
      try {
        const response = await this.#fetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
        if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
        const doc: unknown = await response.json();
        if (!isRecord(doc) || doc.issuer !== this.#issuer) throw new Error(`the document does not name issuer ${this.#issuer}`);
        if (typeof doc.jwks_uri !== "string") throw new Error("the document has no jwks_uri");
        return secureUrl(doc.jwks_uri, "the issuer's jwks_uri");
      } catch (error) {
        failures.push(`${url}: ${messageOf(error)}`);
      }
    }
    throw new KeysUnavailable(`discovering the issuer's metadata failed: ${failures.join("; ")}`);
  }
}

function invalid(description: string, detail?: string): OAuthFailure {
  return detail === undefined ? { ok: false, error: "invalid_token", description } : { ok: false, error: "invalid_token", description, detail };
}

function failure(error: unknown): OAuthFailure {
  if (error instanceof KeysUnavailable) return invalid("the authorization server's signing keys could not be fetched", error.message);
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid("token signing algorithm is not accepted");
  if (error instanceof errors.JWSSignatureVerificationFailed) return invalid("token signature is invalid");
  if (error instanceof errors.JWKSNoMatchingKey) return invalid("token signing key is not among the issuer's keys");
  if (error instanceof errors.JWKSMultipleMatchingKeys) return invalid("token names no key id and the issuer has several keys");
  if (error instanceof errors.JWTExpired) return invalid("token has expired");
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "nbf") return invalid("token is not valid yet");
    if (error.claim === "iss") return invalid("token is not from this resource's authorization server");
    return invalid(error.reason === "missing" ? `token has no ${error.claim} claim` : `token ${error.claim} claim is invalid`);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return invalid("token is malformed");
  return invalid("token could not be verified", messageOf(error));
}

/** `scope` (RFC 9068, space-separated) or `scp` (a list, as some providers issue). */
function scopesOf(claims: JWTPayload): string[] {
  if (typeof claims.scope === "string") return claims.scope.split(" ").filter((s) => s !== "");
  if (typeof claims.scp === "string") return claims.scp.split(" ").filter((s) => s !== "");
  if (Array.isArray(claims.scp)) return claims.scp.filter((s): s is string => typeof s === "string");
  return [];
}

/** HTTPS, or plain HTTP to a loopback host only (OAuth 2.1 section 1.5: tokens and keys never cross a network in clear). */
function secureUrl(value: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} ${JSON.stringify(value)} is not an absolute URL`);
  }
  const loopback = url.hostname === "localhost" || url.hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) throw new Error(`${what} ${value} must use https (http only on a loopback host)`);
  if (url.username || url.password) throw new Error(`${what} ${value} must not carry credentials`);
  return url;
}

/** RFC 3986 section 6.2.2 normal form: lowercase scheme and host, no default port, no trailing slash on an empty path. */
function canonical(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname === "/" ? "" : url.pathname}${url.search}`;
}

function canonicalOf(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  return url.hash === "" && (url.protocol === "https:" || url.protocol === "http:") ? canonical(url) : undefined;
}

/** A quoted-string (RFC 9110 section 5.6.4): controls and non-ASCII become "?", quote and backslash are escaped. */
function quote(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, "?").replace(/["\\]/g, "\\$&")}"`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}

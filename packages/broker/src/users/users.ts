// Users of a team's broker: who a bearer token or a bridge pairing belongs to, and the operations `tabrelay users`
// and the dashboard's admin run. Records live in the store (store/store.ts); this module mints the secrets, hashes
// the tokens and keeps the one rule that ties them together: a revoked user, token or pairing stops working at the
// next request, on every broker sharing the store.
// The implicit user (users/principal.ts) is not in the store: it is whoever holds the broker's token files, and it
// cannot be revoked here (replace the files to lock it out).
// Two doors, two kinds of token: an MCP token (`trt_`, or the broker's mcp-token) opens /mcp and is what an agent
// holds; a dashboard token (`trd_`, or the broker's dashboard-token) opens the dashboard, where the person answers for
// the agent. Neither door takes the other's: an agent must never be able to approve its own actions.
import { PAIRING_ID_PATTERN } from "@tabrelay/protocol";
import { StoreConflict, type Pairing, type Role, type Store, type TokenInfo, type User } from "../store/store.js";
import { sha256 } from "../util/sha256.js";
import { utf8Bytes } from "../util/bytes.js";
import { safeEqual, type SecretSink } from "../util/secrets.js";
import { DEFAULT_PRINCIPAL, DEFAULT_USER_ID, type Principal } from "./principal.js";

/** A per-user MCP token: `trt_` and 192 random bits. The prefix lets a secret scanner recognise one. */
export const TOKEN_PREFIX = "trt_";
/**
 * A per-user dashboard token: `trd_` and 192 random bits, in the same table as MCP tokens. The prefix is part of the
 * hashed string, so an MCP token's hash can never name one; their ids differ too (`d_`, not `t_`).
 */
export const DASHBOARD_TOKEN_PREFIX = "trd_";
/** What a dashboard token is called in lists (`tabrelay users list`, the dashboard's users view). */
const DASHBOARD_TOKEN_NAME = "dashboard";
const NAME = /^[a-z0-9][a-z0-9._-]{0,39}$/;
/** A token's last use is written at most this often (a busy agent would otherwise write on every call). */
const TOUCH_EVERY_MS = 60_000;

export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UserError";
  }
}

export interface UsersOptions {
  /** Opened before the first request (PostgreSQL connects asynchronously). */
  store: Store | Promise<Store>;
  /** The broker's own MCP token (mcp-token): the implicit user's. */
  mcpToken: string;
  /** The broker's own dashboard token (dashboard-token): the implicit user's dashboard login; none without one. */
  dashboardToken?: string;
  /** The broker's own pairing code (pairing-token): the implicit user's. */
  pairingToken: string;
  /** Tokens and pairing codes are registered here as they are used, so that every exit redacts them. */
  secrets?: SecretSink;
  now?: () => number;
}

export class Users {
  readonly #store: Promise<Store>;
  readonly #options: UsersOptions;
  readonly #touched = new Map<string, number>();

  constructor(options: UsersOptions) {
    this.#store = Promise.resolve(options.store);
    // A store that failed to open is reported by whoever awaits it (the broker's listen); not an unhandled rejection.
    this.#store.catch(() => undefined);
    this.#options = options;
  }

  /** The store, once open. */
  store(): Promise<Store> {
    return this.#store;
  }

  #now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  /** The user an MCP bearer token belongs to, or undefined (unknown, revoked, a revoked user's, or a dashboard token). */
  async authenticate(token: string): Promise<Principal | undefined> {
    if (safeEqual(token, this.#options.mcpToken)) return DEFAULT_PRINCIPAL;
    return this.#byStoredToken(token, TOKEN_PREFIX, "t_", "mcp token");
  }

  /**
   * The user a dashboard login's token belongs to: the broker's own dashboard token, or a user's `trd_` token. Never
   * an MCP token nor an OAuth access token: an agent holds those, and the dashboard answers for the person.
   */
  /** Whether a principal a login was opened for is still a live user (the implicit user always is). */
  async stillLive(principal: Principal): Promise<boolean> {
    if (principal.user === DEFAULT_USER_ID) return true;
    const user = await (await this.#store).user(principal.user);
    return user !== undefined && user.revokedAt === undefined;
  }

  async authenticateDashboard(token: string): Promise<Principal | undefined> {
    const own = this.#options.dashboardToken;
    if (own && safeEqual(token, own)) return DEFAULT_PRINCIPAL;
    return this.#byStoredToken(token, DASHBOARD_TOKEN_PREFIX, "d_", "dashboard token");
  }

  /** A live token of the store of one kind (its prefix, and its id's, checked both), its use recorded. */
  async #byStoredToken(token: string, prefix: string, idPrefix: string, kind: "mcp token" | "dashboard token"): Promise<Principal | undefined> {
    if (!token.startsWith(prefix) || token.length > 200) return undefined;
    const found = await (await this.#store).tokenByHash(tokenHash(token));
    if (!found?.token.id.startsWith(idPrefix)) return undefined;
    this.#options.secrets?.register(token, kind);
    const now = this.#now();
    if (now - (this.#touched.get(found.token.id) ?? 0) >= TOUCH_EVERY_MS) {
      this.#touched.set(found.token.id, now);
      await (await this.#store).touchToken(found.token.id, now);
    }
    return principalOf(found.user);
  }

  /** The principal of a user found by OAuth subject (OAuth mode), or undefined when no live user has it. */
  async bySubject(subject: string): Promise<Principal | undefined> {
    const user = await (await this.#store).userBySubject(subject);
    return user && user.revokedAt === undefined ? principalOf(user) : undefined;
  }

  /**
   * The key a bridge handshake uses and whose browser it will be: the broker's own pairing code without a pairing id
   * (an extension paired before users existed sends none), else the live pairing with that id.
   */
  async pairingKey(pairingId: string | undefined): Promise<{ key: string; owner: Principal } | undefined> {
    if (pairingId === undefined) return { key: this.#options.pairingToken, owner: DEFAULT_PRINCIPAL };
    if (!PAIRING_ID_PATTERN.test(pairingId)) return undefined;
    const found = await (await this.#store).pairing(pairingId);
    if (!found) return undefined;
    const key = pairingCode(found.pairing);
    this.#options.secrets?.register(key, "pairing token");
    return { key, owner: principalOf(found.user) };
  }

  /** Adds a user with a first MCP token, a dashboard token and a pairing code, each shown only now. */
  async add(
    name: string,
    options: { role?: Role; subject?: string; tokenName?: string } = {},
  ): Promise<{ user: User; token: string; dashboardToken: string; pairingCode: string }> {
    const clean = name.trim().toLowerCase();
    if (!NAME.test(clean))
      throw new UserError(`"${name}" is not a user name: use 1 to 40 lowercase letters, digits, dots, dashes or underscores, starting with a letter or digit`);
    if (clean === DEFAULT_PRINCIPAL.name || clean === DEFAULT_USER_ID)
      throw new UserError(`"${clean}" is the implicit user (the broker's own token files); choose another name`);
    const subject = options.subject?.trim();
    if (subject !== undefined && (subject.length === 0 || subject.length > 255))
      throw new UserError("an OAuth subject is 1 to 255 characters (the `sub` claim of the user's access tokens)");
    let user: User;
    try {
      user = await (
        await this.#store
      ).addUser({ id: randomId("u_", 16), name: clean, role: options.role ?? "member", ...(subject ? { subject } : {}), createdAt: this.#now() });
    } catch (error) {
      if (error instanceof StoreConflict) throw new UserError(`${error.message}: pick another name, or \`tabrelay users list\` to see who exists`);
      throw error;
    }
    const { token } = await this.issueToken(user.id, options.tokenName ?? "first token");
    const { token: dashboardToken } = await this.issueDashboardToken(user.id);
    const pairingCode = await this.issuePairing(user.id);
    return { user, token, dashboardToken, pairingCode };
  }

  /** A live user by id or name, or a UserError naming the next step. */
  async live(idOrName: string): Promise<User> {
    const user = await (await this.#store).user(idOrName.trim().toLowerCase());
    if (!user) throw new UserError(`no user "${idOrName}"; \`tabrelay users list\` shows them`);
    if (user.revokedAt !== undefined)
      throw new UserError(`user "${user.name}" was revoked on ${new Date(user.revokedAt).toISOString()}; add a new user instead`);
    return user;
  }

  /** A new MCP token for a user (shown only now; stored as its SHA-256). */
  async issueToken(idOrName: string, name: string): Promise<{ token: string; info: TokenInfo }> {
    const user = await this.live(idOrName);
    const label = name.trim().slice(0, 80) || "token";
    const token = `${TOKEN_PREFIX}${randomToken(24)}`;
    const info = await (await this.#store).addToken({ id: randomId("t_", 16), userId: user.id, name: label, hash: tokenHash(token), createdAt: this.#now() });
    return { token, info };
  }

  /**
   * A new dashboard token for a user (shown only now; stored as its SHA-256). It replaces the one they had: a person
   * logs in with one, and asks for a new one when it is lost or seen (a dashboard open already stays logged in).
   */
  async issueDashboardToken(idOrName: string): Promise<{ token: string; info: TokenInfo; replaced: number }> {
    const user = await this.live(idOrName);
    const store = await this.#store;
    const token = `${DASHBOARD_TOKEN_PREFIX}${randomToken(24)}`;
    const info = await store.addToken({ id: randomId("d_", 16), userId: user.id, name: DASHBOARD_TOKEN_NAME, hash: tokenHash(token), createdAt: this.#now() });
    let replaced = 0;
    for (const old of await store.tokens(user.id))
      if (isDashboardToken(old) && old.id !== info.id && old.revokedAt === undefined && (await store.revokeToken(old.id, this.#now()))) replaced++;
    return { token, info, replaced };
  }

  /** A new pairing code for a user: `<id>.<secret>`, entered in the extension's popup like the broker's own. */
  async issuePairing(idOrName: string): Promise<string> {
    const user = await this.live(idOrName);
    const pairing = await (await this.#store).addPairing({ id: randomId("p_", 12), userId: user.id, secret: randomToken(24), createdAt: this.#now() });
    return pairingCode(pairing);
  }

  /** Revokes a user (their tokens and pairings with them); their browsers are for the caller to disconnect. */
  async revoke(idOrName: string): Promise<User> {
    const user = await this.live(idOrName);
    await (await this.#store).revokeUser(user.id, this.#now());
    return user;
  }

  async revokeToken(id: string): Promise<boolean> {
    return (await this.#store).revokeToken(id.trim(), this.#now());
  }
}

/** Whether a token of the store is a dashboard token (by its id: the store keeps only the secret's hash). */
export function isDashboardToken(token: TokenInfo): boolean {
  return token.id.startsWith("d_");
}

export function principalOf(user: User): Principal {
  return { user: user.id, name: user.name, role: user.role };
}

/** SHA-256 of a token, hex: what the store keeps. */
export function tokenHash(token: string): string {
  return [...sha256(utf8Bytes(token))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function pairingCode(pairing: Pairing): string {
  return `${pairing.id}.${pairing.secret}`;
}

function randomToken(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

function randomId(prefix: string, length: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const raw = crypto.getRandomValues(new Uint8Array(length));
  return prefix + [...raw].map((b) => alphabet[b % 36]).join("");
}

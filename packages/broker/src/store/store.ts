// The broker's durable records for a team: users, their MCP tokens and their pairing codes (more kinds join as
// they move here: the audit log), and idempotency records. One interface, two engines: SQLite in the data dir (the
// embedded default, store/sqlite.ts) and PostgreSQL (`store.postgres_url`, store/postgres.ts). Every method is
// async so that either engine serves it; the same contract test (test/store/store.test.ts) runs against both.
// Secrets: an MCP token (and a dashboard token, in the same table) is stored only as its SHA-256 (it is a bearer
// credential, checked by hash); a pairing code's secret is stored as it is, because the broker proves it knows it (an
// HMAC key, protocol handshake.ts).

export type Role = "admin" | "member";

export interface User {
  /** Stable, opaque: `u_` + 16 lowercase letters and digits. */
  id: string;
  /** Unique, lowercase `[a-z0-9][a-z0-9._-]{0,39}`: what the CLI and the dashboard name the user by. */
  name: string;
  role: Role;
  /** The OAuth subject (`sub`) whose access tokens act as this user, when OAuth is on. */
  subject?: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms; a revoked user's tokens, pairings and OAuth tokens no longer work. */
  revokedAt?: number;
}

export interface TokenInfo {
  /**
   * `t_` (an MCP token) or `d_` (a dashboard token) + 16 lowercase letters and digits; names the token in lists and
   * revocations, never authenticates.
   */
  id: string;
  userId: string;
  /** What the user called it ("laptop claude", "ci"). */
  name: string;
  createdAt: number;
  lastUsedAt?: number;
  revokedAt?: number;
}

export interface Pairing {
  /** The code's public part (`p_` + 12 lowercase letters and digits), sent in the bridge hello to name the key. */
  id: string;
  userId: string;
  /** The code's secret part; the whole code `<id>.<secret>` is the handshake's key. */
  secret: string;
  createdAt: number;
  revokedAt?: number;
}

/** Where a write with an idempotency key stands (issue 16 §4): running, finished, or lost mid-way. */
export type IdempotencyState = "pending" | "done" | "unknown";

/** One idempotency key of one user: the first call's tool, arguments (hashed) and, once it ended, its outcome. */
export interface IdempotencyRecord {
  userId: string;
  key: string;
  tool: string;
  /** SHA-256 (hex) of the call's arguments, the key left out (tools/idempotency.ts). */
  argsHash: string;
  /** The MCP session that made the key and its client's name ("" for a key made before keys had owners, or without a session). */
  session: string;
  client: string;
  state: IdempotencyState;
  /** The first call's result, JSON, once it is done or unknown. */
  result?: string;
  createdAt: number;
  /** While pending, the broker running it pushes this forward; a pending record past it was left by a broker that stopped. */
  expiresAt: number;
}

/**
 * An audit record as the shared store keeps it (issue 16 §2): each broker's own log stays the record written first
 * (audit/auditLog.ts, SQLite), and a copy goes here (audit/shipper.ts), so that a team's records, spread over the
 * brokers holding their browsers, read as one log.
 */
export interface SharedAuditRecord {
  /** The store's own order. */
  id: number;
  /** The broker that recorded it, and its id there. */
  broker: string;
  localId: number;
  time: number;
  tool: string;
  decision: string;
  durationMs: number;
  browser?: string;
  tab?: number;
  origin?: string;
  user?: string;
  client?: string;
  target?: string;
  rule?: string;
  code?: string;
  run?: string;
  detail?: string;
}

/**
 * A tab lease as the brokers of a cluster share it (gate/leases.ts): which MCP session holds which tab of a browser,
 * so that a browser that reconnects to another broker (its broker drained or died) is held the same there.
 */
export interface LeaseRecord {
  browserId: string;
  tabId: number;
  session: string;
  client: string;
  since: number;
  lastUsed: number;
  /** The session opened the tab (closed with it unless kept). */
  opened: boolean;
  keep: boolean;
}

export interface NewUser {
  name: string;
  role: Role;
  subject?: string;
}

export interface Store {
  readonly engine: "sqlite" | "postgres";
  /** Adds a user; a name (or subject) already taken is a StoreConflict. */
  addUser(user: NewUser & { id: string; createdAt: number }): Promise<User>;
  /** Every user, revoked ones too, oldest first. */
  users(): Promise<User[]>;
  /** By id or by name. */
  user(idOrName: string): Promise<User | undefined>;
  /** By OAuth subject. */
  userBySubject(subject: string): Promise<User | undefined>;
  /** Revokes a user (and with it every token and pairing); false when there is no such user or it was revoked already. */
  revokeUser(id: string, at: number): Promise<boolean>;

  addToken(token: Omit<TokenInfo, "lastUsedAt" | "revokedAt"> & { hash: string }): Promise<TokenInfo>;
  /** The live token with this SHA-256 (hex) and its live user; undefined when either is revoked or unknown. */
  tokenByHash(hash: string): Promise<{ token: TokenInfo; user: User } | undefined>;
  /** Records a use (the caller throttles). */
  touchToken(id: string, at: number): Promise<void>;
  /** A user's tokens (every user's without one), revoked ones too, oldest first. */
  tokens(userId?: string): Promise<TokenInfo[]>;
  revokeToken(id: string, at: number): Promise<boolean>;

  addPairing(pairing: Omit<Pairing, "revokedAt">): Promise<Pairing>;
  /** The live pairing with this id and its live user. */
  pairing(id: string): Promise<{ pairing: Pairing; user: User } | undefined>;
  pairings(userId?: string): Promise<Pairing[]>;
  revokePairing(id: string, at: number): Promise<boolean>;

  /**
   * Claims a key for a call: undefined when this call now holds it (a pending record was written), else the record
   * already there (another call's, pending or ended). Atomic across brokers sharing the store.
   */
  claimIdempotency(claim: Omit<IdempotencyRecord, "state" | "result">): Promise<IdempotencyRecord | undefined>;
  idempotency(userId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** Pushes a pending record's expiry forward (its call still runs). */
  extendIdempotency(userId: string, key: string, expiresAt: number): Promise<void>;
  /**
   * Ends a pending record with its outcome; false when it was not pending (another broker declared it unknown
   * after it expired): the first word stands.
   */
  settleIdempotency(userId: string, key: string, state: "done" | "unknown", result: string, onlyExpiredBefore?: number): Promise<boolean>;
  /** Drops a pending record whose call never reached the browser, so that a retry runs. */
  releaseIdempotency(userId: string, key: string): Promise<void>;
  /** Forgets records created before `before`; how many. */
  forgetIdempotency(before: number): Promise<number>;

  /** Copies a broker's records (again is harmless: a record is its broker's id and its id there). */
  putAudit(broker: string, records: Array<Omit<SharedAuditRecord, "id" | "broker">>): Promise<void>;
  /** The highest local id of `broker`'s records copied here (0: none). */
  auditCursor(broker: string): Promise<number>;
  /** Records oldest first: the last `limit` (all without), or with `afterId` the first `limit` after it; one user's with `user` ("default": those with none). */
  audit(options: { afterId?: number; limit?: number; user?: string }): Promise<SharedAuditRecord[]>;

  /** Writes a lease (replacing the tab's previous one). */
  putLease(lease: LeaseRecord): Promise<void>;
  /** Drops a tab's lease. */
  dropLease(browserId: string, tabId: number): Promise<void>;
  /** Drops every lease of a session (it ended). */
  dropSessionLeases(session: string): Promise<void>;
  /** A browser's leases. */
  leases(browserId: string): Promise<LeaseRecord[]>;
  close(): Promise<void>;
}

/** A unique name, subject or id already taken. */
export class StoreConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreConflict";
  }
}

/** Migrations are numbered from 1; each engine keeps its own SQL for each number, and the version it reached. */
export const STORE_SCHEMA_VERSION = 5;

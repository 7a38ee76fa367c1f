// The store on SQLite (node:sqlite, WAL), in <dataDir>/store.db: the embedded default. Synchronous underneath;
// the interface is async so that PostgreSQL (store/postgres.ts) serves the same calls.
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";
import { isDuplicateKey, Sqlite, type SqlValue } from "../util/sqlite.js";
import { auditParams, sharedAuditOf, type AuditRow } from "./auditRows.js";
import {
  STORE_SCHEMA_VERSION,
  StoreConflict,
  type IdempotencyRecord,
  type LeaseRecord,
  type SharedAuditRecord,
  type NewUser,
  type Pairing,
  type Store,
  type TokenInfo,
  type User,
} from "./store.js";

export const STORE_DB_FILE = "store.db";

/** MIGRATIONS[n] takes the schema from version n to n + 1 (the same numbers as PostgreSQL's). */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE users (
     id          TEXT PRIMARY KEY,
     name        TEXT NOT NULL UNIQUE,
     role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
     subject     TEXT UNIQUE,
     created_at  INTEGER NOT NULL,
     revoked_at  INTEGER
   );
   CREATE TABLE tokens (
     id           TEXT PRIMARY KEY,
     user_id      TEXT NOT NULL REFERENCES users (id),
     name         TEXT NOT NULL,
     hash         TEXT NOT NULL UNIQUE,
     created_at   INTEGER NOT NULL,
     last_used_at INTEGER,
     revoked_at   INTEGER
   );
   CREATE INDEX tokens_user ON tokens (user_id);
   CREATE TABLE pairings (
     id          TEXT PRIMARY KEY,
     user_id     TEXT NOT NULL REFERENCES users (id),
     secret      TEXT NOT NULL,
     created_at  INTEGER NOT NULL,
     revoked_at  INTEGER
   );
   CREATE INDEX pairings_user ON pairings (user_id);`,
  `CREATE TABLE idempotency (
     user_id     TEXT NOT NULL,
     key         TEXT NOT NULL,
     tool        TEXT NOT NULL,
     args_hash   TEXT NOT NULL,
     state       TEXT NOT NULL CHECK (state IN ('pending', 'done', 'unknown')),
     result      TEXT,
     created_at  INTEGER NOT NULL,
     expires_at  INTEGER NOT NULL,
     PRIMARY KEY (user_id, key)
   );
   CREATE INDEX idempotency_created ON idempotency (created_at);`,
  `CREATE TABLE audit (
     id          INTEGER PRIMARY KEY AUTOINCREMENT,
     broker      TEXT NOT NULL,
     local_id    INTEGER NOT NULL,
     time        INTEGER NOT NULL,
     tool        TEXT NOT NULL,
     decision    TEXT NOT NULL,
     duration_ms INTEGER NOT NULL,
     browser     TEXT, tab INTEGER, origin TEXT, user_name TEXT, client TEXT, target TEXT, rule TEXT, code TEXT, run TEXT, detail TEXT,
     UNIQUE (broker, local_id)
   );
   CREATE INDEX audit_user ON audit (user_name, id);`,
  `CREATE TABLE leases (
     browser_id  TEXT NOT NULL,
     tab_id      INTEGER NOT NULL,
     session     TEXT NOT NULL,
     client      TEXT NOT NULL,
     since       INTEGER NOT NULL,
     last_used   INTEGER NOT NULL,
     opened      INTEGER NOT NULL,
     keep        INTEGER NOT NULL,
     PRIMARY KEY (browser_id, tab_id)
   );
   CREATE INDEX leases_session ON leases (session);`,
  // 5: an idempotency key belongs to the session that made it (issue 24 §7).
  `ALTER TABLE idempotency ADD COLUMN session TEXT NOT NULL DEFAULT '';
   ALTER TABLE idempotency ADD COLUMN client TEXT NOT NULL DEFAULT '';`,
];

type UserRow = { id: string; name: string; role: string; subject: string | null; created_at: number; revoked_at: number | null };
type TokenRow = { id: string; user_id: string; name: string; created_at: number; last_used_at: number | null; revoked_at: number | null };
type PairingRow = { id: string; user_id: string; secret: string; created_at: number; revoked_at: number | null };
type IdempotencyRow = {
  user_id: string;
  key: string;
  tool: string;
  args_hash: string;
  session: string;
  client: string;
  state: string;
  result: string | null;
  created_at: number;
  expires_at: number;
};

export class SqliteStore implements Store {
  readonly engine = "sqlite" as const;
  readonly path: string;
  readonly #db: Sqlite;

  private constructor(path: string, db: Sqlite) {
    this.path = path;
    this.#db = db;
  }

  /** Opens (creating it 0600) and migrates <dataDir>/store.db. */
  static open(dataDir: string): SqliteStore {
    const path = join(dataDir, STORE_DB_FILE);
    if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
    const db = new Sqlite(path, { busyTimeoutMs: 5000 });
    try {
      db.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
      migrate(db, path);
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteStore(path, db);
  }

  async addUser(user: NewUser & { id: string; createdAt: number }): Promise<User> {
    try {
      this.#db.run(
        "INSERT INTO users (id, name, role, subject, created_at) VALUES (?, ?, ?, ?, ?)",
        user.id,
        user.name,
        user.role,
        user.subject ?? null,
        user.createdAt,
      );
    } catch (error) {
      throw conflict(error, `a user named "${user.name}"${user.subject ? ` or with subject "${user.subject}"` : ""} exists already`);
    }
    return { id: user.id, name: user.name, role: user.role, ...(user.subject ? { subject: user.subject } : {}), createdAt: user.createdAt };
  }

  async users(): Promise<User[]> {
    return this.#db.all<UserRow>("SELECT * FROM users ORDER BY created_at, name").map(userOf);
  }

  async user(idOrName: string): Promise<User | undefined> {
    const row = this.#db.get<UserRow>("SELECT * FROM users WHERE id = ? OR name = ?", idOrName, idOrName);
    return row ? userOf(row) : undefined;
  }

  async userBySubject(subject: string): Promise<User | undefined> {
    const row = this.#db.get<UserRow>("SELECT * FROM users WHERE subject = ?", subject);
    return row ? userOf(row) : undefined;
  }

  async revokeUser(id: string, at: number): Promise<boolean> {
    return this.#db.transaction(() => {
      const changed = this.#db.run("UPDATE users SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id).changes > 0;
      if (changed) {
        this.#db.run("UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", at, id);
        this.#db.run("UPDATE pairings SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", at, id);
      }
      return changed;
    });
  }

  async addToken(token: Omit<TokenInfo, "lastUsedAt" | "revokedAt"> & { hash: string }): Promise<TokenInfo> {
    try {
      this.#db.run(
        "INSERT INTO tokens (id, user_id, name, hash, created_at) VALUES (?, ?, ?, ?, ?)",
        token.id,
        token.userId,
        token.name,
        token.hash,
        token.createdAt,
      );
    } catch (error) {
      throw conflict(error, "that token exists already");
    }
    return { id: token.id, userId: token.userId, name: token.name, createdAt: token.createdAt };
  }

  async tokenByHash(hash: string): Promise<{ token: TokenInfo; user: User } | undefined> {
    const row = this.#db.get<TokenRow & { u_name: string; u_role: string; u_subject: string | null; u_created_at: number }>(
      `SELECT t.*, u.name AS u_name, u.role AS u_role, u.subject AS u_subject, u.created_at AS u_created_at
         FROM tokens t JOIN users u ON u.id = t.user_id
        WHERE t.hash = ? AND t.revoked_at IS NULL AND u.revoked_at IS NULL`,
      hash,
    );
    if (!row) return undefined;
    return {
      token: tokenOf(row),
      user: userOf({ id: row.user_id, name: row.u_name, role: row.u_role, subject: row.u_subject, created_at: row.u_created_at, revoked_at: null }),
    };
  }

  async touchToken(id: string, at: number): Promise<void> {
    this.#db.run("UPDATE tokens SET last_used_at = ? WHERE id = ?", at, id);
  }

  async tokens(userId?: string): Promise<TokenInfo[]> {
    const rows = userId
      ? this.#db.all<TokenRow>("SELECT * FROM tokens WHERE user_id = ? ORDER BY created_at, id", userId)
      : this.#db.all<TokenRow>("SELECT * FROM tokens ORDER BY created_at, id");
    return rows.map(tokenOf);
  }

  async revokeToken(id: string, at: number): Promise<boolean> {
    return this.#db.run("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id).changes > 0;
  }

  async addPairing(pairing: Omit<Pairing, "revokedAt">): Promise<Pairing> {
    try {
      this.#db.run("INSERT INTO pairings (id, user_id, secret, created_at) VALUES (?, ?, ?, ?)", pairing.id, pairing.userId, pairing.secret, pairing.createdAt);
    } catch (error) {
      throw conflict(error, "that pairing exists already");
    }
    return { ...pairing };
  }

  async pairing(id: string): Promise<{ pairing: Pairing; user: User } | undefined> {
    const row = this.#db.get<PairingRow & { u_name: string; u_role: string; u_subject: string | null; u_created_at: number }>(
      `SELECT p.*, u.name AS u_name, u.role AS u_role, u.subject AS u_subject, u.created_at AS u_created_at
         FROM pairings p JOIN users u ON u.id = p.user_id
        WHERE p.id = ? AND p.revoked_at IS NULL AND u.revoked_at IS NULL`,
      id,
    );
    if (!row) return undefined;
    return {
      pairing: pairingOf(row),
      user: userOf({ id: row.user_id, name: row.u_name, role: row.u_role, subject: row.u_subject, created_at: row.u_created_at, revoked_at: null }),
    };
  }

  async pairings(userId?: string): Promise<Pairing[]> {
    const rows = userId
      ? this.#db.all<PairingRow>("SELECT * FROM pairings WHERE user_id = ? ORDER BY created_at, id", userId)
      : this.#db.all<PairingRow>("SELECT * FROM pairings ORDER BY created_at, id");
    return rows.map(pairingOf);
  }

  async revokePairing(id: string, at: number): Promise<boolean> {
    return this.#db.run("UPDATE pairings SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id).changes > 0;
  }

  async claimIdempotency(claim: Omit<IdempotencyRecord, "state" | "result">): Promise<IdempotencyRecord | undefined> {
    return this.#db.transaction(() => {
      const inserted = this.#db.run(
        "INSERT INTO idempotency (user_id, key, tool, args_hash, session, client, state, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT DO NOTHING",
        claim.userId,
        claim.key,
        claim.tool,
        claim.argsHash,
        claim.session,
        claim.client,
        claim.createdAt,
        claim.expiresAt,
      );
      if (inserted.changes > 0) return undefined;
      const row = this.#db.get<IdempotencyRow>("SELECT * FROM idempotency WHERE user_id = ? AND key = ?", claim.userId, claim.key);
      return row ? idempotencyOf(row) : undefined;
    });
  }

  async idempotency(userId: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = this.#db.get<IdempotencyRow>("SELECT * FROM idempotency WHERE user_id = ? AND key = ?", userId, key);
    return row ? idempotencyOf(row) : undefined;
  }

  async extendIdempotency(userId: string, key: string, expiresAt: number): Promise<void> {
    this.#db.run("UPDATE idempotency SET expires_at = ? WHERE user_id = ? AND key = ? AND state = 'pending'", expiresAt, userId, key);
  }

  async settleIdempotency(userId: string, key: string, state: "done" | "unknown", result: string, onlyExpiredBefore?: number): Promise<boolean> {
    const expiry = onlyExpiredBefore === undefined ? "" : " AND expires_at < ?";
    const params: SqlValue[] = [state, result, userId, key, ...(onlyExpiredBefore === undefined ? [] : [onlyExpiredBefore])];
    return this.#db.run(`UPDATE idempotency SET state = ?, result = ? WHERE user_id = ? AND key = ? AND state = 'pending'${expiry}`, ...params).changes > 0;
  }

  async releaseIdempotency(userId: string, key: string): Promise<void> {
    this.#db.run("DELETE FROM idempotency WHERE user_id = ? AND key = ? AND state = 'pending'", userId, key);
  }

  async forgetIdempotency(before: number): Promise<number> {
    return this.#db.run("DELETE FROM idempotency WHERE created_at < ?", before).changes;
  }

  async putLease(lease: LeaseRecord): Promise<void> {
    this.#db.run(
      `INSERT INTO leases (browser_id, tab_id, session, client, since, last_used, opened, keep) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (browser_id, tab_id) DO UPDATE SET session = excluded.session, client = excluded.client, since = excluded.since, last_used = excluded.last_used, opened = excluded.opened, keep = excluded.keep`,
      lease.browserId,
      lease.tabId,
      lease.session,
      lease.client,
      lease.since,
      lease.lastUsed,
      lease.opened ? 1 : 0,
      lease.keep ? 1 : 0,
    );
  }

  async dropLease(browserId: string, tabId: number): Promise<void> {
    this.#db.run("DELETE FROM leases WHERE browser_id = ? AND tab_id = ?", browserId, tabId);
  }

  async dropSessionLeases(session: string): Promise<void> {
    this.#db.run("DELETE FROM leases WHERE session = ?", session);
  }

  async leases(browserId: string): Promise<LeaseRecord[]> {
    return this.#db.all<LeaseRow>("SELECT * FROM leases WHERE browser_id = ? ORDER BY tab_id", browserId).map(leaseOf);
  }

  async putAudit(broker: string, records: Array<Omit<SharedAuditRecord, "id" | "broker">>): Promise<void> {
    const put = `INSERT INTO audit (broker, local_id, time, tool, decision, duration_ms, browser, tab, origin, user_name, client, target, rule, code, run, detail)
       VALUES (@broker, @localId, @time, @tool, @decision, @durationMs, @browser, @tab, @origin, @user, @client, @target, @rule, @code, @run, @detail)
       ON CONFLICT (broker, local_id) DO UPDATE SET time = excluded.time, tool = excluded.tool, decision = excluded.decision, duration_ms = excluded.duration_ms,
         browser = excluded.browser, tab = excluded.tab, origin = excluded.origin, user_name = excluded.user_name, client = excluded.client,
         target = excluded.target, rule = excluded.rule, code = excluded.code, run = excluded.run, detail = excluded.detail`;
    this.#db.transaction(() => {
      for (const r of records) this.#db.run(put, { broker, ...auditParams(r) });
    });
  }

  async auditCursor(broker: string): Promise<number> {
    return this.#db.get<{ max: number | null }>("SELECT MAX(local_id) AS max FROM audit WHERE broker = ?", broker)?.max ?? 0;
  }

  async audit(options: { afterId?: number; limit?: number; user?: string } = {}): Promise<SharedAuditRecord[]> {
    const limit = options.limit === undefined ? -1 : Math.max(0, Math.trunc(options.limit));
    const mine = options.user === undefined ? "1" : options.user === "default" ? "user_name IS NULL" : "user_name = @user";
    const who: Record<string, SqlValue> = mine.includes("@user") ? { user: options.user ?? null } : {}; // node:sqlite refuses a named value the SQL does not use
    const rows =
      options.afterId === undefined
        ? this.#db.all<AuditRow>(`SELECT * FROM (SELECT * FROM audit WHERE ${mine} ORDER BY id DESC LIMIT @limit) ORDER BY id ASC`, { limit, ...who })
        : this.#db.all<AuditRow>(`SELECT * FROM audit WHERE id > @after AND ${mine} ORDER BY id ASC LIMIT @limit`, {
            after: Math.trunc(options.afterId),
            limit,
            ...who,
          });
    return rows.map(sharedAuditOf);
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}

function migrate(db: Sqlite, path: string): void {
  db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    const row = db.get<{ version: number }>("SELECT version FROM schema_version");
    const current = row?.version ?? 0;
    if (current > STORE_SCHEMA_VERSION)
      throw new Error(`${path} has store schema version ${current}, newer than this tabrelay understands (${STORE_SCHEMA_VERSION}); upgrade tabrelay`);
    for (let version = current; version < STORE_SCHEMA_VERSION; version++) {
      const sql = MIGRATIONS[version];
      if (sql !== undefined) db.exec(sql);
    }
    if (row === undefined) db.run("INSERT INTO schema_version (version) VALUES (?)", STORE_SCHEMA_VERSION);
    else if (current !== STORE_SCHEMA_VERSION) db.run("UPDATE schema_version SET version = ?", STORE_SCHEMA_VERSION);
  });
}

function conflict(error: unknown, message: string): Error {
  // Only a duplicate is a conflict: a missing user (SQLITE_CONSTRAINT_FOREIGNKEY) is a caller's bug, thrown as it is.
  return isDuplicateKey(error) ? new StoreConflict(message) : (error as Error);
}

function idempotencyOf(row: IdempotencyRow): IdempotencyRecord {
  return {
    userId: row.user_id,
    key: row.key,
    tool: row.tool,
    argsHash: row.args_hash,
    session: row.session,
    client: row.client,
    state: row.state as IdempotencyRecord["state"],
    ...(row.result !== null ? { result: row.result } : {}),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

function userOf(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    role: row.role === "admin" ? "admin" : "member",
    ...(row.subject !== null ? { subject: row.subject } : {}),
    createdAt: row.created_at,
    ...(row.revoked_at !== null ? { revokedAt: row.revoked_at } : {}),
  };
}

function tokenOf(row: TokenRow): TokenInfo {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: row.created_at,
    ...(row.last_used_at !== null ? { lastUsedAt: row.last_used_at } : {}),
    ...(row.revoked_at !== null ? { revokedAt: row.revoked_at } : {}),
  };
}

function pairingOf(row: PairingRow): Pairing {
  return { id: row.id, userId: row.user_id, secret: row.secret, createdAt: row.created_at, ...(row.revoked_at !== null ? { revokedAt: row.revoked_at } : {}) };
}

type LeaseRow = { browser_id: string; tab_id: number; session: string; client: string; since: number; last_used: number; opened: number; keep: number };

function leaseOf(row: LeaseRow): LeaseRecord {
  return {
    browserId: row.browser_id,
    tabId: row.tab_id,
    session: row.session,
    client: row.client,
    since: row.since,
    lastUsed: row.last_used,
    opened: row.opened === 1,
    keep: row.keep === 1,
  };
}

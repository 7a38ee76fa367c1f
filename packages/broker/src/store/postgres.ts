// The store on PostgreSQL (`store.postgres_url`): for a team whose brokers share one database. Several brokers may
// start at once against it, so the migrations run in one transaction behind an advisory lock.
// The URL is a credential (it holds the password): no error or log line here repeats it, only its host and port.
import pg from "pg";
import { auditParams, sharedAuditOf } from "./auditRows.js";
import {
  idempotencyOf,
  joinedUserOf,
  leaseOf,
  pairingOf,
  tokenOf,
  userOf,
  type IdempotencyRow,
  type JoinedUser,
  type LeaseRow,
  type PairingRow,
  type TokenRow,
  type UserRow,
} from "./postgresRows.js";
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

/** MIGRATIONS[n] takes the schema from version n to n + 1 (the same numbers as SQLite's). Times are epoch ms. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE users (
     id          TEXT PRIMARY KEY,
     name        TEXT NOT NULL UNIQUE,
     role        TEXT NOT NULL CHECK (role IN ('admin', 'member')),
     subject     TEXT UNIQUE,
     created_at  BIGINT NOT NULL,
     revoked_at  BIGINT
   );
   CREATE TABLE tokens (
     id           TEXT PRIMARY KEY,
     user_id      TEXT NOT NULL REFERENCES users (id),
     name         TEXT NOT NULL,
     hash         TEXT NOT NULL UNIQUE,
     created_at   BIGINT NOT NULL,
     last_used_at BIGINT,
     revoked_at   BIGINT
   );
   CREATE INDEX tokens_user ON tokens (user_id);
   CREATE TABLE pairings (
     id          TEXT PRIMARY KEY,
     user_id     TEXT NOT NULL REFERENCES users (id),
     secret      TEXT NOT NULL,
     created_at  BIGINT NOT NULL,
     revoked_at  BIGINT
   );
   CREATE INDEX pairings_user ON pairings (user_id);`,
  `CREATE TABLE idempotency (
     user_id     TEXT NOT NULL,
     key         TEXT NOT NULL,
     tool        TEXT NOT NULL,
     args_hash   TEXT NOT NULL,
     state       TEXT NOT NULL CHECK (state IN ('pending', 'done', 'unknown')),
     result      TEXT,
     created_at  BIGINT NOT NULL,
     expires_at  BIGINT NOT NULL,
     PRIMARY KEY (user_id, key)
   );
   CREATE INDEX idempotency_created ON idempotency (created_at);`,
  `CREATE TABLE audit (
     id          BIGSERIAL PRIMARY KEY,
     broker      TEXT NOT NULL,
     local_id    BIGINT NOT NULL,
     time        BIGINT NOT NULL,
     tool        TEXT NOT NULL,
     decision    TEXT NOT NULL,
     duration_ms BIGINT NOT NULL,
     browser     TEXT, tab BIGINT, origin TEXT, user_name TEXT, client TEXT, target TEXT, rule TEXT, code TEXT, run TEXT, detail TEXT,
     UNIQUE (broker, local_id)
   );
   CREATE INDEX audit_user ON audit (user_name, id);`,
  `CREATE TABLE leases (
     browser_id  TEXT NOT NULL,
     tab_id      BIGINT NOT NULL,
     session     TEXT NOT NULL,
     client      TEXT NOT NULL,
     since       BIGINT NOT NULL,
     last_used   BIGINT NOT NULL,
     opened      BOOLEAN NOT NULL,
     keep        BOOLEAN NOT NULL,
     PRIMARY KEY (browser_id, tab_id)
   );
   CREATE INDEX leases_session ON leases (session);`,
  // 5: an idempotency key belongs to the session that made it (issue 24 §7).
  `ALTER TABLE idempotency ADD COLUMN session TEXT NOT NULL DEFAULT '';
   ALTER TABLE idempotency ADD COLUMN client TEXT NOT NULL DEFAULT '';`,
];

/** The advisory lock key that serialises migrations: "tabrelay" in ASCII, as a bigint. */
const MIGRATION_LOCK = "8386090797034922361";
/** A server that does not answer (a dropped SYN) fails the start-up after this long instead of hanging it. */
const CONNECT_TIMEOUT_MS = 10_000;

const USER_COLUMNS = "u.name AS u_name, u.role AS u_role, u.subject AS u_subject, u.created_at AS u_created_at";

export class PostgresStore implements Store {
  readonly engine = "postgres" as const;
  /** host:port, for messages: never the URL, which holds the password. */
  readonly server: string;
  readonly #pool: pg.Pool;
  #closed = false;

  private constructor(server: string, pool: pg.Pool) {
    this.server = server;
    this.#pool = pool;
  }

  /** Connects to the database at `url` (postgres://user:password@host:port/db) and migrates it. */
  static async open(url: string): Promise<PostgresStore> {
    const server = serverOf(url);
    const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, application_name: "tabrelay" });
    // An idle connection that breaks (a server restart) is dropped by the pool; the next query connects afresh.
    pool.on("error", (error) => process.stderr.write(`tabrelay: store: PostgreSQL at ${server}: idle connection lost: ${redact(error.message, url)}\n`));
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      await pool.end().catch(() => {});
      // eslint-disable-next-line preserve-caught-error -- the cause would carry the URL with its password; connectFailure redacts it
      throw new Error(connectFailure(server, error, url));
    }
    try {
      await migrate(client, server);
    } catch (error) {
      client.release();
      await pool.end().catch(() => {});
      throw error;
    }
    client.release();
    return new PostgresStore(server, pool);
  }

  async addUser(user: NewUser & { id: string; createdAt: number }): Promise<User> {
    try {
      await this.#pool.query("INSERT INTO users (id, name, role, subject, created_at) VALUES ($1, $2, $3, $4, $5)", [
        user.id,
        user.name,
        user.role,
        user.subject ?? null,
        user.createdAt,
      ]);
    } catch (error) {
      throw conflict(error, `a user named "${user.name}"${user.subject ? ` or with subject "${user.subject}"` : ""} exists already`);
    }
    return { id: user.id, name: user.name, role: user.role, ...(user.subject ? { subject: user.subject } : {}), createdAt: user.createdAt };
  }

  async users(): Promise<User[]> {
    // COLLATE "C": the same byte order as SQLite's, whatever the database's locale.
    return (await this.#pool.query<UserRow>(`SELECT * FROM users ORDER BY created_at, name COLLATE "C"`)).rows.map(userOf);
  }

  async user(idOrName: string): Promise<User | undefined> {
    const row = (await this.#pool.query<UserRow>("SELECT * FROM users WHERE id = $1 OR name = $1", [idOrName])).rows[0];
    return row ? userOf(row) : undefined;
  }

  async userBySubject(subject: string): Promise<User | undefined> {
    const row = (await this.#pool.query<UserRow>("SELECT * FROM users WHERE subject = $1", [subject])).rows[0];
    return row ? userOf(row) : undefined;
  }

  async revokeUser(id: string, at: number): Promise<boolean> {
    return this.#transaction(async (client) => {
      const changed = ((await client.query("UPDATE users SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [at, id])).rowCount ?? 0) > 0;
      if (changed) {
        await client.query("UPDATE tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", [at, id]);
        await client.query("UPDATE pairings SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", [at, id]);
      }
      return changed;
    });
  }

  async addToken(token: Omit<TokenInfo, "lastUsedAt" | "revokedAt"> & { hash: string }): Promise<TokenInfo> {
    try {
      await this.#pool.query("INSERT INTO tokens (id, user_id, name, hash, created_at) VALUES ($1, $2, $3, $4, $5)", [
        token.id,
        token.userId,
        token.name,
        token.hash,
        token.createdAt,
      ]);
    } catch (error) {
      throw conflict(error, "that token exists already");
    }
    return { id: token.id, userId: token.userId, name: token.name, createdAt: token.createdAt };
  }

  async tokenByHash(hash: string): Promise<{ token: TokenInfo; user: User } | undefined> {
    const row = (
      await this.#pool.query<TokenRow & JoinedUser>(
        `SELECT t.*, ${USER_COLUMNS} FROM tokens t JOIN users u ON u.id = t.user_id
          WHERE t.hash = $1 AND t.revoked_at IS NULL AND u.revoked_at IS NULL`,
        [hash],
      )
    ).rows[0];
    return row ? { token: tokenOf(row), user: joinedUserOf(row.user_id, row) } : undefined;
  }

  async touchToken(id: string, at: number): Promise<void> {
    await this.#pool.query("UPDATE tokens SET last_used_at = $1 WHERE id = $2", [at, id]);
  }

  async tokens(userId?: string): Promise<TokenInfo[]> {
    const result = userId
      ? await this.#pool.query<TokenRow>(`SELECT * FROM tokens WHERE user_id = $1 ORDER BY created_at, id COLLATE "C"`, [userId])
      : await this.#pool.query<TokenRow>(`SELECT * FROM tokens ORDER BY created_at, id COLLATE "C"`);
    return result.rows.map(tokenOf);
  }

  async revokeToken(id: string, at: number): Promise<boolean> {
    return ((await this.#pool.query("UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [at, id])).rowCount ?? 0) > 0;
  }

  async addPairing(pairing: Omit<Pairing, "revokedAt">): Promise<Pairing> {
    try {
      await this.#pool.query("INSERT INTO pairings (id, user_id, secret, created_at) VALUES ($1, $2, $3, $4)", [
        pairing.id,
        pairing.userId,
        pairing.secret,
        pairing.createdAt,
      ]);
    } catch (error) {
      throw conflict(error, "that pairing exists already");
    }
    return { ...pairing };
  }

  async pairing(id: string): Promise<{ pairing: Pairing; user: User } | undefined> {
    const row = (
      await this.#pool.query<PairingRow & JoinedUser>(
        `SELECT p.*, ${USER_COLUMNS} FROM pairings p JOIN users u ON u.id = p.user_id
          WHERE p.id = $1 AND p.revoked_at IS NULL AND u.revoked_at IS NULL`,
        [id],
      )
    ).rows[0];
    return row ? { pairing: pairingOf(row), user: joinedUserOf(row.user_id, row) } : undefined;
  }

  async pairings(userId?: string): Promise<Pairing[]> {
    const result = userId
      ? await this.#pool.query<PairingRow>(`SELECT * FROM pairings WHERE user_id = $1 ORDER BY created_at, id COLLATE "C"`, [userId])
      : await this.#pool.query<PairingRow>(`SELECT * FROM pairings ORDER BY created_at, id COLLATE "C"`);
    return result.rows.map(pairingOf);
  }

  async revokePairing(id: string, at: number): Promise<boolean> {
    return ((await this.#pool.query("UPDATE pairings SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [at, id])).rowCount ?? 0) > 0;
  }

  async claimIdempotency(claim: Omit<IdempotencyRecord, "state" | "result">): Promise<IdempotencyRecord | undefined> {
    // Two statements, not one: INSERT .. ON CONFLICT waits for a concurrent claim to commit, and only a statement
    // started after that sees its row. A row released in between is claimed on the next turn.
    for (;;) {
      const inserted = await this.#pool.query(
        "INSERT INTO idempotency (user_id, key, tool, args_hash, session, client, state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8) ON CONFLICT DO NOTHING",
        [claim.userId, claim.key, claim.tool, claim.argsHash, claim.session, claim.client, claim.createdAt, claim.expiresAt],
      );
      if ((inserted.rowCount ?? 0) > 0) return undefined;
      const existing = await this.idempotency(claim.userId, claim.key);
      if (existing) return existing;
    }
  }

  async idempotency(userId: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = (await this.#pool.query<IdempotencyRow>("SELECT * FROM idempotency WHERE user_id = $1 AND key = $2", [userId, key])).rows[0];
    return row ? idempotencyOf(row) : undefined;
  }

  async extendIdempotency(userId: string, key: string, expiresAt: number): Promise<void> {
    await this.#pool.query("UPDATE idempotency SET expires_at = $1 WHERE user_id = $2 AND key = $3 AND state = 'pending'", [expiresAt, userId, key]);
  }

  async settleIdempotency(userId: string, key: string, state: "done" | "unknown", result: string, onlyExpiredBefore?: number): Promise<boolean> {
    const expiry = onlyExpiredBefore === undefined ? "" : " AND expires_at < $5";
    const params: unknown[] = [state, result, userId, key, ...(onlyExpiredBefore === undefined ? [] : [onlyExpiredBefore])];
    return (
      ((await this.#pool.query(`UPDATE idempotency SET state = $1, result = $2 WHERE user_id = $3 AND key = $4 AND state = 'pending'${expiry}`, params))
        .rowCount ?? 0) > 0
    );
  }

  async releaseIdempotency(userId: string, key: string): Promise<void> {
    await this.#pool.query("DELETE FROM idempotency WHERE user_id = $1 AND key = $2 AND state = 'pending'", [userId, key]);
  }

  async forgetIdempotency(before: number): Promise<number> {
    return (await this.#pool.query("DELETE FROM idempotency WHERE created_at < $1", [before])).rowCount ?? 0;
  }

  async putLease(lease: LeaseRecord): Promise<void> {
    await this.#pool.query(
      `INSERT INTO leases (browser_id, tab_id, session, client, since, last_used, opened, keep) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (browser_id, tab_id) DO UPDATE SET session = excluded.session, client = excluded.client, since = excluded.since, last_used = excluded.last_used, opened = excluded.opened, keep = excluded.keep`,
      [lease.browserId, lease.tabId, lease.session, lease.client, lease.since, lease.lastUsed, lease.opened, lease.keep],
    );
  }

  async dropLease(browserId: string, tabId: number): Promise<void> {
    await this.#pool.query("DELETE FROM leases WHERE browser_id = $1 AND tab_id = $2", [browserId, tabId]);
  }

  async dropSessionLeases(session: string): Promise<void> {
    await this.#pool.query("DELETE FROM leases WHERE session = $1", [session]);
  }

  async leases(browserId: string): Promise<LeaseRecord[]> {
    return (await this.#pool.query<LeaseRow>("SELECT * FROM leases WHERE browser_id = $1 ORDER BY tab_id", [browserId])).rows.map(leaseOf);
  }

  async putAudit(broker: string, records: Array<Omit<SharedAuditRecord, "id" | "broker">>): Promise<void> {
    if (records.length === 0) return;
    // One statement for the batch: a row per record, upserted by (broker, local_id).
    const columns = [
      "localId",
      "time",
      "tool",
      "decision",
      "durationMs",
      "browser",
      "tab",
      "origin",
      "user",
      "client",
      "target",
      "rule",
      "code",
      "run",
      "detail",
    ] as const;
    const values: unknown[] = [broker];
    const rows = records.map((r) => {
      const params = auditParams(r);
      const slots = columns.map((c) => {
        values.push(params[c]);
        return `$${values.length}`;
      });
      return `($1, ${slots.join(", ")})`;
    });
    await this.#pool.query(
      `INSERT INTO audit (broker, local_id, time, tool, decision, duration_ms, browser, tab, origin, user_name, client, target, rule, code, run, detail) VALUES ${rows.join(", ")}
       ON CONFLICT (broker, local_id) DO UPDATE SET time = excluded.time, tool = excluded.tool, decision = excluded.decision, duration_ms = excluded.duration_ms,
         browser = excluded.browser, tab = excluded.tab, origin = excluded.origin, user_name = excluded.user_name, client = excluded.client,
         target = excluded.target, rule = excluded.rule, code = excluded.code, run = excluded.run, detail = excluded.detail`,
      values,
    );
  }

  async auditCursor(broker: string): Promise<number> {
    const row = (await this.#pool.query<{ max: string | null }>("SELECT MAX(local_id) AS max FROM audit WHERE broker = $1", [broker])).rows[0];
    return Number(row?.max ?? 0);
  }

  async audit(options: { afterId?: number; limit?: number; user?: string } = {}): Promise<SharedAuditRecord[]> {
    const params: unknown[] = [];
    const mine = options.user === undefined ? "TRUE" : options.user === "default" ? "user_name IS NULL" : `user_name = $${params.push(options.user)}`;
    const limit = options.limit === undefined ? "ALL" : `$${params.push(Math.max(0, Math.trunc(options.limit)))}`;
    const sql =
      options.afterId === undefined
        ? `SELECT * FROM (SELECT * FROM audit WHERE ${mine} ORDER BY id DESC LIMIT ${limit}) last ORDER BY id ASC`
        : `SELECT * FROM audit WHERE id > $${params.push(Math.trunc(options.afterId))} AND ${mine} ORDER BY id ASC LIMIT ${limit}`;
    return (await this.#pool.query(sql, params)).rows.map(sharedAuditOf);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    try {
      await client.query("BEGIN");
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

async function migrate(client: pg.PoolClient, server: string): Promise<void> {
  try {
    await client.query("BEGIN");
    // Held until COMMIT or ROLLBACK: a second broker starting now waits here, then finds the schema current.
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS tabrelay_schema_version (version INTEGER NOT NULL)");
    const row = (await client.query<{ version: number }>("SELECT version FROM tabrelay_schema_version")).rows[0];
    const current = row?.version ?? 0;
    if (current > STORE_SCHEMA_VERSION) {
      throw new Error(
        `the PostgreSQL store at ${server} has schema version ${current}, newer than this tabrelay understands (${STORE_SCHEMA_VERSION}); upgrade tabrelay`,
      );
    }
    for (let version = current; version < STORE_SCHEMA_VERSION; version++) {
      const sql = MIGRATIONS[version];
      if (sql !== undefined) await client.query(sql);
    }
    if (row === undefined) await client.query("INSERT INTO tabrelay_schema_version (version) VALUES ($1)", [STORE_SCHEMA_VERSION]);
    else if (current !== STORE_SCHEMA_VERSION) await client.query("UPDATE tabrelay_schema_version SET version = $1", [STORE_SCHEMA_VERSION]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

/** host:port of a postgres:// URL, without its user and password. */
function serverOf(url: string): string {
  try {
    const parsed = new URL(url);
    const host = parsed.hostname || parsed.searchParams.get("host") || "localhost";
    return `${host}:${parsed.port || "5432"}`;
  } catch {
    return "the server in store.postgres_url (not a valid URL)";
  }
}

function connectFailure(server: string, error: unknown, url: string): string {
  const code = codeOf(error);
  const reason = redact(error instanceof Error ? error.message : String(error), url);
  const next =
    code === "28P01" || code === "28000"
      ? "check the user and password in store.postgres_url"
      : code === "3D000"
        ? "create the database or fix its name in store.postgres_url"
        : "check that PostgreSQL is running there and that store.postgres_url names the right host and port";
  return `cannot connect to the PostgreSQL store at ${server}: ${reason}; ${next}`;
}

/** Drops the URL's password from a message, should a driver or server ever quote it. */
function redact(message: string, url: string): string {
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // Not a URL: nothing to take a password from; the message cannot have it from us.
  }
  return password ? message.split(password).join("***") : message;
}

function codeOf(error: unknown): unknown {
  return error && typeof error === "object" ? Reflect.get(error, "code") : undefined;
}

function conflict(error: unknown, message: string): unknown {
  return codeOf(error) === "23505" ? new StoreConflict(message) : error;
}

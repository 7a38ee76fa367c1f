// The audit log: one durable record per tool call that reads or acts, in <dataDir>/audit.db (SQLite, WAL).
// A write is recorded before it is sent to the browser (begin, as outcome_unknown) and completed after; when
// that first record cannot be written the write is refused. Failed attempts are counted and shown by health().
// Secrets are redacted and fields capped before anything is written; CR/LF are escaped on output.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { SecretRegistry, type Redactor } from "../util/secrets.js";
import { Sqlite, sqliteErrorText, type SqlValue } from "../util/sqlite.js";

export type AuditDecision = "allowed" | "refused" | "failed" | "outcome_unknown";

export interface AuditRecord {
  /** Epoch milliseconds. */
  time: number;
  /** The browser's label (or id). */
  browser?: string;
  tab?: number;
  origin?: string;
  tool: string;
  /** The user the call acted for, by name (absent: the implicit single user, `default`). */
  user?: string;
  /** The MCP client whose session made the call (its clientInfo.name from initialize). */
  client?: string;
  /** What the call aimed at: role + accessible name, e.g. `button "Sign in"`. */
  target?: string;
  decision: AuditDecision;
  /** The policy rule that decided. */
  rule?: string;
  /** The error code, when there is one. */
  code?: string;
  durationMs: number;
  /** The code-mode run the call belongs to (a program's command), or the run's own id on browser_run's record. */
  run?: string;
  /** More about the call as JSON: on a run's record its program's sha256, status and usage. */
  detail?: string;
}

export interface StoredAuditRecord extends AuditRecord {
  id: number;
}

/** Whether the log could be written at the last attempt, and how often it could not. */
export interface AuditHealth {
  ok: boolean;
  /** Failed record attempts since the log was opened. */
  failures: number;
  /** While failing: why the last attempt failed, e.g. `SQLITE_FULL: database or disk is full`. */
  error?: string;
  /** While failing: when (epoch ms) the current run of failures began. */
  since?: number;
}

export type AuditBegun = { ok: true; id: number } | { ok: false; error: string };

/** Where every tool call leaves its record (the SQLite audit log in the broker). A write is begun before it is sent. */
export interface AuditSink {
  record(rec: AuditRecord): void;
  /**
   * A tool call's record, written as its answer goes out (with the others of that moment, in one commit). Optional:
   * a sink without it has `record` take them.
   */
  recordSoon?(rec: AuditRecord): void;
  begin(rec: Omit<AuditRecord, "decision" | "durationMs">): AuditBegun;
  complete(id: number, rec: AuditRecord): void;
  /**
   * Keeps a code-mode run's whole output (its value and logs, JSON) when what the agent got was cut, for
   * `tabrelay audit --run <id>`. Optional: a sink without it (the stateless Worker's) keeps the records only.
   */
  saveRunOutput?(run: string, user: string | undefined, output: string): void;
}

export const AUDIT_DB_FILE = "audit.db";
/** The longest a text field is stored (in UTF-16 code units, the marker included). */
export const AUDIT_FIELD_MAX = 500;

const TRUNCATED = "…";
/** The implicit single user's name (users/principal.ts): its records carry no user. */
const DEFAULT_USER_NAME = "default";
/**
 * A write's record while it runs: decision outcome_unknown and this duration. Tailing (list with afterId) stops
 * short of it for IN_FLIGHT_HOLD_MS so the completed record is shown rather than the pending one; one older than
 * that (the broker stopped mid-write) is shown as what it is, outcome_unknown.
 */
const IN_FLIGHT = -1;
const IN_FLIGHT_HOLD_MS = 10 * 60_000;
const DECISIONS: readonly string[] = ["allowed", "refused", "failed", "outcome_unknown"] satisfies AuditDecision[];

/** Migrations, in order: MIGRATIONS[n] takes the schema from version n to n + 1. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE audit (
     id          INTEGER PRIMARY KEY AUTOINCREMENT,
     time        INTEGER NOT NULL,
     browser     TEXT,
     tab         INTEGER,
     origin      TEXT,
     tool        TEXT NOT NULL,
     target      TEXT,
     decision    TEXT NOT NULL CHECK (decision IN ('allowed', 'refused', 'failed', 'outcome_unknown')),
     rule        TEXT,
     code        TEXT,
     duration_ms INTEGER NOT NULL
   );
   CREATE INDEX audit_time ON audit (time);`,
  // Version 2: the MCP client whose session made the call (older rows have none).
  `ALTER TABLE audit ADD COLUMN client TEXT;`,
  // Version 3: code mode. Each command of a program carries its run's id; the run's own record its details.
  `ALTER TABLE audit ADD COLUMN run TEXT;
   ALTER TABLE audit ADD COLUMN detail TEXT;`,
  // Version 4: a team's broker. The user the call acted for (NULL: the implicit single user).
  `ALTER TABLE audit ADD COLUMN user TEXT;
   CREATE INDEX audit_user ON audit (user, id);`,
  // Version 5: the whole output of a code-mode run whose result the agent got cut (issue 24 §5).
  `CREATE TABLE run_output (
     run    TEXT PRIMARY KEY,
     time   INTEGER NOT NULL,
     user   TEXT,
     output TEXT NOT NULL
   );
   CREATE INDEX run_output_time ON run_output (time);`,
];

/** The schema version this code writes; a file with a newer one is refused rather than misread. */
export const AUDIT_SCHEMA_VERSION = MIGRATIONS.length;

type Row = {
  id: number;
  time: number;
  browser: string | null;
  tab: number | null;
  origin: string | null;
  tool: string;
  user: string | null;
  client: string | null;
  target: string | null;
  decision: string;
  rule: string | null;
  code: string | null;
  duration_ms: number;
  run: string | null;
  detail: string | null;
};

type InsertParams = Omit<Row, "id">;

/** Logs holding records (recordSoon): the process's exit writes them (node:sqlite is synchronous). */
const HOLDING = new Set<AuditLog>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", () => {
    for (const log of [...HOLDING]) log.flush();
  });
}

export class AuditLog {
  readonly path: string;
  private readonly db: Sqlite;
  private readonly secrets: Redactor;
  private failures = 0;
  private failing: { error: string; since: number } | undefined;

  /** Records written by recordSoon() and not yet in the file (flush). */
  #held: { tool: string; params: InsertParams }[] = [];
  #writing: ReturnType<typeof setImmediate> | undefined;

  private constructor(path: string, db: Sqlite, secrets: Redactor) {
    this.path = path;
    this.db = db;
    this.secrets = secrets;
  }

  private insert(params: InsertParams): number {
    return this.db.run(
      `INSERT INTO audit (time, browser, tab, origin, tool, user, client, target, decision, rule, code, duration_ms, run, detail)
       VALUES (@time, @browser, @tab, @origin, @tool, @user, @client, @target, @decision, @rule, @code, @duration_ms, @run, @detail)`,
      params,
    ).lastInsertRowid;
  }

  private update(row: Row): void {
    this.db.run(
      `UPDATE audit SET time = @time, browser = @browser, tab = @tab, origin = @origin, tool = @tool, user = @user, client = @client, target = @target,
         decision = @decision, rule = @rule, code = @code, duration_ms = @duration_ms, run = @run, detail = @detail WHERE id = @id`,
      row,
    );
  }

  /**
   * Opens (creating if needed) `<dataDir>/audit.db`, mode 0600, in WAL mode, and brings its schema up to date.
   * Every recorded field goes through `secrets`, the broker's registry (util/secrets.ts), read at each write so that
   * secrets registered later (a CDP endpoint attached after start) are redacted too. A plain list is for readers
   * (`tabrelay audit`) and tests. Throws if the file cannot be opened or was written by a newer tabrelay.
   */
  static open(dataDir: string, secrets: Redactor | readonly string[]): AuditLog {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const path = join(dataDir, AUDIT_DB_FILE);
    // Create the file ourselves so that it never exists with a wider mode, then tighten any old one.
    closeSync(openSync(path, "a", 0o600));
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      if (existsSync(file)) chmodSync(file, 0o600);
    }
    const db = new Sqlite(path, { busyTimeoutMs: 5000 });
    try {
      db.exec("PRAGMA journal_mode = WAL"); // SQLite gives -wal and -shm the database file's mode
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec("PRAGMA cache_size = -512"); // 512 KiB: the log is appended to and read in small pages
      migrate(db, path);
      hookExit();
      return new AuditLog(path, db, isRedactor(secrets) ? secrets : SecretRegistry.of(secrets, "secret"));
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /**
   * Keeps a run's whole output (JSON of its value and logs, at most its output budget) when the agent's result was
   * cut; redacted like every record. Never throws: a failure is counted like a record's.
   */
  saveRunOutput(run: string, user: string | undefined, output: string): void {
    try {
      this.db.run(
        "INSERT OR REPLACE INTO run_output (run, time, user, output) VALUES (?, ?, ?, ?)",
        run,
        Date.now(),
        user ?? null,
        this.secrets.redact(output),
      );
      this.succeeded();
    } catch (error) {
      this.failed("browser_run", error);
    }
  }

  /** The records of one code-mode run (its browser_run record and its commands'), oldest first. */
  runRecords(run: string): StoredAuditRecord[] {
    this.flush();
    return this.db.all<Row>("SELECT * FROM audit WHERE run = ? ORDER BY id ASC", run).map(fromRow);
  }

  /** A run's whole output as saveRunOutput kept it, or undefined. */
  runOutput(run: string): { time: number; user?: string; output: string } | undefined {
    const row = this.db.get<{ time: number; user: string | null; output: string }>("SELECT time, user, output FROM run_output WHERE run = ?", run);
    return row ? { time: row.time, ...(row.user !== null ? { user: row.user } : {}), output: row.output } : undefined;
  }

  /** Writes one record, synchronously (after any recordSoon holds). Never throws: a failure is counted (see health) and costs a line on stderr. */
  record(rec: AuditRecord): void {
    this.flush();
    try {
      this.insert(this.params(rec));
      this.succeeded();
    } catch (error) {
      this.failed(rec.tool, error);
    }
  }

  /**
   * A tool call's record: held for the rest of this turn of the event loop and written with any others of that turn,
   * in one transaction (the call's answer goes out first; a busy broker commits once for many calls). Anything that
   * reads the log, and every record and begin, writes what is held first, so the order and every reader see them; so
   * does the process's exit. Never throws: a failure is counted (see health) and costs a line on stderr.
   */
  recordSoon(rec: AuditRecord): void {
    let params: InsertParams;
    try {
      params = this.params(rec);
    } catch (error) {
      this.failed(rec.tool, error);
      return;
    }
    this.#held.push({ tool: rec.tool, params });
    if (this.#writing === undefined) {
      this.#writing = setImmediate(() => this.flush());
      HOLDING.add(this);
    }
  }

  /** Writes the records recordSoon() holds, in the order they came. */
  flush(): void {
    if (this.#writing !== undefined) clearImmediate(this.#writing);
    this.#writing = undefined;
    HOLDING.delete(this);
    const held = this.#held;
    if (held.length === 0) return;
    this.#held = [];
    try {
      // One record commits on its own: a transaction around it would only add its BEGIN and COMMIT.
      if (held.length === 1) this.insert(held[0]!.params);
      else
        this.db.transaction(() => {
          for (const { params } of held) this.insert(params);
        });
      this.succeeded();
    } catch {
      // One at a time: each record that cannot be written is counted, and the others are kept.
      for (const { tool, params } of held) {
        try {
          this.insert(params);
          this.succeeded();
        } catch (error) {
          this.failed(tool, error);
        }
      }
    }
  }

  /**
   * Records a write before it is sent to the browser: a row with decision outcome_unknown, which `complete`
   * then replaces with the outcome (a broker that stops in between leaves it outcome_unknown, which is the truth).
   * Never throws: when the row cannot be written the answer says why, and the caller must not send the write.
   */
  begin(rec: Omit<AuditRecord, "decision" | "durationMs">): AuditBegun {
    this.flush();
    try {
      const id = this.insert({ ...this.params({ ...rec, decision: "outcome_unknown", durationMs: 0 }), duration_ms: IN_FLIGHT });
      this.succeeded();
      return { ok: true, id };
    } catch (error) {
      return { ok: false, error: this.failed(rec.tool, error) };
    }
  }

  /** Replaces the record `begin` wrote with the write's outcome. Never throws: a failure is counted and leaves outcome_unknown. */
  complete(id: number, rec: AuditRecord): void {
    try {
      this.update({ id, ...this.params(rec) });
      this.succeeded();
    } catch (error) {
      this.failed(rec.tool, error);
    }
  }

  /** Whether the last record could be written; failed attempts since the log was opened. */
  health(): AuditHealth {
    this.flush();
    return this.failing ? { ok: false, failures: this.failures, error: this.failing.error, since: this.failing.since } : { ok: true, failures: this.failures };
  }

  private params(rec: AuditRecord): InsertParams {
    return {
      time: Number.isFinite(rec.time) ? Math.trunc(rec.time) : Date.now(),
      browser: this.text(rec.browser),
      tab: rec.tab !== undefined && Number.isSafeInteger(rec.tab) ? rec.tab : null,
      origin: this.text(rec.origin),
      tool: this.text(rec.tool) ?? "",
      user: this.text(rec.user),
      client: this.text(rec.client),
      target: this.text(rec.target),
      decision: rec.decision,
      rule: this.text(rec.rule),
      code: this.text(rec.code),
      duration_ms: Number.isFinite(rec.durationMs) ? Math.max(0, Math.round(rec.durationMs)) : 0,
      run: this.text(rec.run),
      // JSON the broker wrote (hash, status, counts): redacted, not capped, so it stays parseable.
      detail: rec.detail === undefined ? null : this.secrets.redact(rec.detail).slice(0, 4000),
    };
  }

  private succeeded(): void {
    this.failing = undefined;
  }

  /** Counts a failed attempt and returns its one-line cause (`<path>: SQLITE_FULL: database or disk is full`). */
  private failed(tool: unknown, error: unknown): string {
    this.failures += 1;
    const cause = escapeText(this.text(sqliteErrorText(error)) ?? "");
    this.failing = { error: cause, since: this.failing?.since ?? Date.now() };
    try {
      process.stderr.write(
        `tabrelay: audit log ${this.path}: could not record ${escapeText(this.text(typeof tool === "string" ? tool : "?") ?? "")}: ${cause}\n`,
      );
    } catch {
      // stderr itself is gone: the failure is still counted
    }
    return `${this.path}: ${cause}`;
  }

  /**
   * Records, oldest first. Without `afterId`: the last `limit` records (all when no limit).
   * With `afterId`: the first `limit` records whose id is greater (for tailing and paging forward), stopping
   * short of a write still in flight so that a tail shows its outcome, not its pending record.
   */
  list(options: { afterId?: number; limit?: number; user?: string } = {}): StoredAuditRecord[] {
    this.flush();
    const limit = options.limit === undefined ? -1 : Math.max(0, Math.trunc(options.limit));
    // One user's records only (the implicit user's are those with none): a member's dashboard sees no one else's.
    const mine = options.user === undefined ? "1" : options.user === DEFAULT_USER_NAME ? "user IS NULL" : "user = @user";
    const who: Record<string, SqlValue> = mine.includes("@user") ? { user: options.user ?? null } : {}; // node:sqlite refuses a named value the SQL does not use
    const rows =
      options.afterId === undefined
        ? this.db.all<Row>(`SELECT * FROM (SELECT * FROM audit WHERE ${mine} ORDER BY id DESC LIMIT @limit) ORDER BY id ASC`, { limit, ...who })
        : this.db.all<Row>(
            `SELECT * FROM audit WHERE id > @after AND ${mine} AND id < COALESCE(
               (SELECT MIN(id) FROM audit WHERE id > @after AND ${mine} AND duration_ms = @inFlight AND time > @fresh), 9223372036854775807)
             ORDER BY id ASC LIMIT @limit`,
            { after: Math.trunc(options.afterId), inFlight: IN_FLIGHT, fresh: Date.now() - IN_FLIGHT_HOLD_MS, limit, ...who },
          );
    return rows.map(fromRow);
  }

  close(): void {
    this.flush();
    this.db.close();
  }

  /** Redacts the secrets, then caps the length (in that order, so a cut never leaves part of a secret). */
  private text(value: string | undefined): string | null {
    if (value === undefined || value === null) return null;
    return cap(this.secrets.redact(String(value)), AUDIT_FIELD_MAX);
  }
}

/** The human line for a record: ISO time, decision, tool, client, browser, tab, origin, target, rule, duration, error code. */
export function formatAuditLine(rec: StoredAuditRecord): string {
  const time = Number.isFinite(rec.time) ? new Date(rec.time).toISOString() : String(rec.time);
  const parts = [time, rec.decision.padEnd(15), escapeText(rec.tool)];
  const field = (key: string, value: string | number | undefined) => {
    if (value !== undefined && value !== "") parts.push(`${key}=${escapeText(String(value))}`);
  };
  field("user", rec.user);
  field("client", rec.client);
  field("browser", rec.browser);
  field("tab", rec.tab);
  field("origin", rec.origin);
  field("target", rec.target);
  field("rule", rec.rule);
  field("run", rec.run);
  parts.push(`${rec.durationMs}ms`);
  field("code", rec.code);
  return parts.join(" ");
}

/** CR and LF become the two characters \r and \n; other control characters (ESC included) become \xNN or \uNNNN. */
function escapeText(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    if (c === "\r") return "\\r";
    if (c === "\n") return "\\n";
    if (c === "\t") return "\\t";
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - TRUNCATED.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1; // do not split a surrogate pair
  return text.slice(0, end) + TRUNCATED;
}

function isRedactor(secrets: Redactor | readonly string[]): secrets is Redactor {
  return !Array.isArray(secrets);
}

function migrate(db: Sqlite, path: string): void {
  db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
    const row = db.get<{ version: number }>("SELECT version FROM schema_version");
    const current = row?.version ?? 0;
    if (current > AUDIT_SCHEMA_VERSION) {
      throw new Error(`${path} has audit schema version ${current}, newer than this tabrelay understands (${AUDIT_SCHEMA_VERSION}); upgrade tabrelay`);
    }
    for (let version = current; version < AUDIT_SCHEMA_VERSION; version++) {
      const sql = MIGRATIONS[version];
      if (sql !== undefined) db.exec(sql);
    }
    if (row === undefined) db.run("INSERT INTO schema_version (version) VALUES (?)", AUDIT_SCHEMA_VERSION);
    else if (current !== AUDIT_SCHEMA_VERSION) db.run("UPDATE schema_version SET version = ?", AUDIT_SCHEMA_VERSION);
  });
}

function fromRow(row: Row): StoredAuditRecord {
  // Keys in the documented order (they show in --json output); absent fields stay absent, not null.
  return {
    id: row.id,
    time: row.time,
    ...(row.browser !== null ? { browser: row.browser } : {}),
    ...(row.tab !== null ? { tab: row.tab } : {}),
    ...(row.origin !== null ? { origin: row.origin } : {}),
    tool: row.tool,
    ...(row.user !== null && row.user !== undefined ? { user: row.user } : {}),
    ...(row.client !== null && row.client !== undefined ? { client: row.client } : {}),
    ...(row.target !== null ? { target: row.target } : {}),
    decision: isDecision(row.decision) ? row.decision : "failed",
    ...(row.rule !== null ? { rule: row.rule } : {}),
    ...(row.code !== null ? { code: row.code } : {}),
    durationMs: Math.max(0, row.duration_ms),
    ...(row.run !== null && row.run !== undefined ? { run: row.run } : {}),
    ...(row.detail !== null && row.detail !== undefined ? { detail: row.detail } : {}),
  };
}

function isDecision(value: string): value is AuditDecision {
  return DECISIONS.includes(value);
}

// SQLite through Node's own `node:sqlite`: no native addon to compile when tabrelay is installed, no install script
// to allow (bench/sqlite.mjs measured it level with better-sqlite3 on the broker's work: ~80 us a tool call for the
// token check and the audit record's insert and update; 5 ms less to load). The store (store/sqlite.ts) and the
// audit log (audit/auditLog.ts) use this small face of it: statements prepared once per SQL text, rows typed by
// the caller, and a transaction helper (node:sqlite has none).
//
// Node 22 marks node:sqlite experimental and says so once on stderr (24 and later do not); the CLI's entry
// (packages/cli/bin/tabrelay.js) keeps that one line out of a user's terminal.
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

export type SqlValue = SQLInputValue;
/** Positional values, or one object of named values (`@name` in the SQL, `name` in the object; every key used). */
export type SqlParams = SqlValue[] | [Record<string, SqlValue>];

export type SqliteOptions = {
  /** How long a statement waits for another connection's lock before failing with SQLITE_BUSY. */
  busyTimeoutMs?: number;
  readOnly?: boolean;
};

export class Sqlite {
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  #transactionDepth = 0;

  constructor(path: string, options: SqliteOptions = {}) {
    this.path = path;
    this.#db = new DatabaseSync(path, { readOnly: options.readOnly ?? false });
    this.#db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
  }

  get isOpen(): boolean {
    return this.#db.isOpen;
  }

  /** Runs SQL text with no parameters and no result (schema, pragmas); it may hold several statements. */
  exec(sql: string): void {
    this.#db.exec(sql);
  }

  /** Runs one statement; the number of rows it changed and the last inserted row id. */
  run(sql: string, ...params: SqlParams): { changes: number; lastInsertRowid: number } {
    const result = this.#statement(sql).run(...(params as SqlValue[]));
    return { changes: Number(result.changes), lastInsertRowid: Number(result.lastInsertRowid) };
  }

  /** The first row of a query, or undefined. `Row` is the caller's word for the columns the SQL selects. */
  get<Row>(sql: string, ...params: SqlParams): Row | undefined {
    return this.#statement(sql).get(...(params as SqlValue[])) as Row | undefined;
  }

  /** Every row of a query. */
  all<Row>(sql: string, ...params: SqlParams): Row[] {
    return this.#statement(sql).all(...(params as SqlValue[])) as Row[];
  }

  /**
   * Runs `work` in one transaction that takes the write lock at its start (BEGIN IMMEDIATE: no reader-turned-writer
   * deadlock under WAL), committed when `work` returns and rolled back when it throws. Inside another transaction,
   * `work` joins it.
   */
  transaction<T>(work: () => T): T {
    if (this.#transactionDepth > 0) return work();
    this.#db.exec("BEGIN IMMEDIATE");
    this.#transactionDepth++;
    try {
      const result = work();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    } finally {
      this.#transactionDepth--;
    }
  }

  close(): void {
    this.#statements.clear();
    if (this.#db.isOpen) this.#db.close();
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}

/** SQLite's constraint codes for a duplicate key (extended result codes, as node:sqlite's errors carry them). */
const DUPLICATE_CODES = new Set([1555 /* SQLITE_CONSTRAINT_PRIMARYKEY */, 2067 /* SQLITE_CONSTRAINT_UNIQUE */]);

/** Whether `error` is SQLite refusing a row whose primary or unique key exists already. */
export function isDuplicateKey(error: unknown): boolean {
  const code = error && typeof error === "object" ? Reflect.get(error, "errcode") : undefined;
  return typeof code === "number" && DUPLICATE_CODES.has(code);
}

/** SQLite's primary result codes by number (https://sqlite.org/rescode.html), for messages people search for. */
const PRIMARY_CODES: Record<number, string> = {
  1: "SQLITE_ERROR",
  2: "SQLITE_INTERNAL",
  3: "SQLITE_PERM",
  4: "SQLITE_ABORT",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  7: "SQLITE_NOMEM",
  8: "SQLITE_READONLY",
  9: "SQLITE_INTERRUPT",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  12: "SQLITE_NOTFOUND",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
  15: "SQLITE_PROTOCOL",
  16: "SQLITE_EMPTY",
  17: "SQLITE_SCHEMA",
  18: "SQLITE_TOOBIG",
  19: "SQLITE_CONSTRAINT",
  20: "SQLITE_MISMATCH",
  21: "SQLITE_MISUSE",
  22: "SQLITE_NOLFS",
  23: "SQLITE_AUTH",
  24: "SQLITE_FORMAT",
  25: "SQLITE_RANGE",
  26: "SQLITE_NOTADB",
};

/** `SQLITE_FULL: database or disk is full` for an error from SQLite; other errors' own message. */
export function sqliteErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = error && typeof error === "object" ? Reflect.get(error, "errcode") : undefined;
  const name = typeof code === "number" ? PRIMARY_CODES[code & 0xff] : undefined;
  return name !== undefined && !message.startsWith(name) ? `${name}: ${message}` : message;
}

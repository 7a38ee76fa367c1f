#!/usr/bin/env node
// The store's two SQLite engines side by side (issue 25: can Node's own node:sqlite replace the native
// better-sqlite3?), on the broker's own work per tool call: the audit log's insert of a begun record and its update
// on completion (WAL, synchronous=NORMAL, as audit/auditLog.ts opens it), a token check (the store's lookup by hash
// and last-used touch), and a dashboard read of the newest 200 records; plus loading the engine and opening a
// database. Statements prepared once, as both engines' users do. Figures are medians of ROUNDS rounds.
//   node bench/sqlite.mjs   (better-sqlite3 from bench/node_modules: `npm install` in bench/ brings it)
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const require = createRequire(import.meta.url);
const CALLS = 2000;
const ROUNDS = 5;

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

const SCHEMA = `
CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, browser TEXT, tab INTEGER, origin TEXT, tool TEXT NOT NULL,
  user TEXT, client TEXT, target TEXT, decision TEXT NOT NULL, rule TEXT, code TEXT, duration_ms INTEGER NOT NULL, run TEXT, detail TEXT);
CREATE INDEX audit_time ON audit (time);
CREATE TABLE tokens (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL,
  last_used_at INTEGER, revoked_at INTEGER);`;

const engines = {
  "better-sqlite3": () => {
    const started = performance.now();
    const Database = require("better-sqlite3");
    const loadMs = performance.now() - started;
    return {
      loadMs,
      open(path) {
        const db = new Database(path, { timeout: 5000 });
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
        return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
      },
    };
  },
  "node:sqlite": () => {
    const started = performance.now();
    const { DatabaseSync } = require("node:sqlite");
    const loadMs = performance.now() - started;
    return {
      loadMs,
      open(path) {
        const db = new DatabaseSync(path);
        db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
        return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
      },
    };
  },
};

function round(engine, dir) {
  const openStarted = performance.now();
  const db = engine.open(join(dir, `bench-${Math.random().toString(36).slice(2)}.db`));
  db.exec(SCHEMA);
  const openMs = performance.now() - openStarted;
  const insert = db.prepare(`INSERT INTO audit (time, browser, tab, origin, tool, user, client, target, decision, rule, code, duration_ms, run, detail)
    VALUES (@time, @browser, @tab, @origin, @tool, @user, @client, @target, @decision, @rule, @code, @duration_ms, @run, @detail)`);
  const update = db.prepare("UPDATE audit SET decision = @decision, code = @code, duration_ms = @duration_ms, detail = @detail WHERE id = @id");
  for (let i = 0; i < 100; i++)
    db.prepare("INSERT INTO tokens (id, user_id, name, hash, created_at) VALUES (?, ?, ?, ?, ?)").run(`t${i}`, "u", `token ${i}`, `hash-${i}`, i);
  const byHash = db.prepare("SELECT * FROM tokens WHERE hash = ? AND revoked_at IS NULL");
  const touch = db.prepare("UPDATE tokens SET last_used_at = ? WHERE id = ?");
  const recent = db.prepare("SELECT * FROM (SELECT * FROM audit ORDER BY id DESC LIMIT 200) ORDER BY id ASC");

  const callStarted = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const token = byHash.get(`hash-${i % 100}`);
    touch.run(i, token.id);
    const record = {
      time: i,
      browser: "ext:1",
      tab: 7,
      origin: "https://example.test",
      tool: "read_url",
      user: "u",
      client: "bench",
      target: "https://example.test/a?b=c",
      decision: "begun",
      rule: null,
      code: null,
      duration_ms: 0,
      run: null,
      detail: null,
    };
    const id = insert.run(record).lastInsertRowid;
    update.run({ id, decision: "allow", code: null, duration_ms: 12, detail: '{"chars":4211}' });
  }
  const perCallUs = ((performance.now() - callStarted) * 1000) / CALLS;

  const readStarted = performance.now();
  let rows = 0;
  for (let i = 0; i < 50; i++) rows += recent.all().length;
  const recentMs = (performance.now() - readStarted) / 50;
  if (rows !== 50 * 200) throw new Error(`bench/sqlite.mjs: read ${rows} rows`);
  db.close();
  return { openMs, perCallUs, recentMs };
}

const dir = mkdtempSync(join(tmpdir(), "tabrelay-sqlite-bench-"));
try {
  console.log(`node ${process.version}, ${CALLS} tool calls per round (token check + audit insert + update), ${ROUNDS} rounds, medians`);
  console.log("engine           load     open+schema  per call    newest 200 records");
  for (const [name, make] of Object.entries(engines)) {
    const engine = make();
    const rounds = Array.from({ length: ROUNDS }, () => round(engine, dir));
    const pick = (key) => median(rounds.map((r) => r[key]));
    console.log(
      `${name.padEnd(16)} ${engine.loadMs.toFixed(1).padStart(5)} ms ${pick("openMs").toFixed(2).padStart(7)} ms ${pick("perCallUs").toFixed(1).padStart(7)} us ${pick("recentMs").toFixed(3).padStart(9)} ms`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

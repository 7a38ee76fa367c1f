// The audit log against a real SQLite file in a temporary data dir.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AUDIT_FIELD_MAX, AUDIT_SCHEMA_VERSION, AuditLog, formatAuditLine, type AuditRecord, type StoredAuditRecord } from "../../src/audit/auditLog.js";
import { SecretRegistry } from "../../src/util/secrets.js";

/** After the current turn of the event loop, when record() has written what it held. */
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

const dirs: string[] = [];
const logs: AuditLog[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-audit-"));
  dirs.push(dir);
  return dir;
}

function open(dir: string, secrets: string[] = []): AuditLog {
  const log = AuditLog.open(dir, secrets);
  logs.push(log);
  return log;
}

function rec(overrides: Partial<AuditRecord> = {}): AuditRecord {
  return { time: Date.UTC(2026, 0, 2, 3, 4, 5, 678), tool: "read_url", decision: "allowed", durationMs: 42, ...overrides };
}

afterEach(() => {
  vi.restoreAllMocks();
  for (const log of logs.splice(0)) log.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("AuditLog storage", () => {
  it("keeps every field across close and reopen", () => {
    const dir = tempDir();
    const full: AuditRecord = {
      time: 1_767_323_045_678,
      browser: "Work",
      tab: 17,
      origin: "https://docs.test",
      tool: "click",
      target: 'button "Sign in"',
      decision: "outcome_unknown",
      rule: "allow:docs.test",
      code: "browser_disconnected",
      durationMs: 1234,
    };
    const first = open(dir);
    first.record(full);
    first.record(rec({ decision: "refused", rule: "deny:bank.test", code: "policy_denied" }));
    first.close();

    const again = open(dir);
    const records = again.list();
    expect(records).toHaveLength(2);
    expect(records[0]).toEqual({ id: 1, ...full });
    expect(records[1]).toMatchObject({ id: 2, decision: "refused", rule: "deny:bank.test", code: "policy_denied" });
    // optional fields that were not given stay absent (not null) when read back
    expect(Object.keys(records[1] ?? {}).sort()).toEqual(["code", "decision", "durationMs", "id", "rule", "time", "tool"]);
  });

  it("creates audit.db with mode 0600, in WAL mode, with a schema version", () => {
    const dir = tempDir();
    const log = open(dir);
    log.record(rec());
    const path = join(dir, "audit.db");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    const raw = new DatabaseSync(path, { readOnly: true });
    try {
      expect(raw.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(raw.prepare("SELECT version FROM schema_version").all()).toEqual([{ version: AUDIT_SCHEMA_VERSION }]);
    } finally {
      raw.close();
    }
  });

  it("brings a version 1 database (before the client column) up to date; its old records read as before, new ones name their client", () => {
    const dir = tempDir();
    const raw = new DatabaseSync(join(dir, "audit.db"));
    raw.exec(`CREATE TABLE audit (
       id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, browser TEXT, tab INTEGER, origin TEXT, tool TEXT NOT NULL,
       target TEXT, decision TEXT NOT NULL CHECK (decision IN ('allowed', 'refused', 'failed', 'outcome_unknown')),
       rule TEXT, code TEXT, duration_ms INTEGER NOT NULL);
     CREATE INDEX audit_time ON audit (time);
     CREATE TABLE schema_version (version INTEGER NOT NULL);
     INSERT INTO schema_version (version) VALUES (1);
     INSERT INTO audit (time, tab, tool, decision, duration_ms) VALUES (1000, 4, 'read_page', 'allowed', 12);`);
    raw.close();
    const log = open(dir);
    log.record(rec({ tool: "click", client: "claude-code", tab: 4 }));
    expect(log.list().map(({ id: _id, ...r }) => r)).toEqual([
      { time: 1000, tab: 4, tool: "read_page", decision: "allowed", durationMs: 12 },
      { time: rec().time, tab: 4, tool: "click", client: "claude-code", decision: "allowed", durationMs: 42 },
    ]);
    expect(formatAuditLine({ id: 2, ...rec({ tool: "click", client: "claude-code", tab: 4 }) })).toContain("click client=claude-code tab=4");
    expect(AUDIT_SCHEMA_VERSION).toBe(5);
  });

  it("keeps a code-mode run's id on its commands' records and the run's details on its own (version 3)", () => {
    const log = open(tempDir());
    log.record(rec({ tool: "click", tab: 4, run: "run-1a2b" }));
    log.record(rec({ tool: "browser_run", run: "run-1a2b", detail: '{"status":"ok"}' }));
    log.record(rec({ tool: "click", tab: 4 }));
    const [command, run, plain] = log.list();
    expect(command?.run).toBe("run-1a2b");
    expect(run).toMatchObject({ tool: "browser_run", run: "run-1a2b", detail: '{"status":"ok"}' });
    expect(plain?.run).toBeUndefined();
    expect(formatAuditLine({ id: 1, ...rec({ tool: "click", run: "run-1a2b" }) })).toContain("run=run-1a2b");
  });

  it("refuses a database written by a newer schema", () => {
    const dir = tempDir();
    open(dir).close();
    const raw = new DatabaseSync(join(dir, "audit.db"));
    raw.prepare("UPDATE schema_version SET version = ?").run(AUDIT_SCHEMA_VERSION + 1);
    raw.close();
    expect(() => AuditLog.open(dir, [])).toThrow(/newer/);
  });

  it("lists oldest first: the last N without afterId, the next N after afterId", () => {
    const log = open(tempDir());
    for (let i = 1; i <= 7; i++) log.record(rec({ tool: `tool${i}`, time: 1000 + i }));
    expect(log.list().map((r) => r.tool)).toEqual(["tool1", "tool2", "tool3", "tool4", "tool5", "tool6", "tool7"]);
    expect(log.list({ limit: 3 }).map((r) => r.tool)).toEqual(["tool5", "tool6", "tool7"]);
    expect(log.list({ afterId: 2, limit: 3 }).map((r) => r.id)).toEqual([3, 4, 5]);
    expect(log.list({ afterId: 5 }).map((r) => r.id)).toEqual([6, 7]);
    expect(log.list({ afterId: 7 })).toEqual([]);
    expect(log.list({ limit: 0 })).toEqual([]);

    // tailing: page forward until nothing is new
    const seen: number[] = [];
    let after = 0;
    for (let page = log.list({ afterId: after, limit: 2 }); page.length > 0; page = log.list({ afterId: after, limit: 2 })) {
      seen.push(...page.map((r) => r.id));
      after = page.at(-1)?.id ?? after;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});

describe("AuditLog hygiene", () => {
  it("redacts every secret in every text field", () => {
    const mcp = "mcp-TOKEN-abcdefghijklmnop";
    const pairing = "pair/TOKEN+qrstuvwxyz0123";
    const log = open(tempDir(), [mcp, pairing, ""]);
    log.record({
      time: 1,
      browser: `label ${mcp}`,
      tab: 3,
      origin: `https://x.test/?t=${encodeURIComponent(pairing)}`,
      tool: `tool${mcp}`,
      target: `textbox "${pairing}" and again ${pairing}`,
      decision: "failed",
      rule: `rule:${mcp}`,
      code: `${pairing}`,
      durationMs: 5,
    });
    const [stored] = log.list();
    expect(stored).toBeDefined();
    const text = JSON.stringify(stored);
    expect(text).not.toContain("TOKEN");
    expect(stored).toMatchObject({
      browser: "label [redacted: secret]",
      origin: "https://x.test/?t=[redacted: secret]",
      tool: "tool[redacted: secret]",
      target: 'textbox "[redacted: secret]" and again [redacted: secret]',
      rule: "rule:[redacted: secret]",
      code: "[redacted: secret]",
    });
    // an empty secret does not redact everything
    expect(stored?.decision).toBe("failed");
  });

  it("redacts through the broker's registry, secrets registered after opening included, marked with their kind", () => {
    const secrets = new SecretRegistry();
    const log = AuditLog.open(tempDir(), secrets);
    logs.push(log);
    const endpoint = "ws://127.0.0.1:9222/devtools/browser/6f3c1f2e-8a4b-4c1d-9e0f-1a2b3c4d5e6f";
    log.record(rec({ target: `before ${endpoint}` }));
    secrets.register(endpoint, "cdp endpoint");
    log.record(rec({ target: `after ${endpoint}`, origin: `https://x.test/?u=${encodeURIComponent(endpoint)}` }));
    log.record(rec({ target: "the id 6f3c1f2e-8a4b-4c1d-9e0f-1a2b3c4d5e6f alone" }));
    const [before, after, part] = log.list();
    // Redaction happens at write time: what was recorded before the secret was known stays as it was.
    expect(before?.target).toBe(`before ${endpoint}`);
    expect(after).toMatchObject({ target: "after [redacted: cdp endpoint]", origin: "https://x.test/?u=[redacted: cdp endpoint]" });
    expect(part?.target).toBe("the id [redacted: cdp endpoint] alone");
  });

  it("redacts before capping, so a secret straddling the cap leaves no part behind", () => {
    const secret = "SECRETSECRETSECRETSECRET";
    const log = open(tempDir(), [secret]);
    log.record(rec({ target: "x".repeat(AUDIT_FIELD_MAX - 10) + secret }));
    const target = log.list()[0]?.target ?? "";
    expect(target.length).toBeLessThanOrEqual(AUDIT_FIELD_MAX);
    expect(target).not.toContain("SECRET");
  });

  it("caps long fields", () => {
    const log = open(tempDir());
    const long = "a".repeat(10_000);
    log.record(rec({ browser: long, origin: long, tool: long, target: long, rule: long, code: long }));
    const [stored] = log.list();
    for (const value of [stored?.browser, stored?.origin, stored?.tool, stored?.target, stored?.rule, stored?.code]) {
      expect(value?.length).toBe(AUDIT_FIELD_MAX);
      expect(value?.endsWith("…")).toBe(true);
    }
    // a cut never splits a surrogate pair
    log.record(rec({ target: "😀".repeat(AUDIT_FIELD_MAX) }));
    const emoji = log.list({ afterId: stored?.id ?? 0 })[0]?.target ?? "";
    expect(emoji.length).toBeLessThanOrEqual(AUDIT_FIELD_MAX);
    expect(emoji).not.toContain("\ufffd");
    expect(emoji.replace(/😀/gu, "")).toBe("…");
  });

  it("stores CR/LF as given and escapes them in the human line", () => {
    const log = open(tempDir());
    log.record(
      rec({
        browser: "Work\r\n2026-01-01T00:00:00.000Z allowed forged",
        origin: "https://a.test\n",
        tool: "read\rpage",
        target: 'link "a\nb"\u001b[31m',
        rule: "r\n",
        code: "c\r",
      }),
    );
    const [stored] = log.list();
    expect(stored?.browser).toContain("\r\n");
    const line = formatAuditLine(stored ?? { ...rec(), id: 0 });
    expect(line).not.toMatch(/[\r\n\u001b]/);
    expect(line).toContain("browser=Work\\r\\n2026-01-01T00:00:00.000Z allowed forged");
    expect(line).toContain("origin=https://a.test\\n");
    expect(line).toContain("read\\rpage");
    expect(line).toContain('target=link "a\\nb"\\x1b[31m');
    expect(line).toContain("rule=r\\n");
    expect(line).toContain("code=c\\r");
  });

  it("formats the human line in the documented order", () => {
    const full: StoredAuditRecord = {
      id: 9,
      time: Date.UTC(2026, 0, 2, 3, 4, 5, 678),
      browser: "Work",
      tab: 12,
      origin: "https://docs.test",
      tool: "click",
      target: 'button "Save"',
      decision: "allowed",
      rule: "allow:docs.test",
      code: "timeout",
      durationMs: 87,
    };
    expect(formatAuditLine(full)).toBe(
      '2026-01-02T03:04:05.678Z allowed         click browser=Work tab=12 origin=https://docs.test target=button "Save" rule=allow:docs.test 87ms code=timeout',
    );
    expect(formatAuditLine({ id: 1, time: 0, tool: "list_tabs", decision: "outcome_unknown", durationMs: 0 })).toBe(
      "1970-01-01T00:00:00.000Z outcome_unknown list_tabs 0ms",
    );
  });

  it("normalises odd numbers instead of failing", () => {
    const log = open(tempDir());
    const before = Date.now();
    log.record(rec({ time: Number.NaN, tab: 1.5, durationMs: 12.6 }));
    log.record(rec({ durationMs: -3 }));
    const [a, b] = log.list();
    expect(a?.time).toBeGreaterThanOrEqual(before);
    expect(a?.tab).toBeUndefined();
    expect(a?.durationMs).toBe(13);
    expect(b?.durationMs).toBe(0);
  });
});

describe("AuditLog failures", () => {
  it("record() on a closed log does not throw and says so in one stderr line, once its turn is over", async () => {
    const log = open(tempDir(), ["s3cret-value"]);
    log.close();
    log.close(); // twice is fine
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(() => log.record(rec({ tool: "read_url s3cret-value" }))).not.toThrow();
    await endOfTurn();
    expect(stderr).toHaveBeenCalledTimes(1);
    const line = String(stderr.mock.calls[0]?.[0]);
    expect(line).toMatch(/^tabrelay: audit log .*audit\.db: could not record read_url \[redacted: secret\]: .+\n$/);
    expect(line.split("\n")).toHaveLength(2);
  });

  it("record() on a broken database does not throw and the log goes on", async () => {
    const dir = tempDir();
    const log = open(dir);
    log.record(rec({ tool: "before" }));
    await endOfTurn();
    const raw = new DatabaseSync(join(dir, "audit.db"));
    raw.exec("DROP TABLE audit");
    raw.close();
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(() => log.record(rec({ tool: "during" }))).not.toThrow();
    expect(() => log.record(rec({ tool: "again" }))).not.toThrow();
    await endOfTurn();
    expect(stderr).toHaveBeenCalledTimes(2);
    expect(String(stderr.mock.calls[0]?.[0])).toContain("could not record during");
  });

  it("record() with an invalid decision from an untyped caller does not throw, and loses no other record of its turn", async () => {
    const log = open(tempDir());
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const bad: unknown = { ...rec(), decision: "maybe" };
    expect(() => Reflect.apply(log.recordSoon, log, [bad])).not.toThrow();
    log.recordSoon(rec({ tool: "fine" }));
    await endOfTurn();
    expect(stderr).toHaveBeenCalledTimes(1);
    expect(log.list().map((r) => r.tool)).toEqual(["fine"]);
  });

  it("holds the records of one turn and writes them together after it, in order; a reader or a begin writes them first", async () => {
    const log = open(tempDir());
    log.recordSoon(rec({ tool: "one" }));
    log.recordSoon(rec({ tool: "two" }));
    expect(log.list().map((r) => r.tool)).toEqual(["one", "two"]);
    log.recordSoon(rec({ tool: "three" }));
    const begun = log.begin({ time: Date.now(), tool: "click" });
    expect(begun.ok).toBe(true);
    log.recordSoon(rec({ tool: "four" }));
    log.record(rec({ tool: "five" }));
    log.recordSoon(rec({ tool: "six" }));
    const other = open(tempDir());
    other.recordSoon(rec({ tool: "elsewhere" }));
    await endOfTurn();
    expect(log.list().map((r) => r.tool)).toEqual(["one", "two", "three", "click", "four", "five", "six"]);
    expect(other.list().map((r) => r.tool)).toEqual(["elsewhere"]);
  });
});

describe("AuditLog: a write is recorded before it runs", () => {
  const CREATE_AUDIT = `CREATE TABLE audit (
     id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, browser TEXT, tab INTEGER, origin TEXT, tool TEXT NOT NULL,
     target TEXT, decision TEXT NOT NULL CHECK (decision IN ('allowed', 'refused', 'failed', 'outcome_unknown')),
     rule TEXT, code TEXT, duration_ms INTEGER NOT NULL, client TEXT, run TEXT, detail TEXT, user TEXT)`;

  it("begin() leaves an outcome_unknown record that another reader already sees, and complete() replaces it", () => {
    const dir = tempDir();
    const log = open(dir);
    const begun = log.begin({ time: 1_000, tool: "click", tab: 3, origin: "https://shop.test", target: 'button "Buy"', rule: "write.click" });
    expect(begun).toEqual({ ok: true, id: 1 });
    // What a crash at this point would leave, as the CLI (another process) reads it.
    const reader = open(dir);
    expect(reader.list()).toEqual([
      {
        id: 1,
        time: 1_000,
        tab: 3,
        origin: "https://shop.test",
        tool: "click",
        target: 'button "Buy"',
        decision: "outcome_unknown",
        rule: "write.click",
        durationMs: 0,
      },
    ]);
    log.complete(1, {
      time: 1_000,
      tool: "click",
      tab: 3,
      origin: "https://shop.test",
      target: 'button "Buy"',
      rule: "write.click",
      decision: "allowed",
      durationMs: 87,
    });
    expect(reader.list()).toEqual([
      {
        id: 1,
        time: 1_000,
        tab: 3,
        origin: "https://shop.test",
        tool: "click",
        target: 'button "Buy"',
        decision: "allowed",
        rule: "write.click",
        durationMs: 87,
      },
    ]);
    expect(log.health()).toEqual({ ok: true, failures: 0 });
  });

  it("complete() records a failure code and redacts like record()", () => {
    const log = open(tempDir(), ["SECRET-TOKEN-123"]);
    const begun = log.begin({ time: Date.now(), tool: "fill" });
    if (!begun.ok) throw new Error(begun.error);
    log.complete(begun.id, {
      time: Date.now(),
      tool: "fill",
      target: 'textbox "SECRET-TOKEN-123"',
      decision: "outcome_unknown",
      code: "browser_disconnected",
      durationMs: 5,
    });
    expect(log.list()).toEqual([
      expect.objectContaining({
        id: begun.id,
        target: 'textbox "[redacted: secret]"',
        decision: "outcome_unknown",
        code: "browser_disconnected",
        durationMs: 5,
      }),
    ]);
  });

  it("a tail stops short of a write in flight, then shows it completed, with what came after it", () => {
    const log = open(tempDir());
    log.record(rec({ time: Date.now(), tool: "snapshot" }));
    const begun = log.begin({ time: Date.now(), tool: "click" });
    if (!begun.ok) throw new Error(begun.error);
    log.record(rec({ time: Date.now(), tool: "navigation", decision: "refused" }));
    expect(log.list({ afterId: 0 }).map((r) => r.tool)).toEqual(["snapshot"]);
    expect(log.list({ afterId: 1 })).toEqual([]);
    log.complete(begun.id, rec({ time: Date.now(), tool: "click", decision: "allowed" }));
    expect(log.list({ afterId: 1 }).map((r) => `${r.tool} ${r.decision}`)).toEqual(["click allowed", "navigation refused"]);
  });

  it("a write left in flight by a broker that stopped long ago is shown as outcome_unknown, not held back", () => {
    const log = open(tempDir());
    const begun = log.begin({ time: Date.now() - 11 * 60_000, tool: "click" });
    expect(begun.ok).toBe(true);
    log.record(rec({ time: Date.now(), tool: "snapshot" }));
    expect(log.list({ afterId: 0 }).map((r) => `${r.tool} ${r.decision} ${r.durationMs}`)).toEqual(["click outcome_unknown 0", "snapshot allowed 42"]);
  });

  it("begin() that cannot write says why and where, counts the failure and turns health to failing; a later write recovers", () => {
    const dir = tempDir();
    const log = open(dir);
    const raw = new DatabaseSync(join(dir, "audit.db"));
    raw.exec("DROP TABLE audit");
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const before = Date.now();
    const begun = log.begin({ time: Date.now(), tool: "click" });
    expect(begun.ok).toBe(false);
    if (begun.ok) return;
    expect(begun.error).toContain(join(dir, "audit.db"));
    expect(begun.error).toMatch(/SQLITE_ERROR: no such table: audit/);
    log.record(rec({ tool: "read_url" }));
    const failing = log.health();
    expect(failing).toMatchObject({ ok: false, failures: 2, error: "SQLITE_ERROR: no such table: audit" });
    expect(failing.since).toBeGreaterThanOrEqual(before);
    expect(stderr).toHaveBeenCalledTimes(2);

    raw.exec(CREATE_AUDIT);
    raw.close();
    const again = log.begin({ time: Date.now(), tool: "click" });
    expect(again.ok).toBe(true);
    expect(log.health()).toEqual({ ok: true, failures: 2 });
  });

  it("complete() on a log that stopped taking writes does not throw, counts the failure and leaves outcome_unknown", () => {
    const dir = tempDir();
    const log = open(dir);
    const begun = log.begin({ time: Date.now(), tool: "click" });
    if (!begun.ok) throw new Error(begun.error);
    const raw = new DatabaseSync(join(dir, "audit.db"));
    raw.exec("CREATE TRIGGER no_updates BEFORE UPDATE ON audit BEGIN SELECT RAISE(FAIL, 'disk I/O error'); END");
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(() => log.complete(begun.id, rec({ tool: "click", decision: "allowed" }))).not.toThrow();
    raw.close();
    expect(log.health()).toMatchObject({ ok: false, failures: 1 });
    expect(log.list()).toEqual([expect.objectContaining({ tool: "click", decision: "outcome_unknown" })]);
  });
});

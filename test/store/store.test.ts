// The store's contract, run against both engines: SQLite in a temporary data dir and a real PostgreSQL server
// (test/postgres.ts), each test on a fresh data dir or a fresh database.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { openStore, PostgresStore, STORE_DB_FILE, STORE_SCHEMA_VERSION, StoreConflict, type Store } from "../../packages/broker/src/store/index.js";

/** Where a store lives: what openStore takes. */
type Place = { dataDir: string; postgresUrl?: string };

interface Engine {
  name: "sqlite" | "postgres";
  /** A new, empty place. */
  fresh(): Promise<Place>;
  /** The schema versions recorded in a place, read behind the store's back. */
  versions(place: Place): Promise<number[]>;
  /** Records a schema version behind the store's back, as a newer tabrelay would. */
  setVersion(place: Place, version: number): Promise<void>;
  /** Undoes migration 2 behind the store's back: the store as tabrelay 0.x with users only left it. */
  dropToVersion1(place: Place): Promise<void>;
}

const dirs: string[] = [];
const stores: Store[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-store-"));
  dirs.push(dir);
  return dir;
}

const sqlite: Engine = {
  name: "sqlite",
  fresh: async () => ({ dataDir: tempDir() }),
  versions: async (place) =>
    withSqlite(place, (db) =>
      db
        .prepare("SELECT version FROM schema_version")
        .all()
        .map((row) => Number(row.version)),
    ),
  setVersion: async (place, version) => withSqlite(place, (db) => void db.prepare("UPDATE schema_version SET version = ?").run(version)),
  dropToVersion1: async (place) =>
    withSqlite(place, (db) => void db.exec("DROP TABLE idempotency; DROP TABLE audit; DROP TABLE leases; UPDATE schema_version SET version = 1")),
};

function withSqlite<T>(place: Place, work: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(join(place.dataDir, STORE_DB_FILE));
  try {
    return work(db);
  } finally {
    db.close();
  }
}

// One server for the file; each test gets a database of its own.
let server: TestPostgres | undefined;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const postgres: Engine = {
  name: "postgres",
  fresh: async () => {
    if (!server) throw new Error("the PostgreSQL server is not started");
    return { dataDir: tempDir(), postgresUrl: await server.createDatabase() };
  },
  versions: async (place) =>
    withPg(pgUrl(place), async (client) =>
      (await client.query<{ version: number }>("SELECT version FROM tabrelay_schema_version")).rows.map((row) => row.version),
    ),
  setVersion: async (place, version) =>
    void (await withPg(pgUrl(place), (client) => client.query("UPDATE tabrelay_schema_version SET version = $1", [version]))),
  dropToVersion1: async (place) =>
    void (await withPg(pgUrl(place), (client) =>
      client.query("DROP TABLE idempotency; DROP TABLE audit; DROP TABLE leases; UPDATE tabrelay_schema_version SET version = 1"),
    )),
};

function pgUrl(place: Place): string {
  if (!place.postgresUrl) throw new Error("not a PostgreSQL place");
  return place.postgresUrl;
}

async function withPg<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function open(place: Place): Promise<Store> {
  const store = await openStore(place);
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Epoch ms past 2^31: a column too narrow for them fails here.
const T0 = 1_767_323_045_678;
const alice = { id: "u_alice0000000000", name: "alice", role: "admin" as const, subject: "sub-alice", createdAt: T0 };
const bob = { id: "u_bob000000000000", name: "bob", role: "member" as const, createdAt: T0 + 1000 };
const carol = { id: "u_carol0000000000", name: "carol", role: "member" as const, createdAt: T0 + 2000 };

describe.each([sqlite, postgres])("the $name store", (engine) => {
  let place: Place;
  let store: Store;

  async function freshStore(): Promise<Store> {
    place = await engine.fresh();
    store = await open(place);
    return store;
  }

  it("adds users and finds them by id, by name and by OAuth subject; lists them oldest first", async () => {
    await freshStore();
    expect(store.engine).toBe(engine.name);
    expect(await store.addUser(bob)).toEqual(bob);
    expect(await store.addUser(alice)).toEqual(alice);
    expect(await store.users()).toEqual([alice, bob]);
    expect(await store.user(alice.id)).toEqual(alice);
    expect(await store.user("alice")).toEqual(alice);
    expect(await store.user("bob")).toEqual(bob);
    expect(await store.user("nobody")).toBeUndefined();
    expect(await store.userBySubject("sub-alice")).toEqual(alice);
    expect(await store.userBySubject("sub-nobody")).toBeUndefined();
  });

  it("refuses a name, subject or id already taken as a StoreConflict, and keeps the first user", async () => {
    await freshStore();
    await store.addUser(alice);
    await expect(store.addUser({ ...bob, name: "alice" })).rejects.toThrow(StoreConflict);
    await expect(store.addUser({ ...bob, subject: "sub-alice" })).rejects.toThrow(StoreConflict);
    await expect(store.addUser({ ...bob, id: alice.id })).rejects.toThrow(StoreConflict);
    // Users without a subject do not collide with one another.
    await store.addUser(bob);
    await store.addUser(carol);
    expect(await store.users()).toEqual([alice, bob, carol]);
  });

  it("refuses a token or pairing for an unknown user, and that is not a conflict", async () => {
    await freshStore();
    const token = store.addToken({ id: "t_orphan", userId: "u_nobody", name: "x", hash: "h-orphan", createdAt: T0 });
    await expect(token).rejects.toThrow();
    await expect(token).rejects.not.toBeInstanceOf(StoreConflict);
    const pairing = store.addPairing({ id: "p_orphan", userId: "u_nobody", secret: "s", createdAt: T0 });
    await expect(pairing).rejects.toThrow();
    await expect(pairing).rejects.not.toBeInstanceOf(StoreConflict);
    expect(await store.tokens()).toEqual([]);
    expect(await store.pairings()).toEqual([]);
  });

  it("finds a live token by its hash with its user; a revoked token, a revoked user's token and an unknown hash find nothing", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addUser(bob);
    const live = await store.addToken({ id: "t_live", userId: alice.id, name: "laptop claude", hash: "h-live", createdAt: T0 + 10 });
    expect(live).toEqual({ id: "t_live", userId: alice.id, name: "laptop claude", createdAt: T0 + 10 });
    await store.addToken({ id: "t_revoked", userId: alice.id, name: "old", hash: "h-revoked", createdAt: T0 + 11 });
    await store.addToken({ id: "t_bob", userId: bob.id, name: "ci", hash: "h-bob", createdAt: T0 + 12 });
    expect(await store.revokeToken("t_revoked", T0 + 20)).toBe(true);
    expect(await store.revokeUser(bob.id, T0 + 21)).toBe(true);

    expect(await store.tokenByHash("h-live")).toEqual({ token: live, user: alice });
    expect(await store.tokenByHash("h-revoked")).toBeUndefined();
    expect(await store.tokenByHash("h-bob")).toBeUndefined();
    expect(await store.tokenByHash("h-unknown")).toBeUndefined();
  });

  it("records a token's last use", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addToken({ id: "t_1", userId: alice.id, name: "laptop", hash: "h-1", createdAt: T0 });
    await store.touchToken("t_1", T0 + 60_000);
    expect((await store.tokenByHash("h-1"))?.token.lastUsedAt).toBe(T0 + 60_000);
    await store.touchToken("t_1", T0 + 120_000);
    expect(await store.tokens(alice.id)).toEqual([{ id: "t_1", userId: alice.id, name: "laptop", createdAt: T0, lastUsedAt: T0 + 120_000 }]);
  });

  it("lists tokens per user and all of them, oldest first, revoked ones too; revoking twice is false", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addUser(bob);
    const a2 = await store.addToken({ id: "t_a2", userId: alice.id, name: "second", hash: "h-a2", createdAt: T0 + 20 });
    const a1 = await store.addToken({ id: "t_a1", userId: alice.id, name: "first", hash: "h-a1", createdAt: T0 + 10 });
    const b1 = await store.addToken({ id: "t_b1", userId: bob.id, name: "ci", hash: "h-b1", createdAt: T0 + 15 });
    expect(await store.revokeToken("t_a1", T0 + 30)).toBe(true);
    expect(await store.revokeToken("t_a1", T0 + 40)).toBe(false);
    expect(await store.revokeToken("t_unknown", T0 + 40)).toBe(false);
    await expect(store.addToken({ id: "t_a3", userId: alice.id, name: "same hash", hash: "h-a2", createdAt: T0 + 50 })).rejects.toThrow(StoreConflict);
    await expect(store.addToken({ id: "t_a2", userId: alice.id, name: "same id", hash: "h-other", createdAt: T0 + 50 })).rejects.toThrow(StoreConflict);

    const a1Revoked = { ...a1, revokedAt: T0 + 30 };
    expect(await store.tokens(alice.id)).toEqual([a1Revoked, a2]);
    expect(await store.tokens(bob.id)).toEqual([b1]);
    expect(await store.tokens("u_nobody")).toEqual([]);
    expect(await store.tokens()).toEqual([a1Revoked, b1, a2]);
  });

  it("finds a live pairing with its user; a revoked pairing, a revoked user's pairing and an unknown id find nothing", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addUser(bob);
    const live = await store.addPairing({ id: "p_live", userId: alice.id, secret: "secret-live", createdAt: T0 + 10 });
    expect(live).toEqual({ id: "p_live", userId: alice.id, secret: "secret-live", createdAt: T0 + 10 });
    await store.addPairing({ id: "p_revoked", userId: alice.id, secret: "secret-revoked", createdAt: T0 + 11 });
    await store.addPairing({ id: "p_bob", userId: bob.id, secret: "secret-bob", createdAt: T0 + 12 });
    expect(await store.revokePairing("p_revoked", T0 + 20)).toBe(true);
    expect(await store.revokeUser(bob.id, T0 + 21)).toBe(true);

    expect(await store.pairing("p_live")).toEqual({ pairing: live, user: alice });
    expect(await store.pairing("p_revoked")).toBeUndefined();
    expect(await store.pairing("p_bob")).toBeUndefined();
    expect(await store.pairing("p_unknown")).toBeUndefined();
  });

  it("lists pairings per user and all of them, oldest first, revoked ones too; revoking twice is false", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addUser(bob);
    const a2 = await store.addPairing({ id: "p_a2", userId: alice.id, secret: "s-a2", createdAt: T0 + 20 });
    const a1 = await store.addPairing({ id: "p_a1", userId: alice.id, secret: "s-a1", createdAt: T0 + 10 });
    const b1 = await store.addPairing({ id: "p_b1", userId: bob.id, secret: "s-b1", createdAt: T0 + 15 });
    expect(await store.revokePairing("p_a1", T0 + 30)).toBe(true);
    expect(await store.revokePairing("p_a1", T0 + 40)).toBe(false);
    expect(await store.revokePairing("p_unknown", T0 + 40)).toBe(false);
    await expect(store.addPairing({ id: "p_a2", userId: bob.id, secret: "s-other", createdAt: T0 + 50 })).rejects.toThrow(StoreConflict);

    const a1Revoked = { ...a1, revokedAt: T0 + 30 };
    expect(await store.pairings(alice.id)).toEqual([a1Revoked, a2]);
    expect(await store.pairings(bob.id)).toEqual([b1]);
    expect(await store.pairings()).toEqual([a1Revoked, b1, a2]);
  });

  it("revoking a user revokes their live tokens and pairings and no one else's; a second revocation is false", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addUser(bob);
    await store.addToken({ id: "t_a1", userId: alice.id, name: "old", hash: "h-a1", createdAt: T0 + 1 });
    await store.addToken({ id: "t_a2", userId: alice.id, name: "new", hash: "h-a2", createdAt: T0 + 2 });
    await store.addToken({ id: "t_b1", userId: bob.id, name: "ci", hash: "h-b1", createdAt: T0 + 3 });
    await store.addPairing({ id: "p_a1", userId: alice.id, secret: "s-a1", createdAt: T0 + 4 });
    await store.addPairing({ id: "p_b1", userId: bob.id, secret: "s-b1", createdAt: T0 + 5 });
    await store.revokeToken("t_a1", T0 + 10);

    expect(await store.revokeUser(alice.id, T0 + 20)).toBe(true);
    expect(await store.user("alice")).toEqual({ ...alice, revokedAt: T0 + 20 });
    // An earlier revocation keeps its own time.
    expect((await store.tokens(alice.id)).map((token) => [token.id, token.revokedAt])).toEqual([
      ["t_a1", T0 + 10],
      ["t_a2", T0 + 20],
    ]);
    expect((await store.pairings(alice.id)).map((pairing) => pairing.revokedAt)).toEqual([T0 + 20]);
    expect(await store.tokenByHash("h-b1")).toEqual({ token: { id: "t_b1", userId: bob.id, name: "ci", createdAt: T0 + 3 }, user: bob });
    expect((await store.pairing("p_b1"))?.user).toEqual(bob);

    expect(await store.revokeUser(alice.id, T0 + 30)).toBe(false);
    expect((await store.user(alice.id))?.revokedAt).toBe(T0 + 20);
    expect(await store.revokeUser("u_nobody", T0 + 30)).toBe(false);
  });

  it("opens an existing store again without migrating it twice, and keeps its data", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.addToken({ id: "t_1", userId: alice.id, name: "laptop", hash: "h-1", createdAt: T0 });
    await store.close();
    const again = await open(place);
    expect(await again.users()).toEqual([alice]);
    expect((await again.tokenByHash("h-1"))?.user).toEqual(alice);
    await again.close();
    await open(place);
    expect(await engine.versions(place)).toEqual([STORE_SCHEMA_VERSION]);
  });

  it("claims an idempotency key once: a second claim gets the first record, whatever it asks; keys are per user", async () => {
    await freshStore();
    const claim = {
      userId: alice.id,
      key: "k-1",
      tool: "click",
      argsHash: "a".repeat(64),
      session: "s-1",
      client: "agent",
      createdAt: T0,
      expiresAt: T0 + 15_000,
    };
    expect(await store.claimIdempotency(claim)).toBeUndefined();
    const first = { ...claim, state: "pending" };
    // The owner stays the first claim's too (issue 24 §7: a key is its session's).
    expect(await store.claimIdempotency({ ...claim, tool: "fill", argsHash: "b".repeat(64), session: "s-2", client: "other", createdAt: T0 + 5 })).toEqual(
      first,
    );
    expect(await store.idempotency(alice.id, "k-1")).toEqual(first);
    // Another user's same key is another record.
    expect(await store.claimIdempotency({ ...claim, userId: bob.id })).toBeUndefined();
    expect(await store.idempotency(carol.id, "k-1")).toBeUndefined();
  });

  it("settles a pending record once with its outcome; an expiry-bound settle takes only an expired one; extending moves the expiry", async () => {
    await freshStore();
    const claim = {
      userId: alice.id,
      key: "k-2",
      tool: "click",
      argsHash: "a".repeat(64),
      session: "s-1",
      client: "agent",
      createdAt: T0,
      expiresAt: T0 + 15_000,
    };
    await store.claimIdempotency(claim);
    // Not expired yet: a waiter cannot declare it unknown.
    expect(await store.settleIdempotency(alice.id, "k-2", "unknown", "{}", T0 + 10_000)).toBe(false);
    await store.extendIdempotency(alice.id, "k-2", T0 + 30_000);
    expect((await store.idempotency(alice.id, "k-2"))?.expiresAt).toBe(T0 + 30_000);
    expect(await store.settleIdempotency(alice.id, "k-2", "done", '{"text":"clicked"}')).toBe(true);
    expect(await store.idempotency(alice.id, "k-2")).toEqual({ ...claim, expiresAt: T0 + 30_000, state: "done", result: '{"text":"clicked"}' });
    // The first word stands: a settled record is not settled again, nor extended, nor released.
    expect(await store.settleIdempotency(alice.id, "k-2", "unknown", "{}")).toBe(false);
    await store.extendIdempotency(alice.id, "k-2", T0 + 60_000);
    await store.releaseIdempotency(alice.id, "k-2");
    expect((await store.idempotency(alice.id, "k-2"))?.state).toBe("done");
    expect((await store.idempotency(alice.id, "k-2"))?.expiresAt).toBe(T0 + 30_000);

    await store.claimIdempotency({ ...claim, key: "k-3" });
    expect(await store.settleIdempotency(alice.id, "k-3", "unknown", '{"lost":true}', T0 + 20_000)).toBe(true);
    expect((await store.idempotency(alice.id, "k-3"))?.state).toBe("unknown");
  });

  it("releases a pending key so the next claim holds it; forgets records created before a time", async () => {
    await freshStore();
    const claim = {
      userId: alice.id,
      key: "k-4",
      tool: "click",
      argsHash: "a".repeat(64),
      session: "s-1",
      client: "agent",
      createdAt: T0,
      expiresAt: T0 + 15_000,
    };
    await store.claimIdempotency(claim);
    await store.releaseIdempotency(alice.id, "k-4");
    expect(await store.idempotency(alice.id, "k-4")).toBeUndefined();
    expect(await store.claimIdempotency({ ...claim, createdAt: T0 + 100 })).toBeUndefined();
    await store.claimIdempotency({ ...claim, key: "k-5", createdAt: T0 + 200 });
    expect(await store.forgetIdempotency(T0 + 150)).toBe(1);
    expect(await store.idempotency(alice.id, "k-4")).toBeUndefined();
    expect((await store.idempotency(alice.id, "k-5"))?.createdAt).toBe(T0 + 200);
  });

  it("claims concurrently: of ten claims of one key at once, exactly one holds it", async () => {
    await freshStore();
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.claimIdempotency({
          userId: alice.id,
          key: "k-race",
          tool: "click",
          argsHash: String(i).repeat(64),
          session: `s-${i}`,
          client: "agent",
          createdAt: T0 + i,
          expiresAt: T0 + 15_000,
        }),
      ),
    );
    expect(claims.filter((c) => c === undefined)).toHaveLength(1);
    const holder = await store.idempotency(alice.id, "k-race");
    for (const c of claims) if (c) expect(c).toEqual(holder);
  });

  it("keeps brokers' audit records as one log: upserted by broker and local id, read in the store's order, by user", async () => {
    await freshStore();
    expect(await store.auditCursor("b-1")).toBe(0);
    const rec = (localId: number, extra: Record<string, unknown> = {}) => ({
      localId,
      time: T0 + localId,
      tool: "click",
      decision: "allowed",
      durationMs: 12,
      ...extra,
    });
    await store.putAudit("b-1", [rec(1, { user: "alice", tab: 3, target: 'button "Go"' }), rec(2, { decision: "outcome_unknown", durationMs: 0 })]);
    await store.putAudit("b-2", [rec(1, { user: "alice" }), rec(2, { tool: "read_url", user: "bob", detail: '{"a":1}' })]);
    // A record copied again (its write completed meanwhile) replaces the first copy, keeping its place.
    await store.putAudit("b-1", [rec(2, { decision: "allowed", durationMs: 40 })]);
    expect(await store.auditCursor("b-1")).toBe(2);
    expect(await store.auditCursor("b-2")).toBe(2);
    const all = await store.audit({});
    expect(all.map((r) => [r.broker, r.localId, r.decision])).toEqual([
      ["b-1", 1, "allowed"],
      ["b-1", 2, "allowed"],
      ["b-2", 1, "allowed"],
      ["b-2", 2, "allowed"],
    ]);
    expect(all[0]).toEqual({
      id: all[0]!.id,
      broker: "b-1",
      localId: 1,
      time: T0 + 1,
      tool: "click",
      decision: "allowed",
      durationMs: 12,
      user: "alice",
      tab: 3,
      target: 'button "Go"',
    });
    expect(all[1]?.durationMs).toBe(40);
    expect((await store.audit({ user: "alice" })).map((r) => `${r.broker}/${r.localId}`)).toEqual(["b-1/1", "b-2/1"]);
    expect((await store.audit({ user: "default" })).map((r) => `${r.broker}/${r.localId}`)).toEqual(["b-1/2"]);
    expect((await store.audit({ limit: 2 })).map((r) => `${r.broker}/${r.localId}`)).toEqual(["b-2/1", "b-2/2"]);
    expect((await store.audit({ afterId: all[1]!.id, limit: 1 })).map((r) => `${r.broker}/${r.localId}`)).toEqual(["b-2/1"]);
  });

  it("keeps tab leases by browser and tab: a tab's newer lease replaces the older, a session's end drops all of its", async () => {
    await freshStore();
    const lease = (tabId: number, session: string, extra: Record<string, unknown> = {}) => ({
      browserId: "br-1",
      tabId,
      session,
      client: "claude",
      since: T0,
      lastUsed: T0 + tabId,
      opened: true,
      keep: false,
      ...extra,
    });
    await store.putLease(lease(7, "s-a"));
    await store.putLease(lease(8, "s-a", { keep: true }));
    await store.putLease(lease(9, "s-b", { opened: false }));
    await store.putLease({ ...lease(7, "s-x"), browserId: "br-2" });
    // The tab taken by another session: one row, the newer.
    await store.putLease(lease(9, "s-c", { client: "cursor", lastUsed: T0 + 99 }));
    expect(await store.leases("br-1")).toEqual([lease(7, "s-a"), lease(8, "s-a", { keep: true }), lease(9, "s-c", { client: "cursor", lastUsed: T0 + 99 })]);
    await store.dropSessionLeases("s-a");
    expect((await store.leases("br-1")).map((l) => l.tabId)).toEqual([9]);
    await store.dropLease("br-1", 9);
    expect(await store.leases("br-1")).toEqual([]);
    expect((await store.leases("br-2")).map((l) => [l.tabId, l.session])).toEqual([[7, "s-x"]]);
  });

  it("migrates a version 1 store (users only) to the current one, keeping its users", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.close();
    await engine.dropToVersion1(place);
    const again = await open(place);
    expect(await again.users()).toEqual([alice]);
    expect(
      await again.claimIdempotency({ userId: alice.id, key: "k", tool: "click", argsHash: "a", session: "s-1", client: "agent", createdAt: T0, expiresAt: T0 }),
    ).toBeUndefined();
    expect(await engine.versions(place)).toEqual([STORE_SCHEMA_VERSION]);
  });

  it("refuses a store whose schema is newer than this tabrelay, saying to upgrade", async () => {
    await freshStore();
    await store.addUser(alice);
    await store.close();
    await engine.setVersion(place, STORE_SCHEMA_VERSION + 1);
    await expect(openStore(place)).rejects.toThrow(
      `schema version ${STORE_SCHEMA_VERSION + 1}, newer than this tabrelay understands (${STORE_SCHEMA_VERSION}); upgrade tabrelay`,
    );
    expect(await engine.versions(place)).toEqual([STORE_SCHEMA_VERSION + 1]);
  });
});

describe("the PostgreSQL store's start-up", () => {
  it("fails fast against a closed port, naming host:port and the next step, never the password", async () => {
    const port = await closedPort();
    const started = Date.now();
    const failure = await PostgresStore.open(`postgres://tabrelay:hunter2-secret@127.0.0.1:${port}/tabrelay`).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(Date.now() - started).toBeLessThan(5000); // refused at once, not at the 10 s connect timeout
    expect(failure).toBeInstanceOf(Error);
    expect(String(failure)).toContain(`127.0.0.1:${port}`);
    expect(String(failure)).toContain("check that PostgreSQL is running there");
    expect(inspect(failure)).not.toContain("hunter2-secret");
  });

  it("refuses a wrong password, naming host:port and the next step, never the password", async () => {
    const place = await postgres.fresh();
    const url = new URL(pgUrl(place));
    url.password = "wrong-secret";
    const failure = await PostgresStore.open(url.href).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String(failure)).toContain(`127.0.0.1:${url.port}`);
    expect(String(failure)).toContain("check the user and password in store.postgres_url");
    expect(inspect(failure)).not.toContain("wrong-secret");
  });

  it("lets three brokers open one fresh database at once: one migrates, the others wait for it", async () => {
    const place = await postgres.fresh();
    const opened = await Promise.all([1, 2, 3].map(() => open(place)));
    expect(await postgres.versions(place)).toEqual([STORE_SCHEMA_VERSION]);
    const [first, second, third] = opened;
    await first?.addUser(alice);
    expect(await second?.user("alice")).toEqual(alice);
    expect(await third?.users()).toEqual([alice]);
  });
});

/** A port on 127.0.0.1 that nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

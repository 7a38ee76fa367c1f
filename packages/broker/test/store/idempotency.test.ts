// Idempotency keys over a real SQLite store (the PostgreSQL engine's side of the contract is in store.test.ts):
// a keyed call runs once, a retry gets the first outcome, other arguments conflict, a call that never acted spends
// no key, a lost outcome stays lost, and a retry arriving mid-call waits for the first one's outcome.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite.js";
import { hashArgs, Idempotency, type CallOutcome } from "../../src/tools/idempotency.js";

let dir: string;
let store: SqliteStore;
const never = new AbortController().signal;
/** The MCP session a key is made in (its owner), and another session of the same user. */
const A = { session: "session-a", client: "agent-a" };
const B = { session: "session-b", client: "agent-b" };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tabrelay-idem-"));
  store = SqliteStore.open(dir);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function counted(outcome: Partial<CallOutcome> = {}, delayMs = 0) {
  let runs = 0;
  const call = async (): Promise<CallOutcome> => {
    runs++;
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return { result: { text: `clicked (run ${runs})`, isError: false }, dispatched: true, unknown: false, ...outcome };
  };
  return { call, runs: () => runs };
}

describe("Idempotency", () => {
  it("runs a keyed call once; a retry with the same arguments gets the first outcome and runs nothing", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted();
    const first = await keys.once("u1", A, "k", "click", { tab: 1, ref: "e2" }, never, c.call);
    expect(first).toMatchObject({ kind: "ran", outcome: { result: { text: "clicked (run 1)" } } });
    // The same arguments in another order are the same call.
    const again = await keys.once("u1", A, "k", "click", { ref: "e2", tab: 1, idempotency_key: "k" }, never, c.call);
    expect(again).toMatchObject({ kind: "replayed", result: { text: "clicked (run 1)", isError: false }, unknown: false });
    expect(c.runs()).toBe(1);
  });

  it("refuses the same key with other arguments or another tool, and runs nothing", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted();
    await keys.once("u1", A, "k", "click", { tab: 1, ref: "e2" }, never, c.call);
    expect(await keys.once("u1", A, "k", "click", { tab: 1, ref: "e3" }, never, c.call)).toMatchObject({ kind: "conflict", firstTool: "click" });
    expect(await keys.once("u1", A, "k", "fill", { tab: 1, ref: "e2" }, never, c.call)).toMatchObject({ kind: "conflict", firstTool: "click" });
    expect(c.runs()).toBe(1);
  });

  it("keeps keys per user: another user's same key is another call", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted();
    await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call);
    expect((await keys.once("u2", A, "k", "click", { tab: 1 }, never, c.call)).kind).toBe("ran");
    expect(c.runs()).toBe(2);
  });

  it("spends no key on a call that never reached the browser: its retry runs", async () => {
    const keys = new Idempotency(async () => store);
    const refused = counted({ dispatched: false, result: { text: "write_denied", isError: true } });
    expect((await keys.once("u1", A, "k", "click", { tab: 1 }, never, refused.call)).kind).toBe("ran");
    expect(await store.idempotency("u1", "k")).toBeUndefined();
    const c = counted();
    expect((await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call)).kind).toBe("ran");
    expect(c.runs()).toBe(1);
  });

  it("keeps an unknown outcome unknown: the retry is told so and nothing runs again", async () => {
    const keys = new Idempotency(async () => store);
    const lost = counted({ unknown: true, result: { text: "browser_disconnected: gone", isError: true } });
    await keys.once("u1", A, "k", "click", { tab: 1 }, never, lost.call);
    const again = await keys.once("u1", A, "k", "click", { tab: 1 }, never, lost.call);
    expect(again).toMatchObject({ kind: "replayed", unknown: true, result: { text: "browser_disconnected: gone", isError: true } });
    expect(lost.runs()).toBe(1);
  });

  it("makes concurrent retries wait for the first call and run it once", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted({}, 300);
    const answers = await Promise.all(Array.from({ length: 5 }, () => keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call)));
    expect(c.runs()).toBe(1);
    expect(answers.filter((a) => a.kind === "ran")).toHaveLength(1);
    for (const a of answers.filter((a) => a.kind !== "ran")) expect(a).toMatchObject({ kind: "replayed", result: { text: "clicked (run 1)" } });
  });

  it("renews a long call's claim, so a waiting retry does not take it for lost", async () => {
    const keys = new Idempotency(async () => store, { leaseMs: 150, renewMs: 40 });
    const c = counted({}, 700);
    const first = keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const retry = await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call);
    expect((await first).kind).toBe("ran");
    expect(retry).toMatchObject({ kind: "replayed", result: { text: "clicked (run 1)" } });
    expect(c.runs()).toBe(1);
  });

  it("keeps a key to its session: another session of the same user gets no outcome and runs nothing, naming the owner", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted();
    await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call);
    expect(await keys.once("u1", B, "k", "click", { tab: 1 }, never, c.call)).toMatchObject({ kind: "foreign", client: "agent-a" });
    expect(c.runs()).toBe(1);
    expect(await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call)).toMatchObject({ kind: "replayed", result: { text: "clicked (run 1)" } });
  });

  it("answers any session of its user with a key made before keys had owners", async () => {
    await store.claimIdempotency({
      userId: "u1",
      key: "old",
      tool: "click",
      argsHash: await hashArgs({ tab: 1 }),
      session: "",
      client: "",
      createdAt: Date.now(),
      expiresAt: Date.now() + 60_000,
    });
    await store.settleIdempotency("u1", "old", "done", JSON.stringify({ text: "clicked long ago", isError: false }));
    const keys = new Idempotency(async () => store);
    const c = counted();
    expect(await keys.once("u1", B, "old", "click", { tab: 1 }, never, c.call)).toMatchObject({ kind: "replayed", result: { text: "clicked long ago" } });
    expect(c.runs()).toBe(0);
  });

  it("calls a claim whose broker stopped renewing it lost, once, and never runs it again", async () => {
    // A broker that claimed the key and died: its record is pending and past its expiry.
    await store.claimIdempotency({
      userId: "u1",
      key: "k",
      tool: "click",
      argsHash: await hashArgs({ tab: 1 }),
      session: "session-a",
      client: "agent-a",
      createdAt: Date.now() - 60_000,
      expiresAt: Date.now() - 1,
    });
    const keys = new Idempotency(async () => store);
    const c = counted();
    expect(await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call)).toMatchObject({ kind: "lost" });
    expect(await keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call)).toMatchObject({ kind: "replayed", unknown: true });
    expect(c.runs()).toBe(0);
  });

  it("stops waiting when the caller cancels", async () => {
    const keys = new Idempotency(async () => store);
    const c = counted({}, 1000);
    const first = keys.once("u1", A, "k", "click", { tab: 1 }, never, c.call);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 100);
    expect(await keys.once("u1", A, "k", "click", { tab: 1 }, abort.signal, c.call)).toEqual({ kind: "cancelled" });
    await first;
    expect(c.runs()).toBe(1);
  });

  it("hashes arguments canonically: key order and the key itself do not count, values do", async () => {
    expect(await hashArgs({ a: 1, b: { c: [1, 2], d: "x" } })).toBe(await hashArgs({ b: { d: "x", c: [1, 2] }, a: 1, idempotency_key: "z" }));
    expect(await hashArgs({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
    expect(await hashArgs({ a: 1 })).not.toBe(await hashArgs({ a: 2 }));
    expect(await hashArgs({ a: [1, 2] })).not.toBe(await hashArgs({ a: [2, 1] }));
  });
});

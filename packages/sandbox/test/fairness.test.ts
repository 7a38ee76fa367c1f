// One session's programs never starve another's (issue 24 §4), through the real pool (worker threads, the built
// worker, QuickJS). Found by an attacker: session A's two runs of `(new Array(1e9) + "").length` (a run QuickJS
// cannot interrupt, ended only by the watchdog at its wall clock) held both workers of the global queue, and session
// B's `return 1` waited 27.3 s. Each check here is an order of events, never a time: B's run ends while A's are
// still going.
import { afterEach, describe, expect, it } from "vitest";
import { createSandboxPool, type SandboxPool } from "../src/node/pool.js";
import type { Budgets, RunResult } from "../src/types.js";
import { COMMANDS, TinyBrowser } from "./tinyBrowser.js";

const BUDGETS: Budgets = {
  wallMs: 1000,
  instructions: 1_000_000,
  memoryBytes: 32 * 1024 * 1024,
  stackBytes: 256 * 1024,
  commands: 100,
  outputBytes: 1024 * 1024,
};
/** Ends only when the watchdog terminates its worker at the wall clock. */
const UNINTERRUPTIBLE = `return (new Array(1e9) + "").length;`;

let pool: SandboxPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

/** A run, and when it ended relative to the others (a counter, not a clock). */
function start(p: SandboxPool, owner: string, program: string, budgets: Partial<Budgets> = {}): { done: Promise<RunResult>; ended: () => number | undefined } {
  let at: number | undefined;
  const done = p.run({ program, commands: COMMANDS, budgets: { ...BUDGETS, ...budgets } }, new TinyBrowser().call, undefined, owner).then((result) => {
    at = ++order;
    return result;
  });
  return { done, ended: () => at };
}
let order = 0;

describe("the sandbox pool is fair between sessions", () => {
  it("session B's trivial run ends while session A's two uninterruptible runs still hold their workers", async () => {
    pool = createSandboxPool({ size: 2 });
    const a1 = start(pool, "session:a", UNINTERRUPTIBLE, { wallMs: 3000 });
    const a2 = start(pool, "session:a", UNINTERRUPTIBLE, { wallMs: 3000 });
    // Let A's runs take what they can (one worker: a session runs at most size - 1 at once).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const b = start(pool, "session:b", "return 1;");
    expect(await b.done).toMatchObject({ status: "ok", value: 1 });
    expect(a1.ended()).toBeUndefined();
    expect(a2.ended()).toBeUndefined();
    // A's runs end at their wall clock (the watchdog), one after the other: A had one worker at a time.
    expect((await a1.done).status).toBe("budget_exceeded");
    expect((await a2.done).status).toBe("budget_exceeded");
    expect(a2.ended()!).toBeGreaterThan(a1.ended()!);
  }, 60_000);

  it("when two other sessions hold both workers, a third session's run gets a worker of its own", async () => {
    pool = createSandboxPool({ size: 2 });
    const a = start(pool, "session:a", UNINTERRUPTIBLE, { wallMs: 3000 });
    const c = start(pool, "session:c", UNINTERRUPTIBLE, { wallMs: 3000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const b = start(pool, "session:b", "const tabs = await browse.tabs.list(); return tabs.length;");
    expect(await b.done).toMatchObject({ status: "ok" });
    expect(a.ended()).toBeUndefined();
    expect(c.ended()).toBeUndefined();
    await Promise.all([a.done, c.done]);
    // And the pool goes on serving once the long runs are over (their workers replaced, the extra one retired).
    expect(await start(pool, "session:b", "return 2;").done).toMatchObject({ status: "ok", value: 2 });
  }, 60_000);

  it("serves owners round robin: a session with many runs queued does not go before one that just came", async () => {
    pool = createSandboxPool({ size: 2, maxSize: 2 });
    const hold = start(pool, "session:z", UNINTERRUPTIBLE, { wallMs: 1500 });
    const many = [0, 1, 2].map((i) => start(pool!, "session:a", `return ${i};`));
    const late = start(pool, "session:b", "return 'b';");
    await Promise.all([hold.done, late.done, ...many.map((m) => m.done)]);
    // A's first run took the free worker; B's came before A's last two, which waited their turn behind it.
    expect(late.ended()!).toBeLessThan(many[2]!.ended()!);
    expect(late.ended()!).toBeLessThan(many[1]!.ended()!);
  }, 60_000);
});

// The one bookkeeping of calls in flight that both drivers use (drivers/pendingCalls.ts).
import type { Result } from "@tabrelay/protocol";
import { describe, expect, it } from "vitest";
import type { BrowserInfo } from "../../src/drivers/driver.js";
import { PendingCalls } from "../../src/drivers/pendingCalls.js";

const info: BrowserInfo = { browserId: "b-1", label: "test", userAgent: "", extensionVersion: "", connectedAt: 0, kind: "cdp" };
const never = () => new Promise<Result<number>>(() => undefined);

describe("calls in flight", () => {
  it("answers with what the work gives, and tells the work when the call is over", async () => {
    const calls = new PendingCalls(info);
    let over = false;
    const result = await calls.run("tabs.list", { timeoutMs: 1000 }, async (ended) => {
      void ended.then(() => (over = true));
      return { ok: true, value: 7 };
    });
    expect(result).toEqual({ ok: true, value: 7 });
    await Promise.resolve();
    expect(over).toBe(true);
    expect(calls.size).toBe(0);
  });

  it("fails with timeout when the browser does not answer in time", async () => {
    const result = await new PendingCalls(info).run("page.wait", { timeoutMs: 20 }, never);
    expect(result).toEqual({ ok: false, error: { code: "timeout", message: "the browser did not answer page.wait within 20 ms" } });
  });

  it("fails with timeout when the caller cancels, before or during the call", async () => {
    const calls = new PendingCalls(info);
    const aborted = new AbortController();
    aborted.abort();
    expect(await calls.run("tabs.get", { timeoutMs: 1000, signal: aborted.signal }, never)).toEqual({
      ok: false,
      error: { code: "timeout", message: "tabs.get was cancelled by the client" },
    });
    const later = new AbortController();
    const pending = calls.run("tabs.get", { timeoutMs: 1000, signal: later.signal }, never);
    later.abort();
    expect((await pending).ok).toBe(false);
    expect(calls.size).toBe(0);
  });

  it("fails every call in flight at once when the browser goes away, and later calls without trying", async () => {
    const calls = new PendingCalls(info);
    const pending = [calls.run("a", { timeoutMs: 60_000 }, never), calls.run("b", { timeoutMs: 60_000 }, never)];
    calls.close();
    for (const result of await Promise.all(pending)) expect(!result.ok && result.error.code).toBe("browser_disconnected");
    let started = false;
    const after = await calls.run("c", { timeoutMs: 1000 }, async () => {
      started = true;
      return { ok: true, value: 1 };
    });
    expect(!after.ok && after.error.message).toMatch(/browser "test" \(b-1\) disconnected/);
    expect(started).toBe(false);
  });

  it("settles once: an answer after the timeout is dropped", async () => {
    let answer: (r: Result<number>) => void = () => undefined;
    const result = await new PendingCalls(info).run("x", { timeoutMs: 10 }, () => new Promise<Result<number>>((resolve) => (answer = resolve)));
    answer({ ok: true, value: 1 });
    expect(result.ok).toBe(false);
  });
});

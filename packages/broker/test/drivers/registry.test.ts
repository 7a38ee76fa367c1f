// The registry's wait for a browser the broker's own process launched (tabrelay start): a call made before it
// connected waits for it, and for no longer than it is expected.
import type { BridgeMethod, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import { describe, expect, it } from "vitest";
import type { BrowserDriver } from "../../src/drivers/driver.js";
import { BrowserRegistry } from "../../src/drivers/registry.js";

function browser(id: string): BrowserDriver {
  return {
    info: { browserId: id, label: id, userAgent: "test", extensionVersion: "0", connectedAt: Date.now(), kind: "extension" },
    closed: false,
    call: <M extends BridgeMethod>(_method: M, _params: ParamsOf<M>): Promise<Result<ResultOf<M>>> =>
      Promise.resolve({ ok: false, error: { code: "internal", message: "not called" } }),
    close: () => undefined,
  };
}

const settled = (promise: Promise<void>) => Promise.race([promise.then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]);

describe("BrowserRegistry arrival", () => {
  it("resolves at once when no browser is expected", async () => {
    expect(await settled(new BrowserRegistry().arrival())).toBe(true);
  });

  it("waits for the expected browser, and a pick after it finds it", async () => {
    const registry = new BrowserRegistry();
    registry.expect(10_000);
    const waiting = registry.arrival();
    expect(await settled(waiting)).toBe(false);
    registry.add(browser("b1"));
    expect(await settled(waiting)).toBe(true);
    const picked = registry.pick();
    expect(picked.ok && picked.value.info.browserId).toBe("b1");
    // Once one came, a call that finds none (another user's, or after it left) is told so at once.
    registry.remove(picked.ok ? picked.value : browser("b1"));
    expect(await settled(registry.arrival())).toBe(true);
  });

  it("stops waiting when the browser will not come, when the call is cancelled, and when the time is up", async () => {
    const registry = new BrowserRegistry();
    registry.expect(10_000);
    const exited = registry.arrival();
    const controller = new AbortController();
    const cancelled = registry.arrival(controller.signal);
    controller.abort();
    expect(await settled(cancelled)).toBe(true);
    expect(await settled(exited)).toBe(false);
    registry.expect(0);
    expect(await settled(exited)).toBe(true);
    registry.expect(100);
    const started = Date.now();
    await registry.arrival();
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(registry.pick().ok).toBe(false);
  });
});

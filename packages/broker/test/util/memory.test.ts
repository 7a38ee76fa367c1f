import { afterEach, describe, expect, it, vi } from "vitest";
import { collectAfterHeavyWork } from "../../src/util/memory.js";

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("collectAfterHeavyWork", () => {
  afterEach(() => {
    Reflect.deleteProperty(globalThis, "gc");
  });

  it("asks for one background major GC per burst, after the current work has returned", async () => {
    const gc = vi.fn();
    Reflect.set(globalThis, "gc", gc);
    collectAfterHeavyWork();
    collectAfterHeavyWork();
    collectAfterHeavyWork();
    expect(gc).not.toHaveBeenCalled(); // never inside the caller's turn
    await nextTurn();
    expect(gc).toHaveBeenCalledTimes(1);
    expect(gc).toHaveBeenCalledWith({ type: "major", execution: "async" });
    collectAfterHeavyWork();
    await nextTurn();
    expect(gc).toHaveBeenCalledTimes(2);
  });

  it("does nothing when the process runs without --expose-gc", async () => {
    expect(() => collectAfterHeavyWork()).not.toThrow();
    await nextTurn();
  });
});

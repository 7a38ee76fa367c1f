import { describe, expect, it } from "vitest";
import { Emitter } from "../../src/util/emitter.js";

type Events = { tick: [number]; done: [] };

describe("Emitter (util/emitter.ts), as node:events behaves for the registry's listeners", () => {
  it("runs listeners in order, with the arguments, and says whether any ran", () => {
    const emitter = new Emitter<Events>();
    const seen: string[] = [];
    emitter.on("tick", (n) => seen.push(`a${n}`)).on("tick", (n) => seen.push(`b${n}`));
    expect(emitter.emit("tick", 1)).toBe(true);
    expect(emitter.emit("done")).toBe(false);
    expect(seen).toEqual(["a1", "b1"]);
  });

  it("runs a listener added twice twice; off removes one of them", () => {
    const emitter = new Emitter<Events>();
    let count = 0;
    const listener = () => void count++;
    emitter.on("done", listener).on("done", listener);
    emitter.emit("done");
    emitter.off("done", listener);
    emitter.emit("done");
    emitter.off("done", listener).off("done", listener);
    emitter.emit("done");
    expect(count).toBe(3);
    expect(emitter.listenerCount("done")).toBe(0);
  });

  it("keeps an emit's listeners as they were when it began", () => {
    const emitter = new Emitter<Events>();
    const seen: string[] = [];
    const second = () => seen.push("second");
    emitter.on("done", () => {
      seen.push("first");
      emitter.off("done", second);
      emitter.on("done", () => seen.push("added"));
    });
    emitter.on("done", second);
    emitter.emit("done");
    expect(seen).toEqual(["first", "second"]);
  });

  it("throws a listener's error to the emitter's caller, and stops that emit", () => {
    const emitter = new Emitter<Events>();
    const seen: number[] = [];
    emitter.on("tick", () => {
      throw new Error("listener failed");
    });
    emitter.on("tick", (n) => seen.push(n));
    expect(() => emitter.emit("tick", 1)).toThrow("listener failed");
    expect(seen).toEqual([]);
  });
});

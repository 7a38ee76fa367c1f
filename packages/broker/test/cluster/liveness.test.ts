import { describe, expect, it } from "vitest";
import { MissingBeats } from "../../src/cluster/liveness.js";

const looks = (missing: MissingBeats, at: number, beating: Record<string, boolean>) => [...missing.look(new Map(Object.entries(beating)), at)];

describe("a broker taken for dead by its missing beat", () => {
  it("is not dead at the first look that finds its beat missing", () => {
    const missing = new MissingBeats(500);
    expect(looks(missing, 1000, { b: false })).toEqual([]);
  });

  it("is dead when its beat is still missing a heartbeat later, not sooner", () => {
    const missing = new MissingBeats(500);
    looks(missing, 1000, { b: false });
    expect(looks(missing, 1300, { b: false })).toEqual([]);
    expect(looks(missing, 1500, { b: false })).toEqual(["b"]);
  });

  it("starts over when a beat is seen between two missing looks", () => {
    const missing = new MissingBeats(500);
    looks(missing, 1000, { b: false });
    expect(looks(missing, 1500, { b: true })).toEqual([]);
    expect(looks(missing, 2000, { b: false })).toEqual([]);
    expect(looks(missing, 2600, { b: false })).toEqual(["b"]);
  });

  it("judges each broker on its own looks", () => {
    const missing = new MissingBeats(500);
    looks(missing, 1000, { b: false, c: true });
    expect(looks(missing, 1600, { b: false, c: false })).toEqual(["b"]);
    expect(looks(missing, 2200, { b: false, c: false }).sort()).toEqual(["b", "c"]);
  });
});

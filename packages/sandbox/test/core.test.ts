// The core without the Node pool (what a Workers-style runtime would run): createSandbox on this thread.
import { describe, expect, it } from "vitest";
import { createSandbox } from "../src/sandbox.js";
import type { Budgets } from "../src/types.js";
import { COMMANDS, TinyBrowser } from "./tinyBrowser.js";

const budgets: Budgets = { wallMs: 2000, instructions: 1_000_000, memoryBytes: 8 * 1024 * 1024, stackBytes: 256 * 1024, commands: 10, outputBytes: 65536 };

describe("the core sandbox, in-process", () => {
  const sandbox = createSandbox();

  it("runs a program, drops an instance whose heap was exhausted, and builds a fresh one for the next run", async () => {
    const browser = new TinyBrowser();
    const first = await sandbox.run({ program: "await browse.open('https://example.test/a');\nreturn (await browse.read()).url;", commands: COMMANDS, budgets }, browser.call);
    expect(first).toMatchObject({ instanceUsable: true, result: { status: "ok", value: "https://example.test/a" } });
    const bomb = await sandbox.run({ program: "const all = [];\nfor (;;) all.push({ n: all.length });", commands: COMMANDS, budgets }, browser.call);
    expect(bomb.result.status).toBe("budget_exceeded");
    expect(bomb.result.error?.message).toContain("memory budget exceeded");
    expect(bomb.instanceUsable).toBe(false);
    const after = await sandbox.run({ program: "return [1, 2, 3].map((n) => n * 2);", commands: COMMANDS, budgets }, browser.call);
    expect(after).toMatchObject({ instanceUsable: true, result: { status: "ok", value: [2, 4, 6] } });
  });

  it("refuses budgets that are missing or not finite, naming them", async () => {
    const { result } = await sandbox.run({ program: "return 1;", commands: [], budgets: { ...budgets, wallMs: Number.NaN, commands: -1 } }, new TinyBrowser().call);
    expect(result.status).toBe("error");
    expect(result.error).toEqual({ code: "invalid_request", message: expect.stringContaining("wallMs, commands must be finite numbers >= 0") });
  });
});

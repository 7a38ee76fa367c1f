// The core without the Node pool (what a Workers-style runtime would run): createSandbox on this thread.
import { describe, expect, it, vi } from "vitest";
import { createSandbox } from "../src/sandbox.js";
import type { Budgets } from "../src/types.js";
import { COMMANDS, TinyBrowser } from "./tinyBrowser.js";

const budgets: Budgets = { wallMs: 2000, instructions: 1_000_000, memoryBytes: 8 * 1024 * 1024, stackBytes: 256 * 1024, commands: 10, outputBytes: 65536 };

describe("the core sandbox, in-process", () => {
  const sandbox = createSandbox();

  it("runs a program, drops an instance whose heap was exhausted, and builds a fresh one for the next run", async () => {
    const browser = new TinyBrowser();
    const first = await sandbox.run(
      { program: "await browse.open('https://example.test/a');\nreturn (await browse.read()).url;", commands: COMMANDS, budgets },
      browser.call,
    );
    expect(first).toMatchObject({ instanceUsable: true, result: { status: "ok", value: "https://example.test/a" } });
    const bomb = await sandbox.run({ program: "const all = [];\nfor (;;) all.push({ n: all.length });", commands: COMMANDS, budgets }, browser.call);
    expect(bomb.result.status).toBe("budget_exceeded");
    expect(bomb.result.error?.message).toContain("memory budget exceeded");
    expect(bomb.instanceUsable).toBe(false);
    const after = await sandbox.run({ program: "return [1, 2, 3].map((n) => n * 2);", commands: COMMANDS, budgets }, browser.call);
    expect(after).toMatchObject({ instanceUsable: true, result: { status: "ok", value: [2, 4, 6] } });
  });

  it("a program that awaits and then allocates a lot returns its value, prints nothing of the engine's to stderr, and the next run is as good", async () => {
    // QuickJS cannot free a runtime in which a collection ran inside a promise job (upstream quickjs-emscripten
    // issues 235 and 269): the run's value stands, the instance is replaced, and its "Aborted(...)" is not printed.
    const printed: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
      printed.push(String(chunk));
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    };
    const error = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void printed.push(args.join(" ")));
    try {
      const browser = new TinyBrowser();
      const program = "await browse.open('https://example.test/a');\nconst rows = [];\nfor (let i = 0; i < 200000; i++) rows.push({ i });\nreturn rows.length;";
      for (let i = 0; i < 2; i++) {
        const run = await sandbox.run(
          { program, commands: COMMANDS, budgets: { ...budgets, memoryBytes: 32 * 1024 * 1024, instructions: 100_000_000 } },
          browser.call,
        );
        expect(run.result).toMatchObject({ status: "ok", value: 200000 });
      }
      const after = await sandbox.run({ program: "return [1, 2, 3].map((n) => n * 2);", commands: COMMANDS, budgets }, browser.call);
      expect(after).toMatchObject({ instanceUsable: true, result: { status: "ok", value: [2, 4, 6] } });
    } finally {
      process.stderr.write = write;
      error.mockRestore();
    }
    expect(printed.join("")).not.toContain("Aborted");
  });

  it("refuses budgets that are missing or not finite, naming them", async () => {
    const { result } = await sandbox.run(
      { program: "return 1;", commands: [], budgets: { ...budgets, wallMs: Number.NaN, commands: -1 } },
      new TinyBrowser().call,
    );
    expect(result.status).toBe("error");
    expect(result.error).toEqual({ code: "invalid_request", message: expect.stringContaining("wallMs, commands must be finite numbers >= 0") });
  });
});

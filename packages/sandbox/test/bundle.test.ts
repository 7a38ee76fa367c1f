// The sandbox worker as the CLI ships it: packages/cli/bundle/sandboxWorker.js (an esbuild entry point) with
// QuickJS's wasm copied beside it, run through the pool exactly as the bundled broker runs it.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createSandboxPool } from "../src/node/pool.js";
import { COMMANDS, TinyBrowser } from "./tinyBrowser.js";

const bundleDir = fileURLToPath(new URL("../../cli/bundle/", import.meta.url));
const workerPath = `${bundleDir}sandboxWorker.js`;

describe("the CLI bundle's sandbox worker", () => {
  it("runs a TypeScript program that calls a command, and stops a hostile one", async () => {
    expect(existsSync(workerPath), `${workerPath} is missing: run npm run build`).toBe(true);
    expect(existsSync(`${bundleDir}emscripten-module.wasm`), "the bundle has no emscripten-module.wasm: run npm run build").toBe(true);
    const pool = createSandboxPool({ size: 1, workerPath });
    try {
      const budgets = { wallMs: 1000, instructions: 1_000_000, memoryBytes: 32 * 1024 * 1024, stackBytes: 256 * 1024, commands: 10, outputBytes: 65536 };
      const browser = new TinyBrowser();
      const ok = await pool.run(
        { program: "const page: { url: string } = (await browse.read()) as { url: string };\nreturn page.url;", commands: COMMANDS, budgets },
        browser.call,
      );
      expect(ok).toMatchObject({ status: "ok", value: "https://example.test/" });
      expect(browser.calls.map((c) => c.command)).toEqual(["read"]);
      const hostile = await pool.run({ program: "return new Array(1e9) + '';", commands: COMMANDS, budgets }, browser.call);
      expect(hostile.status).toBe("budget_exceeded");
      expect(hostile.error?.message).toContain("wall clock budget exceeded");
      const after = await pool.run({ program: "return 6 * 7;", commands: COMMANDS, budgets }, browser.call);
      expect(after).toMatchObject({ status: "ok", value: 42 });
    } finally {
      await pool.close();
    }
  });
});

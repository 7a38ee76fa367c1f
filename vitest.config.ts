import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import PlainSummaryReporter from "./test/plainSummaryReporter.js";
import LongestFirst from "./test/sequencer.js";

// Two projects (see README, Development):
// - unit: packages/*/test, no browser and no service; files in parallel, one per core.
// - e2e: test/<room>/, real Chromium, PostgreSQL, Redis, nginx and tabrelay processes. Each file owns its browsers,
//   ports, temp dirs and servers (PostgreSQL is one server per run, a database per file: test/services.ts), so
//   files run side by side: E2E_WORKERS of them at once, by default one per core (a file alone keeps ~1.2 of this
//   machine's 2 cores busy, its browsers included: more at once only makes each slower). The longest start first
//   (test/sequencer.ts). The unit project runs first, then the end-to-end one.
const cores = availableParallelism();
const e2eWorkers = Number(process.env["E2E_WORKERS"] ?? cores);

export default defineConfig({
  // Tests build brokers from the broker's source (test/harness.ts); a package that imports @tabrelay/broker
  // (agent-tools) must get that same module, not its dist: one lease book, one TabrelayError class.
  resolve: {
    alias: [
      { find: /^@tabrelay\/broker$/, replacement: fileURLToPath(new URL("./packages/broker/src/index.ts", import.meta.url)) },
      { find: /^@tabrelay\/broker\/core$/, replacement: fileURLToPath(new URL("./packages/broker/src/core.ts", import.meta.url)) },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default", new PlainSummaryReporter()],
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          pool: "threads",
          include: ["packages/*/test/**/*.test.ts"],
          maxWorkers: Math.max(1, cores),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/services.ts"],
          maxWorkers: Math.max(1, e2eWorkers),
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

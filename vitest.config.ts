import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import PlainSummaryReporter from "./test/plainSummaryReporter.js";

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
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files each start Chromium; two cores cannot run several at once reliably.
    fileParallelism: false,
    reporters: ["default", new PlainSummaryReporter()],
  },
});

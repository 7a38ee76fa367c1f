import { defineConfig } from "vitest/config";
import PlainSummaryReporter from "./test/plainSummaryReporter.js";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files each start Chromium; two cores cannot run several at once reliably.
    fileParallelism: false,
    reporters: ["default", new PlainSummaryReporter()],
  },
});

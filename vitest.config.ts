import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end files each start Chromium; two cores cannot run several at once reliably.
    fileParallelism: false,
  },
});

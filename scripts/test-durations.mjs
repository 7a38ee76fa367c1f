#!/usr/bin/env node
// Rewrites test/durations.json (what test/sequencer.ts orders a clean clone's run by) from a vitest JSON report:
//   npx vitest run --reporter=json --outputFile=report.json && node scripts/test-durations.mjs report.json
// Take the report of a full run on a 2-core machine like CI's; seconds per file, rounded up.
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

const report = process.argv[2];
if (!report) {
  process.stderr.write("usage: node scripts/test-durations.mjs REPORT.json\n");
  process.exit(2);
}
const root = fileURLToPath(new URL("..", import.meta.url));
const { testResults } = JSON.parse(readFileSync(report, "utf8"));
const durations = Object.fromEntries(
  testResults.map((file) => [relative(root, file.name), Math.ceil((file.endTime - file.startTime) / 1000)]).sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(new URL("../test/durations.json", import.meta.url), `${JSON.stringify(durations, null, 2)}\n`);
process.stdout.write(`test/durations.json: ${Object.keys(durations).length} files\n`);

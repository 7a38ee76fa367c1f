#!/usr/bin/env node
// Figures 16b and 16c alone (issue 24 §4 and §5), without the peers: `node bench/hostile.mjs` after `npm run build`.
// 16b: another session's trivial run while two hostile runs go (the sandbox pool). 16c: the largest result a hostile
// run hands the agent through a real `tabrelay serve` and the MCP client.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { benchHostileResults, hostileRows } from "./lib/codemode.mjs";
import { runCleanups } from "./lib/common.mjs";
import { printTable } from "./lib/output.mjs";
import { benchFairness, fairnessRows } from "./sandbox.mjs";

const ROOT = join(import.meta.dirname, "..");
const lib = {
  broker: await import(pathToFileURL(join(ROOT, "packages/broker/dist/index.js")).href),
  sdk: {
    ...(await import("@modelcontextprotocol/sdk/client/index.js")),
    ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
  },
};
try {
  const fairness = await benchFairness();
  const hostile = await benchHostileResults(lib);
  printTable([...fairnessRows(fairness), ...hostileRows(hostile)]);
} finally {
  await runCleanups();
}

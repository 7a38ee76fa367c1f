#!/usr/bin/env node
// Code mode: sandbox start to first command. From pool.run() to the host receiving the program's first command,
// for a program whose first line is a command, through the real pool (warm worker threads, the built worker,
// sucrase + a fresh QuickJS runtime and context per run). The target: <= 20 ms median.
// Run after `npm run build`: `node bench/sandbox.mjs` prints the figure; bench/run.mjs can import benchSandbox().
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const RUNS = 40;
const WARMUP = 5;
const budgets = { wallMs: 5000, instructions: 1_000_000, memoryBytes: 32 * 1024 * 1024, stackBytes: 256 * 1024, commands: 10, outputBytes: 65536 };
const program = `const tabs = (await browse.tabs.list()) as { id: number; url: string }[];
interface Seen { count: number }
const seen: Seen = { count: tabs.length };
log.info("tabs", seen);
return seen;`;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function benchSandbox({ runs = RUNS, warmup = WARMUP } = {}) {
  const { createSandboxPool } = await import("../packages/sandbox/dist/node/pool.js");
  const pool = createSandboxPool({ size: 2, warmMemoryBytes: budgets.memoryBytes });
  try {
    const times = [];
    for (let i = 0; i < warmup + runs; i++) {
      let started = 0;
      let firstCommandAt = 0;
      const call = async (c) => {
        if (firstCommandAt === 0) firstCommandAt = performance.now();
        return c.command === "tabs.list" ? { ok: true, value: [{ id: 1, url: "https://example.test/" }] } : { ok: false, error: { code: "unknown_command", message: c.command } };
      };
      started = performance.now();
      const result = await pool.run({ program, commands: ["tabs.list", "open", "read"], budgets }, call);
      if (result.status !== "ok" || firstCommandAt === 0) throw new Error(`bench/sandbox.mjs: the program did not run: ${JSON.stringify(result)}`);
      if (i >= warmup) times.push(firstCommandAt - started);
    }
    return { startToFirstCommandMs: median(times), runs: times.length };
  } finally {
    await pool.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { startToFirstCommandMs, runs } = await benchSandbox();
  process.stdout.write(`code mode: sandbox start to first command (median of ${runs}): ${startToFirstCommandMs.toFixed(2)} ms (target <= 20 ms)\n`);
}

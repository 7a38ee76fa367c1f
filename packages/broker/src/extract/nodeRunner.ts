// The Node runner: read conversions on a pool of worker threads (workerPool.ts) running worker.ts.
import { existsSync } from "node:fs";
import { assetPaths } from "../assets.js";
import type { ExtractRunner } from "./runner.js";
import type { ReadJob, ReadJobResult } from "./job.js";
import { WorkerPool } from "./workerPool.js";

/** Two cores here: one worker per core at most; ended after 5 s idle (each holds the DOM libraries, ~10 MiB). */
const MAX_WORKERS = 2;
const IDLE_MS = 5_000;
/** A worker's heap: a document within the size budget (job.ts) needs well under this; beyond it the worker dies. */
const MAX_HEAP_MB = 384;

/** The pool-backed runner, or undefined when the worker script is not built (the caller then runs in-process). */
export function nodeExtractRunner(): ExtractRunner | undefined {
  const script = assetPaths.extractWorker;
  if (!existsSync(script)) return undefined;
  const pool = new WorkerPool<ReadJob, ReadJobResult>({ script, maxWorkers: MAX_WORKERS, idleMs: IDLE_MS, resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB } });
  return { run: (job, deadlineMs) => pool.run(job, deadlineMs), close: () => pool.close() };
}

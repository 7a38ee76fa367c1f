// The Node runner: read conversions on a pool of worker threads (workerPool.ts) running worker.ts.
import { existsSync } from "node:fs";
import { assetPaths } from "../assets.js";
import { inProcessRunner, setExtractRunner, type ExtractRunner } from "./runner.js";
import type { ReadJob, ReadJobResult } from "./job.js";
import { WorkerPool } from "./workerPool.js";

/** Two cores here: one worker per core at most; ended after 5 s idle (each holds the DOM libraries: ~25 MiB resident). */
const MAX_WORKERS = 2;
const IDLE_MS = 5_000;
/**
 * A worker's heap. A document within the size budget (job.ts) needs at most ~128 MiB (100,000 tags of <span>s);
 * beyond this the worker dies and the read is converted again as plain text.
 */
const MAX_HEAP_MB = 256;
/**
 * A small young generation, like the broker's own (bin/tabrelay.js: --max-semi-space-size=1): a worker's resident
 * memory counts against the broker's (bench figure 4).
 */
const YOUNG_GENERATION_MB = 4;

/** The pool-backed runner, or undefined when the worker script is not built (the caller then runs in-process). */
export function nodeExtractRunner(): ExtractRunner | undefined {
  const script = assetPaths.extractWorker;
  if (!existsSync(script)) return undefined;
  const pool = new WorkerPool<ReadJob, ReadJobResult>({
    script,
    maxWorkers: MAX_WORKERS,
    idleMs: IDLE_MS,
    resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
  });
  return { run: (job, deadlineMs) => pool.run(job, deadlineMs), warm: () => pool.warm(), close: () => pool.close() };
}

/**
 * The runner a Node broker installs: the pool, made on the first read (in-process when the worker script is not
 * built, as nodeExtractRunner says); closed, it makes a new pool on the next read. One per process, as the pool is.
 */
const shared: ExtractRunner = (() => {
  let made: ExtractRunner | undefined;
  return {
    run: (job, deadlineMs) => (made ??= nodeExtractRunner() ?? inProcessRunner).run(job, deadlineMs),
    warm: () => (made ??= nodeExtractRunner() ?? inProcessRunner).warm?.(),
    async close() {
      const pool = made;
      made = undefined;
      await pool?.close?.();
    },
  };
})();

/** Read conversions of this process run on the worker pool (Broker's constructor: every broker of the process shares it). */
export function useNodeExtractRunner(): void {
  setExtractRunner(shared);
}

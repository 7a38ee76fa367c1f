// The extraction worker thread's entry (see workerPool.ts): converts one read's documents per message. Built as
// packages/broker/dist/extract/worker.js and bundled as packages/cli/bundle/extractWorker.js; assets.ts finds it.
import { parentPort } from "node:worker_threads";
import { runReadJob, type ReadJob } from "./job.js";

/** Parsing boundary: what the pool sends (workerPool.ts run()). */
function parse(message: unknown): { id: number; job: ReadJob } | undefined {
  if (typeof message !== "object" || message === null || !("id" in message) || typeof message.id !== "number" || !("request" in message)) return undefined;
  const job = message.request as ReadJob;
  return typeof job === "object" && job !== null && typeof job.top?.html === "string" && Array.isArray(job.frames) ? { id: message.id, job } : undefined;
}

type GcFunction = (options: { type: "major"; execution: "async" }) => unknown;

parentPort?.on("message", (message: unknown) => {
  const parsed = parse(message);
  if (!parsed) return;
  try {
    parentPort?.postMessage({ id: parsed.id, ok: true, value: runReadJob(parsed.job) });
  } catch (error) {
    parentPort?.postMessage({ id: parsed.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
  // The page's DOM is garbage now; with --expose-gc (bin/tabrelay.js) have it collected in the background, so the
  // worker idles near its baseline: its memory counts against the broker's.
  const gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc === "function") gc({ type: "major", execution: "async" });
});

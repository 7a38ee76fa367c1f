// The extraction worker thread's entry (see workerPool.ts): converts one read's documents per message. Built as
// packages/broker/dist/extract/worker.js and bundled as packages/cli/bundle/extractWorker.js; assets.ts finds it.
import { parentPort } from "node:worker_threads";
import { runReadJob, type ReadJob } from "./job.js";

type GcFunction = (options: { type: "major"; execution: "async" }) => unknown;

/** Parsing boundary: what the pool sends (workerPool.ts run()). */
function parse(message: unknown): { id: number; job: ReadJob } | undefined {
  if (typeof message !== "object" || message === null || !("id" in message) || typeof message.id !== "number" || !("request" in message)) return undefined;
  const job = message.request as ReadJob;
  return typeof job === "object" && job !== null && typeof job.top?.html === "string" && Array.isArray(job.frames) ? { id: message.id, job } : undefined;
}

parentPort?.on("message", (message: unknown) => {
  const parsed = parse(message);
  if (!parsed) return;
  try {
    parentPort?.postMessage({ id: parsed.id, ok: true, value: runReadJob(parsed.job) });
  } catch (error) {
    parentPort?.postMessage({ id: parsed.id, ok: false, error: error instanceof Error ? error.message : String(error) });
  }
  // The page's DOM is garbage now; with --expose-gc (bin/tabrelay.js) collect it before the worker idles.
  const gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc === "function") gc({ type: "major", execution: "async" });
});

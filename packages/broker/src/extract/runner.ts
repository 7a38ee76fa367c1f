/**
 * Where a read's conversion runs. The Node broker installs a pool of worker threads (nodeRunner.ts, from its
 * constructor), so that a hostile page cannot stall the event loop other sessions and /health share; where nothing is
 * installed (a runtime without worker threads: the Workers entry) it runs in-process. Either way the job has a size budget (job.ts); in a worker it
 * also has a deadline: past it the worker is ended, the documents are converted again as plain text, and past that
 * deadline too the read fails with `timeout` rather than hang.
 */
import { TabrelayError } from "../util/errors.js";
import type { ReadJob, ReadJobResult } from "./job.js";

export type RunOutcome = { ok: true; value: ReadJobResult } | { ok: false; reason: string; message: string };

export interface ExtractRunner {
  run(job: ReadJob, deadlineMs: number): Promise<RunOutcome>;
  /** Gets ready for a job soon (a worker loads its libraries), where that takes time; no job is run. */
  warm?(): void;
  close?(): Promise<void>;
}

/** Converting a read's documents to Markdown, at most. */
export const MARKDOWN_DEADLINE_MS = 10_000;
/** The plain-text conversion after that, at most. */
export const PLAIN_DEADLINE_MS = 5_000;

/** Runs the job on this thread (no deadline can be enforced: only a worker can be stopped mid-way). */
export const inProcessRunner: ExtractRunner = {
  async run(job) {
    const { runReadJob } = await import("./job.js"); // the DOM and Markdown libraries load on first read
    return { ok: true, value: runReadJob(job) };
  },
};

// The core imports no node: module, so it cannot pick the worker pool itself (node:worker_threads): the Node broker
// installs it.
let chosen: ExtractRunner = inProcessRunner;

/** Replaces the runner (the previous one is closed). */
export function setExtractRunner(runner: ExtractRunner): void {
  const previous = chosen;
  chosen = runner;
  if (previous !== runner) void previous.close?.();
}

/** A read is likely soon (a browser connected): the runner gets ready, off the path of that read. */
export function warmExtraction(): void {
  chosen.warm?.();
}

export interface Converted extends ReadJobResult {
  /** Set when the Markdown conversion overran its deadline and plain text was made instead. */
  overran?: string;
}

export async function convertRead(job: Omit<ReadJob, "how">): Promise<Converted> {
  const run = chosen;
  const first = await run.run({ ...job, how: "markdown" }, MARKDOWN_DEADLINE_MS);
  if (first.ok) return first.value;
  const second = await run.run({ ...job, how: "plain" }, PLAIN_DEADLINE_MS);
  if (second.ok) return { ...second.value, overran: first.message };
  throw new TabrelayError(
    "timeout",
    `the page could not be converted (${first.message}; as plain text: ${second.message}); it is too large or too complex to read whole: use snapshot, or read another page`,
  );
}

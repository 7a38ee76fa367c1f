/**
 * A small pool of worker threads for CPU-heavy work on page content, so that a page cannot stall the broker's event
 * loop. Workers start on first use (up to `maxWorkers`), one job each at a time; a job that overruns its deadline
 * has its worker terminated (a busy loop cannot be interrupted any other way) and a fresh one takes the next job;
 * an idle worker is ended after `idleMs` to give its memory back.
 *
 * The worker script receives `{ id, request }` and answers `{ id, ok: true, value }` or `{ id, ok: false, error }`.
 */
import { Worker, type ResourceLimits } from "node:worker_threads";

export interface WorkerPoolOptions {
  /** The worker script (an ES module). */
  script: string | URL;
  maxWorkers?: number;
  idleMs?: number;
  resourceLimits?: ResourceLimits;
}

export type PoolOutcome<T> = { ok: true; value: T } | { ok: false; reason: "deadline" | "crashed" | "failed" | "closed"; message: string };

interface Slot {
  worker: Worker;
  job?: Job;
  idleTimer?: ReturnType<typeof setTimeout>;
}

interface Job {
  id: number;
  request: unknown;
  deadlineMs: number;
  settle(outcome: PoolOutcome<unknown>): void;
  timer?: ReturnType<typeof setTimeout>;
}

function isReply(value: unknown): value is { id: number; ok: boolean; value?: unknown; error?: unknown } {
  return typeof value === "object" && value !== null && "id" in value && typeof value.id === "number" && "ok" in value && typeof value.ok === "boolean";
}

export class WorkerPool<Req, Res> {
  readonly #options: Required<Omit<WorkerPoolOptions, "resourceLimits">> & { resourceLimits?: ResourceLimits };
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  #nextId = 1;
  #closed = false;
  /** Workers started so far (replacements included). */
  started = 0;

  constructor(options: WorkerPoolOptions) {
    this.#options = { maxWorkers: 2, idleMs: 10_000, ...options };
  }

  /** Live workers (busy or idle). */
  get size(): number {
    return this.#slots.size;
  }

  /** Runs `request` on a worker; answers by `deadlineMs` after the job starts on one, whatever the worker does. */
  run(request: Req, deadlineMs: number): Promise<PoolOutcome<Res>> {
    if (this.#closed) return Promise.resolve({ ok: false, reason: "closed", message: "the worker pool is shut down" });
    return new Promise<PoolOutcome<Res>>((resolve) => {
      // The worker's answer is only ever what this pool's worker script sent for this request.
      const settle = (outcome: PoolOutcome<unknown>) => resolve(outcome as PoolOutcome<Res>);
      this.#queue.push({ id: this.#nextId++, request, deadlineMs, settle });
      this.#pump();
    });
  }

  /**
   * Starts one worker ahead of the first job when none is running (idle, so ended after `idleMs` like any): the
   * first job need not wait for a worker to load its script.
   */
  warm(): void {
    if (this.#closed || this.#slots.size > 0) return;
    const slot = this.#spawn();
    slot.idleTimer = setTimeout(() => void this.#end(slot), this.#options.idleMs);
    slot.idleTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.settle({ ok: false, reason: "closed", message: "the worker pool is shut down" });
    await Promise.all([...this.#slots].map((slot) => this.#end(slot, { ok: false, reason: "closed", message: "the worker pool is shut down" })));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      let slot = [...this.#slots].find((s) => s.job === undefined);
      if (slot === undefined) {
        if (this.#slots.size >= this.#options.maxWorkers) return;
        slot = this.#spawn();
      }
      this.#dispatch(slot, this.#queue.shift()!);
    }
  }

  #spawn(): Slot {
    // execArgv []: the broker's own flags (a test runner's loaders, say) are not a worker's business.
    const worker = new Worker(this.#options.script, {
      execArgv: [],
      ...(this.#options.resourceLimits ? { resourceLimits: this.#options.resourceLimits } : {}),
    });
    worker.unref(); // never what keeps the process alive
    this.started++;
    const slot: Slot = { worker };
    this.#slots.add(slot);
    worker.on("message", (message: unknown) => {
      const job = slot.job;
      if (!isReply(message) || job === undefined || message.id !== job.id) return;
      this.#finish(slot, message.ok ? { ok: true, value: message.value } : { ok: false, reason: "failed", message: String(message.error) });
    });
    const crashed = (why: string) => {
      if (!this.#slots.has(slot)) return;
      this.#slots.delete(slot);
      const job = slot.job;
      slot.job = undefined;
      if (job) {
        clearTimeout(job.timer);
        job.settle({ ok: false, reason: "crashed", message: why });
      }
      this.#pump();
    };
    worker.on("error", (error) => crashed(`the worker failed: ${error.message}`));
    worker.on("exit", (code) => crashed(`the worker exited (code ${code})`));
    return slot;
  }

  #dispatch(slot: Slot, job: Job): void {
    clearTimeout(slot.idleTimer);
    slot.job = job;
    job.timer = setTimeout(() => {
      void this.#end(slot, { ok: false, reason: "deadline", message: `the work did not finish within ${job.deadlineMs} ms` }).then(() => this.#pump());
    }, job.deadlineMs);
    slot.worker.postMessage({ id: job.id, request: job.request });
  }

  #finish(slot: Slot, outcome: PoolOutcome<unknown>): void {
    const job = slot.job;
    if (!job) return;
    clearTimeout(job.timer);
    slot.job = undefined;
    job.settle(outcome);
    slot.idleTimer = setTimeout(() => void this.#end(slot), this.#options.idleMs);
    slot.idleTimer.unref();
    this.#pump();
  }

  /** Terminates the slot's worker, settling its job (if any) with `outcome`. */
  async #end(slot: Slot, outcome?: PoolOutcome<unknown>): Promise<void> {
    if (!this.#slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    const job = slot.job;
    slot.job = undefined;
    if (job) {
      clearTimeout(job.timer);
      job.settle(outcome ?? { ok: false, reason: "closed", message: "the worker was ended" });
    }
    await slot.worker.terminate().catch(() => undefined);
  }
}

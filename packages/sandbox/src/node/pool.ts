// Runs programs in worker threads from a small warm pool, so the main thread (the broker) stays responsive
// whatever a program does, and a run QuickJS cannot interrupt (`new Array(1e9)+''` never reaches the interrupt
// handler, TESTING.md) is ended from outside: a watchdog terminates the worker at wallMs + a grace. A worker
// whose run ended in a budget, a crash, a kill or a cancel is replaced at once: its wasm instance may be unusable.
//
// Fair between owners (the broker passes the MCP session): each owner has its own queue, served round robin; an
// owner runs at most `size - 1` programs at once (one when the pool is two), so the other worker is there for
// everyone else; and an owner with nothing running whose run finds every worker busy (other owners' long runs)
// gets a worker of its own for it, up to `maxSize`, retired when it is done. Session A's two 30 s runs no longer
// make session B's `return 1` wait 27 s.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { budgetMessage, budgetsProblem } from "../describe.js";
import type { HostCallFn } from "../engine.js";
import type { HostAnswer, LogEntry, RunRequest, RunResult, RunUsage } from "../types.js";
import type { FromWorker, ToWorker, WorkerSetup } from "./messages.js";

export interface SandboxPoolOptions {
  /** Warm workers kept (each one QuickJS instance, one run at a time). Default 2. */
  size?: number;
  /**
   * The worker script. Default: the built worker beside this module (packages/sandbox/dist/node/worker.js; from
   * the TypeScript sources, the same built file), or sandboxWorker.js beside the CLI bundle when running from it.
   */
  workerPath?: string;
  /** The QuickJS .wasm file. Default: emscripten-module.wasm beside the worker script if there (the CLI bundle), else the package's. */
  wasmPath?: string;
  /**
   * The memory budget most runs ask for (the host's default): each worker builds its QuickJS instance for it ahead of
   * time (a run with another budget rebuilds it, ~10 ms). Default 32 MiB.
   */
  warmMemoryBytes?: number;
  /** How long past a run's wallMs the watchdog waits before terminating its worker (ms). Default 250. */
  watchdogGraceMs?: number;
  /** Workers at most, the extra ones (past `size`) started for owners with nothing running and retired after. Default 2 x size. */
  maxSize?: number;
}

export interface SandboxPool {
  /**
   * Runs one program; never rejects: every outcome (budgets, a kill, a cancel, a crash) is a RunResult. `owner`
   * (the broker's MCP session) is whose turn it is in the fair queue; runs without one share the owner "".
   */
  run(request: RunRequest, call: HostCallFn, signal?: AbortSignal, owner?: string): Promise<RunResult>;
  /** Terminates every worker; runs still queued or in flight end with status "error", code "sandbox_closed". */
  close(): Promise<void>;
}

/** The WebAssembly global: @types/node (which the tests type-check against) declares its types, not the value. */
const wasm = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WebAssembly.Module } }).WebAssembly;

const here = fileURLToPath(import.meta.url);
const fromBundle = /[\\/]bundle[\\/][^\\/]*$/.test(here);
const fromSources = here.endsWith(".ts");

function defaultWorkerPath(): string {
  if (fromBundle) return join(dirname(here), "sandboxWorker.js");
  if (fromSources) return join(dirname(here), "..", "..", "dist", "node", "worker.js");
  return join(dirname(here), "worker.js");
}

function defaultWasmPath(workerPath: string): string {
  const beside = join(dirname(workerPath), "emscripten-module.wasm");
  if (existsSync(beside)) return beside;
  return createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
}

interface Job {
  owner: string;
  request: RunRequest;
  call: HostCallFn;
  signal: AbortSignal | undefined;
  resolve(result: RunResult): void;
}

const zeroUsage = (): RunUsage => ({ wallMs: 0, instructions: 0, memoryBytes: 0, commands: 0, outputBytes: 0 });

class PoolWorker {
  readonly worker: Worker;
  ready: Promise<boolean>;
  busy = false;
  /** Whose run it runs now. */
  owner: string | undefined;
  /** Started past `size` for one owner's run: retired when that run ends. */
  extra = false;
  #current: { runId: number; job: Job; logs: LogEntry[]; usage: RunUsage; started: number; finish(result: RunResult, replace: boolean): void } | undefined;
  #exited = false;
  onExit: (() => void) | undefined;

  constructor(workerPath: string, setup: WorkerSetup) {
    this.worker = new Worker(workerPath, { workerData: setup });
    this.worker.unref();
    this.ready = new Promise<boolean>((resolve) => {
      const onMessage = (message: FromWorker) => {
        if (message.type === "ready" || message.type === "load_failed") {
          this.worker.off("message", onMessage);
          if (message.type === "load_failed") this.#loadError = message.message;
          resolve(message.type === "ready");
        }
      };
      this.worker.on("message", onMessage);
      this.worker.once("exit", () => resolve(false));
    });
    this.worker.on("message", (message: FromWorker) => this.#onMessage(message));
    this.worker.on("error", (error) => this.#crashed(`the sandbox worker failed: ${error.message}`));
    this.worker.on("exit", (code) => {
      this.#exited = true;
      this.#crashed(`the sandbox worker exited (code ${code})`);
      this.onExit?.();
    });
  }

  #loadError: string | undefined;
  get loadError(): string | undefined {
    return this.#loadError;
  }
  get exited(): boolean {
    return this.#exited;
  }

  start(runId: number, job: Job, graceMs: number, done: (replace: boolean) => void): void {
    this.busy = true;
    this.owner = job.owner;
    this.worker.ref();
    const { request, signal } = job;
    const started = Date.now();
    let settled = false;
    const watchdog = setTimeout(() => {
      const usage = this.#usageNow();
      this.#end(
        {
          status: "budget_exceeded",
          error: { code: "budget_exceeded", message: budgetMessage("wall clock", request.budgets) },
          logs: this.#current?.logs ?? [],
          usage,
        },
        true,
      );
    }, request.budgets.wallMs + graceMs);
    const onAbort = () => {
      const usage = this.#usageNow();
      this.#end(
        {
          status: "error",
          error: { code: "cancelled", message: "the run was cancelled by its caller before it ended" },
          logs: this.#current?.logs ?? [],
          usage,
        },
        true,
      );
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#current = {
      runId,
      job,
      logs: [],
      usage: zeroUsage(),
      started,
      finish: (result, replace) => {
        if (settled) return;
        settled = true;
        clearTimeout(watchdog);
        signal?.removeEventListener("abort", onAbort);
        this.#current = undefined;
        this.busy = false;
        this.owner = undefined;
        if (!this.#exited) this.worker.unref();
        job.resolve(result);
        done(replace);
      },
    };
    this.#post({ type: "run", runId, request });
  }

  #usageNow(): RunUsage {
    const current = this.#current;
    return current ? { ...current.usage, wallMs: Date.now() - current.started } : zeroUsage();
  }

  #end(result: RunResult, replace: boolean): void {
    this.#current?.finish(result, replace);
  }

  #crashed(message: string): void {
    if (!this.#current) return;
    this.#end(
      { status: "error", error: { code: "sandbox_crashed", message: `${message}; run the program again` }, logs: this.#current.logs, usage: this.#usageNow() },
      true,
    );
  }

  #post(message: ToWorker): void {
    if (!this.#exited) this.worker.postMessage(message);
  }

  #onMessage(message: FromWorker): void {
    const current = this.#current;
    if (!current || !("runId" in message) || message.runId !== current.runId) return;
    switch (message.type) {
      case "log":
        current.logs.push(message.entry);
        return;
      case "usage":
        current.usage = message.usage;
        return;
      case "call": {
        const { runId } = current;
        const { seq, command } = message.call;
        let answered: Promise<HostAnswer>;
        try {
          answered = current.job.call(message.call);
        } catch (error) {
          answered = Promise.reject(error);
        }
        answered
          .catch((error: unknown) => ({
            ok: false as const,
            error: { code: "host_error", message: `the host failed to run ${command}: ${error instanceof Error ? error.message : String(error)}` },
          }))
          .then((answer) => {
            if (this.#current?.runId !== runId) return; // the run ended: its answer is abandoned
            try {
              this.#post({ type: "answer", runId, seq, answer });
            } catch (error) {
              const message = `the host's answer to ${command} could not be sent to the sandbox: ${error instanceof Error ? error.message : String(error)}`;
              this.#post({ type: "answer", runId, seq, answer: { ok: false, error: { code: "host_error", message } } });
            }
          })
          .catch(() => {
            // Not even the failure could be posted: the worker is gone, and its exit ends the run.
          });
        return;
      }
      case "done": {
        const replace = !message.instanceUsable || message.result.status === "budget_exceeded";
        this.#end(message.result, replace);
        return;
      }
    }
  }

  /** Ends the run in flight, if any, with `result`, then terminates the thread. */
  async close(result: RunResult): Promise<void> {
    if (this.#current) this.#end({ ...result, logs: this.#current.logs, usage: this.#usageNow() }, false);
    await this.terminate();
  }

  async terminate(): Promise<void> {
    if (this.#exited) return;
    await this.worker.terminate();
  }
}

export function createSandboxPool(options: SandboxPoolOptions = {}): SandboxPool {
  const size = Math.max(1, options.size ?? 2);
  const maxSize = Math.max(size, options.maxSize ?? size * 2);
  /** The most one owner runs at once: the rest of the pool stays for the others. */
  const perOwner = Math.max(1, size - 1);
  const workerPath = options.workerPath ?? defaultWorkerPath();
  const graceMs = options.watchdogGraceMs ?? 250;
  const warmMemoryBytes = options.warmMemoryBytes ?? 32 * 1024 * 1024;
  let closed = false;
  let nextRunId = 1;
  /** Each owner's waiting runs, oldest first; owners in the order they are served next (round robin). */
  const queues = new Map<string, Job[]>();
  const workers = new Set<PoolWorker>();
  let startupError: string | undefined;

  let wasmModule: WebAssembly.Module | undefined;
  try {
    if (!existsSync(workerPath)) throw new Error(`the sandbox worker script ${workerPath} does not exist; run npm run build`);
    wasmModule = new wasm.Module(readFileSync(options.wasmPath ?? defaultWasmPath(workerPath)));
  } catch (error) {
    startupError = error instanceof Error ? error.message : String(error);
  }

  const waiting = (): Job[] => [...queues.values()].flat();
  const running = (owner: string): number => [...workers].filter((w) => w.owner === owner).length;
  const regular = (): number => [...workers].filter((w) => !w.extra).length;

  const spawn = (extra = false): PoolWorker | undefined => {
    if (closed || !wasmModule) return undefined;
    const worker = new PoolWorker(workerPath, { wasmModule, warmMemoryBytes });
    worker.extra = extra;
    workers.add(worker);
    worker.onExit = () => {
      workers.delete(worker);
      if (!closed && !worker.extra && regular() < size) spawn();
    };
    void worker.ready.then((ok) => {
      if (!ok) {
        startupError = worker.loadError ?? "a sandbox worker exited while loading QuickJS";
        workers.delete(worker);
        worker.onExit = undefined;
        void worker.terminate();
        // Fail what waits rather than spawning forever: the same setup would fail again.
        for (const job of waiting()) job.resolve(startupFailure(startupError));
        queues.clear();
        return;
      }
      pump();
    });
    return worker;
  };

  /** The next job to start, round robin over owners with room; removed from its queue. */
  const next = (): Job | undefined => {
    for (const [owner, queue] of queues) {
      if (running(owner) >= perOwner) continue;
      const job = queue.shift();
      queues.delete(owner);
      // Served: to the back of the line (with what it still has waiting).
      if (queue.length > 0) queues.set(owner, queue);
      if (job) return job;
    }
    return undefined;
  };

  const retire = (worker: PoolWorker): void => {
    workers.delete(worker);
    worker.onExit = undefined;
    void worker.terminate();
  };

  const startOn = (worker: PoolWorker, job: Job): void => {
    if (job.signal?.aborted) {
      job.resolve(cancelledBeforeStart());
      return pump();
    }
    worker.start(nextRunId++, job, graceMs, (replace) => {
      if (worker.extra) retire(worker);
      else if (replace) {
        retire(worker);
        spawn();
      }
      pump();
    });
    // Whoever still waits may be owed a worker of its own now that this one is taken.
    pump();
  };

  const pump = (): void => {
    for (const worker of workers) {
      if (worker.busy || worker.exited) continue;
      void worker.ready.then((ok) => {
        if (!ok || worker.busy || worker.exited) return;
        const job = next();
        if (job) startOn(worker, job);
        else if (worker.extra && !worker.busy) retire(worker);
      });
    }
    // Every worker busy, and an owner with nothing running waits: it gets a worker of its own (up to maxSize), so
    // another session's long run never holds it up.
    const idle = [...workers].some((w) => !w.busy && !w.exited);
    if (idle || workers.size >= maxSize) return;
    for (const [owner, queue] of queues) {
      if (running(owner) > 0 || queue.length === 0) continue;
      const worker = spawn(true);
      if (!worker) return;
      // Marked busy for this owner while it loads, so the loop above does not give it to someone else.
      worker.busy = true;
      worker.owner = owner;
      void worker.ready.then((ok) => {
        worker.busy = false;
        worker.owner = undefined;
        if (!ok) return;
        const own = queues.get(owner);
        const job = own?.shift();
        if (own && own.length === 0) queues.delete(owner);
        if (job) startOn(worker, job);
        else {
          retire(worker);
          pump();
        }
      });
      return;
    }
  };

  for (let i = 0; i < size; i++) spawn();

  return {
    run(request, call, signal, owner = "") {
      if (closed) return Promise.resolve(closedResult());
      if (startupError && workers.size === 0) return Promise.resolve(startupFailure(startupError));
      if (signal?.aborted) return Promise.resolve(cancelledBeforeStart());
      const problem = budgetsProblem(request.budgets);
      if (problem) return Promise.resolve({ status: "error", error: { code: "invalid_request", message: problem }, logs: [], usage: zeroUsage() });
      return new Promise<RunResult>((resolve) => {
        const job: Job = { owner, request, call, signal, resolve };
        const queue = queues.get(owner) ?? [];
        queue.push(job);
        queues.set(owner, queue);
        signal?.addEventListener(
          "abort",
          () => {
            const own = queues.get(owner);
            const at = own?.indexOf(job) ?? -1;
            if (own && at >= 0) {
              own.splice(at, 1);
              if (own.length === 0) queues.delete(owner);
              resolve(cancelledBeforeStart());
            }
          },
          { once: true },
        );
        pump();
      });
    },
    async close() {
      closed = true;
      for (const job of waiting()) job.resolve(closedResult());
      queues.clear();
      await Promise.all(
        [...workers].map((worker) => {
          worker.onExit = undefined;
          return worker.close(closedResult());
        }),
      );
      workers.clear();
    },
  };
}

const closedResult = (): RunResult => ({
  status: "error",
  error: { code: "sandbox_closed", message: "the sandbox pool was closed; the broker is shutting down" },
  logs: [],
  usage: zeroUsage(),
});
const cancelledBeforeStart = (): RunResult => ({
  status: "error",
  error: { code: "cancelled", message: "the run was cancelled by its caller before it started" },
  logs: [],
  usage: zeroUsage(),
});
const startupFailure = (why: string): RunResult => ({
  status: "error",
  error: { code: "sandbox_unavailable", message: `the sandbox could not start: ${why}` },
  logs: [],
  usage: zeroUsage(),
});

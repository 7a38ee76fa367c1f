// What the pool (main thread) and a sandbox worker thread say to each other over postMessage.
import type { HostAnswer, HostCall, LogEntry, RunRequest, RunResult, RunUsage } from "../types.js";

export interface WorkerSetup {
  /** The compiled QuickJS wasm, compiled once by the pool and shared by its workers. */
  wasmModule: WebAssembly.Module;
  /** The memory budget to build the first QuickJS instance for, before any run asks. */
  warmMemoryBytes: number;
}

export type ToWorker = { type: "run"; runId: number; request: RunRequest } | { type: "answer"; runId: number; seq: number; answer: HostAnswer };

export type FromWorker =
  | { type: "ready" }
  | { type: "load_failed"; message: string }
  | { type: "call"; runId: number; call: HostCall }
  | { type: "log"; runId: number; entry: LogEntry }
  | { type: "usage"; runId: number; usage: RunUsage }
  | { type: "done"; runId: number; result: RunResult; instanceUsable: boolean };

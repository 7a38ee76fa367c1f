// A sandbox worker thread: one QuickJS instance with a bounded heap, one run at a time. Host commands go to
// the pool by postMessage and come back as answers; logs and usage are sent as they happen, so a run the pool
// has to kill (a loop QuickJS never interrupts) still reports what it did.
// Built to packages/sandbox/dist/node/worker.js and bundled as packages/cli/bundle/sandboxWorker.js.
import { parentPort, workerData } from "node:worker_threads";
import { createSandbox } from "../sandbox.js";
import type { HostAnswer } from "../types.js";
import type { FromWorker, ToWorker, WorkerSetup } from "./messages.js";

const port = parentPort;
if (!port) throw new Error("sandbox worker: start this file as a worker thread (the sandbox pool does)");
const post = (message: FromWorker) => port.postMessage(message);
const setup: WorkerSetup = workerData;

const waiting = new Map<number, (answer: HostAnswer) => void>();
let currentRunId = 0;

try {
  // No prewarm: after a run that dropped its instance the pool replaces this thread (node/pool.ts).
  const sandbox = createSandbox({ wasmModule: setup.wasmModule, prewarm: false });
  await sandbox.prepare(setup.warmMemoryBytes);
  // One small run before the first real one: V8 compiles sucrase and the engine's host code on first use (measured
  // ~100 ms for the first run in a fresh thread, ~2 ms after).
  const budgets = { wallMs: 5000, instructions: 1_000_000, memoryBytes: setup.warmMemoryBytes, stackBytes: 256 * 1024, commands: 1, outputBytes: 1024 };
  await sandbox.run({ program: "const w: number = (await browse.warm()) as number;\nreturn w + 1;", commands: ["warm"], budgets }, async () => ({
    ok: true,
    value: 1,
  }));
  port.on("message", (message: ToWorker) => {
    if (message.type === "answer") {
      if (message.runId !== currentRunId) return; // an answer to a run that has ended
      waiting.get(message.seq)?.(message.answer);
      waiting.delete(message.seq);
      return;
    }
    const { runId, request } = message;
    currentRunId = runId;
    waiting.clear();
    void sandbox
      .run(
        request,
        (call) =>
          new Promise<HostAnswer>((resolve) => {
            waiting.set(call.seq, resolve);
            post({ type: "call", runId, call });
          }),
        { onLog: (entry) => post({ type: "log", runId, entry }), onUsage: (usage) => post({ type: "usage", runId, usage }) },
      )
      .then(
        ({ result, instanceUsable }) => post({ type: "done", runId, result, instanceUsable }),
        (error: unknown) => {
          const message = `the sandbox's engine failed (${error instanceof Error ? error.message : String(error)}); run the program again`;
          const usage = { wallMs: 0, instructions: 0, memoryBytes: 0, commands: 0, outputBytes: 0 };
          post({ type: "done", runId, result: { status: "error", error: { code: "sandbox_crashed", message }, logs: [], usage }, instanceUsable: false });
        },
      );
  });
  post({ type: "ready" });
} catch (error) {
  post({ type: "load_failed", message: error instanceof Error ? error.message : String(error) });
}

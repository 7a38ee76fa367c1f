// A sandbox that runs programs one at a time on a QuickJS instance sized for each run's memory budget: the
// instance is kept while runs ask for the same budget (the host's default, usually), rebuilt for another budget,
// and dropped after a run that may have broken it (heap exhausted, engine aborted), a new one loading at once.
// No `node:` import.
import type { QuickJSWASMModule } from "quickjs-emscripten-core";
import { runProgram, type HostCallFn, type RunHooks } from "./engine.js";
import { instanceMemoryFor, loadQuickJS } from "./load.js";
import type { RunRequest, RunResult } from "./types.js";

export interface SandboxOptions {
  /** The compiled QuickJS wasm; without it the variant loads its .wasm from beside its own JavaScript. */
  wasmModule?: WebAssembly.Module;
  /**
   * Whether a dropped instance's replacement starts loading at once (default true). The Node pool says false: it
   * replaces the whole worker thread after such a run.
   */
  prewarm?: boolean;
}

export interface Sandbox {
  /** Runs one program; never rejects. `instanceUsable` false: the instance was dropped (the next run builds one). */
  run(request: RunRequest, call: HostCallFn, hooks?: RunHooks): Promise<{ result: RunResult; instanceUsable: boolean }>;
  /** Builds the instance for this memory budget ahead of the first run (a warm start). */
  prepare(memoryBytes: number): Promise<void>;
}

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  let instance: { ceiling: number; module: Promise<QuickJSWASMModule> } | undefined;
  const instanceFor = (memoryBytes: number): Promise<QuickJSWASMModule> => {
    const ceiling = instanceMemoryFor(memoryBytes);
    if (instance?.ceiling !== ceiling) {
      const module = loadQuickJS({ maxMemoryBytes: ceiling, ...(options.wasmModule ? { wasmModule: options.wasmModule } : {}) });
      instance = { ceiling, module };
      module.catch(() => {
        if (instance?.module === module) instance = undefined;
      });
    }
    return instance.module;
  };
  return {
    async prepare(memoryBytes) {
      await instanceFor(memoryBytes);
    },
    async run(request, call, hooks) {
      let module: QuickJSWASMModule;
      try {
        module = await instanceFor(request.budgets.memoryBytes);
      } catch (error) {
        const message = `the sandbox could not load QuickJS (${error instanceof Error ? error.message : String(error)}); reinstall the sandbox's dependencies`;
        return {
          result: {
            status: "error",
            error: { code: "sandbox_unavailable", message },
            logs: [],
            usage: { wallMs: 0, instructions: 0, memoryBytes: 0, commands: 0, outputBytes: 0 },
          },
          instanceUsable: false,
        };
      }
      const outcome = await runProgram(module, request, call, hooks);
      if (!outcome.instanceUsable) {
        // Its replacement starts loading now, so the next run does not wait for it. Dropped instances are common:
        // QuickJS aborts when freeing a runtime in which a collection ran inside a promise job (an await, then
        // many allocations: upstream quickjs-emscripten issues 235 and 269), though the run itself was sound.
        instance = undefined;
        if (options.prewarm !== false) void instanceFor(request.budgets.memoryBytes).catch(() => undefined);
      }
      return outcome;
    },
  };
}

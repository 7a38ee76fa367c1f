// Code mode where there are no worker threads (Workers, a function): the sandbox's core runs the program on this
// isolate, one run at a time per instance of QuickJS, with every budget enforced inside it. With no thread to
// terminate, a tight loop is stopped by the interrupt handler: its instruction budget (Workers' clock does not move
// during synchronous JavaScript) and its wall-clock deadline; the host checks the wall clock between commands too.
// A program the interrupt handler never reaches (the Node pool's watchdog case) runs to the platform's own CPU limit.
import type { SandboxRunner } from "@tabrelay/broker/core";
import { createSandbox } from "@tabrelay/sandbox";

export function inProcessSandbox(wasmModule?: WebAssembly.Module): SandboxRunner {
  const sandbox = createSandbox(wasmModule ? { wasmModule } : {});
  let queue: Promise<unknown> = Promise.resolve();
  return {
    run(request, call) {
      // One run at a time on the instance (its heap is sized and reused per budget).
      const next = queue.then(async () => (await sandbox.run(request, call)).result);
      queue = next.catch(() => undefined);
      return next;
    },
    close: async () => undefined,
  };
}

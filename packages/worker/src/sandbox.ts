// Code mode where there are no worker threads (Workers, a function): the sandbox's core runs the program on this
// isolate, every budget enforced inside it. With no thread to terminate, a tight loop is stopped by the interrupt
// handler: its instruction budget (Workers' clock does not move during synchronous JavaScript) and its wall-clock
// deadline; the host checks the wall clock between commands too. A program the interrupt handler never reaches (the
// Node pool's watchdog case) runs to the platform's own CPU limit.
//
// Runs on one instance do not wait for each other: each run has a QuickJS instance of its own (a sandbox), taken from
// the idle ones or made for it, up to MAX_CONCURRENT_RUNS; a program waiting on the browser leaves the isolate to
// the others. Past that many a run waits its turn: each instance's heap grows up to its run's memory budget, and a
// Workers isolate has 128 MB in all.
import type { SandboxRunner } from "@tabrelay/broker/core";
import { createSandbox, type Sandbox } from "@tabrelay/sandbox";

/** Runs at once on one isolate (each its own QuickJS instance: 16 MiB to start, up to its memory budget). */
export const MAX_CONCURRENT_RUNS = 4;

export function inProcessSandbox(wasmModule?: WebAssembly.Module): SandboxRunner {
  const idle: Sandbox[] = [];
  let made = 0;
  const waiting: Array<(sandbox: Sandbox) => void> = [];
  const take = (): Promise<Sandbox> => {
    const ready = idle.pop();
    if (ready) return Promise.resolve(ready);
    if (made < MAX_CONCURRENT_RUNS) {
      made++;
      return Promise.resolve(createSandbox(wasmModule ? { wasmModule } : {}));
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const give = (sandbox: Sandbox): void => {
    const next = waiting.shift();
    if (next) next(sandbox);
    else idle.push(sandbox);
  };
  return {
    async run(request, call) {
      const sandbox = await take();
      try {
        return (await sandbox.run(request, call)).result;
      } finally {
        give(sandbox);
      }
    },
    close: async () => undefined,
  };
}

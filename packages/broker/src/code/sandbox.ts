// The broker's sandbox pool (@tabrelay/sandbox: QuickJS in warm worker threads, with a watchdog), started by the
// first browser_run so a broker that never runs a program never starts one, and closed with the broker.
import type { HostAnswer, HostCall, RunRequest, RunResult } from "@tabrelay/sandbox";
import type { SandboxRunner } from "../tools/services.js";

export function lazySandbox(create: () => Promise<SandboxRunner> = createPool): SandboxRunner {
  let pool: Promise<SandboxRunner> | undefined;
  let closed = false;
  return {
    async run(request: RunRequest, call: (c: HostCall) => Promise<HostAnswer>, signal?: AbortSignal, owner?: string): Promise<RunResult> {
      if (closed) throw new Error("the broker is shutting down");
      pool ??= create();
      return (await pool).run(request, call, signal, owner);
    },
    async close() {
      closed = true;
      if (pool) await (await pool).close();
    },
  };
}

async function createPool(): Promise<SandboxRunner> {
  const { createSandboxPool } = await import("@tabrelay/sandbox/node");
  return createSandboxPool();
}

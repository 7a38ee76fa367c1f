// The Workers bundle under workerd for the tests: packages/worker/local.mjs starts it (the bench and `node
// packages/worker/local.mjs` use the same), and the audit lines it logs are read back here.
import { startWorkerd as startLocal, type LocalWorker } from "../packages/worker/local.mjs";

export type Workerd = LocalWorker;

export function startWorkerd(bindings: Record<string, string>): Promise<Workerd> {
  return startLocal({ bindings });
}

/** The audit lines the Worker logged ({"tabrelay_audit": {...}} on stdout), parsed. */
export function auditLines(output: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of output.split("\n")) {
    const at = line.indexOf('{"tabrelay_audit":');
    if (at < 0) continue;
    try {
      const parsed: unknown = JSON.parse(line.slice(at));
      const rec = parsed && typeof parsed === "object" ? Reflect.get(parsed, "tabrelay_audit") : undefined;
      if (rec && typeof rec === "object") lines.push({ ...rec });
    } catch {
      // a line cut by the pipe: skipped
    }
  }
  return lines;
}

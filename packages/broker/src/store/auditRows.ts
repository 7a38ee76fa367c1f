// The shared audit table's rows (store.ts SharedAuditRecord), the same for both engines.
import type { SharedAuditRecord } from "./store.js";

export type AuditRow = {
  id: number;
  broker: string;
  local_id: number;
  time: number;
  tool: string;
  decision: string;
  duration_ms: number;
  browser: string | null;
  tab: number | null;
  origin: string | null;
  user_name: string | null;
  client: string | null;
  target: string | null;
  rule: string | null;
  code: string | null;
  run: string | null;
  detail: string | null;
};

/** A record's named parameters for the audit table (absent fields as NULL). */
export function auditParams(r: Omit<SharedAuditRecord, "id" | "broker">) {
  return {
    localId: r.localId,
    time: r.time,
    tool: r.tool,
    decision: r.decision,
    durationMs: r.durationMs,
    browser: r.browser ?? null,
    tab: r.tab ?? null,
    origin: r.origin ?? null,
    user: r.user ?? null,
    client: r.client ?? null,
    target: r.target ?? null,
    rule: r.rule ?? null,
    code: r.code ?? null,
    run: r.run ?? null,
    detail: r.detail ?? null,
  };
}

/** A row of the audit table (either engine: numbers may come as strings from PostgreSQL). */
export function sharedAuditOf(
  row: Omit<AuditRow, "id" | "local_id" | "time" | "duration_ms" | "tab"> & {
    id: number | string;
    local_id: number | string;
    time: number | string;
    duration_ms: number | string;
    tab: number | string | null;
  },
): SharedAuditRecord {
  const optional = {
    browser: row.browser,
    origin: row.origin,
    user: row.user_name,
    client: row.client,
    target: row.target,
    rule: row.rule,
    code: row.code,
    run: row.run,
    detail: row.detail,
  };
  return {
    id: Number(row.id),
    broker: row.broker,
    localId: Number(row.local_id),
    time: Number(row.time),
    tool: row.tool,
    decision: row.decision,
    durationMs: Number(row.duration_ms),
    ...(row.tab !== null ? { tab: Number(row.tab) } : {}),
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== null)),
  };
}

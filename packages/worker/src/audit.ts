// Audit without a disk: every record is one structured log line (the runtime's log is the durable store: Workers
// Logs, a Logpush job, Vercel's log drains), and, when TABRELAY_AUDIT_URL names a collector, the request's records
// are also POSTed there as one JSON batch once the request is answered (the runtime keeps the request alive for it:
// waitUntil on Workers). A write's record is begun (decision outcome_unknown) before the write is sent, as on Node:
// its log line is written at once; the collector gets both lines, begun and completed, in the batch.
import type { AuditBegun, AuditRecord, AuditSink } from "@tabrelay/broker/core";

/** One audit line as the log and the collector get it. */
export interface AuditLine extends AuditRecord {
  /** Unique within the request; the request id ties a write's begun and completed lines together. */
  id: number;
  request: string;
  /** "begun": a write about to be sent; "completed": its outcome; absent: a record written once. */
  phase?: "begun" | "completed";
}

export interface AuditSettings {
  /** The collector's URL (POST, a JSON array of AuditLine), or undefined for log lines only. */
  url?: string;
  /** Sent as a bearer token to the collector. */
  token?: string;
}

/** The request's audit: log lines at once, the batch to the collector on flush(). */
export class RequestAudit implements AuditSink {
  readonly lines: AuditLine[] = [];
  #next = 1;

  constructor(
    readonly request: string,
    readonly settings: AuditSettings,
    readonly redact: (text: string) => string,
    readonly write: (line: string) => void = (line) => console.log(line),
  ) {}

  record(rec: AuditRecord): void {
    this.#emit({ ...rec, id: this.#next++, request: this.request });
  }

  begin(rec: Omit<AuditRecord, "decision" | "durationMs">): AuditBegun {
    const id = this.#next++;
    this.#emit({ ...rec, decision: "outcome_unknown", durationMs: 0, id, request: this.request, phase: "begun" });
    return { ok: true, id };
  }

  complete(id: number, rec: AuditRecord): void {
    this.#emit({ ...rec, id, request: this.request, phase: "completed" });
  }

  /** Sends the request's lines to the collector, if one is configured; a failure is logged, never thrown. */
  async flush(fetchImpl: typeof fetch = fetch): Promise<void> {
    if (!this.settings.url || this.lines.length === 0) return;
    const batch = this.lines.splice(0);
    try {
      const response = await fetchImpl(this.settings.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(this.settings.token ? { Authorization: `Bearer ${this.settings.token}` } : {}) },
        body: JSON.stringify(batch),
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok)
        this.write(JSON.stringify({ tabrelay_audit_sink: `the collector answered HTTP ${response.status}; ${batch.length} records are in this log only` }));
    } catch (error) {
      this.write(
        JSON.stringify({
          tabrelay_audit_sink: this.redact(
            `the collector could not be reached (${error instanceof Error ? error.message : String(error)}); ${batch.length} records are in this log only`,
          ),
        }),
      );
    }
  }

  #emit(line: AuditLine): void {
    // Page text can reach a record (a target's label, an origin): it is redacted like every other exit.
    const clean: AuditLine = { ...line };
    for (const key of ["browser", "origin", "target", "client", "rule", "code", "detail"] as const) {
      const value = clean[key];
      if (value !== undefined) clean[key] = this.redact(value);
    }
    this.lines.push(clean);
    this.write(JSON.stringify({ tabrelay_audit: clean }));
  }
}

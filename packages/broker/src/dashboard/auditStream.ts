// The dashboard's live activity: the audit records as Server-Sent Events, the backlog first, then new records as
// they are written, each batch redacted. A stream belongs to a session and ends with it. A cluster on PostgreSQL
// streams the shared copy of every broker's records (audit/shipper.ts) instead of this broker's own log: its ids are
// the store's, so a stream that reconnects through the load balancer to another broker resumes where it was.
// An admin's stream carries, with each refused call, the grant that would have allowed it (policyApi.ts), which the
// page offers to write.
import type { AuditLog } from "../audit/auditLog.js";
import type { BrokerConfig } from "../config/config.js";
import type { Logger } from "../util/log.js";
import type { SecretRegistry } from "../util/secrets.js";
import { SECURITY_HEADERS } from "./http.js";
import { withSuggestion } from "./policyApi.js";
import type { DashboardSessions, Session, Stream } from "./sessions.js";

const AUDIT_POLL_MS = 500;
const AUDIT_BACKLOG = 200;
const AUDIT_BATCH = 500;
const HEARTBEAT_MS = 15_000;
const MAX_STREAMS_PER_SESSION = 8;

/** Where the records come from: this broker's log, or the cluster's shared copy. */
export type AuditSource = (options: { afterId?: number; limit: number; user?: string }) => Promise<ReadonlyArray<{ id: number }>>;

export interface AuditStreamDeps {
  audit: AuditLog;
  /** The cluster's shared records, when the broker is a member on PostgreSQL. */
  sharedAudit?: AuditSource;
  sessions: DashboardSessions;
  secrets: SecretRegistry;
  log: Logger;
  /** The running config: the policy a suggestion is weighed against. */
  config: BrokerConfig;
}

/** Server-Sent Events: the audit records after `after` (or Last-Event-ID), then new ones as they are written. */
export function auditStream(deps: AuditStreamDeps, req: Request, query: URLSearchParams, session: Session, user?: string): Response {
  const resumeFrom = Number(req.headers.get("last-event-id") ?? query.get("after") ?? Number.NaN);
  let afterId = Number.isSafeInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : undefined;
  const encoder = new TextEncoder();
  let closed = false;
  let poll: ReturnType<typeof setInterval> | undefined;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  const stop = (): void => {
    closed = true;
    clearInterval(poll);
    clearInterval(heartbeat);
    session.streams.delete(stream);
  };
  const write = (chunk: string): void => {
    if (!closed) controller?.enqueue(encoder.encode(chunk));
  };
  const stream: Stream = {
    end: (reason) => {
      if (closed) return;
      write(`event: ${reason}\ndata: {}\n\n`);
      stop();
      controller?.close();
    },
  };
  const source: AuditSource = deps.sharedAudit ?? (async (options) => deps.audit.list(options));
  let pumping = false;
  const pump = async (): Promise<void> => {
    if (closed || pumping) return;
    if (!deps.sessions.live(session)) {
      void deps.sessions.end(session);
      stream.end("expired");
      return;
    }
    pumping = true;
    let records: ReadonlyArray<{ id: number }>;
    try {
      // `user`: a member's stream holds their own records only.
      const mine = user === undefined ? {} : { user };
      records = await (afterId === undefined ? source({ limit: AUDIT_BACKLOG, ...mine }) : source({ afterId, limit: AUDIT_BATCH, ...mine }));
    } catch (error) {
      deps.log.warn(`dashboard: audit stream: ${error instanceof Error ? error.message : String(error)}`);
      stream.end("unavailable");
      return;
    } finally {
      pumping = false;
    }
    if (closed) return;
    const last = records[records.length - 1];
    if (last) afterId = last.id;
    else afterId ??= 0;
    // Only an admin may change the policy: a member's records carry no offer.
    const shown = session.principal.role === "admin" ? records.map((r) => withSuggestion(deps.config, r)) : records;
    if (records.length > 0) write(`event: audit\nid: ${afterId}\ndata: ${JSON.stringify(deps.secrets.redactValue(shown))}\n\n`);
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
      write("retry: 2000\n\n");
      if (session.streams.size >= MAX_STREAMS_PER_SESSION) {
        const oldest = session.streams.values().next().value;
        if (oldest) {
          session.streams.delete(oldest);
          oldest.end("replaced");
        }
      }
      session.streams.add(stream);
      void pump().then(() => {
        write("event: ready\ndata: {}\n\n");
        if (closed) return;
        poll = setInterval(() => void pump(), AUDIT_POLL_MS).unref();
        heartbeat = setInterval(() => write(": keep-alive\n\n"), HEARTBEAT_MS).unref();
      });
    },
    // The client went away.
    cancel: stop,
  });
  return new Response(body, {
    status: 200,
    headers: { ...SECURITY_HEADERS, "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" },
  });
}

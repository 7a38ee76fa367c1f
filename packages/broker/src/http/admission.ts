// What the door checks (door.ts) answer and how a refusal is said over HTTP: shared by the routes (app.ts) and the
// doors that answer for themselves (POST /browsers).
import type { Principal } from "../users/principal.js";

/** A door check's refusal: 403 (Host, Origin, a token's user or scope) or 401 (bearer token). */
export interface Refusal {
  status: 401 | 403;
  message: string;
  /**
   * The WWW-Authenticate value (OAuth: where the protected-resource metadata is, and the token's error). A 401 without
   * one challenges `Bearer realm="tabrelay"`; a 403 carries one only for insufficient_scope (RFC 6750 section 3.1).
   */
  challenge?: string;
}

/** Who passed the door checks, or why not. */
export type Admission = { ok: true; principal: Principal } | { ok: false; refusal: Refusal };

/** RFC 9728 protected-resource metadata: served at `paths` to whoever passes `admit`. */
export interface ResourceMetadata {
  paths: string[];
  admit(headers: Headers): Refusal | undefined;
  document(): unknown;
}

/** The WWW-Authenticate header a refusal carries, if any (also for the JSON refusals of POST /browsers). */
export function challengeHeader(refusal: Refusal): Record<string, string> {
  if (refusal.challenge !== undefined) return { "WWW-Authenticate": refusal.challenge };
  return refusal.status === 401 ? { "WWW-Authenticate": 'Bearer realm="tabrelay"' } : {};
}

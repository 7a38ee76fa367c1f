// What /health answers: unauthenticated, so it names the implicit user's browsers (as a single-user broker always
// did) and only counts a team's users' browsers, whose ids are for their own agents to see; the audit log's state
// (writes are refused while it cannot be written); the version. Redacted like every exit.
import type { AuditLog } from "../audit/auditLog.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { DEFAULT_USER_ID } from "../users/principal.js";
import type { SecretRegistry } from "../util/secrets.js";
import { VERSION } from "../version.js";

export function healthOf(registry: BrowserRegistry, audit: AuditLog, secrets: SecretRegistry): unknown {
  const others = registry.list().length - registry.list(DEFAULT_USER_ID).length;
  const browsers = registry.list(DEFAULT_USER_ID).map((b) => ({
    id: b.info.browserId,
    label: b.info.label,
    kind: b.info.kind,
    ...(b.info.product ? { product: b.info.product } : {}),
    extensionVersion: b.info.extensionVersion,
    connectedAt: new Date(b.info.connectedAt).toISOString(),
  }));
  const health = audit.health();
  const auditState = health.ok
    ? { ok: true, failures: health.failures }
    : {
        ok: false,
        failures: health.failures,
        error: health.error,
        since: new Date(health.since ?? Date.now()).toISOString(),
        writes: "refused until the audit log can be written again",
      };
  return secrets.redactValue({
    status: health.ok ? "ok" : "degraded",
    name: "tabrelay",
    version: VERSION,
    browsers,
    ...(others > 0 ? { usersBrowsers: others } : {}),
    audit: auditState,
  });
}

// What the Node broker does once config.yaml changed (config/reload.ts applied it, or refused it): the change said in
// the log and the audit log ("the file changed": who changed it cannot be known from the file), and a new read policy
// sent to every extension browser, whose network rules hold its agent tabs (a CDP browser asks the policy at each
// request). A browser that does not take the new rules is closed, so that it reconnects and gets them in its welcome.
import type { AuditLog } from "./audit/auditLog.js";
import type { BrokerConfig } from "./config/config.js";
import type { ReloadOutcome } from "./config/reload.js";
import { configFor } from "./config/userPolicies.js";
import type { BrowserRegistry } from "./drivers/registry.js";
import type { Logger } from "./util/log.js";

export function announceReload(outcome: ReloadOutcome, broker: { config: BrokerConfig; registry: BrowserRegistry; audit: AuditLog; log: Logger }): void {
  const { config, registry, audit, log } = broker;
  const path = config.configPath;
  if (!outcome.ok) {
    log.warn(`config: the change to ${path} was not applied; the running config stays: ${outcome.error}`);
    audit.record({
      time: Date.now(),
      tool: "config",
      client: "the file changed",
      target: path,
      decision: "refused",
      code: "config_invalid",
      durationMs: 0,
      detail: JSON.stringify({ error: outcome.error }),
    });
    return;
  }
  const applied = outcome.changed.length > 0 ? `applied ${outcome.changed.join(", ")}` : "nothing that applies before a restart";
  const waiting = outcome.restart.length > 0 ? `; ${outcome.restart.join(", ")} apply when tabrelay starts again` : "";
  log.info(`config: ${path} changed: ${applied}${waiting}`);
  audit.record({
    time: Date.now(),
    tool: "config",
    client: "the file changed",
    target: path,
    decision: "allowed",
    durationMs: 0,
    detail: JSON.stringify({ applied: outcome.changed, restart: outcome.restart }),
  });
  if (!outcome.changed.includes("policy") && !outcome.changed.includes("users")) return;
  for (const browser of registry.list()) {
    if (browser.info.kind !== "extension") continue;
    const rules = configFor(config, browser.info.ownerName).policy.navigationRules();
    void browser.call("browser.rules", { navigationRules: rules }).then((result) => {
      if (result.ok) return;
      log.warn(
        `config: browser ${browser.info.browserId} did not take the new read policy (${result.error.code}: ${result.error.message}); it is closed so that it reconnects with it`,
      );
      browser.close("the read policy changed and the browser did not take it");
    });
  }
}

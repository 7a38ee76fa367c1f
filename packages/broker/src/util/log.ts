import type { Redactor } from "./secrets.js";

/** Logs go to stderr only on Node (util/stderrLog.ts): stdout belongs to MCP in `tabrelay stdio`. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A logger that passes every line through the secrets registry first; the broker wraps whatever logger it is given. */
export function redactingLogger(log: Logger, secrets: Redactor): Logger {
  return {
    info: (m) => log.info(secrets.redact(m)),
    warn: (m) => log.warn(secrets.redact(m)),
    error: (m) => log.error(secrets.redact(m)),
  };
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

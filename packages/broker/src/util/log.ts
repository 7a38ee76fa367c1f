import type { Redactor } from "./secrets.js";

/** Logs go to stderr only: stdout belongs to MCP in `tabrelay stdio`. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(options: { quiet?: boolean; secrets?: Redactor } = {}): Logger {
  const write = (level: string, message: string) => {
    // CR/LF in a message must not forge a second log line.
    process.stderr.write(`${new Date().toISOString()} ${level} ${message.replace(/\r/g, "\\r").replace(/\n/g, "\\n")}\n`);
  };
  const logger: Logger = {
    info: (m) => options.quiet || write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
  };
  return options.secrets ? redactingLogger(logger, options.secrets) : logger;
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

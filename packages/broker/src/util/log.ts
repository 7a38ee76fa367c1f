/** Logs go to stderr only: stdout belongs to MCP in `tabrelay stdio`. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(options: { quiet?: boolean } = {}): Logger {
  const write = (level: string, message: string) => {
    // CR/LF in a message must not forge a second log line.
    process.stderr.write(`${new Date().toISOString()} ${level} ${message.replace(/\r/g, "\\r").replace(/\n/g, "\\n")}\n`);
  };
  return {
    info: (m) => options.quiet || write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
  };
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };

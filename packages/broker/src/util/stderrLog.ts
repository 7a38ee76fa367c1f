// The Node broker's logger: lines on stderr (stdout belongs to MCP in `tabrelay stdio`). Kept out of util/log.ts,
// which the runtime-neutral core imports: process.stderr is Node's.
import { redactingLogger, type Logger } from "./log.js";
import type { Redactor } from "./secrets.js";

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

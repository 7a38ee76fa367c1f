// `tabrelay stdio`: MCP on stdin/stdout, or forwarded to the broker that already holds the port.
import { Broker, createLogger, forwardStdio, serveStdio, tools } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, EnvironmentError, configFrom, isAddressInUse, onShutdown, parse, printHelp } from "./shared.js";

export const STDIO_HELP = `Usage: tabrelay stdio [--host 127.0.0.1] [--port 9333] [--config FILE] [--data-dir DIR]

Speaks MCP on stdin/stdout and accepts browsers on the bridge port. When a tabrelay broker already
runs on that port, forwards to it instead (several agents, one browser). Logs go to stderr.`;

export async function cmdStdio(args: string[]): Promise<number | undefined> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return printHelp(STDIO_HELP);
  const config = configFrom(values);
  const log = createLogger({ quiet: true });
  const broker = new Broker({ config, log });
  try {
    await broker.listen();
  } catch (error) {
    if (!isAddressInUse(error)) throw error;
    const base = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`;
    if (!(await isTabrelay(base))) {
      throw new EnvironmentError(`port ${config.port} is taken by something that is not tabrelay; pass --port to choose another`);
    }
    process.stderr.write(`tabrelay: a broker already runs at ${base}; forwarding this session to it\n`);
    const { closed } = await forwardStdio(`${base}/mcp`, config.mcpToken);
    await closed;
    return EXIT.ok;
  }
  const { closed } = await serveStdio(broker.context, tools);
  onShutdown(() => broker.close());
  await closed;
  await broker.close();
  return EXIT.ok;
}

async function isTabrelay(base: string): Promise<boolean> {
  try {
    const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
    const body: unknown = await response.json();
    return !!body && typeof body === "object" && Reflect.get(body, "name") === "tabrelay";
  } catch {
    return false;
  }
}

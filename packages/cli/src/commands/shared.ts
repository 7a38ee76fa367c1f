// What every command shares: exit codes, the error classes the dispatcher maps to them, option parsing, the
// broker's config from the common options, and the lines printed when a broker is up.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { join } from "node:path";
import { Broker, VERSION, createLogger, defaultDataDir, loadConfig, type BrokerConfig, type NodeBrokerConfig } from "@tabrelay/broker";
import { quote } from "../doctorChecks.js";

/** Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 bad configuration, 4 environment (port taken, no browser). */
export const EXIT = { ok: 0, failure: 1, usage: 2, config: 3, environment: 4 } as const;

export class UsageError extends Error {}
export class EnvironmentError extends Error {}

export const COMMON_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  config: { type: "string" },
  "data-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const satisfies ParseArgsConfig["options"];

export const LAUNCH_OPTIONS = {
  headless: { type: "boolean" },
  cdp: { type: "boolean" },
  vnc: { type: "boolean" },
  profile: { type: "string" },
  broker: { type: "string" },
  chromium: { type: "string" },
  firefox: { type: "boolean" },
  "firefox-path": { type: "string" },
  "unsafe-plain-ws": { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

export function parse<O extends ParseArgsConfig["options"]>(
  args: string[],
  options: O,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function printHelp(text: string): number {
  process.stdout.write(`${text}\n`);
  return EXIT.ok;
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a number from 0 to 65535, not ${JSON.stringify(value)}`);
  return port;
}

/** The broker's config from the common options; `create: false` for commands that only look (nothing is written). */
export function configFrom(
  values: { host?: string; port?: string; config?: string; "data-dir"?: string },
  options: { create?: boolean } = {},
): NodeBrokerConfig {
  const config = loadConfig({
    ...(options.create === false ? { create: false } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values.port !== undefined ? { port: portOf(values.port) } : {}),
    ...(values.config ? { configPath: values.config } : {}),
    ...(values["data-dir"] ? { dataDir: values["data-dir"] } : {}),
  });
  // `localhost` (--host or config.yaml) is 127.0.0.1 for every mode: the broker binds it and its clients and the
  // extension dial it. The name also resolves to ::1, where another program could hold the same port.
  return config.host.toLowerCase() === "localhost" ? { ...config, host: "127.0.0.1" } : config;
}

/** host:port as a client on this machine dials the broker (a wildcard address is dialled on loopback). */
function dialAddress(config: BrokerConfig, port: number): string {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host;
  return `${host}:${port}`;
}

export function bridgeUrlOf(config: BrokerConfig, port = config.port): string {
  return `ws://${dialAddress(config, port)}/bridge`;
}

export function dashboardUrlOf(config: BrokerConfig, port = config.port): string {
  return `http://${dialAddress(config, port)}/`;
}

/**
 * Where the person finds the dashboard's token: the command that prints it (for this data dir), and the file. The
 * token itself is not printed: this output ends up in service logs and in the hands of agents that start tabrelay.
 */
export function dashboardTokenHint(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env["TABRELAY_DASHBOARD_TOKEN"]) return "log in with the dashboard token in TABRELAY_DASHBOARD_TOKEN";
  const command = `tabrelay dashboard-token${dataDir === defaultDataDir(env) ? "" : ` --data-dir ${quote(dataDir)}`}`;
  return `log in with the dashboard token: \`${command}\` prints it (the file ${join(dataDir, "dashboard-token")})`;
}

export function printClientConfig(url: string, config: BrokerConfig): void {
  const block = { mcpServers: { tabrelay: { type: "http", url: `${url}/mcp`, headers: { Authorization: `Bearer ${config.mcpToken}` } } } };
  process.stderr.write(
    [
      "",
      `tabrelay ${VERSION} is listening on ${url}`,
      `  MCP endpoint:   ${url}/mcp`,
      `  Browser bridge: ${bridgeUrlOf(config, Number(new URL(url).port))}`,
      `  Data dir:       ${config.dataDir}`,
      `  Dashboard:      ${url}/  (${dashboardTokenHint(config.dataDir)})`,
      "",
      'Add this to your MCP client (Claude Code: .mcp.json; Cursor: ~/.cursor/mcp.json; VS Code: use "servers" in .vscode/mcp.json):',
      JSON.stringify(block, null, 2),
      "",
    ].join("\n"),
  );
}

export async function startBroker(config: NodeBrokerConfig): Promise<{ broker: Broker; url: string }> {
  const log = createLogger();
  const broker = new Broker({ config, log });
  try {
    await mountChat(broker);
    const { url } = await broker.listen();
    return { broker, url };
  } catch (error) {
    if (isAddressInUse(error)) {
      throw new EnvironmentError(
        `port ${config.port} on ${config.host} is already in use. Is another tabrelay running? (try: curl http://${config.host}:${config.port}/health) Use --port to pick another.`,
      );
    }
    throw error;
  }
}

/**
 * The dashboard's chat panel, when the environment names a model (ANTHROPIC_API_KEY, or TABRELAY_CHAT_BASE_URL): the
 * chat package (the AI SDK and its providers) is loaded only then, so a broker without a key holds none of that code.
 * It lives in @tabrelay/chat, not the broker, because it depends on agent-tools, which depends on the broker.
 */
async function mountChat(broker: Broker): Promise<void> {
  const env = process.env;
  if (!broker.config.chat.enabled || !(env["ANTHROPIC_API_KEY"]?.trim() || env["TABRELAY_CHAT_BASE_URL"]?.trim())) return;
  const { mountDashboardChat } = await import("@tabrelay/chat");
  mountDashboardChat(broker, env);
}

export function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "EADDRINUSE";
}

export function onShutdown(fn: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) process.exit(EXIT.failure);
    stopping = true;
    void fn().then(() => process.exit(EXIT.ok));
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import {
  Broker,
  ConfigError,
  LaunchError,
  VERSION,
  builtExtensionDir,
  createLogger,
  defaultDataDir,
  findChromium,
  forwardStdio,
  isLoopback,
  launchChromium,
  launchLocalChromium,
  loadConfig,
  parseRankingCsv,
  prepareExtension,
  rankingFile,
  serveStdio,
  startVncDisplay,
  tools,
  type BrokerConfig,
} from "@tabrelay/broker";
import { AUDIT_HELP, cmdAudit } from "./audit.js";
import { startWithProvider } from "./providers.js";
import { brokerBaseUrl, handOver, HandoverRefused } from "./handover.js";
import { parseBrokerUrl, plainRemoteRefusal, type BrokerAddress } from "./brokerUrl.js";
import { launchWithVnc, vncWindowArgs } from "./vnc.js";

/** Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 bad configuration, 4 environment (port taken, no browser). */
const EXIT = { ok: 0, failure: 1, usage: 2, config: 3, environment: 4 } as const;

class UsageError extends Error {}

const COMMON_OPTIONS = {
  host: { type: "string" },
  port: { type: "string" },
  config: { type: "string" },
  "data-dir": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const satisfies ParseArgsConfig["options"];

const LAUNCH_OPTIONS = {
  headless: { type: "boolean" },
  cdp: { type: "boolean" },
  vnc: { type: "boolean" },
  profile: { type: "string" },
  broker: { type: "string" },
  chromium: { type: "string" },
  "unsafe-plain-ws": { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

const HELP: Record<string, string> = {
  main: `tabrelay ${VERSION}: let an AI agent use your real browser, safely.

Usage: tabrelay <command> [options]

Commands:
  start [--headless] [--cdp]
                          broker + a local Chromium carrying the extension (the embedded default);
                          --cdp drives it over the DevTools protocol instead (servers, CI)
  serve [--cdp-url URL | --provider browserbase|kernel]
                          the broker: MCP at /mcp, browsers at /bridge, /health; --cdp-url (or
                          TABRELAY_CDP_URL) attaches a running browser over CDP, --provider a hosted one
  stdio                   MCP over stdio for agents that spawn tabrelay (forwards to a running broker)
  launch [--cdp]          start Chromium with the extension, paired with the broker; --cdp hands it
                          to the running broker over the DevTools protocol instead
  pair                    how to pair a Chrome you run yourself
  policy update-sites --url URL
                          replace the top-sites ranking from a Tranco-style CSV
  audit [--tail] [--limit N] [--json]
                          print the audit log: every tool call, allowed or refused

Run \`tabrelay <command> --help\` for a command's options.`,
  serve: `Usage: tabrelay serve [--host 127.0.0.1] [--port 9333] [--config FILE] [--data-dir DIR] [--cdp-url URL]

Runs the broker. Prints the MCP config block to paste into your agent (on stderr).
--cdp-url attaches a browser that is already running with remote debugging (ws:// endpoint or
http://host:port); it is left running when tabrelay stops. The URL is a credential: it is never logged.
--provider browserbase|kernel creates a hosted browser session (BROWSERBASE_API_KEY [+ BROWSERBASE_PROJECT_ID],
or KERNEL_API_KEY) and releases it when tabrelay stops.
Environment: TABRELAY_MCP_TOKEN, TABRELAY_PAIRING_TOKEN, TABRELAY_DATA_DIR, TABRELAY_CDP_URL.`,
  stdio: `Usage: tabrelay stdio [--host 127.0.0.1] [--port 9333] [--config FILE] [--data-dir DIR]

Speaks MCP on stdin/stdout and accepts browsers on the bridge port. When a tabrelay broker already
runs on that port, forwards to it instead (several agents, one browser). Logs go to stderr.`,
  launch: `Usage: tabrelay launch [--headless | --vnc] [--cdp] [--profile DIR] [--broker URL] [--chromium PATH] [-- EXTRA_CHROMIUM_ARGS]

Starts Chromium/Chrome with the tabrelay extension loaded and paired with the broker, on a persistent
profile (default <data-dir>/profile). --broker is where the broker is, in any mode: http(s)://HOST:PORT or
ws(s)://HOST:PORT/bridge. A broker off this machine is reached only over TLS (https/wss) unless
--unsafe-plain-ws is given. Finds the browser via --chromium, CHROME_PATH, or the usual
install paths. Arguments after -- go to the browser unchanged. Ctrl-C closes the browser.
--cdp: no extension; the broker (\`tabrelay serve\`, default http://<host>:<port> from the config, or --broker URL)
drives the browser over the DevTools protocol. The profile is temporary unless --profile is given (Chrome 136+
refuses remote debugging of its default profile). Uses the MCP token of the same --data-dir or
TABRELAY_MCP_TOKEN; waits for the broker if it is not up yet and hands the browser over again after a restart.
--vnc: headful on a virtual display (Xvfb), viewable through a noVNC link on loopback with a password,
so a person can log in once on a server (needs: apt-get install xvfb x11vnc novnc websockify).`,
  start: `Usage: tabrelay start [--headless | --vnc] [--cdp] [--host H] [--port P] [--config FILE] [--data-dir DIR] [--profile DIR] [--chromium PATH] [-- EXTRA_CHROMIUM_ARGS]

Runs the broker and a local Chromium carrying the extension, already paired. Ctrl-C stops both.
--cdp drives the local Chromium over the DevTools protocol instead of the extension (no extension
needed; for servers and CI). Its profile is temporary unless --profile is given (Chrome 136+ refuses
remote debugging of the default profile).`,
  pair: `Usage: tabrelay pair [--host H] [--port P] [--data-dir DIR]

Prints how to load the extension into a Chrome you run yourself and the code to pair it.`,
  audit: AUDIT_HELP,
  policy: `Usage: tabrelay policy update-sites --url URL [--data-dir DIR]

Downloads a Tranco-style CSV ("rank,domain" per line) and makes it the top-sites ranking used by the read
policy (saved as <data-dir>/top-sites.csv). policy.read.top_sites says how many of its domains are readable.`,
};

function parse<O extends ParseArgsConfig["options"]>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a number from 0 to 65535, not ${JSON.stringify(value)}`);
  return port;
}

function configFrom(values: { host?: string; port?: string; config?: string; "data-dir"?: string }): BrokerConfig {
  return loadConfig({
    ...(values.host ? { host: values.host } : {}),
    ...(values.port !== undefined ? { port: portOf(values.port) } : {}),
    ...(values.config ? { configPath: values.config } : {}),
    ...(values["data-dir"] ? { dataDir: values["data-dir"] } : {}),
  });
}

function bridgeUrlOf(config: BrokerConfig, port = config.port): string {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host;
  return `ws://${host}:${port}/bridge`;
}

function printClientConfig(url: string, config: BrokerConfig): void {
  const block = { mcpServers: { tabrelay: { type: "http", url: `${url}/mcp`, headers: { Authorization: `Bearer ${config.mcpToken}` } } } };
  process.stderr.write(
    [
      "",
      `tabrelay ${VERSION} is listening on ${url}`,
      `  MCP endpoint:   ${url}/mcp`,
      `  Browser bridge: ${bridgeUrlOf(config, Number(new URL(url).port))}`,
      `  Data dir:       ${config.dataDir}`,
      "",
      "Add this to your MCP client (Claude Code: .mcp.json; Cursor: ~/.cursor/mcp.json; VS Code: use \"servers\" in .vscode/mcp.json):",
      JSON.stringify(block, null, 2),
      "",
    ].join("\n"),
  );
}

async function startBroker(config: BrokerConfig): Promise<{ broker: Broker; url: string }> {
  const log = createLogger();
  const broker = new Broker({ config, log });
  try {
    const { url } = await broker.listen();
    return { broker, url };
  } catch (error) {
    if (isAddressInUse(error)) {
      throw new EnvironmentError(`port ${config.port} on ${config.host} is already in use. Is another tabrelay running? (try: curl http://${config.host}:${config.port}/health) Use --port to pick another.`);
    }
    throw error;
  }
}

class EnvironmentError extends Error {}

function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "EADDRINUSE";
}

function onShutdown(fn: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) process.exit(EXIT.failure);
    stopping = true;
    void fn().then(() => process.exit(EXIT.ok));
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}

async function cmdServe(args: string[]): Promise<number | undefined> {
  const { values } = parse(args, { ...COMMON_OPTIONS, "cdp-url": { type: "string" }, provider: { type: "string" } });
  if (values.help) return help("serve");
  if (values.provider !== undefined && values["cdp-url"] !== undefined) throw new UsageError("give --cdp-url or --provider, not both");
  if (values.provider !== undefined && values.provider !== "browserbase" && values.provider !== "kernel") {
    throw new UsageError(`--provider must be browserbase or kernel, not ${JSON.stringify(values.provider)}`);
  }
  const config = configFrom(values);
  if (!isLoopback(config.host)) {
    process.stderr.write(
      [
        "",
        `tabrelay: WARNING: serving on ${config.host}, beyond this machine, over PLAIN HTTP.`,
        "  The MCP token, the pairing token and every page the agent reads cross the network in clear:",
        "  anyone on the path can read them and take over the browser.",
        "  Put TLS in front: keep tabrelay on 127.0.0.1 and let a reverse proxy terminate TLS and forward to it,",
        `  WebSocket upgrades included (e.g. caddy reverse-proxy --from HOST --to 127.0.0.1:${config.port}, or nginx);`,
        "  agents then use https://HOST/mcp and browsers wss://HOST/bridge.",
        "",
      ].join("\n"),
    );
  }
  const { broker, url } = await startBroker(config);
  let hosted: { stop(): Promise<void> } | undefined;
  if (values.provider === "browserbase" || values.provider === "kernel") {
    try {
      hosted = await startWithProvider(values.provider, broker, process.env);
    } catch (error) {
      await broker.close();
      const kind = error && typeof error === "object" ? Reflect.get(error, "kind") : undefined;
      const message = error instanceof Error ? error.message : String(error);
      if (kind === "config") throw new ConfigError(message);
      throw new EnvironmentError(message);
    }
  }
  const cdpUrl = values["cdp-url"] ?? process.env["TABRELAY_CDP_URL"];
  if (cdpUrl) {
    try {
      await broker.attachCdp(cdpUrl, { label: "attached browser (CDP)", ownsBrowser: false });
    } catch (error) {
      await broker.close();
      throw new EnvironmentError(`could not attach the browser given by ${values["cdp-url"] ? "--cdp-url" : "TABRELAY_CDP_URL"}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  printClientConfig(url, config);
  onShutdown(async () => {
    await hosted?.stop();
    await broker.close();
  });
  return undefined; // keep running
}

async function cmdStdio(args: string[]): Promise<number | undefined> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return help("stdio");
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

async function runBrowser(
  config: BrokerConfig,
  values: { headless?: boolean; profile?: string; broker?: string; chromium?: string; "unsafe-plain-ws"?: boolean },
  extra: string[],
  bridgeUrl: string,
  env?: NodeJS.ProcessEnv,
) {
  const bridge = extensionBridgeUrl(values, bridgeUrl);
  const chromiumPath = findChromium(process.env, values.chromium);
  const profileDir = values.profile ?? join(config.dataDir, "profile");
  const extensionDir = prepareExtension(profileDir, bridge, config.pairingToken, "tabrelay launch", process.env, { unsafePlainWs: values["unsafe-plain-ws"] === true });
  process.stderr.write(`tabrelay: starting ${chromiumPath}${values.headless ? " (headless)" : ""} with profile ${profileDir}\n`);
  return launchChromium({ chromiumPath, profileDir, extensionDir, headless: values.headless ?? false, extraArgs: extra, ...(env ? { env } : {}) });
}

/** The bridge URL the launched extension dials: --broker in any of its forms, over TLS unless on this machine. */
function extensionBridgeUrl(values: { broker?: string; "unsafe-plain-ws"?: boolean }, fallback: string): string {
  if (values.broker === undefined) return fallback;
  let address: BrokerAddress;
  try {
    address = parseBrokerUrl(values.broker);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const refusal = plainRemoteRefusal(address, values["unsafe-plain-ws"]);
  if (refusal) throw new UsageError(refusal);
  return address.bridge;
}

/**
 * launch --cdp: Chromium with remote debugging on a temporary profile (or --profile), handed to the broker at
 * --broker (default: this config's host and port). A refusal that retrying cannot fix closes the browser.
 */
async function runCdpBrowser(
  config: BrokerConfig,
  values: { headless?: boolean; profile?: string; broker?: string; chromium?: string },
  extra: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ exited: Promise<number | null>; kill(): Promise<void> }> {
  let brokerUrl: string;
  try {
    brokerUrl = brokerBaseUrl(values.broker ?? bridgeUrlOf(config));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const chromiumPath = findChromium(process.env, values.chromium);
  process.stderr.write(`tabrelay: starting ${chromiumPath}${values.headless ? " (headless)" : ""} over CDP with ${values.profile ? `profile ${values.profile}` : "a temporary profile"}\n`);
  const local = await launchLocalChromium({ chromiumPath, headless: values.headless ?? false, extraArgs: extra, ...(env ? { env } : {}), ...(values.profile ? { profileDir: values.profile } : {}) });
  const browserExit = new Promise<number | null>((resolveExit) => local.process.once("exit", (code) => resolveExit(code)));
  const handover = handOver({ brokerUrl, token: config.mcpToken, endpoint: local.endpoint, label: "launched Chromium (CDP)", log: (line) => process.stderr.write(`tabrelay: ${line}\n`) });
  const kill = async () => {
    handover.stop();
    await local.close(); // also removes a temporary profile
  };
  let refusal: unknown;
  const refused = handover.registered.then(
    () => new Promise<never>(() => undefined),
    async (error: unknown) => {
      refusal = error instanceof HandoverRefused ? new ConfigError(error.message) : error;
      await kill();
      throw refusal;
    },
  );
  // The browser exits when it is closed because of a refusal, too: that is the refusal's exit, not its own.
  const ownExit = browserExit.then((code) => {
    if (refusal !== undefined) throw refusal;
    return code;
  });
  const exited = Promise.race([ownExit, refused]).finally(() => handover.stop());
  return { exited, kill };
}

async function cmdLaunch(args: string[]): Promise<number | undefined> {
  const { own, extra } = splitExtra(args);
  const { values } = parse(own, { ...COMMON_OPTIONS, ...LAUNCH_OPTIONS });
  if (values.help) return help("launch");
  const config = configFrom(values);
  if (values.vnc) {
    if (values.headless) throw new UsageError("--vnc shows the browser on a virtual display: leave out --headless");
    return launchWithVnc({
      startDisplay: startVncDisplay,
      headfulCommand: (env, view) =>
        values.cdp ? runCdpBrowser(config, values, [...vncWindowArgs(view), ...extra], env) : runBrowser(config, values, [...vncWindowArgs(view), ...extra], bridgeUrlOf(config), env),
    });
  }
  if (values.cdp) {
    const browser = await runCdpBrowser(config, values, extra);
    onShutdown(() => browser.kill());
    const code = await browser.exited;
    reportBrowserExit(code, values.headless ?? false);
    await browser.kill();
    return code === 0 ? EXIT.ok : EXIT.failure;
  }
  const browser = await runBrowser(config, values, extra, bridgeUrlOf(config));
  onShutdown(() => browser.kill());
  const code = await browser.exited;
  reportBrowserExit(code, values.headless ?? false);
  return code === 0 ? EXIT.ok : EXIT.failure;
}

async function cmdStart(args: string[]): Promise<number | undefined> {
  const { own, extra } = splitExtra(args);
  const { values } = parse(own, { ...COMMON_OPTIONS, ...LAUNCH_OPTIONS });
  if (values.help) return help("start");
  const config = configFrom(values);
  if (values.vnc && values.headless) throw new UsageError("--vnc shows the browser on a virtual display: leave out --headless");
  const chromiumPath = findChromium(process.env, values.chromium); // fail before the broker starts
  const { broker, url } = await startBroker(config);
  if (values.vnc) {
    printClientConfig(url, config);
    const bridgeUrl = bridgeUrlOf(config, Number(new URL(url).port));
    // launchWithVnc handles the signals itself: no onShutdown here.
    return launchWithVnc({
      startDisplay: startVncDisplay,
      headfulCommand: async (env, view) => {
        const browserArgs = [...vncWindowArgs(view), ...extra];
        if (!values.cdp) return runBrowser(config, { ...values, chromium: chromiumPath }, browserArgs, bridgeUrl, env);
        const local = await launchLocalChromium({ chromiumPath, headless: false, env, extraArgs: browserArgs, ...(values.profile ? { profileDir: values.profile } : {}) });
        try {
          await broker.attachCdp(local.endpoint, { label: "local Chromium (CDP)", ownsBrowser: true });
        } catch (error) {
          await local.close();
          throw error;
        }
        const exited = new Promise<number | null>((resolveExit) => local.process.once("exit", (c) => resolveExit(c)));
        return { exited, kill: () => local.close() };
      },
      onStopped: () => broker.close(),
    });
  }
  if (values.cdp) {
    const local = await launchLocalChromium({ chromiumPath, headless: values.headless ?? false, extraArgs: extra, ...(values.profile ? { profileDir: values.profile } : {}) });
    try {
      await broker.attachCdp(local.endpoint, { label: "local Chromium (CDP)", ownsBrowser: true });
    } catch (error) {
      await local.close();
      await broker.close();
      throw error;
    }
    printClientConfig(url, config);
    onShutdown(async () => {
      await broker.close();
      await local.close();
    });
    const code = await new Promise<number | null>((resolveExit) => local.process.once("exit", (c) => resolveExit(c)));
    reportBrowserExit(code, values.headless ?? false);
    await broker.close();
    await local.close(); // removes a temporary profile before the process exits
    return code === 0 ? EXIT.ok : EXIT.failure;
  }
  printClientConfig(url, config);
  const browser = await runBrowser(config, { ...values, chromium: chromiumPath }, extra, bridgeUrlOf(config, Number(new URL(url).port)));
  onShutdown(async () => {
    await browser.kill();
    await broker.close();
  });
  const code = await browser.exited;
  reportBrowserExit(code, values.headless ?? false);
  process.stderr.write("tabrelay: stopping the broker\n");
  await broker.close();
  return code === 0 ? EXIT.ok : EXIT.failure;
}

async function cmdPair(args: string[]): Promise<number> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return help("pair");
  const config = configFrom(values);
  let extensionDir: string;
  try {
    extensionDir = builtExtensionDir();
  } catch (error) {
    extensionDir = `(not built: ${error instanceof Error ? error.message : String(error)})`;
  }
  process.stdout.write(
    [
      "Pair a Chrome you run yourself with this tabrelay broker:",
      "",
      "1. Open chrome://extensions, switch on Developer mode, click \"Load unpacked\" and choose:",
      `     ${extensionDir}`,
      "2. Click the tabrelay toolbar icon and enter:",
      `     Broker URL:   ${bridgeUrlOf(config)}`,
      `     Pairing code: ${config.pairingToken}`,
      "3. The badge turns ON when the browser is connected; `tabrelay serve` must be running.",
      "",
      isLoopback(config.host) ? "" : "The broker listens beyond loopback: only pair browsers you trust, over a network you trust.",
    ].join("\n"),
  );
  return EXIT.ok;
}

async function cmdPolicy(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON_OPTIONS, url: { type: "string" } });
  if (values.help || positionals[0] !== "update-sites") {
    if (values.help) return help("policy");
    throw new UsageError(`unknown policy command ${JSON.stringify(positionals[0] ?? "")}; try \`tabrelay policy update-sites --url URL\``);
  }
  if (!values.url) throw new UsageError("policy update-sites needs --url URL (a Tranco-style CSV: rank,domain per line)");
  const dataDir = values["data-dir"] ?? defaultDataDir();
  let text: string;
  try {
    const response = await fetch(values.url, { signal: AbortSignal.timeout(60_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    text = await response.text();
  } catch (error) {
    throw new EnvironmentError(`could not download ${values.url}: ${error instanceof Error ? error.message : String(error)}; the current ranking is unchanged`);
  }
  let domains: string[];
  try {
    domains = parseRankingCsv(text);
  } catch (error) {
    throw new ConfigError(`${values.url}: ${error instanceof Error ? error.message : String(error)}; the current ranking is unchanged`);
  }
  if (domains.length === 0) throw new ConfigError(`${values.url} holds no domains; the current ranking is unchanged`);
  loadConfig({ dataDir }); // creates the data dir and validates the current config first
  const target = rankingFile(dataDir);
  const temp = `${target}.tmp-${process.pid}`;
  writeFileSync(temp, ["rank,domain", ...domains.map((d, i) => `${i + 1},${d}`)].join("\n") + "\n", { mode: 0o600, flag: "wx" });
  renameSync(temp, target);
  process.stdout.write(`Saved ${domains.length} domains to ${target}. Restart the broker to use them.\n`);
  return EXIT.ok;
}

function reportBrowserExit(code: number | null, headless: boolean): void {
  process.stderr.write(`tabrelay: the browser exited (${String(code)})\n`);
  if (code !== 0 && !headless && process.platform === "linux" && !process.env["DISPLAY"] && !process.env["WAYLAND_DISPLAY"]) {
    process.stderr.write("tabrelay: there is no display here; run with --headless, or under xvfb-run\n");
  }
}

function splitExtra(args: string[]): { own: string[]; extra: string[] } {
  const at = args.indexOf("--");
  return at === -1 ? { own: args, extra: [] } : { own: args.slice(0, at), extra: args.slice(at + 1) };
}

function help(topic: string): number {
  process.stdout.write(`${HELP[topic] ?? HELP["main"]}\n`);
  return EXIT.ok;
}

async function main(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      return help(rest[0] ?? "main");
    case "--version":
    case "-v":
    case "version":
      process.stdout.write(`${VERSION}\n`);
      return EXIT.ok;
    case "serve":
      return cmdServe(rest);
    case "stdio":
      return cmdStdio(rest);
    case "launch":
      return cmdLaunch(rest);
    case "start":
      return cmdStart(rest);
    case "pair":
      return cmdPair(rest);
    case "policy":
      return cmdPolicy(rest);
    case "audit":
      return cmdAudit(rest);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; run \`tabrelay --help\``);
  }
}

const argv = process.argv.slice(2);
if (argv.includes("--version") && argv[0] !== undefined && argv[0] in HELP) {
  process.stdout.write(`${VERSION}\n`);
  process.exit(EXIT.ok);
}

main(argv).then(
  (code) => {
    if (code !== undefined) process.exit(code);
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`tabrelay: ${message}\n`);
    if (error instanceof UsageError) process.exit(EXIT.usage);
    if (error instanceof ConfigError) process.exit(EXIT.config);
    if (error instanceof EnvironmentError || error instanceof LaunchError) process.exit(EXIT.environment);
    process.exit(EXIT.failure);
  },
);

// The `tabrelay` command: dispatches to one module per command (commands/) and maps errors to exit codes.
import { ConfigError, LaunchError, VERSION } from "@tabrelay/broker";
import { AUDIT_HELP, cmdAudit } from "./audit.js";
import { ASK_HELP, cmdAsk } from "./commands/ask.js";
import { DASHBOARD_TOKEN_HELP, cmdDashboardToken } from "./commands/dashboardToken.js";
import { DOCTOR_HELP, cmdDoctor } from "./commands/doctor.js";
import { EXTENSION_HELP, cmdExtension } from "./commands/extension.js";
import { LAUNCH_HELP, cmdLaunch } from "./commands/launch.js";
import { MCP_CONFIG_HELP, cmdMcpConfig } from "./commands/mcpConfig.js";
import { PAGES_HELP, PAGE_TOKEN_HELP, cmdPages, cmdPageToken } from "./commands/pages.js";
import { PAIR_HELP, cmdPair } from "./commands/pair.js";
import { POLICY_HELP, cmdPolicy } from "./commands/policy.js";
import { SERVE_HELP, cmdServe } from "./commands/serve.js";
import { SERVICE_HELP, cmdService } from "./commands/service.js";
import { SETUP_HELP, cmdSetup } from "./commands/setup.js";
import { EXIT, EnvironmentError, UsageError, printHelp } from "./commands/shared.js";
import { START_HELP, cmdStart } from "./commands/start.js";
import { STDIO_HELP, cmdStdio } from "./commands/stdio.js";
import { USERS_HELP, cmdUsers } from "./commands/users.js";

const MAIN_HELP = `tabrelay ${VERSION}: let an AI agent use your real browser, safely.

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
  extension [--out DIR]   where the bundled Chrome extension is and how to load it (or a copy in DIR)
  policy allow-read HOST[/PATH] | grant click|type|upload|keys HOST --label RE | update-sites --url URL
                          change what agents may read and do (config.yaml, applied live), or the
                          top-sites ranking
  ask list | allow ID [--always] | deny ID
                          the questions the broker puts to you (policy.ask), answered from this machine
  audit [--tail] [--limit N] [--json]
                          print the audit log: every tool call, allowed or refused
  dashboard-token         the token the dashboard's login takes (not the MCP token: agents never get it)
  service install|uninstall|status [--port P] [--data-dir DIR] [--name NAME]
                          run \`tabrelay serve\` as a user service (systemd on Linux, launchd on macOS;
                          on Windows: prints the Task Scheduler command)
  doctor                  check Node, the browser, the extension, config, file permissions, the port and
                          the connected browsers; one line each, with the fix
  page-token --origin URL [--ttl S]
                          a short-lived token for a web page of that origin to offer its tools (/page)
  pages list | approve ORIGIN NAME
                          the page tools seen, and approving one whose description or schema changed
  users add|list|token|dashboard-token|pair|revoke NAME
                          a team's broker: users with their own tokens, pairing codes and browsers
  setup [--client NAME]... [--stdio] [--service]
                          add tabrelay to your MCP clients with your token (their other servers
                          kept, a backup beside each file); optionally install the service
  mcp-config [--client NAME] [--stdio]
                          the MCP config block for your client (claude-code, cursor, vscode,
                          claude-desktop, codex, windsurf), with your token

Run \`tabrelay <command> --help\` for a command's options.`;

const HELP: Record<string, string> = {
  main: MAIN_HELP,
  serve: SERVE_HELP,
  stdio: STDIO_HELP,
  launch: LAUNCH_HELP,
  start: START_HELP,
  pair: PAIR_HELP,
  extension: EXTENSION_HELP,
  audit: AUDIT_HELP,
  ask: ASK_HELP,
  "dashboard-token": DASHBOARD_TOKEN_HELP,
  policy: POLICY_HELP,
  "mcp-config": MCP_CONFIG_HELP,
  setup: SETUP_HELP,
  service: SERVICE_HELP,
  doctor: DOCTOR_HELP,
  "page-token": PAGE_TOKEN_HELP,
  pages: PAGES_HELP,
  users: USERS_HELP,
};

async function main(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      return printHelp(HELP[rest[0] ?? "main"] ?? MAIN_HELP);
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
    case "extension":
      return cmdExtension(rest);
    case "policy":
      return cmdPolicy(rest);
    case "audit":
      return cmdAudit(rest);
    case "ask":
      return cmdAsk(rest);
    case "dashboard-token":
      return cmdDashboardToken(rest);
    case "service":
      return cmdService(rest);
    case "doctor":
      return cmdDoctor(rest);
    case "mcp-config":
      return cmdMcpConfig(rest);
    case "setup":
      return cmdSetup(rest);
    case "page-token":
      return cmdPageToken(rest);
    case "pages":
      return cmdPages(rest);
    case "users":
      return cmdUsers(rest);
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

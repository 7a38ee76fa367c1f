// `tabrelay service install|uninstall|status`: `tabrelay serve` as a per-user service, pinned to this Node and this
// checkout: a systemd user unit on Linux, a launchd LaunchAgent on macOS, a printed Task Scheduler command on Windows.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { VERSION, defaultDataDir, type BrokerConfig } from "@tabrelay/broker";
import { nodeLaunch } from "../install.js";
import { isOurs, launchdPlist, logFile, schtasksCommands, serviceFile, systemdUnit, type ServicePlatform, type ServiceSpec } from "../serviceFiles.js";
import { mcpTarget } from "./mcpConfig.js";
import { EXIT, EnvironmentError, UsageError, configFrom, dashboardTokenHint, parse, printHelp } from "./shared.js";

export const SERVICE_HELP = `Usage: tabrelay service install|uninstall|status [--port P] [--data-dir DIR] [--name tabrelay]

Runs \`tabrelay serve\` as a service of your user, started at login and restarted when it fails, with this
Node (${process.execPath}) and this tabrelay checkout:
  Linux    a systemd user unit, ~/.config/systemd/user/NAME.service; logs: journalctl --user -u NAME
  macOS    a launchd LaunchAgent, ~/Library/LaunchAgents/NAME.plist; logs: ~/Library/Logs/NAME.log
  Windows  prints the Task Scheduler (schtasks) command to run; tabrelay does not register it itself
Where no service manager runs (a container), install writes the file and prints how to start it.
Re-running install after moving Node or tabrelay updates the file. uninstall stops the service and removes
only a file tabrelay wrote. status exits 0 when the service is installed and its broker answers.`;

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$/;

function platformOf(env: NodeJS.ProcessEnv): ServicePlatform {
  // TABRELAY_INTERNAL_PLATFORM: for tests, which write another platform's files into a temp HOME.
  const value = env["TABRELAY_INTERNAL_PLATFORM"] || process.platform;
  if (value === "linux" || value === "darwin" || value === "win32") return value;
  throw new EnvironmentError(
    `tabrelay service supports Linux (systemd), macOS (launchd) and Windows (Task Scheduler), not ${value}; run \`tabrelay serve\` under your own supervisor`,
  );
}

interface Manager {
  /** Why no manager can be used here; undefined when it runs. */
  unavailable: string | undefined;
  run(args: string[]): { ok: boolean; output: string };
}

function runTool(program: string, args: string[]): { ok: boolean; output: string; missing: boolean } {
  const result = spawnSync(program, args, { encoding: "utf8", timeout: 20_000 });
  if (result.error) {
    const missing = "code" in result.error && result.error.code === "ENOENT";
    return { ok: false, output: missing ? `${program} is not installed` : result.error.message, missing };
  }
  return { ok: result.status === 0, output: `${result.stdout ?? ""}${result.stderr ?? ""}`.trim(), missing: false };
}

function systemctl(): Manager {
  // daemon-reload is harmless and is what any change needs first: its failure is the sign there is no user bus.
  const probe = runTool("systemctl", ["--user", "daemon-reload"]);
  return {
    unavailable: probe.ok ? undefined : probe.output || "systemctl --user failed",
    run: (args) => runTool("systemctl", ["--user", ...args]),
  };
}

function launchctl(): Manager {
  const probe = runTool("launchctl", ["print", guiDomain()]);
  return {
    unavailable: probe.ok ? undefined : probe.missing ? "launchctl is not installed" : probe.output || "launchctl print failed",
    run: (args) => runTool("launchctl", args),
  };
}

function guiDomain(): string {
  return `gui/${typeof process.getuid === "function" ? process.getuid() : 501}`;
}

interface Context {
  platform: ServicePlatform;
  spec: ServiceSpec;
  config: BrokerConfig;
  values: { port?: string | undefined; "data-dir"?: string | undefined };
  /** Token variables set in this shell that the service will not see. */
  ignored: string[];
}

function contextFrom(values: { port?: string | undefined; "data-dir"?: string | undefined; name?: string | undefined }): Context {
  const env = process.env;
  const platform = platformOf(env);
  const name = values.name ?? "tabrelay";
  if (!NAME.test(name))
    throw new UsageError(`--name must be letters, digits, and . _ @ - (up to 100, starting with a letter or digit), not ${JSON.stringify(name)}`);
  const home = env["HOME"] || homedir();
  // Pinned as given now: the service manager's environment has no TABRELAY_DATA_DIR.
  const dataDir = resolve(values["data-dir"] ?? defaultDataDir(env));
  const serveArgs = ["serve", "--data-dir", dataDir, ...(values.port !== undefined ? ["--port", values.port] : [])];
  // The service starts without this shell's environment: its tokens are the data dir's files, so those are the
  // ones the printed block must hold.
  const ignored = ["TABRELAY_MCP_TOKEN", "TABRELAY_PAIRING_TOKEN", "TABRELAY_DASHBOARD_TOKEN"].filter((key) => env[key]);
  for (const key of ignored) delete env[key];
  const config = configFrom({ ...(values.port !== undefined ? { port: values.port } : {}), "data-dir": dataDir });
  return { platform, spec: { name, home, launch: nodeLaunch(), serveArgs }, config, values, ignored };
}

function out(lines: string[]): void {
  process.stdout.write(`${lines.join("\n")}\n`);
}

function contentFor(ctx: Context): string {
  return ctx.platform === "darwin" ? launchdPlist(ctx.spec) : systemdUnit(ctx.spec);
}

function startCommands(ctx: Context, path: string): string[] {
  const { name } = ctx.spec;
  return ctx.platform === "darwin"
    ? [`launchctl bootstrap ${guiDomain()} ${path}`]
    : [
        `systemctl --user daemon-reload`,
        `systemctl --user enable --now ${name}`,
        `loginctl enable-linger $USER   # optional: keep it running while you are logged out`,
      ];
}

function clientBlock(ctx: Context): string[] {
  const target = mcpTarget(ctx.config, ctx.values);
  const note = ctx.ignored.length
    ? [
        `${ctx.ignored.join(" and ")} ${ctx.ignored.length === 1 ? "is" : "are"} set in this shell, but the service does not inherit ${ctx.ignored.length === 1 ? "it" : "them"}: it uses the tokens in ${ctx.config.dataDir} (the block below holds its MCP token).`,
      ]
    : [];
  const block = { mcpServers: { tabrelay: { type: "http", url: target.url, headers: { Authorization: `Bearer ${target.token}` } } } };
  const dashboard = new URL("/", target.url).href;
  return [
    "",
    ...note,
    "Add this to your MCP client (or run `tabrelay mcp-config --client NAME` for yours):",
    JSON.stringify(block, null, 2),
    `Dashboard: ${dashboard} (${dashboardTokenHint(ctx.config.dataDir)})`,
  ];
}

async function install(ctx: Context): Promise<number> {
  if (ctx.platform === "win32") {
    const { create, query } = schtasksCommands(ctx.spec);
    out([
      "On Windows tabrelay does not register the task itself. Run this in a Command Prompt to start `tabrelay serve` at logon:",
      "",
      `  ${create}`,
      "",
      `Check it with: ${query}`,
      "Task Scheduler does not restart a failed task from this command; to have it restarted, open the task's Settings tab and tick",
      '"If the task fails, restart every". Logs: the task runs without a window; run `tabrelay serve` in a terminal to see them.',
      ...clientBlock(ctx),
    ]);
    return EXIT.ok;
  }
  const path = serviceFile(ctx.platform, ctx.spec);
  const content = contentFor(ctx);
  const before = existsSync(path) ? readFileSync(path, "utf8") : undefined;
  if (before !== undefined && !isOurs(before)) {
    throw new EnvironmentError(
      `${path} exists and was not written by tabrelay (it has no tabrelay-service marker line); left it alone. Remove or rename it, or pick another --name`,
    );
  }
  const state = before === content ? "unchanged" : before === undefined ? "written" : "updated";
  if (state !== "unchanged") {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content, { mode: 0o644 });
  }
  const lines = [`${path}: ${state}`, `  runs: ${[ctx.spec.launch.node, ...ctx.spec.launch.nodeFlags, ctx.spec.launch.bin, ...ctx.spec.serveArgs].join(" ")}`];
  const manager = ctx.platform === "darwin" ? launchctl() : systemctl();
  if (manager.unavailable !== undefined) {
    lines.push(
      "",
      `No ${ctx.platform === "darwin" ? "launchd session" : "systemd user manager"} is running here (${manager.unavailable.split("\n")[0]}), so the service was not started.`,
      "Start it where one runs (or in a login session) with:",
      ...startCommands(ctx, path).map((c) => `  ${c}`),
      "Meanwhile `tabrelay serve` runs the broker in the foreground.",
    );
  } else if (ctx.platform === "darwin") {
    const label = `${guiDomain()}/${ctx.spec.name}`;
    const loaded = manager.run(["print", label]).ok;
    if (loaded && state !== "unchanged") manager.run(["bootout", label]);
    const started = loaded && state === "unchanged" ? { ok: true, output: "" } : manager.run(["bootstrap", guiDomain(), path]);
    if (!started.ok) throw new EnvironmentError(`launchctl bootstrap ${guiDomain()} ${path} failed: ${started.output}`);
    lines.push(`Started with launchd (${label}); logs: ${logFile(ctx.spec)}`);
  } else {
    const enabled = manager.run(["enable", "--now", ctx.spec.name]);
    if (!enabled.ok) throw new EnvironmentError(`systemctl --user enable --now ${ctx.spec.name} failed: ${enabled.output}`);
    if (state === "updated") manager.run(["restart", ctx.spec.name]);
    lines.push(`Enabled and started (systemctl --user status ${ctx.spec.name}); logs: journalctl --user -u ${ctx.spec.name}`);
    lines.push("To keep it running while you are logged out: loginctl enable-linger $USER");
  }
  out([...lines, ...clientBlock(ctx)]);
  return EXIT.ok;
}

async function uninstall(ctx: Context): Promise<number> {
  if (ctx.platform === "win32") {
    out(["On Windows tabrelay does not manage the task itself. Remove it with:", "", `  ${schtasksCommands(ctx.spec).remove}`]);
    return EXIT.ok;
  }
  const path = serviceFile(ctx.platform, ctx.spec);
  if (!existsSync(path)) {
    out([`${path}: not installed; nothing to remove`]);
    return EXIT.ok;
  }
  if (!isOurs(readFileSync(path, "utf8"))) {
    throw new EnvironmentError(
      `${path} was not written by tabrelay (it has no tabrelay-service marker line); refusing to remove it. Remove it yourself if you mean to`,
    );
  }
  const manager = ctx.platform === "darwin" ? launchctl() : systemctl();
  const lines: string[] = [];
  if (manager.unavailable !== undefined) {
    lines.push(`No ${ctx.platform === "darwin" ? "launchd session" : "systemd user manager"} is running here; nothing was running under this file.`);
  } else if (ctx.platform === "darwin") {
    manager.run(["bootout", `${guiDomain()}/${ctx.spec.name}`]);
    lines.push(`Stopped ${guiDomain()}/${ctx.spec.name}.`);
  } else {
    manager.run(["disable", "--now", ctx.spec.name]);
    lines.push(`Stopped and disabled ${ctx.spec.name}.`);
  }
  rmSync(path);
  if (manager.unavailable === undefined && ctx.platform === "linux") manager.run(["daemon-reload"]);
  lines.unshift(`${path}: removed`);
  if (ctx.platform === "darwin") lines.push(`The log ${logFile(ctx.spec)} is left in place.`);
  lines.push(`The data dir (${ctx.config.dataDir}: tokens, config, audit log) is left in place.`);
  out(lines);
  return EXIT.ok;
}

async function status(ctx: Context): Promise<number> {
  const lines: string[] = [];
  let installed = false;
  if (ctx.platform === "win32") {
    lines.push(`Windows: tabrelay does not manage the task; see it with: ${schtasksCommands(ctx.spec).query}`);
    installed = true;
  } else {
    const path = serviceFile(ctx.platform, ctx.spec);
    if (!existsSync(path)) {
      lines.push(`${path}: not installed (tabrelay service install)`);
    } else {
      const text = readFileSync(path, "utf8");
      installed = isOurs(text);
      lines.push(
        !installed
          ? `${path}: exists but was not written by tabrelay`
          : text === contentFor(ctx)
            ? `${path}: installed, matches this Node and checkout`
            : `${path}: installed, but differs from what \`tabrelay service install\` writes now (another Node, checkout or options): run it again to update`,
      );
      const manager = ctx.platform === "darwin" ? launchctl() : systemctl();
      if (manager.unavailable !== undefined) {
        lines.push(`service manager: not running here (${manager.unavailable.split("\n")[0]})`);
      } else if (ctx.platform === "darwin") {
        lines.push(`launchd: ${manager.run(["print", `${guiDomain()}/${ctx.spec.name}`]).ok ? "loaded" : "not loaded"}`);
      } else {
        lines.push(`systemd: ${manager.run(["is-active", ctx.spec.name]).output || "unknown"}`);
      }
    }
  }
  const base = mcpTarget(ctx.config, ctx.values).url.replace(/\/mcp$/, "");
  const answer = await health(base);
  lines.push(answer === undefined ? `broker: nothing answers at ${base}/health` : `broker: ${answer}`);
  out(lines);
  return installed && answer !== undefined && answer.startsWith("tabrelay") ? EXIT.ok : EXIT.failure;
}

async function health(base: string): Promise<string | undefined> {
  try {
    const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(3000) });
    const body: unknown = await response.json();
    const name = body && typeof body === "object" ? Reflect.get(body, "name") : undefined;
    const version = body && typeof body === "object" ? Reflect.get(body, "version") : undefined;
    const browsers = body && typeof body === "object" ? Reflect.get(body, "browsers") : undefined;
    if (name !== "tabrelay") return `something that is not tabrelay answers at ${base}`;
    return `tabrelay ${String(version)} answers at ${base} (${Array.isArray(browsers) ? browsers.length : 0} browser(s) connected)${version === VERSION ? "" : `; this checkout is ${VERSION}`}`;
  } catch {
    return undefined;
  }
}

export async function cmdService(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    port: { type: "string" },
    "data-dir": { type: "string" },
    name: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return printHelp(SERVICE_HELP);
  const [action, ...extra] = positionals;
  if (extra.length) throw new UsageError(`unexpected ${JSON.stringify(extra.join(" "))}; see tabrelay service --help`);
  if (action !== "install" && action !== "uninstall" && action !== "status") {
    throw new UsageError(
      `tabrelay service needs install, uninstall or status${action === undefined ? "" : `, not ${JSON.stringify(action)}`}; see tabrelay service --help`,
    );
  }
  const ctx = contextFrom(values);
  if (action === "install") return install(ctx);
  if (action === "uninstall") return uninstall(ctx);
  return status(ctx);
}

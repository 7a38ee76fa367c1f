// What `tabrelay service` writes: a systemd user unit (Linux), a launchd LaunchAgent (macOS), the Task Scheduler
// command (Windows). Pure text from the launch; the same options give the same bytes, so a re-install is a no-op.
import { join } from "node:path";
import type { NodeLaunch } from "./install.js";

export type ServicePlatform = "linux" | "darwin" | "win32";

/** The line that says a file is tabrelay's own: uninstall removes only a file that carries it. */
export const MARKER =
  "tabrelay-service: written by `tabrelay service install`; `tabrelay service uninstall` removes it; edits are overwritten by the next install";

export interface ServiceSpec {
  name: string;
  home: string;
  launch: NodeLaunch;
  /** Arguments after the bin script: `serve` and its options. */
  serveArgs: string[];
}

export function serviceFile(platform: ServicePlatform, spec: ServiceSpec): string {
  return platform === "darwin"
    ? join(spec.home, "Library", "LaunchAgents", `${spec.name}.plist`)
    : join(spec.home, ".config", "systemd", "user", `${spec.name}.service`);
}

export function logFile(spec: ServiceSpec): string {
  return join(spec.home, "Library", "Logs", `${spec.name}.log`);
}

export function isOurs(text: string): boolean {
  return text.includes(MARKER);
}

function command(spec: ServiceSpec): string[] {
  return [spec.launch.node, ...spec.launch.nodeFlags, spec.launch.bin, ...spec.serveArgs];
}

/** One ExecStart/Environment word: systemd expands % specifiers and $ variables, and splits on spaces. */
function systemdWord(word: string): string {
  const escaped = word.replace(/%/g, "%%").replace(/\$/g, "$$$$");
  return /^[\w@+=:,./-]+$/.test(escaped) ? escaped : `"${escaped.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

export function systemdUnit(spec: ServiceSpec): string {
  const env = Object.entries(spec.launch.env).map(([key, value]) => `Environment=${systemdWord(`${key}=${value}`)}`);
  return [
    `# ${MARKER}`,
    "[Unit]",
    "Description=tabrelay broker (MCP for AI agents, a bridge for your browser)",
    "After=network.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${command(spec).map(systemdWord).join(" ")}`,
    ...env,
    "Restart=on-failure",
    "RestartSec=5",
    // A usage error (2) or a bad configuration (3) does not fix itself by restarting.
    "RestartPreventExitStatus=2 3",
    "# Logs: journalctl --user -u " + spec.name,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

export function launchdPlist(spec: ServiceSpec): string {
  const string = (text: string) => `<string>${xml(text)}</string>`;
  const log = logFile(spec);
  const env = Object.entries(spec.launch.env);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    `<!-- ${MARKER.replace(/--/g, "- -")} -->`,
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  ${string(spec.name)}`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...command(spec).map((word) => `    ${string(word)}`),
    "  </array>",
    ...(env.length
      ? ["  <key>EnvironmentVariables</key>", "  <dict>", ...env.flatMap(([key, value]) => [`    <key>${xml(key)}</key>`, `    ${string(value)}`]), "  </dict>"]
      : []),
    "  <key>RunAtLoad</key>",
    "  <true/>",
    // Restarted when it exits with an error; a clean exit (stopped on purpose) stays stopped.
    "  <key>KeepAlive</key>",
    "  <dict>",
    "    <key>SuccessfulExit</key>",
    "    <false/>",
    "  </dict>",
    "  <key>ThrottleInterval</key>",
    "  <integer>5</integer>",
    "  <key>StandardOutPath</key>",
    `  ${string(log)}`,
    "  <key>StandardErrorPath</key>",
    `  ${string(log)}`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
}

/** cmd.exe quoting inside schtasks' /TR "...": each word in \"...\". */
export function schtasksCommands(spec: ServiceSpec): { create: string; remove: string; query: string } {
  const run = command(spec)
    .map((word) => (/^[\w@+=:,./\\-]+$/.test(word) ? word : `\\"${word}\\"`))
    .join(" ");
  return {
    create: `schtasks /Create /TN ${spec.name} /SC ONLOGON /RL LIMITED /F /TR "${run}"`,
    remove: `schtasks /Delete /TN ${spec.name} /F`,
    query: `schtasks /Query /TN ${spec.name} /V /FO LIST`,
  };
}

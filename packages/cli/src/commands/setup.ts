// `tabrelay setup`: tabrelay added to the user's MCP clients in one command. Each client's user-wide file gets its
// one `tabrelay` entry with the real token (every other server kept, the old file backed up beside it); Claude Code
// gets its own `claude mcp add`. Run again, it changes nothing. Optionally installs the service; then says what to
// do next. Interactive on a terminal (which clients, and the service), flags otherwise.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline/promises";
import { clientFile, codexEntry, mergeJson, mergeToml, serverEntry } from "../clientFiles.js";
import { MCP_CLIENTS, clientBlock, findClient, shellWord, type ClientId, type McpTarget } from "../mcpClients.js";
import { mcpTarget } from "./mcpConfig.js";
import { cmdService } from "./service.js";
import { COMMON_OPTIONS, EXIT, UsageError, configFrom, parse, printHelp } from "./shared.js";

const IDS = MCP_CLIENTS.map((c) => c.id);

export const SETUP_HELP = `Usage: tabrelay setup [--client NAME]... [--stdio] [--service] [--port P] [--data-dir DIR]

Adds tabrelay to your MCP clients, with your token: ${IDS.join(", ")}.
Each client's user-wide config file gets one "tabrelay" entry (its other servers and settings kept; the file as it
was is saved beside it as FILE.backup-DATE); Claude Code gets \`claude mcp add --scope user\`. Running it again
changes nothing. On a terminal it asks which clients (and whether to install the service); otherwise name them.
  --client NAME   a client to set up (repeat for more)
  --stdio         the form where the client starts \`tabrelay stdio\` itself (Claude Desktop always uses it)
  --service       also install the service that keeps the broker running (tabrelay service install)`;

export async function cmdSetup(args: string[]): Promise<number> {
  const { values } = parse(args, { ...COMMON_OPTIONS, client: { type: "string", multiple: true }, stdio: { type: "boolean" }, service: { type: "boolean" } });
  if (values.help) return printHelp(SETUP_HELP);
  let clients = values.client ?? [];
  let service = values.service ?? false;
  for (const id of clients) if (!findClient(id)) throw new UsageError(`--client must be one of ${IDS.join(", ")}, not ${JSON.stringify(id)}`);
  if (clients.length === 0) {
    if (!process.stdin.isTTY) throw new UsageError(`name the clients to set up: tabrelay setup --client NAME (${IDS.join(", ")}); repeat --client for more`);
    ({ clients, service } = await ask(service));
    if (clients.length === 0) {
      process.stdout.write("Nothing set up.\n");
      return EXIT.ok;
    }
  }
  const config = configFrom(values); // setup makes the data dir and the token when there are none: that is its job
  const target = mcpTarget(config, values);
  let failed = 0;
  for (const id of [...new Set(clients)] as ClientId[]) {
    const line = id === "claude-code" ? claudeCode(target, values.stdio ?? false) : writeClientFile(id, target, values.stdio ?? false);
    if (!line.ok) failed++;
    process.stdout.write(`${line.ok ? "ok  " : "todo"} ${findClient(id)!.name}: ${line.text}\n`);
  }
  if (service) {
    process.stdout.write("\n");
    const code = await cmdService(["install", ...passThrough(values)]);
    if (code !== EXIT.ok) failed++;
  }
  process.stdout.write(
    [
      "",
      "Next:",
      service
        ? "- The service runs the broker. Start a browser for it: tabrelay launch (a Chromium with the extension, paired),"
        : "- Start tabrelay with its own browser: tabrelay start (a Chromium with the extension, paired), or",
      "- use the Chrome you browse with: tabrelay serve, then tabrelay extension and tabrelay pair say how to load and pair it.",
      "- Restart your MCP client so that it reads the new config; then ask it to read a page.",
      "",
    ].join("\n"),
  );
  return failed === 0 ? EXIT.ok : EXIT.failure;
}

/** One client's file: merged, backed up when it changes, written 0600 (new) or with its mode (existing). */
function writeClientFile(id: ClientId, target: McpTarget, stdio: boolean): { ok: boolean; text: string } {
  const file = clientFile(id)!;
  const before = existsSync(file.path) ? readFileSync(file.path, "utf8") : "";
  let next: string;
  try {
    next = file.format === "toml" ? mergeToml(before, codexEntry(target, stdio)) : mergeJson(before, file.key!, serverEntry(id, target, stdio));
  } catch (error) {
    const block = clientBlock(findClient(id)!, target, stdio).text;
    return { ok: false, text: `${file.path} was left as it is: ${error instanceof Error ? error.message : String(error)}. Add this entry by hand:\n${block}` };
  }
  if (next === before) return { ok: true, text: `${file.path} has tabrelay already (unchanged)` };
  let backup = "";
  if (existsSync(file.path)) {
    backup = `${file.path}.backup-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    copyFileSync(file.path, backup);
    chmodSync(backup, 0o600); // it may hold other servers' secrets
  } else {
    mkdirSync(dirname(file.path), { recursive: true, mode: 0o700 });
  }
  // It holds the token now: its owner's alone (an existing file keeps its owner's bits).
  const mode = existsSync(file.path) ? statSync(file.path).mode & 0o700 || 0o600 : 0o600;
  writeFileSync(file.path, next, { mode });
  chmodSync(file.path, mode);
  return { ok: true, text: `${file.path} ${before === "" ? "written" : `updated (the file before: ${backup})`}` };
}

/** Claude Code: its own command, user scope; the entry replaced if there is one, so a second run leaves the same. */
function claudeCode(target: McpTarget, stdio: boolean): { ok: boolean; text: string } {
  const add = stdio
    ? ["mcp", "add", "--scope", "user", "tabrelay", "--", target.command, ...target.args]
    : ["mcp", "add", "--scope", "user", "--transport", "http", "tabrelay", target.url, "--header", `Authorization: Bearer ${target.token}`];
  const shown = `claude ${add.map(shellWord).join(" ")}`;
  const probe = spawnSync("claude", ["--version"], { encoding: "utf8", timeout: 20_000 });
  if (probe.error || probe.status !== 0) return { ok: false, text: `the claude command was not found; once Claude Code is installed, run:\n${shown}` };
  spawnSync("claude", ["mcp", "remove", "--scope", "user", "tabrelay"], { encoding: "utf8", timeout: 20_000 });
  const run = spawnSync("claude", add, { encoding: "utf8", timeout: 20_000 });
  if (run.status !== 0) return { ok: false, text: `claude mcp add failed (${(run.stderr || run.stdout).trim().slice(0, 300)}); run it yourself:\n${shown}` };
  return { ok: true, text: "added with claude mcp add --scope user (every project)" };
}

async function ask(service: boolean): Promise<{ clients: string[]; service: boolean }> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const found = MCP_CLIENTS.map((c) => ({
      c,
      here: c.id === "claude-code" ? !spawnSync("claude", ["--version"]).error : existsSync(dirname(clientFile(c.id)!.path)),
    }));
    process.stdout.write(`MCP clients (* found on this machine):\n${found.map(({ c, here }, i) => `  ${i + 1}. ${c.name}${here ? " *" : ""}`).join("\n")}\n`);
    const suggested = found.filter((f) => f.here).map((f) => String(found.indexOf(f) + 1));
    const answer =
      (await rl.question(`Set up which (numbers, comma-separated)${suggested.length ? ` [${suggested.join(",")}]` : ""}? `)).trim() || suggested.join(",");
    const clients = answer
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((n) => found[Number(n) - 1]?.c.id)
      .filter((id): id is ClientId => id !== undefined);
    const wantService = service || /^y/i.test((await rl.question("Install the service that starts the broker at login? [y/N] ")).trim());
    return { clients, service: wantService };
  } finally {
    rl.close();
  }
}

function passThrough(values: { port?: string | undefined; "data-dir"?: string | undefined }): string[] {
  return [...(values.port !== undefined ? ["--port", values.port] : []), ...(values["data-dir"] !== undefined ? ["--data-dir", values["data-dir"]] : [])];
}

// Where each MCP client keeps its user-wide servers, and how `tabrelay setup` puts tabrelay there without touching
// anything else: a JSON file gets its one `tabrelay` entry set (every other server and key kept), Codex's TOML its
// one [mcp_servers.tabrelay] table replaced or added (every other line kept as written). Pure text in, text out;
// commands/setup.ts reads, backs up and writes.
import { homedir } from "node:os";
import { join } from "node:path";
import type { ClientId, McpTarget } from "./mcpClients.js";

const SERVER = "tabrelay";

export interface ClientFile {
  /** The user-wide file (absolute). */
  path: string;
  format: "json" | "toml";
  /** JSON: the top-level key holding the servers. */
  key?: "mcpServers" | "servers";
}

/** The file a client reads its user-wide MCP servers from on this platform; undefined where it has a command instead (Claude Code). */
export function clientFile(id: ClientId, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): ClientFile | undefined {
  const home = env["HOME"] || homedir();
  const appData = env["APPDATA"] || join(home, "AppData", "Roaming");
  const userConfig =
    platform === "darwin" ? join(home, "Library", "Application Support") : platform === "win32" ? appData : env["XDG_CONFIG_HOME"] || join(home, ".config");
  switch (id) {
    case "cursor":
      return { path: join(home, ".cursor", "mcp.json"), format: "json", key: "mcpServers" };
    case "windsurf":
      return { path: join(home, ".codeium", "windsurf", "mcp_config.json"), format: "json", key: "mcpServers" };
    case "claude-desktop":
      return { path: join(userConfig, "Claude", "claude_desktop_config.json"), format: "json", key: "mcpServers" };
    case "vscode":
      return { path: join(userConfig, "Code", "User", "mcp.json"), format: "json", key: "servers" };
    case "codex":
      return { path: join(env["CODEX_HOME"] || join(home, ".codex"), "config.toml"), format: "toml" };
    case "claude-code":
      return undefined;
  }
}

/** tabrelay's entry for a client: the HTTP form (with the token) unless stdio is asked for or is all the client takes. */
export function serverEntry(id: ClientId, target: McpTarget, stdio: boolean): Record<string, unknown> {
  const headers = { Authorization: `Bearer ${target.token}` };
  if (stdio || id === "claude-desktop")
    return id === "vscode" ? { type: "stdio", command: target.command, args: target.args } : { command: target.command, args: target.args };
  if (id === "vscode") return { type: "http", url: target.url, headers };
  if (id === "windsurf") return { serverUrl: target.url, headers };
  return { url: target.url, headers };
}

/**
 * The JSON file's text with tabrelay's entry set under `key`, every other key and server kept; the text as it was
 * when the entry is there already. Throws on text that is not a JSON object (comments included: JSONC is not kept).
 */
export function mergeJson(text: string, key: string, entry: Record<string, unknown>): string {
  let data: unknown = {};
  if (text.trim() !== "") {
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new Error(
        `it is not plain JSON (${error instanceof Error ? error.message : String(error)}); comments or trailing commas are not kept by a program`,
        { cause: error },
      );
    }
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) throw new Error("it does not hold a JSON object");
  const root = data as Record<string, unknown>;
  const servers = root[key];
  if (servers !== undefined && (!servers || typeof servers !== "object" || Array.isArray(servers))) throw new Error(`its "${key}" is not an object`);
  const current = (servers as Record<string, unknown> | undefined)?.[SERVER];
  if (JSON.stringify(current) === JSON.stringify(entry)) return text;
  const next = { ...root, [key]: { ...(servers as Record<string, unknown> | undefined), [SERVER]: entry } };
  return `${JSON.stringify(next, null, 2)}\n`;
}

/** Codex's config.toml with one [mcp_servers.tabrelay] table (and no subtable of it) replaced or appended; every other line kept. */
export function mergeToml(text: string, entry: Record<string, unknown>): string {
  const table = [`[mcp_servers.${SERVER}]`, ...Object.entries(entry).map(([k, v]) => `${k} = ${tomlValue(v)}`)];
  const lines = text === "" ? [] : text.replace(/\n$/, "").split("\n");
  const header = (line: string) => /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(line)?.[1];
  const ours = (name: string | undefined) => name !== undefined && (name === `mcp_servers.${SERVER}` || name.startsWith(`mcp_servers.${SERVER}.`));
  const kept: string[] = [];
  let at = -1;
  let inOurs = false;
  // Comments and blank lines at the end of our table belong to the table after it (a comment above its header).
  let trailing: string[] = [];
  for (const line of lines) {
    const name = header(line);
    if (name !== undefined) {
      if (inOurs && !ours(name)) kept.push(...trailing.filter((l) => l.trim() !== ""));
      trailing = [];
      inOurs = ours(name);
    }
    if (inOurs) {
      if (at < 0) at = kept.length;
      if (name === undefined) trailing = /^\s*(#.*)?$/.test(line) ? [...trailing, line] : [];
      continue;
    }
    kept.push(line);
  }
  if (at < 0) {
    const spacer = kept.length > 0 && kept.at(-1)!.trim() !== "" ? [""] : [];
    kept.push(...spacer, ...table);
  } else {
    // Keep the blank line that separated our table from the next one.
    kept.splice(at, 0, ...table, ...(at < kept.length && kept[at]!.trim() !== "" ? [""] : []));
  }
  const next = `${kept.join("\n")}\n`;
  return next === (text.endsWith("\n") ? text : `${text}\n`) ? text : next;
}

function tomlValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(", ")}]`;
  if (value && typeof value === "object")
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${/^[A-Za-z0-9_-]+$/.test(k) ? k : JSON.stringify(k)} = ${tomlValue(v)}`)
      .join(", ")} }`;
  return String(value);
}

/** Codex's entry: http_headers rather than headers (its config's name for them). */
export function codexEntry(target: McpTarget, stdio: boolean): Record<string, unknown> {
  return stdio ? { command: target.command, args: target.args } : { url: target.url, http_headers: { Authorization: `Bearer ${target.token}` } };
}

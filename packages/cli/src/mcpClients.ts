// The one table of MCP clients: where each keeps its MCP servers and the exact block (or command) that adds
// tabrelay there. `tabrelay mcp-config` prints from it with the real token; scripts/mcp-clients-table.mjs writes
// docs/clients.md's "MCP clients" section from it (a test checks they agree). No imports: the script loads the built
// module on its own.

/** Where tabrelay is and how to reach it, as one client sees it. */
export interface McpTarget {
  /** The broker's MCP endpoint, e.g. http://127.0.0.1:9333/mcp. */
  url: string;
  /** The MCP bearer token. */
  token: string;
  /** The stdio form: the program a client starts, and its arguments (ending in `stdio` and its options). */
  command: string;
  args: string[];
}

export type ClientId = "claude-code" | "cursor" | "vscode" | "claude-desktop" | "codex" | "windsurf";

export interface McpClient {
  id: ClientId;
  name: string;
  /** Where the block goes (Markdown, inline code for paths). */
  where: string;
  /** The language of the block, for a fenced code block. */
  lang: "sh" | "json" | "toml";
  /** The block for the HTTP endpoint; absent when the client only starts servers itself (stdio). */
  http?: (t: McpTarget) => string;
  stdio: (t: McpTarget) => string;
}

const SERVER = "tabrelay";

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

function bearer(t: McpTarget): { Authorization: string } {
  return { Authorization: `Bearer ${t.token}` };
}

/** POSIX shell quoting: a word left bare when it is plain. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** A TOML basic string (JSON's escapes are a subset of TOML's). */
function tomlString(text: string): string {
  return JSON.stringify(text);
}

export const MCP_CLIENTS: readonly McpClient[] = [
  {
    id: "claude-code",
    name: "Claude Code",
    where: "run it in your project (add `--scope user` for every project)",
    lang: "sh",
    http: (t) => `claude mcp add --transport http ${SERVER} ${shellWord(t.url)} --header ${shellWord(`Authorization: Bearer ${t.token}`)}`,
    stdio: (t) => `claude mcp add ${SERVER} -- ${[t.command, ...t.args].map(shellWord).join(" ")}`,
  },
  {
    id: "cursor",
    name: "Cursor",
    where: "`~/.cursor/mcp.json` (every project) or `.cursor/mcp.json` (one project)",
    lang: "json",
    http: (t) => json({ mcpServers: { [SERVER]: { url: t.url, headers: bearer(t) } } }),
    stdio: (t) => json({ mcpServers: { [SERVER]: { command: t.command, args: t.args } } }),
  },
  {
    id: "vscode",
    name: "VS Code",
    where: "`.vscode/mcp.json` in your workspace (top-level key `servers`), or the command *MCP: Open User Configuration*",
    lang: "json",
    http: (t) => json({ servers: { [SERVER]: { type: "http", url: t.url, headers: bearer(t) } } }),
    stdio: (t) => json({ servers: { [SERVER]: { type: "stdio", command: t.command, args: t.args } } }),
  },
  {
    id: "claude-desktop",
    name: "Claude Desktop",
    where:
      "`claude_desktop_config.json` (macOS: `~/Library/Application Support/Claude/`, Windows: `%APPDATA%\\Claude\\`); stdio only: it starts `tabrelay stdio` itself, which forwards to the running broker (starting one in the background that every agent shares, if none answers)",
    lang: "json",
    stdio: (t) => json({ mcpServers: { [SERVER]: { command: t.command, args: t.args } } }),
  },
  {
    id: "codex",
    name: "Codex",
    where: "`~/.codex/config.toml` (TOML)",
    lang: "toml",
    http: (t) => [`[mcp_servers.${SERVER}]`, `url = ${tomlString(t.url)}`, `http_headers = { Authorization = ${tomlString(`Bearer ${t.token}`)} }`].join("\n"),
    stdio: (t) => [`[mcp_servers.${SERVER}]`, `command = ${tomlString(t.command)}`, `args = [${t.args.map(tomlString).join(", ")}]`].join("\n"),
  },
  {
    id: "windsurf",
    name: "Windsurf",
    where: "`~/.codeium/windsurf/mcp_config.json` (the key is `serverUrl`, not `url`)",
    lang: "json",
    http: (t) => json({ mcpServers: { [SERVER]: { serverUrl: t.url, headers: bearer(t) } } }),
    stdio: (t) => json({ mcpServers: { [SERVER]: { command: t.command, args: t.args } } }),
  },
];

export function findClient(id: string): McpClient | undefined {
  return MCP_CLIENTS.find((c) => c.id === id);
}

/** The block for a client: its HTTP form unless stdio is asked for or is all the client has. */
export function clientBlock(client: McpClient, target: McpTarget, stdio: boolean): { text: string; stdio: boolean } {
  if (stdio || !client.http) return { text: client.stdio(target), stdio: true };
  return { text: client.http(target), stdio: false };
}

/** What docs/clients.md shows: placeholders for the token and the checkout, every client in table order. */
export const README_TARGET: McpTarget = {
  url: "http://127.0.0.1:9333/mcp",
  token: "<token>",
  command: "node",
  args: ["/path/to/tabrelay/packages/cli/bin/tabrelay.js", "stdio"],
};

/** docs/clients.md's "MCP clients" section body (between its markers). */
export function readmeSection(): string {
  const lines = [
    "`npx tabrelay mcp-config --client NAME` prints the block for one client with your real token (from the data",
    "dir, as `tabrelay serve` reads it) and this install's paths; `--stdio` prints the stdio form instead (the client",
    "then starts `tabrelay stdio`, which forwards to a running broker). With `<token>` and paths as placeholders:",
  ];
  for (const client of MCP_CLIENTS) {
    const { text } = clientBlock(client, README_TARGET, false);
    lines.push("", `**${client.name}** (\`--client ${client.id}\`): ${client.where}.`, "", `\`\`\`${client.lang}`, text, "```");
  }
  return lines.join("\n");
}

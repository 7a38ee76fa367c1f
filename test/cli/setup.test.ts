// `tabrelay setup`: a temporary HOME holding each client's existing config (other servers, other settings, a TOML
// comment) is set up in one run; every file gets tabrelay's entry with the data dir's real token and keeps the
// rest, the file before is backed up beside it, and a second run changes nothing. Claude Code is set up with its own
// `claude mcp add`: no Claude Code can be installed here, so PATH holds a `claude` program that records the commands
// it is given and keeps servers in a file, as the real one does with `mcp add` and `mcp remove`.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { tabrelay } from "./run.js";

const CLAUDE = `#!/bin/sh
# Records each call; keeps the user-scope servers added in $HOME/claude-servers (one name per line).
echo "$*" >> "$HOME/claude-calls"
case "$1 $2" in
  "--version ") echo "2.0.0 (Claude Code)";;
  "mcp add") name=$(for a in "$@"; do case "$a" in -*|mcp|add|user|http) ;; *) echo "$a"; break;; esac; done)
             if grep -qx "$name" "$HOME/claude-servers" 2>/dev/null; then echo "MCP server $name already exists" >&2; exit 1; fi
             echo "$name" >> "$HOME/claude-servers";;
  "mcp remove") grep -vx "tabrelay" "$HOME/claude-servers" > "$HOME/claude-servers.new" 2>/dev/null; mv "$HOME/claude-servers.new" "$HOME/claude-servers";;
esac
`;

function userHome(): { home: string; files: Record<string, string>; env: Record<string, string> } {
  const home = mkdtempSync(join(tmpdir(), "tabrelay-setup-home-"));
  const files: Record<string, string> = {
    [join(home, ".cursor/mcp.json")]: `${JSON.stringify({ mcpServers: { github: { command: "gh-mcp" } } }, null, 2)}\n`,
    [join(home, ".codeium/windsurf/mcp_config.json")]: `{"mcpServers":{"fs":{"command":"fs-mcp","args":["/"]}},"theme":"dark"}`,
    [join(home, ".config/Code/User/mcp.json")]:
      `${JSON.stringify({ servers: { other: { type: "http", url: "https://other.example/mcp" } }, inputs: [] }, null, 2)}\n`,
    [join(home, ".config/Claude/claude_desktop_config.json")]: `${JSON.stringify({ mcpServers: {}, globalShortcut: "Ctrl+Space" }, null, 2)}\n`,
    [join(home, ".codex/config.toml")]: `# my codex\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[profiles.fast]\nmodel = "o4-mini"\n`,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text, { mode: 0o644 });
  }
  const bin = join(home, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "claude"), CLAUDE);
  chmodSync(join(bin, "claude"), 0o755);
  return { home, files, env: { HOME: home, PATH: `${bin}:${process.env["PATH"] ?? ""}`, XDG_CONFIG_HOME: "", APPDATA: "", CODEX_HOME: "" } };
}

const ALL = ["cursor", "windsurf", "vscode", "claude-desktop", "codex", "claude-code"];

describe("tabrelay setup", () => {
  it("adds tabrelay to every client with the real token, keeps their other servers and a backup, and a second run changes nothing", async () => {
    const { home, files, env } = userHome();
    const dataDir = join(home, ".tabrelay");
    const first = await tabrelay(["setup", ...ALL.flatMap((c) => ["--client", c])], env);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const token = readFileSync(join(dataDir, "mcp-token"), "utf8").trim();
    const bearer = { Authorization: `Bearer ${token}` };
    const url = "http://127.0.0.1:9333/mcp";
    const json = (path: string) => JSON.parse(readFileSync(join(home, path), "utf8"));

    expect(json(".cursor/mcp.json")).toEqual({ mcpServers: { github: { command: "gh-mcp" }, tabrelay: { url, headers: bearer } } });
    expect(json(".codeium/windsurf/mcp_config.json")).toEqual({
      mcpServers: { fs: { command: "fs-mcp", args: ["/"] }, tabrelay: { serverUrl: url, headers: bearer } },
      theme: "dark",
    });
    expect(json(".config/Code/User/mcp.json")).toEqual({
      servers: { other: { type: "http", url: "https://other.example/mcp" }, tabrelay: { type: "http", url, headers: bearer } },
      inputs: [],
    });
    const desktop = json(".config/Claude/claude_desktop_config.json");
    expect(desktop.globalShortcut).toBe("Ctrl+Space");
    expect(desktop.mcpServers.tabrelay.args).toContain("stdio"); // Claude Desktop starts tabrelay stdio itself
    const codex = readFileSync(join(home, ".codex/config.toml"), "utf8");
    expect(codex).toBe(
      `# my codex\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[profiles.fast]\nmodel = "o4-mini"\n\n[mcp_servers.tabrelay]\nurl = "${url}"\nhttp_headers = { Authorization = "Bearer ${token}" }\n`,
    );
    expect(readFileSync(join(home, "claude-calls"), "utf8")).toContain(
      `mcp add --scope user --transport http tabrelay ${url} --header Authorization: Bearer ${token}`,
    );

    // Each file before is beside it, and each file now holds a token: its owner's alone.
    for (const [path, before] of Object.entries(files)) {
      const backups = readdirSync(dirname(path)).filter((n) => n.startsWith(`${path.split("/").at(-1)}.backup-`));
      expect(backups, path).toHaveLength(1);
      expect(readFileSync(join(dirname(path), backups[0]!), "utf8")).toBe(before);
      expect(statSync(path).mode & 0o777, path).toBe(0o600);
    }
    expect(first.stdout).toContain("Next:");

    const snapshot = Object.keys(files).map((path) => readFileSync(path, "utf8"));
    const again = await tabrelay(["setup", ...ALL.flatMap((c) => ["--client", c])], env);
    expect(again.code).toBe(0);
    expect(Object.keys(files).map((path) => readFileSync(path, "utf8"))).toEqual(snapshot);
    for (const path of Object.keys(files))
      expect(
        readdirSync(dirname(path)).filter((n) => n.includes(".backup-")),
        path,
      ).toHaveLength(1);
    expect(again.stdout).toContain("has tabrelay already (unchanged)");
    expect(readFileSync(join(home, "claude-servers"), "utf8")).toBe("tabrelay\n"); // replaced, not added twice
  }, 60_000);

  it("writes a client's file where there was none, and leaves a file it cannot read as JSON untouched, with the entry to add", async () => {
    const { home, env } = userHome();
    const cursor = join(home, ".cursor/mcp.json");
    writeFileSync(cursor, `{\n  // my servers\n  "mcpServers": {}\n}\n`);
    const run = await tabrelay(["setup", "--client", "cursor", "--client", "windsurf"], { ...env, HOME: home });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/todo Cursor: .*mcp\.json was left as it is: it is not plain JSON/);
    expect(run.stdout).toContain('"tabrelay"');
    expect(readFileSync(cursor, "utf8")).toBe(`{\n  // my servers\n  "mcpServers": {}\n}\n`);
    expect(existsSync(join(home, ".codeium/windsurf/mcp_config.json"))).toBe(true);
  }, 30_000);

  it("without a terminal, asks for the clients by name", async () => {
    const { env } = userHome();
    const run = await tabrelay(["setup"], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("name the clients to set up: tabrelay setup --client NAME");
  });
});

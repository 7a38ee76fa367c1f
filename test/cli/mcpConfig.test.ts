// `tabrelay mcp-config`: the block each client needs, with the token the data dir holds, and docs/clients.md's
// per-client section generated from the same table.
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_TOKEN, startBroker, type TestBroker } from "../harness.js";
import { CLI, ROOT, cleanEnv, tabrelay, tempDir } from "./run.js";

const CLIENTS = ["claude-code", "cursor", "vscode", "claude-desktop", "codex", "windsurf"];

describe("docs/clients.md's MCP clients section", () => {
  it("is the table in code", () => {
    // Exits 1, naming the fix, when they differ.
    expect(execFileSync(process.execPath, [join(ROOT, "scripts/mcp-clients-table.mjs"), "--check"], { encoding: "utf8" })).toContain("matches");
  });

  it("lists every client the command knows", async () => {
    const listed = await tabrelay(["mcp-config"]);
    expect(listed.code).toBe(0);
    for (const id of CLIENTS) expect(listed.stdout).toContain(id);
    const section = execFileSync(process.execPath, [join(ROOT, "scripts/mcp-clients-table.mjs")], { encoding: "utf8" });
    for (const id of CLIENTS) expect(section).toContain(`--client ${id}`);
  });
});

describe("tabrelay mcp-config", () => {
  let b: TestBroker;
  let dataDir: string;
  beforeAll(async () => {
    // The broker runs with MCP_TOKEN; the data dir's token file holds the same token, which mcp-config must read.
    dataDir = tempDir("mcpconfig");
    writeFileSync(join(dataDir, "mcp-token"), `${MCP_TOKEN}\n`, { mode: 0o600 });
    b = await startBroker({ dataDir });
  });
  afterAll(async () => {
    await b.close();
  });

  const config = (client: string, ...more: string[]) => tabrelay(["mcp-config", "--client", client, "--data-dir", dataDir, "--port", String(b.port), ...more]);

  it("prints a block whose URL and header reach the broker (VS Code, Cursor, Windsurf, Codex, Claude Code)", async () => {
    const vscode = await config("vscode");
    expect(vscode.code).toBe(0);
    expect(vscode.stderr).toContain(".vscode/mcp.json");
    const server = JSON.parse(vscode.stdout).servers.tabrelay;
    expect(server).toEqual({ type: "http", url: `http://127.0.0.1:${b.port}/mcp`, headers: { Authorization: `Bearer ${MCP_TOKEN}` } });
    const client = new Client({ name: "mcp-config-test", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } }));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("read_url");
    await client.close();

    expect(JSON.parse((await config("cursor")).stdout)).toEqual({ mcpServers: { tabrelay: { url: server.url, headers: server.headers } } });
    expect(JSON.parse((await config("windsurf")).stdout)).toEqual({ mcpServers: { tabrelay: { serverUrl: server.url, headers: server.headers } } });
    expect((await config("codex")).stdout).toBe(`[mcp_servers.tabrelay]\nurl = "${server.url}"\nhttp_headers = { Authorization = "Bearer ${MCP_TOKEN}" }\n`);
    expect((await config("claude-code")).stdout).toBe(`claude mcp add --transport http tabrelay ${server.url} --header 'Authorization: Bearer ${MCP_TOKEN}'\n`);
  });

  it("prints the stdio form, pinned to this Node and bin script, and a client can start it (Claude Desktop)", async () => {
    const desktop = await config("claude-desktop");
    expect(desktop.code).toBe(0);
    const server = JSON.parse(desktop.stdout).mcpServers.tabrelay;
    expect(server).toEqual({ command: process.execPath, args: [CLI, "stdio", "--port", String(b.port), "--data-dir", dataDir] });
    // The broker holds the port, so the stdio process forwards to it with the data dir's token.
    const client = new Client({ name: "mcp-config-stdio-test", version: "0.0.0" });
    await client.connect(new StdioClientTransport({ command: server.command, args: server.args, env: cleanEnv(), stderr: "ignore" }));
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("read_url");
    await client.close();

    const stdio = await config("claude-code", "--stdio");
    expect(stdio.stdout).toBe(`claude mcp add tabrelay -- ${process.execPath} ${CLI} stdio --port ${b.port} --data-dir ${dataDir}\n`);
    const codex = await config("codex", "--stdio");
    expect(codex.stdout).toContain(`command = "${process.execPath}"`);
  });

  it("creates nothing: a data dir with no token yet says to start tabrelay once, and stays as it was", async () => {
    const fresh = tempDir("mcpconfig-fresh");
    const first = await tabrelay(["mcp-config", "--client", "cursor", "--data-dir", fresh]);
    expect(first.code).toBe(3);
    expect(first.stderr).toContain(`no mcp-token in ${fresh} yet: start tabrelay once`);
    expect(readdirSync(fresh)).toEqual([]);
    // Once a start made it, mcp-config prints that token.
    writeFileSync(join(fresh, "mcp-token"), `${MCP_TOKEN}\n`, { mode: 0o600 });
    const again = await tabrelay(["mcp-config", "--client", "cursor", "--data-dir", fresh]);
    expect(JSON.parse(again.stdout).mcpServers.tabrelay).toEqual({ url: "http://127.0.0.1:9333/mcp", headers: { Authorization: `Bearer ${MCP_TOKEN}` } });
    expect(readdirSync(fresh)).toEqual(["mcp-token"]);
  });

  it("refuses an unknown client with exit 2, naming the known ones", () => {
    const result = spawnSync(process.execPath, [CLI, "mcp-config", "--client", "emacs"], { encoding: "utf8", env: cleanEnv() });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("claude-code, cursor, vscode, claude-desktop, codex, windsurf");
  });
});

// Issue 10, through the `tabrelay` command as a user runs it: planted files and weak tokens are refused (exit 3,
// naming the file and the fix), what can be fixed without trusting anything is fixed and reported, and
// `serve` beyond loopback warns that it speaks plain HTTP. The suite runs as root: these checks are on mode
// bits, ownership and links, which root does not bypass.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { connectClient, waitFor } from "../harness.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));
/** No token from the test runner's environment: the files in the data dir are what is under test. */
const NO_ENV_TOKENS = { TABRELAY_MCP_TOKEN: "", TABRELAY_PAIRING_TOKEN: "" };

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", env: { ...process.env, ...NO_ENV_TOKENS, ...env }, timeout: 20_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "tabrelay-safety-cli-"));
}

function modeOf(path: string): number {
  return statSync(path).mode & 0o7777;
}

/** Runs `tabrelay serve` until it prints its MCP URL, then hands it over; `stop` ends it. */
async function serve(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...NO_ENV_TOKENS, ...env },
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
  };
  try {
    const url = await waitFor("the MCP URL", () => {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${stderr}`);
      return /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1];
    });
    return { url, stderr: () => stderr, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function mcpStatus(url: string, token: string): Promise<number> {
  const response = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "probe", version: "0" } },
    }),
  });
  await response.body?.cancel();
  return response.status;
}

describe("planted files are refused", () => {
  it("a world-writable config.yaml stops serve with exit 3, naming the file and the chmod that fixes it", () => {
    const dir = tempDir();
    const config = join(dir, "config.yaml");
    writeFileSync(config, 'policy:\n  read:\n    allow:\n      "attacker.example": [".*"]\n');
    chmodSync(config, 0o666);
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", dir]);
    expect(code).toBe(3);
    expect(stderr).toContain(`the config file ${config} is writable by every user (mode 0666)`);
    expect(stderr).toContain(`chmod 600 ${config}`);
    expect(stderr).not.toContain("listening");
  });

  it("an mcp-token symlinked to a world-writable file of the attacker's is refused, and the attacker's token never opens /mcp", async () => {
    const dir = tempDir();
    const attackerToken = `attacker-${randomBytes(16).toString("hex")}`;
    const planted = join(tempDir(), "token");
    writeFileSync(planted, `${attackerToken}\n`);
    chmodSync(planted, 0o666);
    const tokenPath = join(dir, "mcp-token");
    symlinkSync(planted, tokenPath);

    const refused = run(["serve", "--port", "0", "--data-dir", dir]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`the token file ${tokenPath} is a symbolic link (to ${planted})`);
    expect(refused.stderr).toContain(`rm ${tokenPath}`);
    expect(refused.stderr).not.toContain(attackerToken);
    expect(readFileSync(planted, "utf8")).toBe(`${attackerToken}\n`); // not written through either

    // The fix the message gives: delete the link; tabrelay then makes its own token, and only that one opens /mcp.
    rmSync(tokenPath);
    const broker = await serve(["--data-dir", dir]);
    try {
      expect(lstatSync(tokenPath).isFile()).toBe(true);
      expect(modeOf(tokenPath)).toBe(0o600);
      const ownToken = readFileSync(tokenPath, "utf8").trim();
      expect(ownToken).not.toBe(attackerToken);
      expect(await mcpStatus(broker.url, attackerToken)).toBe(401);
      const client = await connectClient(broker.url, ownToken);
      expect((await client.listTools()).tools.length).toBeGreaterThan(5);
      await client.close();
    } finally {
      await broker.stop();
    }
  });
});

describe("what can be fixed is fixed, and said", () => {
  it("a pairing-token at 0644 is made 0600 with a warning, and kept", () => {
    const dir = tempDir();
    chmodSync(dir, 0o700);
    const token = randomBytes(32).toString("hex");
    const path = join(dir, "pairing-token");
    writeFileSync(path, `${token}\n`);
    chmodSync(path, 0o644);
    const { code, stdout, stderr } = run(["pair", "--data-dir", dir]);
    expect(code).toBe(0);
    expect(modeOf(path)).toBe(0o600);
    expect(stderr).toContain(`tabrelay: warning: the token file ${path} was readable by other users (mode 0644); tabrelay made it 0600`);
    expect(stdout).toContain(`Pairing code: ${token}`);
  });

  it("a data dir at 0777 is made 0700 with a warning, and serve starts", async () => {
    const dir = tempDir();
    chmodSync(dir, 0o777);
    const broker = await serve(["--data-dir", dir]);
    try {
      expect(modeOf(dir)).toBe(0o700);
      expect(broker.stderr()).toContain(`tabrelay: warning: ${dir}: the data dir was writable by every user (mode 0777)`);
      expect(broker.stderr()).toContain("made it 0700");
    } finally {
      await broker.stop();
    }
  });
});

describe("tokens from the environment", () => {
  it("TABRELAY_MCP_TOKEN=aaaaaaaaaaaaaaaa is refused with exit 3 and how to make a good one", () => {
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", tempDir()], { TABRELAY_MCP_TOKEN: "aaaaaaaaaaaaaaaa" });
    expect(code).toBe(3);
    expect(stderr).toContain("TABRELAY_MCP_TOKEN is too weak to use: it uses only 1 different character");
    expect(stderr).toContain("openssl rand -hex 32");
    expect(stderr).not.toContain("listening");
  });

  it("a weak TABRELAY_PAIRING_TOKEN is refused too, and a strong one is used", () => {
    const dir = tempDir();
    expect(run(["pair", "--data-dir", dir], { TABRELAY_PAIRING_TOKEN: "0123456789abcdef0123456789abcdef" }).stderr).toContain(
      "TABRELAY_PAIRING_TOKEN is too weak to use",
    );
    const strong = randomBytes(32).toString("hex");
    expect(run(["pair", "--data-dir", dir], { TABRELAY_PAIRING_TOKEN: strong }).stdout).toContain(`Pairing code: ${strong}`);
  });
});

describe("serve beyond loopback", () => {
  const WARNING = "WARNING: serving on 0.0.0.0, beyond this machine, over PLAIN HTTP";

  it("--host 0.0.0.0 warns loudly that it speaks plain HTTP and how to put TLS in front", async () => {
    const broker = await serve(["--host", "0.0.0.0", "--data-dir", tempDir()]);
    try {
      const stderr = broker.stderr();
      expect(stderr).toContain(WARNING);
      expect(stderr).toContain("in clear");
      expect(stderr).toMatch(/caddy reverse-proxy --from HOST --to 127\.0\.0\.1:0/);
      expect(stderr).toContain("wss://HOST/bridge");
    } finally {
      await broker.stop();
    }
  });

  it("on loopback it says nothing of the kind", async () => {
    const broker = await serve(["--host", "127.0.0.1", "--data-dir", tempDir()]);
    try {
      expect(broker.stderr()).not.toContain("PLAIN HTTP");
    } finally {
      await broker.stop();
    }
  });
});

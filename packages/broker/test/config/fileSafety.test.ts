// Issue 10: files and tokens are not taken as found. The data dir, the token files and the config files are
// used only as tabrelay would have left them; env tokens must be strong. Real files in a temp dir, real chmod,
// chown and symlinks (the suite runs as root, which bypasses permission checks on reading, not these checks).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { readOwnFile, secureDataDir, writeSecretFile } from "../../src/config/fileSafety.js";
import { estimatedTokenBits, weakTokenReason } from "../../src/util/secrets.js";

const STRONG = randomBytes(32).toString("hex");
const OTHER_UID = 4242;

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "tabrelay-safety-"));
}

function modeOf(path: string): number {
  return statSync(path).mode & 0o7777;
}

function file(dir: string, name: string, content: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  chmodSync(path, mode);
  return path;
}

describe("the data dir", () => {
  it("is created 0700", () => {
    const dir = join(tempDir(), "new", "data");
    const result = secureDataDir(dir);
    expect(result).toEqual({ ok: true, value: undefined, warnings: [] });
    expect(modeOf(dir)).toBe(0o700);
  });

  it("at 0700 is used as it is, without a word", () => {
    const dir = tempDir();
    chmodSync(dir, 0o700);
    expect(secureDataDir(dir)).toEqual({ ok: true, value: undefined, warnings: [] });
  });

  it("writable by everyone (0777) but ours is made 0700, and the warning says so", () => {
    const dir = tempDir();
    chmodSync(dir, 0o777);
    const result = secureDataDir(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toContain(dir);
    expect(result.warnings[0]).toContain("writable by every user (mode 0777)");
    expect(result.warnings[0]).toContain("made it 0700");
  });

  it("writable by its group (0770) is made 0700", () => {
    const dir = tempDir();
    chmodSync(dir, 0o770);
    const result = secureDataDir(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(result.ok && result.warnings[0]).toContain("writable by its group (mode 0770)");
  });

  it("readable by others (0755) is made 0700", () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const result = secureDataDir(dir);
    expect(modeOf(dir)).toBe(0o700);
    expect(result.ok && result.warnings[0]).toContain("readable by other users (mode 0755)");
  });

  it("a shared sticky directory like /tmp is refused and left as it is", () => {
    const dir = tempDir();
    chmodSync(dir, 0o1777);
    const result = secureDataDir(dir);
    expect(result).toMatchObject({ ok: false, code: "shared_dir" });
    expect(!result.ok && result.message).toContain("--data-dir");
    expect(modeOf(dir)).toBe(0o1777);
  });

  it("owned by another user is refused, with the fix", () => {
    const dir = tempDir();
    chownSync(dir, OTHER_UID, OTHER_UID);
    const result = secureDataDir(dir);
    expect(result).toMatchObject({ ok: false, code: "not_owner" });
    expect(!result.ok && result.message).toContain(`belongs to uid ${OTHER_UID}`);
    expect(!result.ok && result.message).toContain(`chmod 700 ${dir}`);
  });

  it("a file where the data dir should be is refused", () => {
    const path = file(tempDir(), "data", "", 0o600);
    expect(secureDataDir(path)).toMatchObject({ ok: false, code: "not_directory" });
  });
});

describe("token files", () => {
  it("a missing one reads as undefined", () => {
    expect(readOwnFile(join(tempDir(), "mcp-token"), "token")).toEqual({ ok: true, value: undefined, warnings: [] });
  });

  it("at 0600 is read without a word", () => {
    const path = file(tempDir(), "mcp-token", `${STRONG}\n`, 0o600);
    expect(readOwnFile(path, "token")).toEqual({ ok: true, value: `${STRONG}\n`, warnings: [] });
  });

  it("readable by others (0644) is made 0600 and read, and the warning says so", () => {
    const path = file(tempDir(), "pairing-token", `${STRONG}\n`, 0o644);
    const result = readOwnFile(path, "token");
    expect(modeOf(path)).toBe(0o600);
    expect(result.ok && result.value).toBe(`${STRONG}\n`);
    expect(result.ok && result.warnings[0]).toContain(`${path} was readable by other users (mode 0644); tabrelay made it 0600`);
  });

  it("writable by everyone (0666) is refused, naming the file, the mode and both fixes", () => {
    const path = file(tempDir(), "mcp-token", "planted-token-0123456789abcdef\n", 0o666);
    const result = readOwnFile(path, "token");
    expect(result).toMatchObject({ ok: false, code: "writable_by_others" });
    if (result.ok) return;
    expect(result.message).toContain(path);
    expect(result.message).toContain("writable by every user (mode 0666)");
    expect(result.message).toContain(`chmod 600 ${path}`);
    expect(result.message).toContain(`rm ${path}`);
    expect(modeOf(path)).toBe(0o666); // refused, not silently fixed
  });

  it("writable by its group (0620) is refused", () => {
    const path = file(tempDir(), "mcp-token", STRONG, 0o620);
    expect(readOwnFile(path, "token")).toMatchObject({ ok: false, code: "writable_by_others" });
  });

  it("owned by another user is refused even at 0600", () => {
    const path = file(tempDir(), "mcp-token", STRONG, 0o600);
    chownSync(path, OTHER_UID, OTHER_UID);
    const result = readOwnFile(path, "token");
    expect(result).toMatchObject({ ok: false, code: "not_owner" });
    expect(!result.ok && result.message).toContain(`belongs to uid ${OTHER_UID}`);
  });

  it("a symlink to a world-writable file holding an attacker's token is refused, naming the target", () => {
    const dir = tempDir();
    const outside = file(tempDir(), "evil", "attacker-chosen-token-0123456789\n", 0o666);
    const path = join(dir, "mcp-token");
    symlinkSync(outside, path);
    const result = readOwnFile(path, "token");
    expect(result).toMatchObject({ ok: false, code: "symlink" });
    if (result.ok) return;
    expect(result.message).toContain(`${path} is a symbolic link (to ${outside})`);
    expect(result.message).toContain(`rm ${path}`);
  });

  it("a symlink is refused even to a private file, and a dangling one too", () => {
    const dir = tempDir();
    symlinkSync(file(tempDir(), "private", STRONG, 0o600), join(dir, "mcp-token"));
    symlinkSync(join(dir, "nowhere"), join(dir, "pairing-token"));
    expect(readOwnFile(join(dir, "mcp-token"), "token")).toMatchObject({ ok: false, code: "symlink" });
    expect(readOwnFile(join(dir, "pairing-token"), "token")).toMatchObject({ ok: false, code: "symlink" });
  });

  it("a FIFO or a directory is refused without hanging", () => {
    const dir = tempDir();
    execFileSync("mkfifo", [join(dir, "mcp-token")]);
    mkdirSync(join(dir, "pairing-token"));
    expect(readOwnFile(join(dir, "mcp-token"), "token")).toMatchObject({ ok: false, code: "not_regular" });
    expect(readOwnFile(join(dir, "pairing-token"), "token")).toMatchObject({ ok: false, code: "not_regular" });
  });

  it("are written 0600 into a new file, never through a link planted at the path", () => {
    const dir = tempDir();
    const target = file(tempDir(), "victim", "untouched\n", 0o666);
    const path = join(dir, "mcp-token");
    symlinkSync(target, path);
    writeSecretFile(path, `${STRONG}\n`);
    expect(readFileSync(target, "utf8")).toBe("untouched\n");
    expect(lstatSync(path).isFile()).toBe(true);
    expect(modeOf(path)).toBe(0o600);
    expect(readFileSync(path, "utf8")).toBe(`${STRONG}\n`);
  });
});

describe("config files", () => {
  it("at 0644 are read without a word (a config is not secret)", () => {
    const path = file(tempDir(), "config.yaml", "port: 1\n", 0o644);
    expect(readOwnFile(path, "config")).toEqual({ ok: true, value: "port: 1\n", warnings: [] });
    expect(modeOf(path)).toBe(0o644);
  });

  it("writable by everyone (0666) are refused with the chmod that fixes it", () => {
    const path = file(tempDir(), "config.yaml", "port: 1\n", 0o666);
    const result = readOwnFile(path, "config");
    expect(result).toMatchObject({ ok: false, code: "writable_by_others" });
    expect(!result.ok && result.message).toContain(`check its contents, then: chmod 600 ${path}`);
  });

  it("in the data dir, a symlink out of it is refused, pointing to --config", () => {
    const outside = file(tempDir(), "shared.yaml", "port: 1\n", 0o644);
    const path = join(tempDir(), "config.yaml");
    symlinkSync(outside, path);
    const result = readOwnFile(path, "config");
    expect(result).toMatchObject({ ok: false, code: "symlink" });
    expect(!result.ok && result.message).toContain(`--config ${outside}`);
  });

  it("named with --config, a symlink is followed, and the file it reaches is still checked", () => {
    const dir = tempDir();
    const good = file(dir, "good.yaml", "port: 1\n", 0o644);
    const bad = file(dir, "bad.yaml", "port: 1\n", 0o666);
    symlinkSync(good, join(dir, "good-link.yaml"));
    symlinkSync(bad, join(dir, "bad-link.yaml"));
    expect(readOwnFile(join(dir, "good-link.yaml"), "config", { followSymlink: true })).toMatchObject({ ok: true, value: "port: 1\n" });
    expect(readOwnFile(join(dir, "bad-link.yaml"), "config", { followSymlink: true })).toMatchObject({ ok: false, code: "writable_by_others" });
  });

  it("owned by another user are refused", () => {
    const path = file(tempDir(), "config.yaml", "port: 1\n", 0o644);
    chownSync(path, OTHER_UID, OTHER_UID);
    expect(readOwnFile(path, "config")).toMatchObject({ ok: false, code: "not_owner" });
  });
});

describe("token strength", () => {
  it.each([
    ["aaaaaaaaaaaaaaaa", /only 1 different character/],
    ["a".repeat(64), /only 1 different character/],
    ["ab".repeat(64), /only 2 different characters/],
    ["0123456789abcdef".repeat(4), /about 64 bits/], // a pattern repeated counts once
    ["abcdefgh12345678", /about 82 bits/],
    ["12345678901234567890", /about 33 bits/], // "1234567890" twice
    [randomBytes(15).toString("hex"), /about 120 bits/],
  ])("%s is refused", (token, reason) => {
    expect(weakTokenReason(token)).toMatch(reason);
  });

  it("what tabrelay and openssl generate passes, every time", () => {
    for (let i = 0; i < 2000; i++) {
      expect(weakTokenReason(randomBytes(24).toString("base64url"))).toBeUndefined(); // tabrelay's own
      expect(weakTokenReason(randomBytes(16).toString("hex"))).toBeUndefined(); // openssl rand -hex 16
      expect(weakTokenReason(randomBytes(32).toString("hex"))).toBeUndefined(); // openssl rand -hex 32
      expect(weakTokenReason(randomBytes(32).toString("base64"))).toBeUndefined(); // openssl rand -base64 32
    }
    expect(estimatedTokenBits(randomBytes(16).toString("hex"))).toBeGreaterThanOrEqual(128);
  });
});

describe("loadConfig", () => {
  const strongEnv = { TABRELAY_MCP_TOKEN: STRONG, TABRELAY_PAIRING_TOKEN: randomBytes(32).toString("hex") };

  it("refuses a weak token in the environment, saying how to make a good one", () => {
    const load = () => loadConfig({ dataDir: tempDir(), env: { ...strongEnv, TABRELAY_MCP_TOKEN: "aaaaaaaaaaaaaaaa" } });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/TABRELAY_MCP_TOKEN is too weak to use: .*openssl rand -hex 32/);
    expect(() => loadConfig({ dataDir: tempDir(), env: { ...strongEnv, TABRELAY_PAIRING_TOKEN: "pairingpairingpairing" } })).toThrow(
      /TABRELAY_PAIRING_TOKEN is too weak/,
    );
  });

  it("refuses a weak token someone wrote into a token file", () => {
    const dir = tempDir();
    file(dir, "mcp-token", "aaaaaaaaaaaaaaaaaaaa\n", 0o600);
    expect(() => loadConfig({ dataDir: dir, env: {} })).toThrow(/mcp-token holds a token too weak to use/);
  });

  it("replaces an empty token file with a new 0600 token", () => {
    const dir = tempDir();
    const path = file(dir, "mcp-token", "\n", 0o600);
    const config = loadConfig({ dataDir: dir, env: {} });
    expect(config.mcpToken).toMatch(/^[\w-]{32}$/);
    expect(readFileSync(path, "utf8")).toBe(`${config.mcpToken}\n`);
    expect(modeOf(path)).toBe(0o600);
  });

  it("refuses a world-writable config.yaml and a world-writable top-sites.csv", () => {
    const dir = tempDir();
    file(dir, "config.yaml", "port: 1\n", 0o666);
    expect(() => loadConfig({ dataDir: dir, env: strongEnv })).toThrow(/config\.yaml is writable by every user/);
    chmodSync(join(dir, "config.yaml"), 0o600);
    file(dir, "top-sites.csv", "rank,domain\n1,attacker.example\n", 0o666);
    expect(() => loadConfig({ dataDir: dir, env: strongEnv })).toThrow(/top-sites\.csv is writable by every user/);
    chmodSync(join(dir, "top-sites.csv"), 0o644);
    expect(loadConfig({ dataDir: dir, env: strongEnv }).policy.check("https://attacker.example/").ok).toBe(true);
  });

  it("creates the dashboard's own token beside the MCP token (0600), and takes TABRELAY_DASHBOARD_TOKEN as the others", () => {
    const dir = tempDir();
    const config = loadConfig({ dataDir: dir, env: {} });
    const path = join(dir, "dashboard-token");
    expect(config.dashboardToken).toMatch(/^[\w-]{32}$/);
    expect(config.dashboardToken).not.toBe(config.mcpToken);
    expect(readFileSync(path, "utf8")).toBe(`${config.dashboardToken}\n`);
    expect(modeOf(path)).toBe(0o600);
    expect(loadConfig({ dataDir: tempDir(), env: { ...strongEnv, TABRELAY_DASHBOARD_TOKEN: STRONG.toUpperCase() } }).dashboardToken).toBe(STRONG.toUpperCase());
    expect(() => loadConfig({ dataDir: tempDir(), env: { ...strongEnv, TABRELAY_DASHBOARD_TOKEN: "dashboarddashboard" } })).toThrow(
      /TABRELAY_DASHBOARD_TOKEN is too weak/,
    );
  });

  it("refuses a dashboard token that is the MCP token or the pairing code: agents hold the MCP token", () => {
    expect(() => loadConfig({ dataDir: tempDir(), env: { ...strongEnv, TABRELAY_DASHBOARD_TOKEN: STRONG } })).toThrow(
      /TABRELAY_DASHBOARD_TOKEN holds the MCP token: the dashboard needs a token of its own/,
    );
    const dir = tempDir();
    file(dir, "dashboard-token", `${strongEnv.TABRELAY_PAIRING_TOKEN}\n`, 0o600);
    expect(() => loadConfig({ dataDir: dir, env: strongEnv })).toThrow(
      `the token file ${join(dir, "dashboard-token")} holds the pairing code: the dashboard needs a token of its own (agents hold the MCP token); delete it`,
    );
  });

  it("reports what it fixed through warn", () => {
    const dir = tempDir();
    chmodSync(dir, 0o777);
    file(dir, "pairing-token", `${STRONG}\n`, 0o644);
    const warnings: string[] = [];
    const config = loadConfig({ dataDir: dir, env: { TABRELAY_MCP_TOKEN: STRONG }, warn: (m) => warnings.push(m) });
    expect(config.pairingToken).toBe(STRONG);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain("made it 0700");
    expect(warnings[1]).toContain("made it 0600");
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(join(dir, "pairing-token"))).toBe(0o600);
  });
});

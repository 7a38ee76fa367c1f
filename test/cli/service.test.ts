// `tabrelay service`: the files it writes (a systemd user unit, a launchd plist) into a temp HOME, checked by the
// platforms' own parsers; re-install, uninstall, and the service manager it calls when one runs.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, tabrelay, tempDir } from "./run.js";

/** A temp HOME (with a space and a % in its path: both need quoting in a unit) and its data dir. */
function home(): { home: string; dataDir: string } {
  const base = tempDir("service");
  const dir = join(base, "my home 100%");
  mkdirSync(dir);
  return { home: dir, dataDir: join(dir, ".tabrelay") };
}

/** A fake service manager on PATH that records its calls and succeeds. */
function fakeManager(program: "systemctl" | "launchctl"): { path: string; calls(): string[] } {
  const dir = tempDir("fake-manager");
  const log = join(dir, "calls.log");
  writeFileSync(join(dir, program), `#!/bin/sh\necho "$*" >> '${log}'\nexit 0\n`);
  chmodSync(join(dir, program), 0o755);
  return { path: `${dir}:${process.env["PATH"] ?? ""}`, calls: () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []) };
}

/** A PATH where the service manager is absent, as in a container (an empty directory). */
function noManagerPath(): string {
  return tempDir("no-manager");
}

const linux = (h: string, extra: Record<string, string> = {}) => ({ HOME: h, TABRELAY_INTERNAL_PLATFORM: "linux", PATH: noManagerPath(), ...extra });
const darwin = (h: string, extra: Record<string, string> = {}) => ({ HOME: h, TABRELAY_INTERNAL_PLATFORM: "darwin", PATH: noManagerPath(), ...extra });

describe("tabrelay service on Linux (systemd user unit)", () => {
  it("writes a unit that systemd-analyze verify accepts, running serve with this Node and bin, restarted on failure", async () => {
    const { home: h, dataDir } = home();
    const result = await tabrelay(["service", "install", "--port", "9555"], linux(h));
    expect(result.code, result.stderr).toBe(0);
    const unit = join(h, ".config/systemd/user/tabrelay.service");
    expect(result.stdout).toContain(`${unit}: written`);
    // Not started: no systemctl here. It says so and how to start it.
    expect(result.stdout).toContain("No systemd user manager is running here");
    expect(result.stdout).toContain("systemctl --user enable --now tabrelay");
    // The MCP block, with the data dir's token (created as serve does).
    const token = readFileSync(join(dataDir, "mcp-token"), "utf8").trim();
    expect(result.stdout).toContain(`"Authorization": "Bearer ${token}"`);
    expect(result.stdout).toContain("http://127.0.0.1:9555/mcp");

    const text = readFileSync(unit, "utf8");
    expect(text).toContain(`ExecStart=${process.execPath} `);
    expect(text).toContain(` ${CLI} serve --data-dir "${dataDir.replace("%", "%%")}" --port 9555`);
    expect(text).toContain("Restart=on-failure");
    expect(text).toContain("Environment=MALLOC_ARENA_MAX=1");

    const runtime = tempDir("xdg-runtime");
    chmodSync(runtime, 0o700);
    const verify = spawnSync("systemd-analyze", ["--user", "verify", unit], { encoding: "utf8", env: { ...process.env, HOME: h, XDG_RUNTIME_DIR: runtime } });
    expect(verify.stderr).toBe("");
    expect(verify.status).toBe(0);
  });

  it("prints the block with the data dir's token, which the service uses, not one set in this shell", async () => {
    const { home: h, dataDir } = home();
    const result = await tabrelay(["service", "install"], linux(h, { TABRELAY_MCP_TOKEN: "shell-only-token-0123456789abcdefghij" }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("TABRELAY_MCP_TOKEN is set in this shell, but the service does not inherit it");
    expect(result.stdout).not.toContain("shell-only-token");
    expect(result.stdout).toContain(`"Authorization": "Bearer ${readFileSync(join(dataDir, "mcp-token"), "utf8").trim()}"`);
  });

  it("re-installs idempotently: the same bytes, reported unchanged; other options update it", async () => {
    const { home: h } = home();
    await tabrelay(["service", "install"], linux(h));
    const unit = join(h, ".config/systemd/user/tabrelay.service");
    const first = readFileSync(unit);
    const again = await tabrelay(["service", "install"], linux(h));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`${unit}: unchanged`);
    expect(readFileSync(unit).equals(first)).toBe(true);
    const other = await tabrelay(["service", "install", "--port", "9556"], linux(h));
    expect(other.stdout).toContain(`${unit}: updated`);
    expect(readFileSync(unit, "utf8")).toContain("--port 9556");
  });

  it("uses --name for the file, and refuses a name systemd cannot take", async () => {
    const { home: h } = home();
    const named = await tabrelay(["service", "install", "--name", "tabrelay-work"], linux(h));
    expect(named.code).toBe(0);
    expect(existsSync(join(h, ".config/systemd/user/tabrelay-work.service"))).toBe(true);
    const bad = await tabrelay(["service", "install", "--name", "../evil"], linux(h));
    expect(bad.code).toBe(2);
    expect(existsSync(join(h, ".config/systemd/evil.service"))).toBe(false);
  });

  it("uninstalls only its own file: a unit without the marker is refused and left in place", async () => {
    const { home: h } = home();
    const dir = join(h, ".config/systemd/user");
    mkdirSync(dir, { recursive: true });
    const foreign = join(dir, "tabrelay.service");
    writeFileSync(foreign, "[Service]\nExecStart=/usr/bin/true\n");
    const refused = await tabrelay(["service", "uninstall"], linux(h));
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("not written by tabrelay");
    expect(readFileSync(foreign, "utf8")).toBe("[Service]\nExecStart=/usr/bin/true\n");
    // Nor is it overwritten by install.
    const install = await tabrelay(["service", "install"], linux(h));
    expect(install.code).toBe(4);
    expect(readFileSync(foreign, "utf8")).toBe("[Service]\nExecStart=/usr/bin/true\n");

    const ours = join(dir, "mine.service");
    expect((await tabrelay(["service", "install", "--name", "mine"], linux(h))).code).toBe(0);
    const removed = await tabrelay(["service", "uninstall", "--name", "mine"], linux(h));
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`${ours}: removed`);
    expect(existsSync(ours)).toBe(false);
    expect(existsSync(foreign)).toBe(true);
    expect((await tabrelay(["service", "uninstall", "--name", "mine"], linux(h))).stdout).toContain("not installed");
  });

  it("where systemd runs, enables and starts the unit, and stops it before removing it", async () => {
    const { home: h } = home();
    const manager = fakeManager("systemctl");
    const port = String(await freePort());
    const installed = await tabrelay(["service", "install", "--port", port], linux(h, { PATH: manager.path }));
    expect(installed.code, installed.stderr).toBe(0);
    expect(installed.stdout).toContain("Enabled and started");
    expect(manager.calls()).toEqual(["--user daemon-reload", "--user enable --now tabrelay"]);
    // The fake manager starts nothing: status sees the unit but no broker on its port.
    const status = await tabrelay(["service", "status", "--port", port], linux(h, { PATH: manager.path }));
    expect(status.stdout).toContain("installed, matches this Node and checkout");
    expect(status.stdout).toContain("nothing answers");
    expect(status.code).toBe(1);
    const removed = await tabrelay(["service", "uninstall"], linux(h, { PATH: manager.path }));
    expect(removed.code).toBe(0);
    expect(manager.calls().slice(-3)).toEqual(["--user daemon-reload", "--user disable --now tabrelay", "--user daemon-reload"]);
    expect(existsSync(join(h, ".config/systemd/user/tabrelay.service"))).toBe(false);
  });
});

describe("tabrelay service on macOS (launchd LaunchAgent)", () => {
  it("writes a well-formed plist with the keys launchd needs; logs in ~/Library/Logs", async () => {
    const { home: h, dataDir } = home();
    const result = await tabrelay(["service", "install"], darwin(h));
    expect(result.code, result.stderr).toBe(0);
    const path = join(h, "Library/LaunchAgents/tabrelay.plist");
    expect(result.stdout).toContain(`${path}: written`);
    expect(result.stdout).toContain(`launchctl bootstrap gui/`);
    // Python's plistlib is a strict parser of Apple's XML plist format.
    const parsed = JSON.parse(
      execFileSync("python3", ["-c", "import json,plistlib,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb'))))", path], { encoding: "utf8" }),
    );
    const log = join(h, "Library/Logs/tabrelay.log");
    expect(parsed).toEqual({
      Label: "tabrelay",
      ProgramArguments: [process.execPath, "--max-semi-space-size=1", "--optimize-for-size", "--expose-gc", CLI, "serve", "--data-dir", dataDir],
      EnvironmentVariables: { MALLOC_ARENA_MAX: "1" },
      RunAtLoad: true,
      KeepAlive: { SuccessfulExit: false },
      ThrottleInterval: 5,
      StandardOutPath: log,
      StandardErrorPath: log,
    });
    const again = await tabrelay(["service", "install"], darwin(h));
    expect(again.stdout).toContain(`${path}: unchanged`);
  });

  it("where launchd runs, bootstraps the agent, and boots it out on uninstall", async () => {
    const { home: h } = home();
    const manager = fakeManager("launchctl");
    const installed = await tabrelay(["service", "install"], darwin(h, { PATH: manager.path }));
    expect(installed.code, installed.stderr).toBe(0);
    const uid = process.getuid?.() ?? 501;
    const path = join(h, "Library/LaunchAgents/tabrelay.plist");
    // The fake answers `print` with success, so the agent counts as loaded: a changed file is booted out first.
    expect(manager.calls()).toEqual([`print gui/${uid}`, `print gui/${uid}/tabrelay`, `bootout gui/${uid}/tabrelay`, `bootstrap gui/${uid} ${path}`]);
    const removed = await tabrelay(["service", "uninstall"], darwin(h, { PATH: manager.path }));
    expect(removed.code).toBe(0);
    expect(manager.calls().at(-1)).toBe(`bootout gui/${uid}/tabrelay`);
    expect(existsSync(path)).toBe(false);
  });
});

describe("tabrelay service on Windows", () => {
  it("prints the Task Scheduler command and writes nothing", async () => {
    const { home: h } = home();
    const result = await tabrelay(["service", "install"], { HOME: h, TABRELAY_INTERNAL_PLATFORM: "win32" });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("schtasks /Create /TN tabrelay /SC ONLOGON");
    expect(result.stdout).toContain(" serve --data-dir ");
    expect(existsSync(join(h, ".config"))).toBe(false);
    expect(existsSync(join(h, "Library"))).toBe(false);
  });
});

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

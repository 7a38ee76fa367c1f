// The `tabrelay` command as a user runs it: help, version, exit codes, config validation, tokens,
// start (with the extension, and --cdp), stdio, audit, policy update-sites.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { article, call, closedPort, connectClient, MCP_TOKEN, PAIRING_TOKEN, startSite, waitFor } from "../harness.js";
import { postLogin } from "../dashboardLogin.js";
import { StubExtension } from "../stubExtension.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", env: { ...process.env, ...env }, timeout: 20_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** For commands that talk to a server in this process: spawnSync would block it. */
function runAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

function dataDir(yaml?: string): string {
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-cli-"));
  if (yaml !== undefined) writeFileSync(join(dir, "config.yaml"), yaml);
  return dir;
}

describe("help and version", () => {
  it("prints the version", () => {
    const { code, stdout } = run(["--version"]);
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("has --help for every command", () => {
    for (const command of ["serve", "stdio", "launch", "start", "pair", "policy", "dashboard-token"]) {
      const { code, stdout } = run([command, "--help"]);
      expect(code, command).toBe(0);
      expect(stdout, command).toContain(`tabrelay ${command}`);
    }
    expect(run(["--help"]).stdout).toContain("Commands:");
  });

  it("exits 2 with a hint on an unknown command or option", () => {
    const unknown = run(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("tabrelay --help");
    expect(run(["serve", "--no-such-flag"]).code).toBe(2);
    expect(run(["serve", "--port", "http"]).code).toBe(2);
  });

  it("launch --cdp refuses a broker on another machine before starting a browser, saying why", () => {
    const remote = run(["launch", "--cdp", "--headless", "--broker", "http://broker.example:9333"], {
      TABRELAY_DATA_DIR: mkdtempSync(join(tmpdir(), "tabrelay-cli-")),
    });
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain("a broker on broker.example cannot reach");
    expect(remote.stderr).not.toContain("starting"); // no browser was started
  });
});

describe("configuration is validated at start-up", () => {
  it("an unknown key stops start-up naming the file and the key", () => {
    const dir = dataDir("policy:\n  read:\n    alow:\n      x.test: ['.*']\n");
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", dir]);
    expect(code).toBe(3);
    expect(stderr).toContain(join(dir, "config.yaml"));
    expect(stderr).toContain("policy.read");
    expect(stderr).toContain("alow");
  });

  it("a bad regex stops start-up naming the key and the reason", () => {
    const dir = dataDir('policy:\n  read:\n    allow:\n      "docs.test": ["(unclosed"]\n');
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", dir]);
    expect(code).toBe(3);
    expect(stderr).toContain("docs.test");
    expect(stderr).toMatch(/regular expression/i);
  });

  it("invalid YAML and a missing --config file are named", () => {
    const dir = dataDir("policy: [unclosed\n");
    expect(run(["serve", "--port", "0", "--data-dir", dir]).stderr).toMatch(/not valid YAML/);
    const missing = run(["serve", "--port", "0", "--data-dir", dir, "--config", join(dir, "nope.yaml")]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("nope.yaml");
  });
});

describe("tokens", () => {
  it("are generated once, >= 128 bits, stored 0600, and printed with the MCP config block", async () => {
    const dir = dataDir();
    const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TABRELAY_MCP_TOKEN: "", TABRELAY_PAIRING_TOKEN: "", TABRELAY_DASHBOARD_TOKEN: "" },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await waitFor("the MCP URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1]);
      await waitFor("the dashboard's line", () => (stderr.includes("Dashboard:") ? true : undefined));
      const token = readFileSync(join(dir, "mcp-token"), "utf8").trim();
      expect(Buffer.from(token, "base64url").length).toBeGreaterThanOrEqual(16);
      expect(statSync(join(dir, "mcp-token")).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, "pairing-token")).mode & 0o777).toBe(0o600);
      expect(stderr).toContain(`"Authorization": "Bearer ${token}"`);
      const client = await connectClient(url, token);
      expect((await client.listTools()).tools.length).toBeGreaterThan(5);
      await client.close();
      // The health endpoint never shows them.
      const health = await (await fetch(`${url}/health`)).text();
      expect(health).not.toContain(token);

      // The dashboard has a token of its own: the start-up lines say where it is and never print it (they end up in
      // service logs, and with agents that start tabrelay); `tabrelay dashboard-token` prints it.
      const tokenFile = join(dir, "dashboard-token");
      const dashboardToken = readFileSync(tokenFile, "utf8").trim();
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      expect(Buffer.from(dashboardToken, "base64url").length).toBeGreaterThanOrEqual(16);
      expect(dashboardToken).not.toBe(token);
      expect(stderr).toContain(
        `Dashboard:      ${url}/  (log in with the dashboard token: \`tabrelay dashboard-token --data-dir ${dir}\` prints it (the file ${tokenFile}))`,
      );
      expect(stderr).not.toContain(dashboardToken);
      const printed = run(["dashboard-token", "--data-dir", dir], { TABRELAY_DASHBOARD_TOKEN: "" });
      expect(printed.code, printed.stderr).toBe(0);
      expect(printed.stdout).toBe(`${dashboardToken}\n`);
      expect(printed.stderr).toContain("the dashboard's login token; log in at http://127.0.0.1:");
      expect((await postLogin(url, dashboardToken)).status).toBe(303);
      expect((await postLogin(url, token)).status).toBe(401);
      // What agents are given (the MCP config block) holds the MCP token, never the dashboard's.
      const block = run(["mcp-config", "--client", "claude-code", "--data-dir", dir], { TABRELAY_MCP_TOKEN: "", TABRELAY_DASHBOARD_TOKEN: "" });
      expect(block.stdout).toContain(token);
      expect(block.stdout).not.toContain(dashboardToken);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    const again = spawnSync(process.execPath, [CLI, "pair", "--data-dir", dir], { encoding: "utf8" });
    expect(again.stdout).toContain(readFileSync(join(dir, "pairing-token"), "utf8").trim());
  });
});

describe("dashboard-token", () => {
  it("on a data dir no broker has started on yet: exit 3 saying to start tabrelay once, and nothing is created", () => {
    const dir = dataDir();
    const { code, stdout, stderr } = run(["dashboard-token", "--data-dir", dir], { TABRELAY_MCP_TOKEN: "", TABRELAY_DASHBOARD_TOKEN: "" });
    expect(code).toBe(3);
    expect(stdout).toBe("");
    expect(stderr).toContain(`no mcp-token in ${dir} yet: start tabrelay once`);
    expect(existsSync(join(dir, "dashboard-token"))).toBe(false);
  });

  it("on a data dir of an older tabrelay (an mcp-token, no dashboard-token): exit 3 saying a start creates it", () => {
    const dir = dataDir();
    writeFileSync(join(dir, "mcp-token"), `${MCP_TOKEN}\n`, { mode: 0o600 });
    const { code, stderr } = run(["dashboard-token", "--data-dir", dir], { TABRELAY_MCP_TOKEN: "", TABRELAY_DASHBOARD_TOKEN: "" });
    expect(code).toBe(3);
    expect(stderr).toContain(`no dashboard-token in ${dir} yet: start tabrelay once (tabrelay start, or tabrelay serve) and it creates one`);
    expect(existsSync(join(dir, "dashboard-token"))).toBe(false);
  });

  it("refuses a dashboard token that is the MCP token: one secret for both doors would let an agent in", () => {
    const dir = dataDir();
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", dir], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_DASHBOARD_TOKEN: MCP_TOKEN });
    expect(code).toBe(3);
    expect(stderr).toContain("TABRELAY_DASHBOARD_TOKEN holds the MCP token: the dashboard needs a token of its own");
    expect(stderr).not.toContain(MCP_TOKEN);
  });
});

describe("serve", () => {
  it("says the port is taken, with exit code 4", async () => {
    const site = await startSite();
    const { code, stderr } = run(["serve", "--port", String(site.port), "--data-dir", dataDir()]);
    await site.close();
    expect(code).toBe(4);
    expect(stderr).toMatch(/already in use/);
  });
});

/**
 * `tabrelay start --headless` on `dataDir` (port 0), as a user runs it; `client(what)` connects with the URL and token
 * it printed and waits for its browser to be connected.
 */
function startCli(dataDir: string) {
  const child = spawn(process.execPath, [CLI, "start", "--headless", "--port", "0", "--data-dir", dataDir], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return {
    async client(what: string, { waitForBrowser = true } = {}) {
      const url = await waitFor("the MCP URL on stderr", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1], 20_000);
      const token = await waitFor("the token on stderr", () => /"Authorization": "Bearer ([^"]+)"/.exec(stderr)?.[1]);
      const client = await connectClient(url, token);
      if (waitForBrowser) await waitFor(what, async () => ((await call(client, "list_browsers")).text.includes("connected:") ? true : undefined), 20_000);
      return client;
    },
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

// `tabrelay start` with the extension; browser lifecycle under start --cdp is in lifecycle.test.ts.
describe("start", () => {
  it("starts broker + headless Chromium and serves a read from the printed config, the agent's first call included", async () => {
    const site = await startSite();
    site.route("/article", article("Rivers of the North", 60, "This is the closing paragraph of the article."));
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-start-"));
    writeFileSync(join(dataDir, "config.yaml"), `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
    const started = startCli(dataDir);
    try {
      // Called as soon as the endpoint is printed, before the browser connected: it waits for the browser.
      const startClient = await started.client("a browser", { waitForBrowser: false });
      const read = await call(startClient, "read_url", { url: `${site.origin}/article` });
      expect(read.text).toContain("This is the closing paragraph of the article.");
      await startClient.close();
    } finally {
      await started.stop();
      await site.close();
    }
  }, 60_000);
});

describe("extension", () => {
  it("names the bundled extension's folder, version and id, copies it where asked, and writes nothing else", () => {
    const home = mkdtempSync(join(tmpdir(), "tabrelay-home-"));
    const shown = run(["extension"], { HOME: home });
    expect(shown.code).toBe(0);
    const folder = /\n {2}(\/\S+)\n/.exec(shown.stdout)?.[1] ?? "";
    const version = JSON.parse(readFileSync(join(folder, "manifest.json"), "utf8")).version;
    expect(shown.stdout).toContain(`tabrelay's Chrome extension ${version}`);
    expect(shown.stdout).toContain("id bkcjhkpmfjmfjkljdlooigoilajjfhpb");
    expect(shown.stdout).toContain('"Load unpacked"');
    const out = join(home, "tabrelay-extension");
    const copied = run(["extension", "--out", out], { HOME: home });
    expect(copied.code).toBe(0);
    expect(readFileSync(join(out, "manifest.json"), "utf8")).toBe(readFileSync(join(folder, "manifest.json"), "utf8"));
    expect(run(["extension", "--out", out], { HOME: home }).code).toBe(0); // an earlier copy is replaced
    writeFileSync(join(home, "notes.txt"), "mine");
    const refused = run(["extension", "--out", home], { HOME: home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("is not empty and holds no earlier copy of the extension");
    expect(existsSync(join(home, ".tabrelay"))).toBe(false); // no token, no data dir
  });
});

describe("extension --firefox and the --firefox options", () => {
  it("names the Firefox build (its add-on id, how to load it) and copies it where asked", () => {
    const home = mkdtempSync(join(tmpdir(), "tabrelay-home-"));
    const shown = run(["extension", "--firefox"], { HOME: home });
    expect(shown.code).toBe(0);
    const folder = /\n {2}(\/\S+)\n/.exec(shown.stdout)?.[1] ?? "";
    const manifest = JSON.parse(readFileSync(join(folder, "manifest.json"), "utf8"));
    expect(manifest.browser_specific_settings.gecko.id).toBe("extension@tabrelay");
    expect(shown.stdout).toContain(`tabrelay's Firefox extension ${manifest.version}`);
    expect(shown.stdout).toContain("add-on id extension@tabrelay");
    expect(shown.stdout).toContain("about:debugging#/runtime/this-firefox");
    const out = join(home, "tabrelay-firefox");
    expect(run(["extension", "--firefox", "--out", out], { HOME: home }).code).toBe(0);
    expect(readFileSync(join(out, "background.js"), "utf8")).toBe(readFileSync(join(folder, "background.js"), "utf8"));
    expect(existsSync(join(home, ".tabrelay"))).toBe(false);
  });

  it("refuses --firefox with options only Chromium takes, before anything starts, saying which", () => {
    const home = mkdtempSync(join(tmpdir(), "tabrelay-home-"));
    for (const [args, said] of [
      [["start", "--firefox", "--cdp"], "--cdp drives Chromium"],
      [["launch", "--firefox", "--chromium", "/usr/bin/chromium"], "with --firefox use --firefox-path"],
      [["launch", "--firefox-path", "/usr/bin/firefox-esr"], "add --firefox"],
    ] as const) {
      const refused = run([...args], { HOME: home });
      expect(refused.code, args.join(" ")).not.toBe(0);
      expect(refused.stderr, args.join(" ")).toContain(said);
    }
    expect(existsSync(join(home, ".tabrelay"))).toBe(false);
    const missing = run(["start", "--firefox", "--firefox-path", "/nowhere/firefox"], { HOME: home });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("no browser at /nowhere/firefox (from --firefox-path)");
  });
});

describe("start again", () => {
  // Chrome keeps a service worker's imported scripts with its registration across restarts: a seed read that way
  // (importScripts) made the second start's browser dial the first one's port for good.
  it("a second start on the same data dir, on another port, pairs its browser again", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-restart-"));
    writeFileSync(join(dataDir, "config.yaml"), `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
    for (let round = 0; round < 2; round++) {
      const started = startCli(dataDir);
      try {
        await (await started.client(`the browser of start ${round + 1}`)).close();
      } finally {
        await started.stop();
      }
    }
  }, 90_000);
});

describe("start --cdp", () => {
  it("serves reads over CDP, and on stop shuts its browser down and removes the temporary profile", async () => {
    const { readdirSync } = await import("node:fs");
    // The command's own temp dir: other test files start CDP browsers with profiles of their own at the same time.
    const tmp = mkdtempSync(join(tmpdir(), "tabrelay-cli-tmp-"));
    const profiles = () => readdirSync(tmp).filter((n) => n.startsWith("tabrelay-cdp-"));
    const site = await startSite();
    site.route("/hello", "<html><head><title>Hello</title></head><body><p>Hello over CDP.</p></body></html>");
    const dir = dataDir(`policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
    const child = spawn(process.execPath, [CLI, "start", "--cdp", "--headless", "--port", "0", "--data-dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TMPDIR: tmp },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const url = await waitFor("the MCP URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1], 20_000);
      const client = await connectClient(url);
      expect((await call(client, "list_browsers")).text).toContain("kind: cdp");
      expect(profiles()).toHaveLength(1);
      expect((await call(client, "read_url", { url: `${site.origin}/hello` })).text).toContain("Hello over CDP.");
      await client.close();
      expect(stderr).not.toMatch(/ws:\/\/[^\s]*devtools/);
    } finally {
      child.kill("SIGTERM");
      await exited;
      await site.close();
    }
    expect(profiles()).toEqual([]);
    rmSync(tmp, { recursive: true, force: true });
  }, 60_000);
});

describe("serve with a hosted browser", () => {
  it("names the missing API key and exits 3 before contacting anyone", () => {
    const { code, stderr } = run(["serve", "--port", "0", "--data-dir", dataDir(), "--provider", "browserbase"], { BROWSERBASE_API_KEY: "" });
    expect(code).toBe(3);
    expect(stderr).toContain("BROWSERBASE_API_KEY");
    expect(run(["serve", "--port", "0", "--data-dir", dataDir(), "--provider", "nope"]).code).toBe(2);
  });
});

describe("launch", () => {
  it("says clearly when no browser is found", () => {
    const { code, stderr } = run(["launch", "--headless", "--data-dir", dataDir()], { CHROME_PATH: "/nonexistent/chrome" });
    expect(code).toBe(4);
    expect(stderr).toContain("/nonexistent/chrome");
  });
});

describe("pair", () => {
  it("prints the extension folder, the broker URL and the pairing code", () => {
    const dir = dataDir();
    const { code, stdout } = run(["pair", "--port", "9444", "--data-dir", dir], { TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN });
    expect(code).toBe(0);
    expect(stdout).toContain("ws://127.0.0.1:9444/bridge");
    expect(stdout).toContain(PAIRING_TOKEN);
    const folder = /Load unpacked.*\n\s+(\S+)/.exec(stdout)?.[1] ?? "";
    expect(existsSync(join(folder, "manifest.json"))).toBe(true);
  });
});

describe("stdio", () => {
  it("serves MCP on stdout (nothing else) and accepts browsers on the bridge", async () => {
    const port = await closedPort();
    const dir = dataDir();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "stdio", "--port", String(port), "--data-dir", dir],
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
      stderr: "pipe",
    });
    const client = new Client({ name: "stdio-test", version: "0" });
    await client.connect(transport);
    expect((await call(client, "list_browsers")).text).toContain("No browser is connected");
    const stub = await waitFor("the bridge to listen", async () => {
      const s = new StubExtension({ port, label: "stdio stub", handlers: { "tabs.list": () => ({ tabs: [] }) } });
      try {
        await s.opened;
        await s.welcomed;
        return s;
      } catch {
        return undefined;
      }
    });
    expect((await call(client, "list_browsers")).text).toContain("stdio stub");
    expect((await call(client, "list_tabs")).text).toContain("No agent tabs");
    stub.close();
    await client.close();
    // The broker tabrelay stdio started in the background outlives its agent by design (it ends after 5 idle
    // minutes); this test's one goes now.
    const shared = JSON.parse(readFileSync(join(dir, "shared-broker.json"), "utf8")) as { pid: number };
    process.kill(shared.pid, "SIGTERM");
  });
});

describe("audit", () => {
  it("prints one line per tool call with its decision, and JSON on request", async () => {
    const dir = dataDir();
    const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await waitFor("the MCP URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1]);
      const client = await connectClient(url);
      await call(client, "read_url", { url: "https://evil.test/\r\nforged line" });
      await call(client, "list_browsers");
      await client.close();
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    const text = run(["audit", "--data-dir", dir]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/refused .*read_url/);
    expect(lines[1]).toMatch(/allowed .*list_browsers/);
    const json = run(["audit", "--json", "--data-dir", dir]);
    const records = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(records[0].decision).toBe("refused");
    expect(records[0].code).toBe("policy_denied");
    expect(text.stdout).not.toContain(MCP_TOKEN);
  });
});

describe("policy update-sites", () => {
  it("replaces the ranking from a Tranco-style CSV served over HTTP, and the policy follows it", async () => {
    const site = await startSite();
    site.route("/top.csv", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/csv" });
      res.end("1,first-ranked.test\n2,Second-Ranked.TEST.\n");
    });
    site.route("/bad.csv", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/csv" });
      res.end("1,first.test\nnot a domain, at all\n");
    });
    const dir = dataDir();
    const ok = await runAsync(["policy", "update-sites", "--url", `${site.origin}/top.csv`, "--data-dir", dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("Saved 2 domains");
    expect(readFileSync(join(dir, "top-sites.csv"), "utf8")).toContain("2,second-ranked.test");
    const bad = await runAsync(["policy", "update-sites", "--url", `${site.origin}/bad.csv`, "--data-dir", dir]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/line 2/);
    expect(readFileSync(join(dir, "top-sites.csv"), "utf8")).toContain("second-ranked.test");
    const missing = await runAsync(["policy", "update-sites", "--url", `${site.origin}/missing.csv`, "--data-dir", dir]);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain("unchanged");
    await site.close();

    // The broker now reads with the new ranking: a read of a listed host passes the policy (and fails only
    // because no browser is connected); google.com is no longer on the list.
    const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await waitFor("the MCP URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1]);
      const client = await connectClient(url);
      expect((await call(client, "read_url", { url: "https://www.second-ranked.test/" })).text).toMatch(/^not_connected:/);
      expect((await call(client, "read_url", { url: "https://google.com/" })).text).toMatch(/^policy_denied:/);
      await client.close();
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});

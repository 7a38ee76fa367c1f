// Browser lifecycle through the real CLI and the real MCP client: a browser tabrelay started for itself
// is always shut down with its temporary profile (after failed calls, on SIGTERM, on SIGINT mid-call, when
// the browser dies mid-call); a browser tabrelay attached to is left running and usable.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchLocalChromium } from "../../packages/broker/src/index.js";
import { auditRows, call, closedPort, connectClient, MCP_TOKEN, presetDownloadFolder, startBroker, startSite, waitFor, type TestSite } from "../harness.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

let site: TestSite;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/hello", "<html><head><title>Hello</title></head><body><p>Hello over CDP.</p></body></html>");
  site.route("/user", "<html><head><title>User tab</title></head><body><p>Mine.</p></body></html>");
  // The server accepts the connection, then resets it: the page fails to load.
  site.route("/reset", (req) => req.socket.resetAndDestroy());
  site.route("/download", (_req, res) => {
    res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Disposition": 'attachment; filename="report.bin"' });
    res.end("a file");
  });
  site.route("/slow", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.write("<html><head><title>Slow</title></head><body><p>Loading");
    // Never finishes: the call is still in flight when the test stops something.
  });
});

afterAll(async () => {
  await site?.close();
});

interface RunningCli {
  child: ChildProcess;
  client: Client;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  /** Its data dir (removed when it exits). */
  dataDir: string;
}

async function startCli(args: string[]): Promise<RunningCli> {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-lifecycle-"));
  writeFileSync(join(dataDir, "config.yaml"), `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
  const child = spawn(process.execPath, [CLI, ...args, "--port", "0", "--data-dir", dataDir], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN },
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, signal });
    }),
  );
  try {
    const url = await waitFor("the MCP endpoint on stderr", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1], 30_000);
    return { child, client: await connectClient(url), exited, stderr: () => stderr, dataDir };
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${stderr.slice(-1500)}`, { cause: error });
  }
}

// ---- processes, read from /proc ----------------------------------------------------------------------

function parentOf(pid: number): { ppid: number; state: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(ppid), state: state ?? "" };
  } catch {
    return undefined;
  }
}

/** Every process below `root`, found by walking parent ids. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    const parent = Number.isInteger(pid) ? parentOf(pid) : undefined;
    if (parent) children.set(parent.ppid, [...(children.get(parent.ppid) ?? []), pid]);
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() ?? -1) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Chromium's helpers rewrite their command line as one space-separated string. */
function argsOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split(/[\0 ]/);
  } catch {
    return [];
  }
}

/** A process that exited and was reaped, or a zombie nobody reaped yet, is gone. */
function running(pid: number): boolean {
  const stat = parentOf(pid);
  return stat !== undefined && stat.state !== "Z";
}

interface ChromiumTree {
  browserPid: number;
  /** The browser and its helpers (zygotes, renderers, GPU, network service). */
  pids: number[];
  profileDir: string;
}

/** The Chromium that the CLI started: its browser process, every helper, and its profile folder. */
async function chromiumOf(cliPid: number, { renderer = true } = {}): Promise<ChromiumTree> {
  return waitFor("the CLI's Chromium and its helpers", () => {
    const pids = descendants(cliPid).filter((pid) => argsOf(pid).some((a) => a.includes("chromium")));
    const browserPid = pids.find((pid) => {
      const args = argsOf(pid);
      return args.some((a) => a.startsWith("--remote-debugging-port")) && !args.some((a) => a.startsWith("--type="));
    });
    const profileDir =
      browserPid === undefined
        ? undefined
        : argsOf(browserPid)
            .find((a) => a.startsWith("--user-data-dir="))
            ?.slice("--user-data-dir=".length);
    // A renderer exists once a page was loaded; the helpers it needs are up by then.
    if (browserPid === undefined || !profileDir || (renderer && !pids.some((pid) => argsOf(pid).includes("--type=renderer")))) return undefined;
    return { browserPid, pids, profileDir };
  });
}

async function expectShutDown(tree: ChromiumTree): Promise<void> {
  // Give stray helpers a moment: they exit once the browser's IPC channel closes.
  const left = await waitFor("every Chromium process to exit", () => (tree.pids.some(running) ? undefined : []), 5000).catch(() => tree.pids.filter(running));
  expect(left, `still running: ${left.map((pid) => argsOf(pid).slice(0, 2).join(" ")).join("; ")}`).toEqual([]);
  expect(existsSync(tree.profileDir), `${tree.profileDir} is still there`).toBe(false);
}

async function devtoolsAnswers(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/json/version`, { signal: AbortSignal.timeout(3000) });
    const body: unknown = await response.json();
    return !!body && typeof body === "object" && typeof Reflect.get(body, "webSocketDebuggerUrl") === "string";
  } catch {
    return false;
  }
}

async function pageTitles(port: number): Promise<string[]> {
  const response = await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(3000) });
  const body: unknown = await response.json();
  return Array.isArray(body) ? body.map((t: unknown) => (t && typeof t === "object" ? String(Reflect.get(t, "title")) : "")) : [];
}

// ---- a browser of tabrelay's own --------------------------------------------------------------------

describe("tabrelay start --cdp --headless", () => {
  it("after failed calls, SIGTERM shuts its browser down with every helper and removes the temporary profile", async () => {
    const cli = await startCli(["start", "--cdp", "--headless"]);
    let tree: ChromiumTree | undefined;
    try {
      // A tab left open, so its renderer is part of what must go.
      expect((await call(cli.client, "open_tab", { url: `${site.origin}/hello` })).text).toContain("Opened tab");
      tree = await chromiumOf(cli.child.pid ?? -1);
      const reset = await call(cli.client, "read_url", { url: `${site.origin}/reset` });
      expect(reset.isError).toBe(true);
      expect(reset.text).toMatch(/^navigation_failed: .*ERR_CONNECTION_RESET/);
      const denied = await call(cli.client, "read_url", { url: `http://localhost:${site.port}/hello` });
      expect(denied.text).toMatch(/^policy_denied:/);
      await cli.client.close();
    } finally {
      cli.child.kill("SIGTERM");
    }
    expect(await cli.exited).toEqual({ code: 0, signal: null });
    await expectShutDown(tree);
  }, 60_000);

  it("SIGINT with a call in flight fails the call, shuts the browser down and removes the profile", async () => {
    const cli = await startCli(["start", "--cdp", "--headless"]);
    let tree: ChromiumTree | undefined;
    try {
      const pending = call(cli.client, "read_url", { url: `${site.origin}/slow` });
      tree = await chromiumOf(cli.child.pid ?? -1);
      await new Promise((r) => setTimeout(r, 500));
      cli.child.kill("SIGINT");
      // Answered before the broker goes (the SDK's client would otherwise wait for its 60 s timeout).
      expect((await pending).text).toMatch(/^browser_disconnected:/);
      expect(await cli.exited).toEqual({ code: 0, signal: null });
    } finally {
      cli.child.kill("SIGKILL");
      await cli.client.close().catch(() => undefined);
    }
    await expectShutDown(tree);
  }, 60_000);

  it("a browser killed mid-call fails the call with browser_disconnected; tabrelay exits and leaves nothing behind", async () => {
    const cli = await startCli(["start", "--cdp", "--headless"]);
    let tree: ChromiumTree | undefined;
    try {
      const pending = call(cli.client, "read_url", { url: `${site.origin}/slow` });
      tree = await chromiumOf(cli.child.pid ?? -1);
      await new Promise((r) => setTimeout(r, 500));
      process.kill(tree.browserPid, "SIGKILL");
      const result = await pending;
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(/^browser_disconnected:/);
      // Without its browser `tabrelay start` has nothing to serve: it stops, with a failure exit code.
      expect((await cli.exited).code).toBe(1);
      expect(cli.stderr()).toContain("the browser exited");
    } finally {
      cli.child.kill("SIGKILL");
      await cli.client.close().catch(() => undefined);
    }
    await expectShutDown(tree);
  }, 60_000);
});

// ---- a browser tabrelay attached to ------------------------------------------------------------------

describe("tabrelay serve --cdp-url", () => {
  it("cancels the downloads the agent's tabs start, and only those, in the user's browser", async () => {
    const profileDir = mkdtempSync(join(tmpdir(), "tabrelay-attached-"));
    const downloads = presetDownloadFolder(profileDir);
    const browser = await launchLocalChromium({ chromiumPath: findChromium(), headless: true, profileDir });
    const port = Number(new URL(browser.endpoint).port);
    const cli = await startCli(["serve", "--cdp-url", `http://127.0.0.1:${port}`]);
    try {
      const result = await call(cli.client, "read_url", { url: `${site.origin}/download` });
      expect(result.text).toMatch(/^navigation_failed: .*download/);
      await new Promise((r) => setTimeout(r, 1500));
      expect(readdirSync(downloads)).toEqual([]);
      // The user's own download in the same browser still lands where the user's downloads go.
      await fetch(`http://127.0.0.1:${port}/json/new?${site.origin}/download`, { method: "PUT" });
      await waitFor("the user's download to be saved", () => (readdirSync(downloads).includes("report.bin") ? true : undefined), 10_000);
      // The agent's stopped download is in the audit log; the user's is not.
      const records = auditRows({ dataDir: cli.dataDir }, "download");
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ decision: "refused", origin: site.origin, target: "download stopped before it began: nothing saved" });
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
      await cli.client.close().catch(() => undefined);
      await browser.close();
      // Best effort: Chromium's helpers may still be writing into the profile for a while after it exits.
      try {
        rmSync(profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      } catch {
        // left in the temp dir
      }
    }
  }, 60_000);

  it("leaves an attached browser running, with the user's tab, after a failed call and after tabrelay stops", async () => {
    const browser = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    const port = Number(new URL(browser.endpoint).port);
    try {
      // The user's own tab, opened before tabrelay attaches: not the agent's, and never closed by it.
      await fetch(`http://127.0.0.1:${port}/json/new?${site.origin}/user`, { method: "PUT" });
      await waitFor("the user's tab to load", async () => ((await pageTitles(port)).includes("User tab") ? true : undefined));
      const cli = await startCli(["serve", "--cdp-url", `http://127.0.0.1:${port}`]);
      try {
        expect((await call(cli.client, "list_tabs")).text).toContain("No agent tabs");
        expect((await call(cli.client, "read_page", { tab: 1 })).text).toMatch(/^not_agent_tab:/);
        const reset = await call(cli.client, "read_url", { url: `${site.origin}/reset` });
        expect(reset.text).toMatch(/^navigation_failed: .*ERR_CONNECTION_RESET/);
        // A call still in flight when tabrelay stops.
        const pending = call(cli.client, "read_url", { url: `${site.origin}/slow` });
        await new Promise((r) => setTimeout(r, 500));
        cli.child.kill("SIGTERM");
        expect((await pending).text).toMatch(/^browser_disconnected:/);
      } finally {
        cli.child.kill("SIGTERM");
      }
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      await cli.client.close().catch(() => undefined);
      expect(running(browser.process.pid ?? -1)).toBe(true);
      expect(await devtoolsAnswers(port)).toBe(true);
      expect(await pageTitles(port)).toContain("User tab");
      // Pages opened after tabrelay let go load at once: none waits for a debugger that has gone.
      await fetch(`http://127.0.0.1:${port}/json/new?${site.origin}/hello`, { method: "PUT" });
      await waitFor("a new page to load after tabrelay stopped", async () => ((await pageTitles(port)).includes("Hello") ? true : undefined), 10_000);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

// ---- a browser launched on its own and handed to a running broker ------------------------------------

describe("POST /browsers (what launch --cdp calls)", () => {
  it("gives the same browser for the same endpoint, also when two hand-overs race", async () => {
    const broker = await startBroker();
    const browser = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    try {
      const post = () =>
        fetch(`${broker.url}/browsers`, {
          method: "POST",
          headers: { Authorization: `Bearer ${MCP_TOKEN}`, "Content-Type": "application/json" },
          body: JSON.stringify({ endpoint: browser.endpoint, label: "handed over" }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { id?: string } }));
      const [a, b] = await Promise.all([post(), post()]);
      const again = await post();
      expect([a.status, b.status].sort()).toEqual([200, 201]);
      expect(again.status).toBe(200);
      expect(new Set([a.body.id, b.body.id, again.body.id]).size).toBe(1);
      expect(broker.broker.registry.list().map((d) => d.info.label)).toEqual(["handed over"]);
      // The broker did not start it: stopping the broker leaves it running.
      await broker.close();
      expect(await devtoolsAnswers(Number(new URL(browser.endpoint).port))).toBe(true);
    } finally {
      await broker.close().catch(() => undefined);
      await browser.close();
    }
  }, 60_000);
});

describe("tabrelay launch --cdp", () => {
  it("hands its browser to the running broker, again after the broker restarts, and closes it on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-handover-"));
    writeFileSync(join(dataDir, "config.yaml"), `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
    const env = { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN };
    const spawnCli = (args: string[]) => {
      const child = spawn(process.execPath, [CLI, ...args, "--data-dir", dataDir], { stdio: ["ignore", "ignore", "pipe"], env });
      let stderr = "";
      child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      return { child, exited, stderr: () => stderr };
    };
    const serve = async (port: number) => {
      const server = spawnCli(["serve", "--port", String(port)]);
      const url = await waitFor("the MCP endpoint on stderr", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(server.stderr())?.[1], 30_000);
      return { ...server, url };
    };
    // The launcher starts first: it waits for the broker, as the extension does.
    const port = await closedPort();
    const launcher = spawnCli(["launch", "--cdp", "--headless", "--port", String(port)]);
    let first: Awaited<ReturnType<typeof serve>> | undefined;
    let second: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      await waitFor("the launcher to wait for the broker", () => (/no broker answers at/.test(launcher.stderr()) ? true : undefined), 30_000);
      first = await serve(port);
      const client = await connectClient(first.url);
      await waitFor(
        "the launched browser to be handed over",
        async () => ((await call(client, "list_browsers")).text.includes("launched Chromium (CDP)") ? true : undefined),
        20_000,
      );
      const read = await call(client, "read_url", { url: `${site.origin}/hello` });
      expect(read.isError).toBe(false);
      expect(read.text).toContain("Hello over CDP.");
      await client.close();
      // The broker goes away and comes back on the same port: the launcher hands the browser over again.
      first.child.kill("SIGTERM");
      expect(await first.exited).toEqual({ code: 0, signal: null });
      const tree = await chromiumOf(launcher.child.pid ?? -1, { renderer: false });
      expect(running(tree.browserPid)).toBe(true); // the broker never kills a browser it did not start
      second = await serve(port);
      const again = await connectClient(second.url);
      await waitFor(
        "the browser to be handed over again",
        async () => ((await call(again, "list_browsers")).text.includes("launched Chromium (CDP)") ? true : undefined),
        20_000,
      );
      expect((await call(again, "read_url", { url: `${site.origin}/hello` })).text).toContain("Hello over CDP.");
      // Ctrl-C on the launcher: its browser and temporary profile go, and the broker forgets the browser.
      launcher.child.kill("SIGTERM");
      expect((await launcher.exited).code).toBe(0);
      await expectShutDown(tree);
      await waitFor(
        "the broker to forget the browser",
        async () => ((await call(again, "list_browsers")).text.includes("launched Chromium") ? undefined : true),
        10_000,
      );
      await again.close();
    } finally {
      launcher.child.kill("SIGKILL");
      first?.child.kill("SIGKILL");
      second?.child.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  it("refuses to run with a token the broker does not accept, and closes the browser it started", async () => {
    const server = await startCli(["serve"]);
    const port = Number(/MCP endpoint:\s+http:\/\/[^:]+:(\d+)\/mcp/.exec(server.stderr())?.[1]);
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-handover-"));
    const profileDir = join(dataDir, "profile");
    const browsersOnProfile = () =>
      readdirSync("/proc").filter((pid) => /^\d+$/.test(pid) && running(Number(pid)) && argsOf(Number(pid)).includes(`--user-data-dir=${profileDir}`));
    try {
      const launcher = spawn(process.execPath, [CLI, "launch", "--cdp", "--headless", "--profile", profileDir, "--port", String(port), "--data-dir", dataDir], {
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...process.env, TABRELAY_MCP_TOKEN: "a-different-token-0123456789abcdef0123" },
      });
      let stderr = "";
      launcher.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      const exit = await Promise.race([
        new Promise<number | null>((resolve) => launcher.once("exit", (code) => resolve(code))),
        new Promise<string>((resolve) => setTimeout(() => resolve("still running after 30 s"), 30_000)),
      ]).finally(() => launcher.kill("SIGKILL"));
      expect(exit).toBe(3); // configuration
      // The broker cannot prove it knows the launcher's token, so the launcher sends it nothing.
      expect(stderr).toMatch(
        /did not prove it knows this MCP token \(a broker with another --data-dir or TABRELAY_MCP_TOKEN, a tabrelay older than this client, or another program on that port\); the token was not sent/,
      );
      expect(stderr).toContain("over CDP with profile"); // it did start a browser
      const left = await waitFor("the browser it started to exit", () => (browsersOnProfile().length ? undefined : []), 5000).catch(() => browsersOnProfile());
      expect(left).toEqual([]);
      expect((await call(server.client, "list_browsers")).text).not.toContain("launched Chromium");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

// Browsers the model manages (issue 13): a real broker whose config names `browsers.source: local`, so browser_start
// launches a real headless Chromium (launch/cdpChromium.ts) and attaches it over CDP; driven through the real MCP
// SDK client. Checked: start -> open and read a local page in it -> the live view's link serves a PNG -> list -> stop
// (the Chromium process exits) -> stop again is fine; browser_run with browser "new" leaves no process behind, also
// when the program throws and when the client cancels the call; the session cap; idle stop (and calls keeping a browser
// alive); the broker's close stops the rest; no CDP endpoint in any result, audit row or log line; a source that cannot
// start; config validation; without a source the tools are not listed.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Broker, loadConfig, type Logger } from "../../packages/broker/src/index.js";
import { sessionTools } from "../../packages/broker/src/tools/sessions.js";
import { errorScopeOf, errorsSentence } from "../../packages/broker/src/tools/tool.js";
import { ERROR_CODES } from "../../packages/protocol/src/index.js";
import {
  allowYaml,
  auditRows,
  call,
  connectClient,
  launchBrowser,
  makeDataDir,
  MCP_TOKEN,
  page,
  PAIRING_TOKEN,
  startBroker,
  startSite,
  waitFor,
  type TestSite,
} from "../harness.js";

interface Started {
  broker: Broker;
  url: string;
  dataDir: string;
  logs: string[];
}

async function startWithSource(extra: string): Promise<Started> {
  const dataDir = makeDataDir(allowYaml(`screenshots:\n  enabled: true\nbrowsers:\n  source: local\n${extra}`));
  const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN } });
  const logs: string[] = [];
  const log: Logger = { info: (m) => logs.push(`info ${m}`), warn: (m) => logs.push(`warn ${m}`), error: (m) => logs.push(`error ${m}`) };
  const broker = new Broker({ config, log });
  const { url } = await broker.listen();
  return { broker, url, dataDir, logs };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid of the local Chromium the broker logged starting for this browser id. */
function pidOf(logs: string[], id: string): number {
  const line = logs.find((l) => l.includes(`(${id}, pid `));
  const pid = Number(/pid (\d+)/.exec(line ?? "")?.[1]);
  expect(pid, `no start line for ${id} in ${logs.join("\n")}`).toBeGreaterThan(0);
  return pid;
}

function startedPids(logs: string[]): number[] {
  return logs.flatMap((l) => [...(/sessions: started .*pid (\d+)/g.exec(l) ?? [])].slice(1).map(Number));
}

async function gone(pid: number): Promise<void> {
  await waitFor(`process ${pid} to exit`, () => (alive(pid) ? undefined : true), 15_000);
}

function idOf(text: string): string {
  const id = /Started browser (cdp-[0-9a-f-]+)/.exec(text)?.[1];
  expect(id, text).toBeDefined();
  return id ?? "";
}

const CDP_URL = /wss?:\/\/[^\s"]*devtools|devtools\/browser\//i;

let site: TestSite;
let main: Started;
let client: Client;
const texts: string[] = [];

async function callText(name: string, args: Record<string, unknown> = {}): Promise<{ text: string; isError: boolean }> {
  const result = await call(client, name, args);
  texts.push(result.text);
  return result;
}

beforeAll(async () => {
  site = await startSite();
  site.route("/hello", page("Hello sessions", "<h1>Hello from a started browser</h1><p>The closing line.</p><button>Press</button>"));
  main = await startWithSource("  max_sessions: 2\n");
  client = await connectClient(main.url);
});

afterAll(async () => {
  await client?.close();
  await main?.broker.close();
  await site?.close();
});

describe("with browsers.source: local", () => {
  it("lists the four tools, and each names only codes of the one table", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ["browser_start", "browser_stop", "browser_list_sessions", "browser_live_view"]) expect(names).toContain(name);
    for (const tool of sessionTools) {
      for (const code of tool.errors) expect(ERROR_CODES).toContain(code);
      const sentence = errorsSentence(tool.errors, errorScopeOf(tool));
      if (sentence) expect(tool.description.endsWith(` ${sentence}`), tool.name).toBe(true);
    }
    // What the four add to tools/list with a source configured (the default list, without one, is unchanged).
    const added = JSON.stringify(tools.filter((t) => sessionTools.some((s) => s.name === t.name))).length;
    expect(added).toBeLessThan(1800);
  });

  it("start -> open and read a local page -> live view PNG -> list -> stop (the process exits) -> stop again", async () => {
    const start = await callText("browser_start");
    expect(start.isError, start.text).toBe(false);
    const id = idOf(start.text);
    const pid = pidOf(main.logs, id);
    expect(alive(pid)).toBe(true);

    const opened = await callText("open_tab", { url: `${site.origin}/hello`, browser: id });
    expect(opened.isError, opened.text).toBe(false);
    const tab = Number(/tab (\d+)/i.exec(opened.text)?.[1]);
    const snap = await callText("snapshot", { tab, browser: id });
    expect(snap.text).toContain("Press");
    const read = await callText("read_page", { tab, browser: id });
    expect(read.text).toContain("The closing line.");

    const view = await callText("browser_live_view", { browser: id });
    expect(view.isError, view.text).toBe(false);
    const link = /(http:\/\/\S+\/shots\/\S+)/.exec(view.text)?.[1];
    expect(link, view.text).toBeDefined();
    const png = await fetch(link ?? "");
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    expect([...new Uint8Array(await png.arrayBuffer()).slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(view.text).toContain("no live-view page");

    const list = await callText("browser_list_sessions");
    expect(list.text).toContain(`id: ${id}`);
    expect(list.text).toContain("source: local");
    expect(list.text).toMatch(/idle: \d+ s/);

    const stop = await callText("browser_stop", { browser: id });
    expect(stop.isError, stop.text).toBe(false);
    expect(stop.text).toContain(`Stopped browser ${id}`);
    await gone(pid);
    expect(main.broker.registry.list().some((b) => b.info.browserId === id)).toBe(false);
    const again = await callText("browser_stop", { browser: id });
    expect(again.isError, again.text).toBe(false);
    expect(again.text).toContain("already stopped");
    expect((await callText("browser_list_sessions")).text).toContain("No started browser");
  });

  it("refuses to stop or live-view a browser it did not start (an attached one keeps running)", async () => {
    const { launchLocalChromium, findChromium } = await import("../../packages/broker/src/index.js");
    const other = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
    try {
      const driver = await main.broker.attachCdp(other.endpoint, { label: "the user's browser", ownsBrowser: false });
      const stop = await callText("browser_stop", { browser: driver.info.browserId });
      expect(stop.isError).toBe(true);
      expect(stop.text).toMatch(/^not_started_here: /);
      expect(stop.text).toContain("browser_list_sessions");
      const view = await callText("browser_live_view", { browser: driver.info.browserId });
      expect(view.text).toMatch(/^not_started_here: /);
      expect(driver.closed).toBe(false);
      expect(alive(other.process.pid ?? 0)).toBe(true);
      driver.close("test done");
    } finally {
      await other.close();
    }
  });

  it("never stops the user's Chrome (the real extension over the bridge)", async () => {
    const chrome = await launchBrowser(Number(new URL(main.url).port));
    try {
      const user = await waitFor("the extension to connect", () => main.broker.registry.list().find((d) => d.info.kind === "extension"));
      for (const tool of ["browser_stop", "browser_live_view"]) {
        const result = await callText(tool, { browser: user.info.browserId });
        expect(result.isError, result.text).toBe(true);
        expect(result.text).toMatch(/^not_started_here: /);
      }
      expect(user.closed).toBe(false);
      expect(main.broker.registry.list()).toContain(user);
      expect((await callText("browser_list_sessions")).text).not.toContain(user.info.browserId);
    } finally {
      await chrome.close();
    }
  });

  it("caps the sessions at browsers.max_sessions, naming browser_stop", async () => {
    const a = idOf((await callText("browser_start")).text);
    const b = idOf((await callText("browser_start")).text);
    const third = await callText("browser_start");
    expect(third.isError).toBe(true);
    expect(third.text).toMatch(/^session_limit: /);
    expect(third.text).toContain("browser_stop");
    expect(third.text).toContain(a);
    // browser_run's temporary browser counts too.
    const run = await callText("browser_run", { program: "return 1", browser: "new" });
    expect(run.text).toMatch(/^session_limit: /);
    for (const id of [a, b]) expect((await callText("browser_stop", { browser: id })).isError).toBe(false);
    await Promise.all([a, b].map((id) => gone(pidOf(main.logs, id))));
  });

  it('browser_run with browser "new" runs on a temporary browser and leaves no process behind, also when the program throws', async () => {
    const before = startedPids(main.logs).length;
    const ok = await callText("browser_run", {
      browser: "new",
      program: `await browse.open(${JSON.stringify(`${site.origin}/hello`)}); return await browse.get("title");`,
    });
    expect(ok.isError, ok.text).toBe(false);
    expect(ok.text).toContain("Hello sessions");
    const thrown = await callText("browser_run", {
      browser: "new",
      program: `await browse.open(${JSON.stringify(`${site.origin}/hello`)}); throw new Error("the program gives up");`,
    });
    expect(thrown.isError).toBe(true);
    expect(thrown.text).toContain("the program gives up");
    const pids = startedPids(main.logs).slice(before);
    expect(pids).toHaveLength(2);
    await Promise.all(pids.map(gone));
    expect(main.broker.context.sessions?.list()).toEqual([]);
  });

  it('browser_run with browser "new" stops its browser when the client cancels the call', async () => {
    const before = startedPids(main.logs).length;
    const abort = new AbortController();
    const pending = client
      .callTool(
        {
          name: "browser_run",
          arguments: {
            browser: "new",
            program: `await browse.open(${JSON.stringify(`${site.origin}/hello`)}); await browse.waitFor({ text: "never there", timeoutMs: 30000 }); return 1;`,
          },
        },
        undefined,
        { signal: abort.signal },
      )
      .catch((error: unknown) => error);
    const pid = await waitFor("the temporary browser", () => startedPids(main.logs).slice(before)[0]);
    await waitFor("the program's tab", () => (main.broker.registry.list().length > 0 ? true : undefined));
    await new Promise((r) => setTimeout(r, 500));
    abort.abort();
    await pending;
    await gone(pid);
    await waitFor("the table to empty", () => (main.broker.context.sessions?.list().length === 0 ? true : undefined));
  });

  it("no CDP endpoint in any result, audit row or log line", () => {
    for (const text of texts) expect(text).not.toMatch(CDP_URL);
    for (const line of main.logs) expect(line).not.toMatch(CDP_URL);
    const rows = JSON.stringify(auditRows({ dataDir: main.dataDir }));
    expect(rows).toContain("browser_start");
    expect(rows).not.toMatch(CDP_URL);
  });
});

describe("limits", () => {
  it("stops a started browser after idle_minutes without a call, keeps one that calls address, and stops the rest when the broker closes", async () => {
    const b = await startWithSource("  idle_minutes: 0.03\n");
    const c = await connectClient(b.url);
    try {
      const idle = idOf((await call(c, "browser_start")).text);
      const pid = pidOf(b.logs, idle);
      // The log line comes once the stop has finished (the profile removed after the process exited).
      await waitFor("the idle stop's log line", () => b.logs.some((l) => l.includes(idle) && l.includes("idle_minutes")) || undefined);
      expect(alive(pid)).toBe(false);
      const kept = idOf((await call(c, "browser_start")).text);
      const keptPid = pidOf(b.logs, kept);
      // Calls that address it keep it: 3.5 s of list_tabs every 400 ms, twice the idle time.
      for (const until = Date.now() + 3500; Date.now() < until;) {
        expect((await call(c, "list_tabs", { browser: kept })).isError).toBe(false);
        await new Promise((r) => setTimeout(r, 400));
      }
      expect(alive(keptPid)).toBe(true);
      await c.close();
      await b.broker.close();
      expect(alive(keptPid)).toBe(false);
    } finally {
      await b.broker.close();
    }
  });
});

describe("a source that cannot start", () => {
  it("is browser_start_failed naming the cause and the key to fix, and leaves nothing counted", async () => {
    const b = await startWithSource("  chromium: /nonexistent/chromium\n");
    const c = await connectClient(b.url);
    try {
      const start = await call(c, "browser_start");
      expect(start.isError).toBe(true);
      expect(start.text).toMatch(/^browser_start_failed: could not launch a local Chromium/);
      expect(start.text).toContain("browsers.chromium");
      expect(b.broker.context.sessions?.list()).toEqual([]);
      const run = await call(c, "browser_run", { browser: "new", program: "return 1" });
      expect(run.text).toMatch(/^browser_start_failed: /);
    } finally {
      await c.close();
      await b.broker.close();
    }
  });
});

describe("without a browser source", () => {
  it('does not list the tools, and browser_run with browser "new" says how to configure one', async () => {
    const plain = await startBroker();
    const c = await connectClient(plain.url);
    try {
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name)).not.toContain("browser_start");
      const run = await call(c, "browser_run", { program: "return 1", browser: "new" });
      expect(run.isError).toBe(true);
      expect(run.text).toMatch(/^no_browser_source: /);
      expect(run.text).toContain("browsers: { source: local }");
    } finally {
      await c.close();
      await plain.close();
    }
  });
});

describe("config", () => {
  it("refuses an unknown source or an out-of-range limit at start-up, naming the key", () => {
    const env = { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN };
    expect(() => loadConfig({ dataDir: makeDataDir("browsers:\n  source: chrome\n"), env })).toThrow(
      /browsers\.source: source must be local, browserbase or kernel/,
    );
    expect(() => loadConfig({ dataDir: makeDataDir("browsers:\n  source: local\n  max_sessions: 0\n"), env })).toThrow(/browsers\.max_sessions/);
    expect(() => loadConfig({ dataDir: makeDataDir("browsers:\n  max_sessions: 2\n"), env })).toThrow(/browsers\.source/);
    const config = loadConfig({ dataDir: makeDataDir("browsers:\n  source: kernel\n"), env });
    expect(config.browserSource).toEqual({ source: "kernel", maxSessions: 3, idleMs: 15 * 60_000, headless: true });
    expect(loadConfig({ dataDir: makeDataDir(""), env }).browserSource).toBeUndefined();
  });
});

// Secrets at every exit (issue 11, item 4): a real broker with a real Chromium attached over CDP (so a real
// DevTools endpoint is registered), a hosted provider's key in the environment, and the three tokens. Each kind
// of secret is planted where it could leak (page titles, text and URLs, the browser's label, an element's name
// that lands in the audit target, a tool error, the browser's own /json/version), then looked for at every
// exit: tool results (text and the whole result object), audit.db rows, log lines, /health and the dashboard's
// JSON API. Skipping the registry at any one exit makes a secret show there, and the test names the exit.
import { request } from "node:http";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { Broker, findChromium, launchLocalChromium, loadConfig, type Logger } from "../../packages/broker/src/index.js";
import {
  allowYaml,
  auditRows,
  closedPort,
  connectClient,
  DASHBOARD_TOKEN,
  makeDataDir,
  MCP_TOKEN,
  PAIRING_TOKEN,
  startSite,
  TOKEN_ENV,
  type TestSite,
} from "../harness.js";
import { cookieOf, raw } from "../rawHttp.js";

const PROVIDER_KEY = "kernel-api-key-5c9e1b7d3f2a4e6c8b0d";

let site: TestSite;
let chromium: LaunchedCdpBrowser;
let broker: Broker;
let brokerUrl: string;
let dataDir: string;
let client: Client;
const logLines: string[] = [];
let savedKey: string | undefined;

/** Every form of every secret that must never leave the broker, by what it is. */
function secrets(): Record<string, string> {
  const endpoint = new URL(chromium.endpoint);
  const guid = endpoint.pathname.split("/").pop() ?? "";
  return {
    "MCP token": MCP_TOKEN,
    "dashboard token": DASHBOARD_TOKEN,
    "pairing token": PAIRING_TOKEN,
    "CDP endpoint": chromium.endpoint,
    "CDP endpoint, URL-encoded": encodeURIComponent(chromium.endpoint),
    "CDP endpoint's GUID": guid,
    "CDP endpoint's host and port": endpoint.host,
    "provider key": PROVIDER_KEY,
  };
}

function expectClean(exit: string, text: string, except: readonly string[] = []): void {
  for (const [what, secret] of Object.entries(secrets())) {
    if (except.includes(what)) continue;
    expect(text.includes(secret), `${what} leaked through ${exit}: ${text.slice(Math.max(0, text.indexOf(secret) - 200), text.indexOf(secret) + 200)}`).toBe(
      false,
    );
  }
}

/** The page that quotes every secret in its title, text and links, and names a button after the MCP and dashboard tokens. */
function plantedPage(): string {
  const s = secrets();
  return `<!doctype html><html><head><title>T ${MCP_TOKEN} ${DASHBOARD_TOKEN} ${PAIRING_TOKEN} ${PROVIDER_KEY}</title></head><body>
<h1>Planted</h1>
<p>mcp ${MCP_TOKEN}, dashboard ${DASHBOARD_TOKEN}, pairing ${PAIRING_TOKEN}, provider ${PROVIDER_KEY}</p>
<p>endpoint ${s["CDP endpoint"]}, encoded ${s["CDP endpoint, URL-encoded"]}, id ${s["CDP endpoint's GUID"]}</p>
<p><a href="/next?t=${MCP_TOKEN}&d=${DASHBOARD_TOKEN}&e=${encodeURIComponent(chromium.endpoint)}">next ${PAIRING_TOKEN}</a></p>
<button>Send ${MCP_TOKEN} ${DASHBOARD_TOKEN}</button>
</body></html>`;
}

async function callTool(name: string, args: Record<string, unknown>): Promise<{ text: string; raw: string; isError: boolean }> {
  const result = await client.callTool({ name, arguments: args });
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content.map((c: { type: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
  // The whole result, structuredContent and _meta included: any field could carry a secret.
  return { text, raw: JSON.stringify(result), isError: result.isError === true };
}

async function dashboardSession(): Promise<string> {
  const form = await raw(`${brokerUrl}/login`);
  const loginCookie = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!loginCookie || !csrf) throw new Error("no login form");
  const login = await raw(`${brokerUrl}/login`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: brokerUrl, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token: DASHBOARD_TOKEN }).toString(),
  });
  const cookie = cookieOf(login, "tabrelay_session_");
  if (login.status !== 303 || !cookie) throw new Error(`login failed: ${login.status}`);
  return cookie;
}

/** The audit stream's first batch (the backlog), then the stream is dropped. */
function auditEvents(cookie: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${brokerUrl}/dashboard/api/audit`, { headers: { Cookie: cookie } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        if (text.includes("event: ready")) {
          req.destroy();
          resolve(text);
        }
      });
    });
    req.on("error", (error) => (error.message.includes("aborted") || error.message.includes("socket hang up") ? undefined : reject(error)));
    req.end();
  });
}

beforeAll(async () => {
  savedKey = process.env["KERNEL_API_KEY"];
  process.env["KERNEL_API_KEY"] = PROVIDER_KEY;
  site = await startSite();
  site.route("/planted", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(plantedPage());
  });
  chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
  dataDir = makeDataDir(allowYaml());
  const config = loadConfig({ dataDir, port: 0, env: TOKEN_ENV });
  const capture: Logger = { info: (m) => logLines.push(`info ${m}`), warn: (m) => logLines.push(`warn ${m}`), error: (m) => logLines.push(`error ${m}`) };
  broker = new Broker({ config, log: capture });
  brokerUrl = (await broker.listen()).url;
  // The label quotes the endpoint: it shows in a log line, list_browsers, /health and the dashboard.
  await broker.attachCdp(chromium.endpoint, { label: `chromium at ${chromium.endpoint}`, ownsBrowser: false });
  client = await connectClient(brokerUrl);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await broker?.close();
  await chromium?.close();
  await site?.close();
  if (savedKey === undefined) delete process.env["KERNEL_API_KEY"];
  else process.env["KERNEL_API_KEY"] = savedKey;
});

describe("secrets at every exit", () => {
  const plantedUrl = () => `${site.origin}/planted?t=${MCP_TOKEN}&d=${DASHBOARD_TOKEN}&p=${PAIRING_TOKEN}&e=${encodeURIComponent(chromium.endpoint)}`;
  let tab = 0;

  it("tool results: a page quoting every secret in its title, text, links and URL (read_url, open_tab, list_tabs, snapshot, read_page)", async () => {
    const read = await callTool("read_url", { url: plantedUrl(), mode: "full" });
    expect(read.isError, read.text).toBe(false);
    // The page was read, and the secrets in it were replaced by markers naming them.
    expect(read.text).toContain("Planted");
    for (const marker of ["mcp token", "dashboard token", "pairing token", "cdp endpoint", "provider key"])
      expect(read.text).toContain(`[redacted: ${marker}]`);
    expectClean("read_url", read.raw);

    const opened = await callTool("open_tab", { url: plantedUrl() });
    expect(opened.isError, opened.text).toBe(false);
    tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    expectClean("open_tab", opened.raw);
    for (const [name, args] of [
      ["list_tabs", {}],
      ["snapshot", { tab }],
      ["read_page", { tab, mode: "full" }],
      ["list_browsers", {}],
    ] as const) {
      const result = await callTool(name, args);
      expect(result.isError, `${name}: ${result.text}`).toBe(false);
      expectClean(name, result.raw);
    }
  });

  it("tool results: the browser's own /json/version, which names the DevTools socket, reads redacted", async () => {
    const port = new URL(chromium.endpoint).port;
    const read = await callTool("read_url", { url: `http://127.0.0.1:${port}/json/version`, mode: "full" });
    expectClean("read_url of /json/version", read.raw);
  });

  it("tool errors: a message quoting the CDP endpoint is redacted", async () => {
    const result = await callTool("read_url", { url: chromium.endpoint });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("[redacted: cdp endpoint]");
    expectClean("a tool error", result.raw);
  });

  it("audit records: an element named after the MCP and dashboard tokens (the target) and the URLs the calls used", async () => {
    const snap = await callTool("snapshot", { tab });
    const line = snap.text.split("\n").find((l) => l.includes("button") && l.includes("[ref="));
    const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
    const revision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect(ref, snap.text).toBeDefined();
    expect(line).toContain("[redacted: mcp token]");
    // No write rule allows it: refused, and recorded with its target.
    const click = await callTool("click", { tab, ref, revision });
    expect(click.isError).toBe(true);
    expectClean("click's refusal", click.raw);

    const rows = auditRows({ dataDir });
    const clicked = rows.find((r) => r.tool === "click");
    expect(JSON.stringify(clicked)).toContain('button \\"Send [redacted: mcp token] [redacted: dashboard token]\\"');
    expectClean("audit.db", JSON.stringify(rows));
    expectClean("AuditLog.list", JSON.stringify(broker.audit.list()));
  });

  it("log lines: the attach line quoting the endpoint, and every other line the broker wrote", () => {
    const attached = logLines.find((l) => l.includes("attached"));
    expect(attached).toContain("[redacted: cdp endpoint]");
    expectClean("the log", logLines.join("\n"));
  });

  it("/health: the browser's label", async () => {
    const health = await raw(`${brokerUrl}/health`);
    expect(health.body).toContain("[redacted: cdp endpoint]");
    expectClean("/health", health.body);
  });

  it("dashboard API: state (tabs, titles, URLs, labels), preview, config and the audit stream", async () => {
    const cookie = await dashboardSession();
    const state = await raw(`${brokerUrl}/dashboard/api/state`, { headers: { Cookie: cookie } });
    expect(state.status).toBe(200);
    expect(state.body).toContain("[redacted: mcp token]"); // the planted tab is there, redacted
    expectClean("dashboard state", state.body);

    const browserId = broker.registry.list()[0]?.info.browserId ?? "";
    const preview = await raw(`${brokerUrl}/dashboard/api/preview?browser=${encodeURIComponent(browserId)}&tab=${tab}`, { headers: { Cookie: cookie } });
    expect(preview.status).toBe(200);
    expectClean("dashboard preview", preview.body);

    // The pairing code is shown to the logged-in user on purpose (they type it into the extension); nothing else.
    const config = await raw(`${brokerUrl}/dashboard/api/config`, { headers: { Cookie: cookie } });
    const view: unknown = JSON.parse(config.body);
    expect(view).toMatchObject({ pairingToken: PAIRING_TOKEN });
    const rest = Object.entries(view && typeof view === "object" ? view : {}).filter(([key]) => key !== "pairingToken");
    expect(rest.length).toBeGreaterThan(3);
    expectClean("dashboard config", JSON.stringify(rest));

    const events = await auditEvents(cookie);
    expect(events).toContain("event: audit");
    expectClean("dashboard audit stream", events);
  });

  it("dashboard audit stream: a record written before its secret was registered goes out redacted", async () => {
    // An endpoint the agent named before any browser was attached at it: its record holds the endpoint's origin.
    const late = `ws://127.0.0.1:${await closedPort()}/devtools/browser/0b7f5d7e-1f2a-4c3b-9d8e-7a6b5c4d3e2f`;
    const lateHost = new URL(late).host;
    await callTool("read_url", { url: late });
    expect(JSON.stringify(broker.audit.list())).toContain(lateHost);
    await expect(broker.attachCdp(late, { label: "nothing listens there", ownsBrowser: false })).rejects.toThrow();
    const events = await auditEvents(await dashboardSession());
    expect(events).toContain("[redacted: cdp endpoint]");
    expect(events).not.toContain(lateHost);
  });
});

// A browser the model started (browser_start, browsers.source: local): its DevTools endpoint is never shown to the
// test either, so it is read the way a local attacker would, from the DevToolsActivePort file Chromium writes into
// its profile, then planted in a page the started browser reads and looked for at every exit of that broker.
describe("secrets of a browser the model started", () => {
  it("its endpoint, GUID and port reach no result of the session tools or the page tools, no audit row, log line or /health", async () => {
    const { readFileSync } = await import("node:fs");
    const lines: string[] = [];
    const log: Logger = { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
    const dir = makeDataDir(allowYaml("screenshots:\n  enabled: true\nbrowsers:\n  source: local\n"));
    const own = new Broker({
      config: loadConfig({ dataDir: dir, port: 0, env: TOKEN_ENV }),
      log,
    });
    const url = (await own.listen()).url;
    const c = await connectClient(url);
    const results: string[] = [];
    const use = async (name: string, args: Record<string, unknown> = {}) => {
      const result = await c.callTool({ name, arguments: args });
      const text = JSON.stringify(result);
      results.push(text);
      return text;
    };
    try {
      const start = await use("browser_start");
      const id = /Started browser (cdp-[0-9a-f-]+)/.exec(start)?.[1] ?? "";
      const pid = /pid (\d+)/.exec(lines.find((l) => l.includes(id)) ?? "")?.[1];
      const profile = /--user-data-dir=([^\0]+)/.exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1] ?? "";
      const [port, path] = readFileSync(`${profile}/DevToolsActivePort`, "utf8").trim().split("\n");
      const endpoint = `ws://127.0.0.1:${port}${path}`;
      const leaks = {
        endpoint,
        "URL-encoded endpoint": encodeURIComponent(endpoint),
        GUID: path?.split("/").pop() ?? "",
        "host and port": `127.0.0.1:${port}`,
      };
      site.route("/planted-started", `<title>at ${endpoint}</title><p>${leaks["URL-encoded endpoint"]} ${leaks.GUID}</p><button>Open ${endpoint}</button>`);

      const opened = await use("open_tab", { url: `${site.origin}/planted-started`, browser: id });
      const tab = Number(/Opened tab (\d+)/.exec(opened)?.[1]);
      expect(tab).toBeGreaterThan(0);
      await use("read_page", { tab, browser: id, mode: "full" });
      await use("snapshot", { tab, browser: id });
      await use("read_url", { url: `http://127.0.0.1:${port}/json/version`, browser: id, mode: "full" });
      await use("read_url", { url: endpoint, browser: id });
      await use("browser_list_sessions");
      await use("list_browsers");
      await use("browser_live_view", { browser: id });
      await use("browser_run", { browser: id, program: "return await browse.get('title')", tab });
      await use("browser_stop", { browser: id });
      expect(results.join("\n")).toContain("[redacted: cdp endpoint]");

      const health = await (await fetch(`${url}/health`)).text();
      const exits: Record<string, string> = { results: results.join("\n"), audit: JSON.stringify(own.audit.list()), log: lines.join("\n"), "/health": health };
      for (const [exit, text] of Object.entries(exits)) {
        for (const [what, secret] of Object.entries(leaks)) expect(text.includes(secret), `${what} leaked through ${exit}`).toBe(false);
      }
    } finally {
      await c.close();
      await own.close();
    }
  });
});

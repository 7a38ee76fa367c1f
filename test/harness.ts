// Shared set-up for broker and end-to-end tests: a local test site, a broker on a temp data dir, a real
// headless Chromium carrying the built extension, and the MCP SDK's own client.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { build } from "esbuild";
import { expect } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Agent, fetch as undiciFetch } from "undici";
import {
  Broker,
  builtFirefoxExtensionDir,
  findChromium,
  findFirefox,
  launchChromium,
  launchFirefox,
  launchLocalChromium,
  loadConfig,
  prepareExtension,
  prepareFirefoxProfile,
  silentLogger,
  type LaunchedBrowser,
  type NodeBrokerConfig,
} from "../packages/broker/src/index.js";
import { AUDIT_DB_FILE } from "../packages/broker/src/audit/auditLog.js";
import { MARIONETTE_ARGS, MARIONETTE_PREFS } from "./marionette.js";

export type Route = (req: IncomingMessage, res: ServerResponse) => void;

export interface TestSite {
  origin: string;
  port: number;
  route(path: string, handler: Route | string): void;
  close(): Promise<void>;
}

export async function startSite(host = "127.0.0.1"): Promise<TestSite> {
  const routes = new Map<string, Route>();
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const handler = routes.get(path);
    if (!handler) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found");
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host}:${port}`,
    port,
    route(path, handler) {
      routes.set(
        path,
        typeof handler === "string"
          ? (_req, res) => {
              res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
              res.end(handler);
            }
          : handler,
      );
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface TestBroker {
  broker: Broker;
  config: NodeBrokerConfig;
  url: string;
  port: number;
  dataDir: string;
  close(): Promise<void>;
}

export const MCP_TOKEN = "test-mcp-token-0123456789abcdef";
export const PAIRING_TOKEN = "test-pairing-token-0123456789abcdef";
/** The dashboard's login token (the implicit user's): never the MCP token, which agents hold. */
export const DASHBOARD_TOKEN = "test-dashboard-token-0123456789abcdef";
/** The environment a broker of the tests starts with: its three tokens. */
export const TOKEN_ENV = { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN, TABRELAY_DASHBOARD_TOKEN: DASHBOARD_TOKEN } as const;

export function makeDataDir(yaml: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-test-"));
  writeFileSync(join(dataDir, "config.yaml"), yaml);
  return dataDir;
}

export function allowYaml(extra = ""): string {
  return `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n${extra}`;
}

export async function startBroker(options: { yaml?: string; port?: number; dataDir?: string; helloTimeoutMs?: number } = {}): Promise<TestBroker> {
  const dataDir = options.dataDir ?? makeDataDir(options.yaml ?? allowYaml());
  const config = loadConfig({
    dataDir,
    port: options.port ?? 0,
    env: TOKEN_ENV,
  });
  const broker = new Broker({ config, log: silentLogger, ...(options.helloTimeoutMs ? { helloTimeoutMs: options.helloTimeoutMs } : {}) });
  const { port, url } = await broker.listen();
  return { broker, config, url, port, dataDir, close: () => broker.close() };
}

export interface TestBrowser {
  browser: LaunchedBrowser;
  profileDir: string;
  /** Where this browser saves downloads (set in its preferences), so tests can see what landed on disk. */
  downloadsDir: string;
  close(): Promise<void>;
}

/** Sets a new profile's download folder (`<profileDir>/downloads`, returned) before Chromium first starts on it. */
export function presetDownloadFolder(profileDir: string): string {
  const downloadsDir = join(profileDir, "downloads");
  mkdirSync(join(profileDir, "Default"), { recursive: true });
  mkdirSync(downloadsDir, { recursive: true });
  writeFileSync(join(profileDir, "Default", "Preferences"), JSON.stringify({ download: { default_directory: downloadsDir, prompt_for_download: false } }));
  return downloadsDir;
}

/** Removes a browser profile once Chromium let go of it: its helper processes can flush it for a moment after it exits. */
export async function removeProfile(profileDir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      rmSync(profileDir, { recursive: true, force: true });
      return;
    } catch (error) {
      if (attempt >= 20) throw error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * How a test launches a browser beyond its bridge port: `bridgeUrl` pairs it with another address (an impostor, a
 * relay), `remote` opens the test's hands on it (Chromium's DevTools port, Firefox's Marionette: test/extensionUi.ts),
 * which tabrelay's own launch never does.
 */
export interface TestLaunchOptions {
  bridgeUrl?: string;
  remote?: boolean;
}

/** A real headless Chromium whose extension dials the broker's bridge, paired with `pairingCode` (the broker's own by default). */
export async function launchBrowser(
  bridgePort: number,
  pairingCode = PAIRING_TOKEN,
  label = "test chromium",
  options: TestLaunchOptions = {},
): Promise<TestBrowser> {
  const profileDir = mkdtempSync(join(tmpdir(), "tabrelay-profile-"));
  const downloadsDir = presetDownloadFolder(profileDir);
  const extensionDir = prepareExtension(profileDir, options.bridgeUrl ?? `ws://127.0.0.1:${bridgePort}/bridge`, pairingCode, label);
  // Popups allowed, as many users allow them for sites they use: the tests need pages that open tabs.
  const extraArgs = ["--disable-popup-blocking", ...(options.remote ? ["--remote-debugging-port=0"] : [])];
  return testBrowser(launchChromium({ chromiumPath: findChromium(), profileDir, extensionDir, headless: true, extraArgs }), profileDir, downloadsDir);
}

/**
 * A real headless Firefox (ESR) carrying tabrelay's Firefox build, paired with the bridge at `bridgePort`, started by
 * the launcher `tabrelay start --firefox` uses (launch/firefox.ts). Popups allowed and downloads saved without asking,
 * as launchBrowser's Chromium.
 */
export async function launchFirefoxBrowser(
  bridgePort: number,
  pairingCode = PAIRING_TOKEN,
  label = "test firefox",
  options: TestLaunchOptions = {},
): Promise<TestBrowser> {
  const profileDir = mkdtempSync(join(tmpdir(), "tabrelay-ffprofile-"));
  const downloadsDir = join(profileDir, "downloads");
  mkdirSync(downloadsDir, { recursive: true });
  const extensionDir = prepareExtension(profileDir, options.bridgeUrl ?? `ws://127.0.0.1:${bridgePort}/bridge`, pairingCode, label, process.env, {
    sourceDir: builtFirefoxExtensionDir(),
  });
  prepareFirefoxProfile(profileDir, extensionDir, {
    "dom.disable_open_during_load": false,
    "browser.download.folderList": 2,
    "browser.download.dir": downloadsDir,
    "browser.download.useDownloadDir": true,
    "browser.download.always_ask_before_handling_new_types": false,
    ...(options.remote ? MARIONETTE_PREFS : {}),
    // Notifications drawn by Firefox itself (shown ~20 s), not the desktop's notification service: there is none here,
    // and Firefox then closes an add-on's notification as soon as it is made.
    "alerts.useSystemBackend": false,
  });
  const extraArgs = options.remote ? MARIONETTE_ARGS : [];
  return testBrowser(launchFirefox({ firefoxPath: findFirefox(), profileDir, headless: true, extraArgs }), profileDir, downloadsDir);
}

/** A launched browser with its profile: close() ends it and removes the profile. */
function testBrowser(browser: LaunchedBrowser, profileDir: string, downloadsDir: string): TestBrowser {
  return {
    browser,
    profileDir,
    downloadsDir,
    async close() {
      await browser.kill();
      await removeProfile(profileDir);
    },
  };
}

/**
 * The ways a browser serves the broker; suites that must behave the same on each run once per driver: the extension
 * in Chromium, Chromium over CDP, and the extension's Firefox build in Firefox. TABRELAY_TEST_DRIVERS (a comma list)
 * narrows a local run to some of them; CI runs them all.
 */
const ALL_DRIVERS = ["extension", "cdp", "firefox"] as const;
export type Driver = (typeof ALL_DRIVERS)[number];
export const DRIVERS: readonly Driver[] = driversWanted(process.env["TABRELAY_TEST_DRIVERS"]);

function driversWanted(list: string | undefined): readonly Driver[] {
  if (!list) return ALL_DRIVERS;
  const wanted = list.split(",").map((d) => d.trim());
  const unknown = wanted.filter((d) => !(ALL_DRIVERS as readonly string[]).includes(d));
  if (unknown.length > 0) throw new Error(`TABRELAY_TEST_DRIVERS names ${unknown.join(", ")}; the drivers are ${ALL_DRIVERS.join(", ")}`);
  return ALL_DRIVERS.filter((d) => wanted.includes(d));
}

/** A browser attached to a test broker. */
export interface AttachedBrowser {
  /** Ends the browser (and removes its profile). */
  close(): Promise<void>;
  /** Kills the browser process outright (SIGKILL), as a crash would; `close()` still cleans up after it. */
  kill(): void;
  /** Where the extension's browser saves downloads; tabrelay's own CDP browser refuses them outright. */
  downloadsDir?: string;
}

/**
 * A real headless Chromium serving the broker through `driver`: the extension dialling the bridge, or the
 * CDP driver attached to a Chromium of its own. Resolves once the browser is connected. `allowPopups` lets
 * pages open tabs over CDP too (the extension's browser always allows them, see launchBrowser).
 */
export async function attachBrowser(b: TestBroker, driver: Driver, options: { allowPopups?: boolean } = {}): Promise<AttachedBrowser> {
  let browser: AttachedBrowser;
  if (driver === "extension" || driver === "firefox") {
    const launched = driver === "extension" ? await launchBrowser(b.port) : await launchFirefoxBrowser(b.port);
    browser = { close: () => launched.close(), kill: () => launched.browser.process.kill("SIGKILL"), downloadsDir: launched.downloadsDir };
  } else {
    const local = await launchLocalChromium({
      chromiumPath: findChromium(),
      headless: true,
      ...(options.allowPopups ? { extraArgs: ["--disable-popup-blocking"] } : {}),
    });
    browser = { close: () => local.close(), kill: () => local.process.kill("SIGKILL") };
    try {
      await b.broker.attachCdp(local.endpoint, { label: "test cdp", ownsBrowser: true });
    } catch (error) {
      await browser.close();
      throw error;
    }
  }
  try {
    await browserConnected(b);
  } catch (error) {
    await browser.close();
    throw error;
  }
  return browser;
}

/** A broker, a real browser serving it through `driver` and an MCP client: what most end-to-end suites start from. */
export interface TestSession {
  broker: TestBroker;
  client: Client;
  /** Ends the client, the browser and the broker. */
  close(): Promise<void>;
}

export async function startSession(
  driver: Driver,
  options: Parameters<typeof startBroker>[0] = {},
  browserOptions: Parameters<typeof attachBrowser>[2] = {},
): Promise<TestSession> {
  const broker = await startBroker(options);
  let browser: { close(): Promise<void> } | undefined;
  try {
    browser = await attachBrowser(broker, driver, browserOptions);
    const client = await connectClient(broker.url);
    return {
      broker,
      client,
      async close() {
        await client.close();
        await browser?.close();
        await broker.close();
      },
    };
  } catch (error) {
    await browser?.close();
    await broker.close();
    throw error;
  }
}

export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves once a browser (extension or CDP) is connected to the broker. */
export async function browserConnected(b: TestBroker, timeoutMs = 20_000): Promise<void> {
  await waitFor("a browser to connect", () => b.broker.registry.list().length > 0 || undefined, timeoutMs);
}

export async function connectClient(brokerUrl: string, token = MCP_TOKEN): Promise<Client> {
  const client = new Client({ name: "tabrelay-test", version: "0.0.0" });
  // Each client its own connection pool: a client made after a broker restarts on the same port never sends its first
  // request down a kept-alive socket the stopped broker closed (undici's shared pool did: "other side closed").
  const pool = new Agent();
  const fetchOwn: typeof fetch = (input, init) => undiciFetch(input, { ...init, dispatcher: pool });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${brokerUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: fetchOwn }),
  );
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    await pool.destroy().catch(() => undefined);
  };
  return client;
}

export interface ToolText {
  text: string;
  isError: boolean;
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolText> {
  const result = await client.callTool({ name, arguments: args });
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content.map((c: { type: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
  return { text, isError: result.isError === true };
}

export function article(title: string, paragraphs: number, closing: string): string {
  const body = Array.from(
    { length: paragraphs },
    (_, i) => `<p>Paragraph ${i + 1} of the story tells about rivers, cities and the people who keep the lights on at night, in some detail.</p>`,
  ).join("\n");
  return `<!doctype html><html><head><title>${title}</title></head><body>
<nav><a href="/">Home</a> <a href="/news">News</a> <a href="/sports">Sports</a></nav>
<article><h1>${title}</h1>${body}<p>${closing}</p><p><a href="/related">Related story</a> <img src="/img/photo.png" alt="A photo"></p></article>
<footer>Copyright footer text</footer></body></html>`;
}

/** A port on which nothing listens (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A page of the test site: a title and a body. */
export function page(title: string, body: string): string {
  return `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;
}

/** Opens `url` in a new agent tab (the call must succeed) and returns the tab's id. */
export async function openTab(client: Client, url: string): Promise<number> {
  const opened = await call(client, "open_tab", { url });
  expect(opened.isError, opened.text).toBe(false);
  return Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
}

/** A snapshot's text, its revision, and the ref of a named element in it. */
export interface Snap {
  text: string;
  revision: string;
  /** The ref of the element named `name` (and of `role`, if given); throws, showing the snapshot, if none. */
  ref(name: string, role?: string): string;
}

export async function snapshotOf(client: Client, tab: number, extra: Record<string, unknown> = {}): Promise<Snap> {
  const result = await call(client, "snapshot", { tab, ...extra });
  expect(result.isError, result.text).toBe(false);
  const revision = /revision: (\S+)/.exec(result.text)?.[1] ?? "";
  return {
    text: result.text,
    revision,
    ref(name, role) {
      const line = result.text.split("\n").find((l) => l.includes(`"${name}"`) && l.includes("[ref=") && (!role || l.includes(`- ${role} `)));
      const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
      if (!ref) throw new Error(`no ref for ${role ?? ""} "${name}" in:\n${result.text}`);
      return ref;
    },
  };
}

/** The whole text of an open tab (read_page, full mode). */
export async function readFull(client: Client, tab: number): Promise<string> {
  return (await call(client, "read_page", { tab, mode: "full" })).text;
}

/**
 * Serves the React-controlled shop form (test/site/reactForm.tsx, bundled here) at `/react` on `site`: a Name field,
 * a Size select, a Gift wrap checkbox and an Add to cart button whose result shows as "Added: ...".
 */
export async function routeReactShop(site: TestSite): Promise<void> {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL("./site/reactForm.tsx", import.meta.url))],
    bundle: true,
    write: false,
    format: "iife",
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    minify: true,
    logLevel: "error",
  });
  const script = bundle.outputFiles[0]?.text ?? "";
  site.route("/react.js", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/javascript" });
    res.end(script);
  });
  site.route("/react", page("React shop", `<div id="root"></div><script src="/react.js"></script>`));
}

/** One row of the audit log as stored (audit.db's columns). */
export type AuditRow = Record<string, unknown> & { id: number; tool: string; decision: string };

/**
 * The audit log as a broker left it on disk: the rows of `<dataDir>/audit.db` (or of the database file `path` names),
 * opened read-only, oldest first; `tool` keeps one tool's rows.
 */
export function auditRows(place: { dataDir: string } | { path: string }, tool?: string): AuditRow[] {
  const path = "path" in place ? place.path : join(place.dataDir, AUDIT_DB_FILE);
  if (!existsSync(path)) throw new Error(`auditRows: no audit log at ${path}`);
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows =
      tool === undefined ? db.prepare("SELECT * FROM audit ORDER BY id").all() : db.prepare("SELECT * FROM audit WHERE tool = ? ORDER BY id").all(tool);
    return rows as AuditRow[];
  } finally {
    db.close();
  }
}

/**
 * An app's backend route, as apps using @tabrelay/page have one: `path` (default /token) asks the broker at
 * `brokerUrl()` for a page token for the site's origin (POST /page-tokens with the bearer `bearer(req)` names) and
 * hands the broker's answer to its page. A broker that cannot be reached (stopped, restarting) is a 502 with the
 * reason, which the page's library retries after, never an error thrown in the test process.
 */
export function routePageToken(site: TestSite, brokerUrl: () => string, bearer: (req: IncomingMessage) => string, path = "/token"): void {
  site.route(path, (req, res) => {
    void (async () => {
      try {
        const answer = await fetch(`${brokerUrl()}/page-tokens`, {
          method: "POST",
          headers: { Authorization: `Bearer ${bearer(req)}`, "Content-Type": "application/json" },
          body: JSON.stringify({ origin: site.origin }),
        });
        const body = await answer.text();
        res.writeHead(answer.status, { "Content-Type": "application/json" });
        res.end(body);
      } catch (error) {
        res.writeHead(502, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ error: `the broker could not be reached: ${error instanceof Error ? error.message : String(error)}` }));
      }
    })();
  });
}

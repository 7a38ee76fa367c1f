// The dashboard at `/`, driven like a person would: a headless Chromium (playwright-core) views the page,
// while the agent's browser is the real extension (launchBrowser) and the agent is the SDK's MCP client.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  article,
  call,
  connectClient,
  DASHBOARD_TOKEN,
  launchBrowser,
  MCP_TOKEN,
  PAIRING_TOKEN,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { cookieOf, raw, setCookies, type RawResponse } from "../rawHttp.js";

const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-default-browser-check",
];
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'";
const HOSTILE_TITLE = `<img src=x onerror="window.__pwned=1">Hostile & <b>bold</b>`;
/** Shown as is, U+202E (right-to-left override) makes "Invoice exe.pdf" read "Invoice fdp.exe". */
const RLO_TITLE = "Invoice \u202Eexe.pdf";

/** Logs in the way the form does (from `localAddress`, default 127.0.0.1); returns the answer to the POST. */
async function rawLogin(b: TestBroker, token: string, localAddress?: string): Promise<RawResponse> {
  const from = localAddress ? { localAddress } : {};
  const form = await raw(`${b.url}/login`, from);
  const loginCookie = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!loginCookie || !csrf) throw new Error("the login form lacks its CSRF cookie or field");
  return raw(`${b.url}/login`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: b.url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token }).toString(),
    ...from,
  });
}

/** A logged-in session outside the viewer: its cookie and its CSRF token. */
async function rawSession(b: TestBroker): Promise<{ cookie: string; csrf: string }> {
  const login = await rawLogin(b, DASHBOARD_TOKEN);
  const cookie = cookieOf(login, "tabrelay_session_");
  if (login.status !== 303 || !cookie) throw new Error(`login failed: ${login.status}`);
  const page = await raw(`${b.url}/`, { headers: { Cookie: cookie } });
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)?.[1];
  if (!csrf) throw new Error("the dashboard page has no CSRF token");
  return { cookie, csrf };
}

let site: TestSite;
let broker: TestBroker;
let viewer: Browser;
let context: BrowserContext;
let page: Page;
let agentBrowser: TestBrowser | undefined;
let client: Client | undefined;
const cspViolations: string[] = [];

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/article", article("Rivers of the North", 20, "The closing paragraph."));
  site.route("/rlo", `<!doctype html><html><head><title>${RLO_TITLE}</title></head><body><p>An override in the title.</p></body></html>`);
  site.route("/hostile", `<!doctype html><html><head><title>${HOSTILE_TITLE}</title></head><body><p>Hostile title page.</p></body></html>`);
  broker = await startBroker();
  viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  context = await viewer.newContext();
  page = await context.newPage();
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await agentBrowser?.close();
  await viewer?.close();
  await broker?.close();
  await site?.close();
});

describe("the dashboard's door", () => {
  it("sends a visitor without a session to /login; its API answers 401", async () => {
    await page.goto(`${broker.url}/`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await expect(page.getByLabel("Dashboard token").isVisible()).resolves.toBe(true);
    expect((await raw(`${broker.url}/dashboard/api/state`)).status).toBe(401);
    expect((await raw(`${broker.url}/dashboard/api/audit`)).status).toBe(401);
  });

  it("refuses a wrong token and sets no session cookie", async () => {
    await page.getByLabel("Dashboard token").fill("wrong-token-wrong-token-wrong");
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.getByRole("button", { name: "Log in" }).click()]);
    expect(response.status()).toBe(401);
    await expect(page.getByRole("alert").textContent()).resolves.toContain("not accepted");
    expect(new URL(page.url()).pathname).toBe("/login");
    expect((await context.cookies()).some((c) => c.name.startsWith("tabrelay_session_"))).toBe(false);
  });

  it("logs in with the dashboard token; the session cookie is HttpOnly and SameSite=Strict", async () => {
    await page.getByLabel("Dashboard token").fill(DASHBOARD_TOKEN);
    await Promise.all([page.waitForURL(`${broker.url}/`), page.getByRole("button", { name: "Log in" }).click()]);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toContain("tabrelay");
    const session = (await context.cookies()).find((c) => c.name === `tabrelay_session_${broker.port}`);
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    expect(session?.path).toBe("/");
    expect(session?.value).toMatch(/^[\w-]{43}$/); // 256 random bits
    expect(await page.evaluate("document.cookie")).toBe(""); // not readable by scripts
    const full = setCookies(await rawLogin(broker, DASHBOARD_TOKEN)).find((c) => c.startsWith("tabrelay_session_")) ?? "";
    expect(full).toMatch(/; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/);
  });

  it("serves the page under the strict CSP, with no inline script or style", async () => {
    const { cookie } = await rawSession(broker);
    const res = await raw(`${broker.url}/`, { headers: { Cookie: cookie } });
    expect(res.headers["content-security-policy"]).toBe(CSP);
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.body).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    expect((await raw(`${broker.url}/dashboard/app.js`)).headers["content-type"]).toMatch(/^text\/javascript/);
  });

  it("refuses a Host that is not the broker's (DNS rebinding)", async () => {
    const res = await raw(`${broker.url}/login`, { headers: { Host: `evil.example:${broker.port}` } });
    expect(res.status).toBe(403);
  });
});

describe("what the dashboard shows", () => {
  it("shows the extension's browser once it connects", async () => {
    await page.locator("#browsers-empty", { hasText: "No browser is connected" }).waitFor();
    agentBrowser = await launchBrowser(broker.port);
    await page.locator(".browser-label", { hasText: "test chromium" }).waitFor({ timeout: 20_000 });
    expect(broker.broker.registry.list()).toHaveLength(1);
    await expect(page.locator("#browser-count").textContent()).resolves.toBe("(1 connected)");
  });

  it("lists a tab the agent opened, its hostile title shown as text", async () => {
    client = await connectClient(broker.url);
    const opened = await call(client, "open_tab", { url: `${site.origin}/hostile`, active: true });
    expect(opened.isError).toBe(false);
    // The title once the page has loaded (until then the list shows the URL, which also contains "hostile").
    const title = page.locator(".tab-title", { hasText: "onerror" });
    await title.waitFor({ timeout: 10_000 });
    await expect(title.textContent()).resolves.toBe(HOSTILE_TITLE);
    await expect(page.locator(".tab-url", { hasText: "/hostile" }).textContent()).resolves.toBe(`${site.origin}/hostile`);
    expect(await page.locator("#browsers img, #browsers b").count()).toBe(0);
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
  });

  it("reports the live view's state for the agent's tab", async () => {
    const preview = page.locator("#preview:not([data-state='none'])");
    await preview.waitFor({ timeout: 10_000 });
    const state = await page.locator("#preview").getAttribute("data-state");
    expect(["live", "not-visible", "error"]).toContain(state);
    const status = (await page.locator("#preview-status").textContent()) ?? "";
    // A picture, "not visible", or the browser's own error text (unknown_method until the extension has page.capture).
    expect(status).toMatch(/^(Showing the agent's tab|Not visible|No picture: \w+: .+)/);
    // The target names the tab once the dashboard's next state has the tab's URL (the picture can come first).
    await page.locator("#preview-target", { hasText: `${site.origin}/hostile` }).waitFor({ timeout: 10_000 });
  });

  it("lets the user watch another agent tab from the keyboard, and says when it cannot be pictured", async () => {
    if (!client) throw new Error("no MCP client");
    const opened = await call(client, "open_tab", { url: `${site.origin}/article` }); // in the background
    expect(opened.isError).toBe(false);
    const radio = page.getByRole("radio", { name: "Watch Rivers of the North" });
    await radio.waitFor({ timeout: 10_000 });
    await radio.focus();
    await page.keyboard.press("Space");
    await page.locator("#preview-target", { hasText: "Rivers of the North" }).waitFor({ timeout: 5_000 });
    // Chrome pictures only the tab in front; without page.capture in the extension, its error text shows instead.
    await page.locator("#preview[data-state='not-visible'], #preview[data-state='error']").waitFor({ timeout: 5_000 });
    await expect(page.locator("#preview-status").textContent()).resolves.toMatch(
      /^(Not visible: this tab is not the tab in front|No picture: unknown_method: )/,
    );
    expect(await page.locator("#preview-img").isHidden()).toBe(true);
    await page.getByRole("radio", { name: /^Follow the agent/ }).check();
  });

  it("streams a tool call into the activity view without a reload", async () => {
    if (!client) throw new Error("no MCP client");
    await page.evaluate("window.__sameDocument = true");
    const read = await call(client, "read_url", { url: `${site.origin}/article` });
    expect(read.isError).toBe(false);
    await page.locator("#audit-rows tr[data-decision='allowed']", { has: page.locator(".tool", { hasText: /^read_url$/ }) }).waitFor({ timeout: 5_000 });
    // localhost is outside the test policy: refused in the broker, before the browser goes anywhere.
    const refused = await call(client, "read_url", { url: `http://localhost:${site.port}/article` });
    expect(refused.text).toMatch(/^policy_denied/);
    const row = page.locator("#audit-rows tr[data-decision='refused']");
    await row.waitFor({ timeout: 5_000 });
    await expect(row.locator(".tool").textContent()).resolves.toBe("read_url");
    expect(await page.evaluate("window.__sameDocument")).toBe(true);
    await expect(page.locator("#audit-announce").textContent()).resolves.toContain("refused read_url");
  });

  it("filters the activity to refused calls", async () => {
    await page.getByLabel("Show").selectOption("refused");
    const visible = page.locator("#audit-rows tr:not([hidden])");
    expect(await visible.count()).toBeGreaterThanOrEqual(1);
    for (const decision of await visible.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-decision")))) expect(decision).toBe("refused");
    expect(await page.locator("#audit-rows tr[data-decision='allowed']").first().isHidden()).toBe(true);
    await page.getByLabel("Show").selectOption("");
    expect(await page.locator("#audit-rows tr[data-decision='allowed']").first().isVisible()).toBe(true);
  });

  it("shows a title with a right-to-left override stripped of it and isolated in <bdi>, in the tab list and the Watching line", async () => {
    if (!client) throw new Error("no MCP client");
    const opened = await call(client, "open_tab", { url: `${site.origin}/rlo`, active: true });
    expect(opened.isError).toBe(false);
    const shown = RLO_TITLE.replace("\u202E", "");
    // What the broker serves the page: the title without the control.
    const { cookie } = await rawSession(broker);
    const state = await waitFor(
      "the /rlo tab in the dashboard's state",
      async () => {
        const res = await raw(`${broker.url}/dashboard/api/state`, { headers: { Cookie: cookie } });
        // The tab's address is known before its title: wait for the title too (its words, with or without the override).
        return res.body.includes("/rlo") && res.body.includes("exe.pdf") ? res.body : undefined;
      },
      10_000,
    );
    expect(state).not.toMatch(/\u202E|\\u202e/i);
    expect(state).toContain(JSON.stringify(shown));
    // What the person sees: inside <bdi>, no override anywhere in the browsers list or the live view's line.
    const cell = page.locator(".tab-title", { hasText: "Invoice" });
    await cell.waitFor({ timeout: 10_000 });
    await expect(cell.locator("bdi").textContent()).resolves.toBe(shown);
    const target = page.locator("#preview-target", { hasText: "Invoice" });
    await target.waitFor({ timeout: 10_000 });
    await expect(target.textContent()).resolves.toBe(`Watching ${shown} — ${site.origin}/rlo (test chromium)`);
    expect(await target.locator("bdi").allTextContents()).toEqual([shown, `${site.origin}/rlo`, "test chromium"]);
    expect(await page.evaluate('document.body.innerText.includes("\\u202E")')).toBe(false);
    // The override would have reversed the rest of its line; isolated and stripped, the words stay in order.
    expect(await page.evaluate<string>('document.getElementById("preview-target").innerText')).toContain(`Watching ${shown} — `);
  });

  it("shows the policy and where it came from, and how to pair a browser", async () => {
    await expect(page.locator("#config-file").textContent()).resolves.toBe(`${broker.dataDir}/config.yaml`);
    const readRules = await page.locator("#read-policy li").allTextContents();
    expect(readRules.some((line) => line.includes("127.0.0.1"))).toBe(true);
    expect(readRules).toEqual(broker.config.policy.describe());
    expect(await page.locator("#write-policy li").allTextContents()).toEqual([...broker.config.writePolicy.describe(), ...broker.config.ask.describe()]);
    await expect(page.locator("#bridge-url").textContent()).resolves.toBe(`ws://127.0.0.1:${broker.port}/bridge`);
    await expect(page.locator("#pairing-token").textContent()).resolves.toBe(PAIRING_TOKEN);
    await expect(page.locator("#extension-dir").textContent()).resolves.toMatch(/extension/);
  });
});

describe("state-changing requests", () => {
  it("refuses a stop without the CSRF token, or from another origin, even with a valid session", async () => {
    const { cookie, csrf } = await rawSession(broker);
    const stop = (headers: Record<string, string>) => raw(`${broker.url}/dashboard/api/stop`, { method: "POST", headers: { Cookie: cookie, ...headers } });
    expect((await stop({ Origin: broker.url })).status).toBe(403);
    expect((await stop({ Origin: broker.url, "X-CSRF-Token": "not-the-token" })).status).toBe(403);
    expect((await stop({ Origin: "https://evil.example", "X-CSRF-Token": csrf })).status).toBe(403);
    expect((await stop({ Origin: "null", "X-CSRF-Token": csrf })).status).toBe(403);
    expect((await stop({ Origin: `http://127.0.0.1:${site.port}`, "X-CSRF-Token": csrf })).status).toBe(403); // same site, other port
    // A load balancer's forwarded host and scheme are believed only for a Host of mcp.allowed_hosts, never for the
    // broker's own address: they cannot turn another origin (or http into https) into this dashboard's.
    expect((await stop({ Origin: `http://127.0.0.1:${site.port}`, "X-Forwarded-Host": `127.0.0.1:${site.port}`, "X-CSRF-Token": csrf })).status).toBe(403);
    expect((await stop({ Origin: broker.url.replace("http:", "https:"), "X-Forwarded-Proto": "https", "X-CSRF-Token": csrf })).status).toBe(403);
    expect((await stop({ "X-CSRF-Token": csrf })).status).toBe(403); // neither Origin nor Referer
    expect((await stop({ Origin: broker.url, "X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-site" })).status).toBe(403);
    expect((await raw(`${broker.url}/logout`, { method: "POST", headers: { Cookie: cookie, Origin: broker.url } })).status).toBe(403);
    expect(broker.broker.registry.list()).toHaveLength(1);
  });

  it("does not let the session cookie into /mcp", async () => {
    const { cookie } = await rawSession(broker);
    const res = await raw(`${broker.url}/mcp`, {
      method: "POST",
      headers: { Cookie: cookie, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
      }),
    });
    expect(res.status).toBe(401);
  });

  it("the emergency stop disconnects every browser and keeps them out until resumed", async () => {
    await page.getByRole("button", { name: /^Stop: disconnect every browser/ }).click();
    await expect(page.locator("#stop-result", { hasText: "Emergency stop" }).textContent()).resolves.toMatch(/disconnected 1 browser \(test chromium\)/);
    expect(broker.broker.registry.list()).toHaveLength(0);
    await page.locator("#browsers-empty", { hasText: "No browser is connected: the emergency stop is in effect." }).waitFor();
    expect(await page.locator(".browser").count()).toBe(0);
    // The extension redials within a second; it must stay out.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(broker.broker.registry.list()).toHaveLength(0);
    if (client) expect((await call(client, "list_tabs")).text).toMatch(/not_connected/);

    await page.getByRole("button", { name: /^Resume/ }).click();
    await page.locator(".browser-label", { hasText: "test chromium" }).waitFor({ timeout: 20_000 });
    expect(broker.broker.registry.list()).toHaveLength(1);
  });

  it("logging out ends the session", async () => {
    const before = (await context.cookies()).find((c) => c.name === `tabrelay_session_${broker.port}`);
    await Promise.all([page.waitForURL(`${broker.url}/login`), page.getByRole("button", { name: "Log out" }).click()]);
    expect((await context.cookies()).some((c) => c.name === `tabrelay_session_${broker.port}`)).toBe(false);
    const res = await raw(`${broker.url}/dashboard/api/state`, { headers: { Cookie: `${before?.name}=${before?.value}` } });
    expect(res.status).toBe(401);
    expect(cspViolations).toEqual([]);
  });
});

// The dashboard will answer approvals for the person (issue 27): no credential an agent holds may log in there, and the
// dashboard's own token opens no agent's door.
describe("the dashboard's own token", () => {
  /** The login page an answer carries, its per-form CSRF value left out. */
  const loginPageOf = (res: RawResponse) => res.body.replace(/name="csrf" value="[^"]+"/, "");
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "tabrelay-test", version: "0.0.0" } },
  });
  const mcpWith = (b: TestBroker, token: string) =>
    raw(`${b.url}/mcp`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: initialize,
    });

  it("the login refuses the MCP token (the agents' credential) as it refuses any wrong token, and says which token it wants", async () => {
    const own = await startBroker();
    try {
      const refused = await rawLogin(own, MCP_TOKEN);
      expect(refused.status).toBe(401);
      expect(cookieOf(refused, "tabrelay_session_")).toBeUndefined();
      expect(refused.body).toContain("That token was not accepted.");
      // Word for word the page a made-up token gets: the login tells a guesser nothing about an MCP token.
      expect(loginPageOf(refused)).toBe(loginPageOf(await rawLogin(own, "wrong-token-wrong-token-wrong")));
      expect(refused.body).toContain('<label for="token">Dashboard token</label>');
      expect(refused.body).toContain("<code>tabrelay dashboard-token</code> prints it");
      expect((await rawLogin(own, DASHBOARD_TOKEN)).status).toBe(303);
    } finally {
      await own.close();
    }
  });

  it("/mcp refuses the dashboard token (401) and still takes the MCP token", async () => {
    const own = await startBroker();
    try {
      const refused = await mcpWith(own, DASHBOARD_TOKEN);
      expect(refused.status).toBe(401);
      expect(refused.body).toContain("missing or wrong bearer token");
      await expect(connectClient(own.url, DASHBOARD_TOKEN)).rejects.toThrow();
      expect((await mcpWith(own, MCP_TOKEN)).status).toBe(200);
    } finally {
      await own.close();
    }
  });
});

describe("login attempts", () => {
  it("are limited to five wrong tokens a minute per address; then even the right one is refused", async () => {
    const own = await startBroker();
    try {
      for (let i = 0; i < 5; i++) expect((await rawLogin(own, `wrong-token-number-${i}-xxxxxxxx`)).status).toBe(401);
      const limited = await rawLogin(own, DASHBOARD_TOKEN);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
      expect(cookieOf(limited, "tabrelay_session_")).toBeUndefined();
    } finally {
      await own.close();
    }
  });

  it("can come from any loopback address (the test's premise: Node binds 127.0.0.x as the source)", async () => {
    const echo = createServer((req, res) => res.end(req.socket.remoteAddress));
    await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = echo.address() as AddressInfo;
      expect((await raw(`http://127.0.0.1:${port}/`, { localAddress: "127.0.0.7" })).body).toBe("127.0.0.7");
    } finally {
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it("count every loopback address as this one machine: 100 wrong tokens from 127.0.0.2-.21 are stopped after five, and the right one then waits too", async () => {
    const own = await startBroker();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 100; i++) statuses.push((await rawLogin(own, `wrong-token-number-${i}-xxxxxxxx`, `127.0.0.${2 + (i % 20)}`)).status);
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5).every((status) => status === 429)).toBe(true);
      const limited = await rawLogin(own, DASHBOARD_TOKEN, "127.0.0.22");
      expect(limited.status).toBe(429);
      expect(limited.body).toContain("Too many wrong tokens from this machine. Wait ");
      const wait = Number(limited.headers["retry-after"]);
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(60);
      expect(limited.body).toContain(`Wait ${wait} s`);
      expect(cookieOf(limited, "tabrelay_session_")).toBeUndefined();
      expect((await rawLogin(own, DASHBOARD_TOKEN, "127.0.0.1")).status).toBe(429);
    } finally {
      await own.close();
    }
  });

  it("need the login form's CSRF pair and this origin", async () => {
    const form = await raw(`${broker.url}/login`);
    const loginCookie = cookieOf(form, "tabrelay_login_") ?? "";
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? "";
    const post = (headers: Record<string, string>, fields: Record<string, string>) =>
      raw(`${broker.url}/login`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(fields).toString(),
      });
    expect((await post({ Origin: "https://evil.example", Cookie: loginCookie }, { csrf, token: DASHBOARD_TOKEN })).status).toBe(403);
    expect((await post({ Origin: broker.url }, { csrf, token: DASHBOARD_TOKEN })).status).toBe(403);
    // A cookie planted by another page on this host cannot go with a field it cannot sign.
    expect((await post({ Origin: broker.url, Cookie: `tabrelay_login_${broker.port}=planted` }, { csrf: "planted", token: DASHBOARD_TOKEN })).status).toBe(403);
    expect((await post({ Origin: broker.url, Cookie: loginCookie }, { csrf, token: DASHBOARD_TOKEN })).status).toBe(303);
  });
});

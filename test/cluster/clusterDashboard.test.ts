// The dashboard of a cluster (issue 16 §1 and §3): three brokers sharing a Redis and a PostgreSQL store behind the
// documented deploy/nginx.conf with TLS, round robin, no stickiness. Alice's real Chromium is connected to broker 0
// and Bob's to broker 1. A person views the dashboard through nginx in a headless Chromium (playwright-core), so each
// of the page's requests lands on whichever broker the turn falls on. What they notice: they log in once and stay
// logged in, they see their own browsers and tabs wherever those are connected (never another user's), a logout ends
// the login on every broker, and the emergency stop pressed on one broker keeps every browser out of every broker.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { request as tlsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  connectClient,
  DASHBOARD_TOKEN,
  launchBrowser,
  MCP_TOKEN,
  openTab,
  page as sitePage,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { cookieOf, raw, type RawResponse } from "../rawHttp.js";
import { startNginx, type TestNginx } from "../nginx.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { startRedis, type TestRedis } from "../redis.js";

const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-default-browser-check",
];

let redis: TestRedis;
let pg: TestPostgres;
let site: TestSite;
const brokers: TestBroker[] = [];
let nginx: TestNginx;
let certDir: string;
let viewer: Browser;
let alice: { token: string; dashboardToken: string; browser: TestBrowser; browserId: string; client: Client };
let bob: { token: string; dashboardToken: string; browser: TestBrowser; browserId: string };

const yaml = () => `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  ask:
    write: ["127.0.0.1"]
mcp:
  allowed_hosts: ["127.0.0.1"]
  trusted_proxies: ["127.0.0.1"]
store:
  postgres_url: "${pg.url}"
cluster:
  redis_url: "${redis.url}"
`;

/** The login form fetched from one broker and posted to another: the session cookie the second one set. */
async function loginAcross(from: TestBroker, to: TestBroker, token: string): Promise<{ cookie: string; csrf: string }> {
  const form = await raw(`${from.url}/login`);
  const nonce = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!nonce || !csrf) throw new Error("the login form lacks its CSRF cookie or field");
  // The cookies' names carry the port the browser used (one name for the whole cluster behind one address): a
  // browser sends the form's cookie back under the name it got, whichever broker answers.
  const login = await raw(`${to.url}/login`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: to.url, Cookie: nonce.replace(/^tabrelay_login_\d+/, `tabrelay_login_${to.port}`) },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
  const session = cookieOf(login, "tabrelay_session_");
  if (login.status !== 303 || !session) throw new Error(`the login on the second broker failed: ${login.status} ${login.body.slice(0, 200)}`);
  const page = await raw(`${to.url}/`, { headers: { Cookie: session } });
  const pageCsrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)?.[1];
  if (!pageCsrf) throw new Error("the dashboard page has no CSRF token");
  return { cookie: session, csrf: pageCsrf };
}

/**
 * A login as the load balancer forwards it (Host: the public name, X-Real-IP: the client), sent to broker `b` directly
 * from 127.0.0.1, the load balancer's address (mcp.trusted_proxies), so that the test knows which broker took it.
 */
async function proxiedLogin(b: TestBroker, token: string, clientIp: string): Promise<RawResponse> {
  return formLogin(b, token, { Host: "127.0.0.1", "X-Real-IP": clientIp }, "http://127.0.0.1");
}

async function formLogin(b: TestBroker, token: string, headers: Record<string, string>, origin: string, localAddress?: string): Promise<RawResponse> {
  const from = localAddress ? { localAddress } : {};
  const form = await raw(`${b.url}/login`, { headers, ...from });
  const nonce = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!nonce || !csrf) throw new Error(`the login form lacks its CSRF cookie or field: ${form.status}`);
  return raw(`${b.url}/login`, {
    ...from,
    method: "POST",
    headers: { ...headers, "Content-Type": "application/x-www-form-urlencoded", Origin: origin, Cookie: nonce },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
}

/** Reads an SSE stream until `done` holds for the records seen so far (or `ms` pass); the records it carried. */
function auditEvents(
  url: string,
  cookieHeader: string,
  done: (records: Array<Record<string, unknown>>) => boolean,
  ms: number,
): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const records: Array<Record<string, unknown>> = [];
    const req = request(url, { headers: { Cookie: cookieHeader, Accept: "text/event-stream" } }, (res) => {
      let buffer = "";
      const finish = () => {
        clearTimeout(timer);
        req.destroy();
        resolve(records);
      };
      const timer = setTimeout(finish, ms);
      res.on("data", (chunk: Buffer) => {
        buffer += chunk.toString("utf8");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (/^event: audit$/m.test(event) && data) records.push(...(JSON.parse(data) as Array<Record<string, unknown>>));
        }
        if (done(records)) finish();
      });
    });
    req.on("error", reject);
    req.end();
  });
}

/** The same session cookie, under the name broker `b` reads (its port is in the name). */
const cookieFor = (session: string, b: TestBroker) => session.replace(/^tabrelay_session_\d+/, `tabrelay_session_${b.port}`);

async function stateOn(
  b: TestBroker,
  session: string,
): Promise<
  RawResponse & {
    json?: {
      browsers: Array<{ id: string; label: string; broker?: string; tabs: Array<{ url: string; title: string }> }>;
      stopped: boolean;
      broker?: string;
      unreachable?: string[];
    };
  }
> {
  const res = await raw(`${b.url}/dashboard/api/state`, { headers: { Cookie: cookieFor(session, b) } });
  return { ...res, ...(res.status === 200 ? { json: JSON.parse(res.body) } : {}) };
}

async function loggedIn(page: Page, token: string): Promise<void> {
  await page.goto(`${nginx.url}/login`);
  await page.getByLabel(/token/i).fill(token);
  await Promise.all([page.waitForURL(`${nginx.url}/`), page.getByRole("button", { name: /log in/i }).click()]);
}

beforeAll(async () => {
  [redis, pg, site] = await Promise.all([startRedis(), startPostgres(), startSite("127.0.0.1")]);
  site.route("/shop", sitePage("Alice's shop", "<p>Things for sale.</p>"));
  site.route("/ask", sitePage("Alice's cart", "<button>Add to cart</button>"));
  for (let i = 0; i < 3; i++) brokers.push(await startBroker({ yaml: yaml() }));
  const a = await brokers[0]!.broker.users.add("alice");
  const b = await brokers[0]!.broker.users.add("bob");
  const aliceBrowser = await launchBrowser(brokers[0]!.port, a.pairingCode, "alice chromium");
  const bobBrowser = await launchBrowser(brokers[1]!.port, b.pairingCode, "bob chromium");
  const aliceId = (await waitFor("alice's browser", () => brokers[0]!.broker.registry.list().find((x) => x.info.label === "alice chromium"), 30_000)).info
    .browserId;
  const bobId = (await waitFor("bob's browser", () => brokers[1]!.broker.registry.list().find((x) => x.info.label === "bob chromium"), 30_000)).info.browserId;
  certDir = mkdtempSync(join(tmpdir(), "tabrelay-cert-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      join(certDir, "key.pem"),
      "-out",
      join(certDir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  nginx = await startNginx(
    brokers.map((x) => x.port),
    { tls: { cert: join(certDir, "cert.pem"), key: join(certDir, "key.pem") } },
  );
  await waitFor("presence and members on every broker", () =>
    brokers.every((x) => x.broker.context.cluster?.peers().length === 2) && brokers[2]!.broker.context.cluster?.remoteBrowsers(a.user.id).length === 1
      ? true
      : undefined,
  );
  alice = {
    token: a.token,
    dashboardToken: a.dashboardToken,
    browser: aliceBrowser,
    browserId: aliceId,
    client: await connectClient(brokers[2]!.url, a.token),
  };
  bob = { token: b.token, dashboardToken: b.dashboardToken, browser: bobBrowser, browserId: bobId };
  viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await alice?.client.close().catch(() => undefined);
  await viewer?.close().catch(() => undefined);
  await Promise.allSettled([alice?.browser.close(), bob?.browser.close()]);
  await nginx?.stop();
  for (const b of brokers) await b.close().catch(() => undefined);
  await Promise.allSettled([redis?.stop(), pg?.stop(), site?.close()]);
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

describe("the dashboard of three brokers behind nginx (TLS)", () => {
  it("logs in once through the load balancer and stays logged in whichever broker answers; shows the user's browser and tab wherever it is connected, never another user's", async () => {
    const tab = await openTab(alice.client, `${site.origin}/shop`);
    expect(tab).toBeGreaterThan(0);
    const context = await viewer.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      // The form is served by one broker and posted (over https, Origin with nginx's port) to the next one.
      await loggedIn(page, alice.dashboardToken);
      // Six loads: two on each broker. Each shows Alice's browser (connected to broker 0) with her agent's tab.
      for (let i = 0; i < 6; i++) {
        await page.goto(`${nginx.url}/`);
        expect(page.url()).toBe(`${nginx.url}/`);
        await page.locator(".browser-label", { hasText: "alice chromium" }).waitFor({ timeout: 10_000 });
        await page.locator(".tab-title", { hasText: "Alice's shop" }).waitFor({ timeout: 10_000 });
        expect(await page.locator(".browser").count()).toBe(1);
        expect(await page.locator("body").innerText()).not.toContain("bob chromium");
      }
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name.startsWith("tabrelay_session_"));
      expect(session?.secure).toBe(true);
    } finally {
      await context.close();
    }
  });

  it("takes a login form from one broker and its post on another; each broker shows a member only their own browsers, an admin everyone's with the broker holding each", async () => {
    const member = await loginAcross(brokers[0]!, brokers[2]!, alice.dashboardToken);
    const admin = await loginAcross(brokers[1]!, brokers[0]!, DASHBOARD_TOKEN);
    for (const b of brokers) {
      const theirs = await stateOn(b, member.cookie);
      expect(theirs.status).toBe(200);
      expect(theirs.json?.browsers.map((x) => x.id)).toEqual([alice.browserId]);
      expect(theirs.body).not.toContain(bob.browserId);
      expect(theirs.json?.unreachable).toEqual([]);
      const all = await stateOn(b, admin.cookie);
      expect(new Map(all.json?.browsers.map((x) => [x.id, x.broker]))).toEqual(
        new Map([
          [alice.browserId, brokers[0]!.broker.brokerId],
          [bob.browserId, brokers[1]!.broker.brokerId],
        ]),
      );
      expect(all.json?.broker).toBe(b.broker.brokerId);
      // The team's users, as an admin manages them: each user's browsers counted across the cluster.
      const users = JSON.parse((await raw(`${b.url}/dashboard/api/users`, { headers: { Cookie: cookieFor(admin.cookie, b) } })).body) as {
        users: Array<{ name: string; browsers: number }>;
      };
      expect(users.users.filter((u) => u.name === "alice" || u.name === "bob").map((u) => [u.name, u.browsers])).toEqual([
        ["alice", 1],
        ["bob", 1],
      ]);
    }
  });

  it("asks the broker holding a browser for a picture of its tab; another user's browser is unknown on every broker, as a made-up one", async () => {
    const member = await loginAcross(brokers[2]!, brokers[1]!, alice.dashboardToken);
    const opened = await call(alice.client, "open_tab", { url: `${site.origin}/shop`, active: true });
    const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    for (const b of [brokers[1]!, brokers[2]!]) {
      const shot = await raw(`${b.url}/dashboard/api/preview?browser=${alice.browserId}&tab=${tab}`, { headers: { Cookie: cookieFor(member.cookie, b) } });
      const picture = JSON.parse(shot.body) as { ok: boolean; png?: string; url?: string; error?: { code: string } };
      expect(picture.error).toBeUndefined();
      expect(
        Buffer.from(picture.png ?? "", "base64")
          .subarray(1, 4)
          .toString(),
      ).toBe("PNG");
      expect(picture.url).toBe(`${site.origin}/shop`);
    }
    for (const b of brokers) {
      const theirs = JSON.parse(
        (await raw(`${b.url}/dashboard/api/preview?browser=${bob.browserId}&tab=1`, { headers: { Cookie: cookieFor(member.cookie, b) } })).body,
      ) as unknown;
      const madeUp = JSON.parse(
        (await raw(`${b.url}/dashboard/api/preview?browser=no-such-browser&tab=1`, { headers: { Cookie: cookieFor(member.cookie, b) } })).body,
      ) as unknown;
      expect(theirs).toEqual({ ok: false, error: { code: "unknown_browser", message: "that browser is not connected" } });
      expect(theirs).toEqual(madeUp);
    }
  });

  it("streams every broker's audit records into the activity view, a member's own only, whichever broker serves the stream", async () => {
    const member = await loginAcross(brokers[1]!, brokers[2]!, alice.dashboardToken);
    // Alice's calls run and are recorded on broker 0 (her browser's); her stream is served by broker 2.
    const since = Date.now();
    const fresh = (r: Record<string, unknown>) => r["tool"] === "open_tab" && Number(r["time"]) >= since;
    const seen = auditEvents(`${brokers[2]!.url}/dashboard/api/audit`, cookieFor(member.cookie, brokers[2]!), (records) => records.some(fresh), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call(alice.client, "open_tab", { url: `${site.origin}/shop` })).isError).toBe(false);
    const records = await seen;
    expect(records.find(fresh)).toMatchObject({ decision: "allowed", user: "alice", origin: site.origin, broker: brokers[0]!.broker.brokerId });
    expect(records.every((r) => r["user"] === "alice")).toBe(true);
  });

  it("lists a question held on the broker with the browser at every broker's door, and takes the answer at any of them (tabrelay ask's bearer)", async () => {
    const tab = await openTab(alice.client, `${site.origin}/ask`);
    const snap = await call(alice.client, "snapshot", { tab });
    const ref = /- button "Add to cart" \[ref=([^\]]+)\]/.exec(snap.text)?.[1];
    const revision = /revision: (\S+)/.exec(snap.text)?.[1];
    const click = call(alice.client, "click", { tab, ref, revision });
    // The call runs on broker 0 (Alice's browser); broker 1 holds nothing of hers and lists it all the same.
    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
    const listed = await waitFor("the question at broker 1", async () => {
      const r = await raw(`${brokers[1]!.url}/dashboard/api/asks`, { headers: bearer(alice.dashboardToken) });
      const qs = (JSON.parse(r.body) as { questions: Array<{ id: string; label: string; user: string }> }).questions;
      return qs.length > 0 ? qs : undefined;
    });
    expect(listed.map((q) => [q.label, q.user])).toEqual([["Add to cart", "alice"]]);
    expect(brokers[0]!.broker.asks.pending().map((q) => q.id)).toEqual([listed[0]!.id]);
    // Bob, a member, sees none of Alice's questions, and cannot answer one.
    const bobs = await raw(`${brokers[2]!.url}/dashboard/api/asks`, { headers: bearer(bob.dashboardToken) });
    expect((JSON.parse(bobs.body) as { questions: unknown[] }).questions).toEqual([]);
    const answer = (b: TestBroker, token: string) =>
      raw(`${b.url}/dashboard/api/asks/answer`, {
        method: "POST",
        headers: { ...bearer(token), "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ id: listed[0]!.id, answer: "once" }).toString(),
      });
    expect((await answer(brokers[2]!, bob.dashboardToken)).status).toBe(404);
    const answered = await answer(brokers[1]!, alice.dashboardToken);
    expect(answered.status, answered.body).toBe(200);
    const done = await click;
    expect(done.isError, done.text).toBe(false);
    expect((await answer(brokers[2]!, alice.dashboardToken)).status).toBe(409);
  });

  it("a logout on one broker ends the login on every broker", async () => {
    const member = await loginAcross(brokers[0]!, brokers[1]!, alice.dashboardToken);
    for (const b of brokers) expect((await stateOn(b, member.cookie)).status).toBe(200);
    const out = await raw(`${brokers[2]!.url}/logout`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: brokers[2]!.url, Cookie: cookieFor(member.cookie, brokers[2]!) },
      body: new URLSearchParams({ csrf: member.csrf }).toString(),
    });
    expect(out.status).toBe(303);
    for (const b of brokers) expect((await stateOn(b, member.cookie)).status).toBe(401);
  });

  it("a user revoked in the store (as `tabrelay users revoke` does) is logged out of every broker, one that had not seen the login yet included", async () => {
    const carol = await brokers[0]!.broker.users.add("carol");
    const member = await loginAcross(brokers[0]!, brokers[1]!, carol.dashboardToken);
    expect((await stateOn(brokers[1]!, member.cookie)).status).toBe(200);
    // The store alone learns it: no broker is told.
    await brokers[0]!.broker.users.revoke("carol");
    // Broker 2 never served this login before: it must not take it on for a revoked user.
    expect((await stateOn(brokers[2]!, member.cookie)).status).toBe(401);
    // Broker 1, which opened it, ends it at its next sweep of revoked users.
    await waitFor(
      "the login ended on the broker that opened it",
      async () => ((await stateOn(brokers[1]!, member.cookie)).status === 401 ? true : undefined),
      15_000,
    );
  });

  it("an emergency stop pressed on a broker holding no browser disconnects the browsers of every broker and keeps them out of all of them, a broker started meanwhile included, until resumed", async () => {
    const admin = await loginAcross(brokers[2]!, brokers[2]!, DASHBOARD_TOKEN);
    const post = (b: TestBroker, path: string) =>
      raw(`${b.url}${path}`, {
        method: "POST",
        headers: { Origin: b.url, "X-CSRF-Token": admin.csrf, Cookie: cookieFor(admin.cookie, b), "Content-Type": "application/x-www-form-urlencoded" },
        body: "",
      });
    const stopped = await post(brokers[2]!, "/dashboard/api/stop");
    expect(stopped.status).toBe(200);
    expect(JSON.parse(stopped.body)).toMatchObject({ stopped: true, cluster: { ok: true, brokers: 2 } });
    await waitFor("every browser disconnected", () => (brokers.every((b) => b.broker.registry.list().length === 0) ? true : undefined), 5_000);
    const late = await startBroker({ yaml: yaml() });
    try {
      // The extensions redial within a second or two; for three seconds no broker takes them, nor the new one.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(brokers.map((b) => b.broker.registry.list().length)).toEqual([0, 0, 0]);
      const upgrade = await raw(`${late.url}/bridge`, {
        headers: { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" },
      }).catch((error: unknown) => ({ status: 0, body: String(error), headers: {} }));
      expect(upgrade.body).toContain("stopped from the dashboard");
      for (const b of brokers) expect((await stateOn(b, admin.cookie)).json?.stopped).toBe(true);
      // Through the load balancer: browsers redialling are refused by every broker, and nginx does not take that for
      // the brokers failing (a 503 benched each in turn: agents and the resume then got 502 "no live upstreams").
      for (let i = 0; i < 4; i++) {
        const redial = await viaNginx("/bridge", {
          headers: { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==" },
        });
        expect(redial.status).toBe(403);
        expect(redial.body).toContain("stopped from the dashboard");
      }
      const initialize = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stop-probe", version: "1" } },
      });
      const answers: number[] = [];
      for (let i = 0; i < 6; i++) {
        const answer = await viaNginx("/mcp", {
          method: "POST",
          body: initialize,
          headers: { Authorization: `Bearer ${MCP_TOKEN}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        });
        answers.push(answer.status);
      }
      expect(answers).toEqual([200, 200, 200, 200, 200, 200]);
      expect((await viaNginx("/login")).status).toBe(200);
    } finally {
      await late.close();
    }
    const resumed = await post(brokers[0]!, "/dashboard/api/resume");
    expect(JSON.parse(resumed.body)).toMatchObject({ stopped: false, wasStopped: true, cluster: { ok: true } });
    await waitFor(
      "both browsers back",
      () => (brokers[0]!.broker.registry.list().length === 1 && brokers[1]!.broker.registry.list().length === 1 ? true : undefined),
      30_000,
    );
    for (const b of brokers) expect((await stateOn(b, admin.cookie)).json?.stopped).toBe(false);
  });

  it("counts wrong tokens on every broker: five guesses spread over three brokers hold back the client (as nginx's X-Real-IP names it) on all of them, not another client", async () => {
    for (let i = 0; i < 5; i++) expect((await proxiedLogin(brokers[i % 3]!, "wrong-token-wrong-token-wrong", "203.0.113.7")).status).toBe(401);
    // Each broker saw at most two of them; the cluster saw five (told over Redis pub/sub: within milliseconds).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const held = await proxiedLogin(brokers[2]!, alice.dashboardToken, "203.0.113.7");
    expect(held.status).toBe(429);
    expect(held.body).toContain("Too many wrong tokens from this address.");
    // Another client behind the same load balancer is not held back.
    const other = await proxiedLogin(brokers[1]!, alice.dashboardToken, "203.0.113.8");
    expect(other.status).toBe(303);
    // From a client that is not the load balancer (mcp.trusted_proxies names 127.0.0.1 only), X-Real-IP is not
    // believed, even with the public name as Host: every guess is counted by its own address, this machine.
    for (let i = 0; i < 5; i++)
      expect(
        (
          await formLogin(
            brokers[i % 3]!,
            "wrong-token-wrong-token-wrong",
            { Host: "127.0.0.1", "X-Real-IP": `198.51.100.${i}` },
            "http://127.0.0.1",
            "127.0.0.2",
          )
        ).status,
      ).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const machine = await formLogin(brokers[0]!, alice.dashboardToken, { Host: "127.0.0.1", "X-Real-IP": "198.51.100.99" }, "http://127.0.0.1", "127.0.0.2");
    expect(machine.status).toBe(429);
    expect(machine.body).toContain("Too many wrong tokens from this machine.");
  });
});

/** A request through nginx's TLS listener on a connection of its own, trusting the test's certificate. */
function viaNginx(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = tlsRequest(
      `${nginx.url}${path}`,
      { method: options.method ?? "GET", headers: options.headers ?? {}, agent: false, ca: readFileSync(join(certDir, "cert.pem")) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

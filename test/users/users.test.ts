// A team's broker: two users, each with their own token and pairing code, each with a real Chromium carrying the
// extension paired with their own code. What one user's agent can reach of the other's: nothing, and every attempt
// is refused as if the other's browser did not exist, and audited under the user who tried.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  allowYaml,
  call,
  connectClient,
  DASHBOARD_TOKEN,
  launchBrowser,
  MCP_TOKEN,
  openTab,
  page,
  startBroker,
  startSite,
  TOKEN_ENV,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { StubExtension } from "../stubExtension.js";

interface Member {
  token: string;
  dashboardToken: string;
  pairingCode: string;
  client: Client;
  browser: TestBrowser;
  browserId: string;
}

describe("users: each agent reaches only its own user's browsers", () => {
  let broker: TestBroker;
  let site: TestSite;
  let alice: Member;
  let bob: Member;
  let owner: Client;

  beforeAll(async () => {
    site = await startSite();
    site.route("/secret", page("Alice's inbox", "<p>Alice's private mail</p>"));
    site.route("/public", page("Public", "<p>Anyone may read this</p>"));
    broker = await startBroker({ yaml: allowYaml() });
    const join = async (name: string): Promise<Member> => {
      const added = await broker.broker.users.add(name);
      const browser = await launchBrowser(broker.port, added.pairingCode, `${name} chromium`);
      const connected = await waitFor(`${name}'s browser`, () => broker.broker.registry.list().find((b) => b.info.label === `${name} chromium`), 30_000);
      return {
        token: added.token,
        dashboardToken: added.dashboardToken,
        pairingCode: added.pairingCode,
        client: await connectClient(broker.url, added.token),
        browser,
        browserId: connected.info.browserId,
      };
    };
    alice = await join("alice");
    bob = await join("bob");
    owner = await connectClient(broker.url, MCP_TOKEN);
  }, 90_000);

  afterAll(async () => {
    await Promise.allSettled([alice?.client.close(), bob?.client.close(), owner?.close()]);
    await Promise.allSettled([alice?.browser.close(), bob?.browser.close()]);
    await broker?.close();
    await site?.close();
  });

  it("lists only the caller's own browser; the implicit user sees none of theirs", async () => {
    const a = await call(alice.client, "list_browsers");
    expect(a.text).toContain("alice chromium");
    expect(a.text).not.toContain("bob chromium");
    expect(a.text).not.toContain(bob.browserId);
    const b = await call(bob.client, "list_browsers");
    expect(b.text).toContain("bob chromium");
    expect(b.text).not.toContain("alice chromium");
    const o = await call(owner, "list_browsers");
    expect(o.text).toContain("No browser is connected");
  });

  it("drives the caller's own browser by default, and another user's browser id is unknown_browser, exactly as a made-up one", async () => {
    const tab = await openTab(alice.client, `${site.origin}/secret`);
    const read = await call(alice.client, "read_page", { tab });
    expect(read.text).toContain("Alice's private mail");

    const theirs = await call(bob.client, "list_tabs", { browser: alice.browserId });
    const madeUp = await call(bob.client, "list_tabs", { browser: "no-such-browser-id" });
    expect(theirs.isError).toBe(true);
    expect(theirs.text).toMatch(/^unknown_browser/);
    expect(theirs.text.replace(alice.browserId, "X")).toBe(madeUp.text.replace("no-such-browser-id", "X"));
    const byLabel = await call(bob.client, "read_page", { browser: "alice chromium", tab });
    expect(byLabel.isError).toBe(true);
    expect(byLabel.text).toMatch(/^unknown_browser/);
    expect(byLabel.text).not.toContain("Alice's private mail");

    // Alice's tab id on Bob's own browser is just a tab Bob does not have.
    const sameId = await call(bob.client, "read_page", { tab });
    expect(sameId.isError).toBe(true);
    expect(sameId.text).not.toContain("Alice's private mail");
    const mine = await call(bob.client, "list_tabs");
    expect(mine.text).not.toContain("/secret");

    // Code mode runs as the same user: a program cannot name Alice's browser either.
    const run = await call(bob.client, "browser_run", { program: `return await browse.tabs.list();`, browser: alice.browserId });
    expect(run.isError).toBe(true);
    expect(run.text).toContain("unknown_browser");
  });

  it("records every call under the user who made it, refusals included", async () => {
    await call(bob.client, "list_tabs", { browser: alice.browserId });
    const records = broker.broker.audit.list();
    const bobs = records.filter((r) => r.user === "bob");
    expect(bobs.some((r) => r.tool === "list_tabs" && r.code === "unknown_browser" && r.decision === "failed")).toBe(true);
    expect(records.some((r) => r.user === "alice" && r.tool === "read_page" && r.decision === "allowed")).toBe(true);
    // A user's own view of the log holds only their records.
    const alicesView = broker.broker.audit.list({ user: "alice" });
    expect(alicesView.length).toBeGreaterThan(0);
    expect(alicesView.every((r) => r.user === "alice")).toBe(true);
    // The implicit user's records name no user, as a single-user broker's always did.
    await call(owner, "list_browsers");
    expect(broker.broker.audit.list({ user: "default" }).every((r) => r.user === undefined)).toBe(true);
  });

  it("serves a session only to the user who opened it: another user's token with its session id is a session not found", async () => {
    const init = await fetch(`${broker.url}/mcp`, {
      method: "POST",
      headers: { Authorization: `Bearer ${alice.token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
      }),
    });
    const sessionId = init.headers.get("mcp-session-id");
    expect(sessionId).toBeTruthy();
    await init.body?.cancel();
    const hijack = await fetch(`${broker.url}/mcp`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${bob.token}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "Mcp-Session-Id": sessionId!,
        "Mcp-Protocol-Version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_tabs", arguments: {} } }),
    });
    expect(hijack.status).toBe(404);
    expect(await hijack.text()).toContain("Session not found");
  });

  it("refuses a browser that claims another user's browser id, and leaves the other's connected", async () => {
    const stub = new StubExtension({ port: broker.port, browserId: alice.browserId, token: bob.pairingCode, label: "impostor" });
    const closed = await stub.closed;
    expect(closed.code).toBe(4401);
    const list = await call(alice.client, "list_browsers");
    expect(list.text).toContain("alice chromium");
    expect(broker.broker.registry.list().some((b) => b.info.label === "impostor")).toBe(false);
  });

  it("refuses an unknown pairing id, and a known id with the wrong secret", async () => {
    const unknown = new StubExtension({ port: broker.port, browserId: "stub-unknown-pairing", token: "p_aaaaaaaaaaaa.not-a-real-secret-at-all" });
    expect((await unknown.closed).code).toBe(4401);
    expect(unknown.rejected?.message).toContain("unknown or was revoked");
    const wrong = new StubExtension({ port: broker.port, browserId: "stub-wrong-secret", token: `${bob.pairingCode.split(".")[0]}.wrong-secret-wrong-secret` });
    expect((await wrong.closed).code).toBe(4401);
    // The broker proved itself with Bob's real key, which the wrong secret does not match: the stub saw no proof.
    expect(wrong.brokerProved).toBe(false);
  });

  it("opens the dashboard to a user's own dashboard token, showing a member their own browsers and records only", async () => {
    const dash = await dashboardLogin(broker, alice.dashboardToken);
    const state = (await dash.get("/dashboard/api/state")) as { browsers: Array<{ id: string; label: string }>; pages: unknown };
    expect(state.browsers.map((b) => b.label)).toEqual(["alice chromium"]);
    const config = (await dash.get("/dashboard/api/config")) as { pairingToken: string | null };
    expect(config.pairingToken).toBeNull();
    const preview = (await dash.get(`/dashboard/api/preview?browser=${bob.browserId}&tab=1`)) as { ok: boolean; error?: { code: string } };
    expect(preview).toMatchObject({ ok: false, error: { code: "unknown_browser" } });
    const audit = await dash.events("/dashboard/api/audit");
    expect(audit.length).toBeGreaterThan(0);
    expect(audit.every((r) => r.user === "alice")).toBe(true);
    // What reaches every user at once is an admin's.
    expect((await dash.post("/dashboard/api/stop")).status).toBe(403);
    expect((await dash.raw("/dashboard/api/users")).status).toBe(403);
    expect(broker.broker.registry.list().length).toBeGreaterThanOrEqual(2);
  });

  it("shows an admin every user's browsers, lists the users, and revokes one from the dashboard", async () => {
    const erin = await broker.broker.users.add("erin", { role: "admin" });
    const frank = await broker.broker.users.add("frank");
    const stub = new StubExtension({ port: broker.port, browserId: "frank-browser-0001", token: frank.pairingCode, label: "frank stub" });
    await stub.welcomed;
    const dash = await dashboardLogin(broker, erin.dashboardToken);
    const state = (await dash.get("/dashboard/api/state")) as { browsers: Array<{ label: string; owner: string }> };
    expect(state.browsers.map((b) => b.label).sort()).toEqual(expect.arrayContaining(["alice chromium", "bob chromium", "frank stub"]));
    const users = (await dash.get("/dashboard/api/users")) as { users: Array<{ name: string; role: string; browsers: number }> };
    expect(users.users.find((u) => u.name === "frank")).toMatchObject({ role: "member", browsers: 1 });
    const revoked = await dash.post("/dashboard/api/users/revoke", { name: "frank" });
    expect(revoked.status).toBe(200);
    await stub.closed;
    expect(broker.broker.registry.list().some((b) => b.info.label === "frank stub")).toBe(false);
    const frankClient = connectClient(broker.url, frank.token);
    await expect(frankClient).rejects.toThrow(/401|bearer token/);
    // Alice and Bob are untouched.
    expect((await call(alice.client, "list_browsers")).text).toContain("alice chromium");
  });

  it("never opens the dashboard to a user's MCP token, which their agents hold; a user's dashboard token opens no /mcp", async () => {
    // An admin's MCP token would be worst: it would let their agent answer for everyone.
    const gina = await broker.broker.users.add("gina", { role: "admin" });
    expect((await loginWith(broker, gina.token)).status).toBe(401);
    expect((await loginWith(broker, alice.token)).status).toBe(401);
    await expect(connectClient(broker.url, gina.dashboardToken)).rejects.toThrow(/401|bearer token/);
    await expect(connectClient(broker.url, alice.dashboardToken)).rejects.toThrow(/401|bearer token/);
    // Nor the broker's own tokens across their doors.
    expect((await loginWith(broker, MCP_TOKEN)).status).toBe(401);
    await expect(connectClient(broker.url, DASHBOARD_TOKEN)).rejects.toThrow(/401|bearer token/);
    expect((await loginWith(broker, gina.dashboardToken)).status).toBe(303);
  });

  it("redacts a user's dashboard token once it logged in: a page quoting it reads redacted, and so does the audit record", async () => {
    await dashboardLogin(broker, bob.dashboardToken);
    site.route("/quoting", page("Quoting", `<p>The token is ${bob.dashboardToken}.</p><button>Approve ${bob.dashboardToken}</button>`));
    const tab = await openTab(bob.client, `${site.origin}/quoting`);
    const read = await call(bob.client, "read_page", { tab, mode: "full" });
    expect(read.text).toContain("The token is [redacted: dashboard token].");
    expect(read.text).not.toContain(bob.dashboardToken);
    // A click on the button named after it (refused: no write grant) is recorded with that name as its target.
    const snap = await call(bob.client, "snapshot", { tab });
    const line = snap.text.split("\n").find((l) => l.includes("button") && l.includes("[ref="));
    expect(line).toContain("Approve [redacted: dashboard token]");
    const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
    const revision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect(ref, snap.text).toBeDefined();
    expect((await call(bob.client, "click", { tab, ref, revision })).isError).toBe(true);
    const records = JSON.stringify(broker.broker.audit.list({ user: "bob" }));
    expect(records).toContain('button \\"Approve [redacted: dashboard token]\\"');
    expect(records).not.toContain(bob.dashboardToken);
    await call(bob.client, "close_tab", { tab });
  });

  it("revoking a user locks out their token at the next request and disconnects their browser", async () => {
    const carol = await broker.broker.users.add("carol");
    const stub = new StubExtension({ port: broker.port, browserId: "carol-browser-0001", token: carol.pairingCode, label: "carol stub" });
    await stub.welcomed;
    const client = await connectClient(broker.url, carol.token);
    expect((await call(client, "list_browsers")).text).toContain("carol stub");
    await broker.broker.revokeUser("carol");
    await expect(call(client, "list_browsers")).rejects.toThrow(/401|missing or wrong bearer token/);
    const closed = await stub.closed;
    expect(closed.code).not.toBe(1006);
    const again = new StubExtension({ port: broker.port, browserId: "carol-browser-0001", token: carol.pairingCode });
    expect((await again.closed).code).toBe(4401);
    expect(again.rejected?.message).toContain("revoked");
    await client.close().catch(() => undefined);
  });
});

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

/** The CLI as a user runs it; asynchronous, since the broker it works beside runs in this process. */
function tabrelay(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...TOKEN_ENV },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

describe("tabrelay users: managing a running broker's users from the command line", () => {
  let broker: TestBroker;

  beforeAll(async () => {
    broker = await startBroker({ yaml: allowYaml() });
  });

  afterAll(async () => {
    await broker?.close();
  });

  it("adds a user whose printed tokens and pairing code work at once, lists them, and revokes them", async () => {
    const added = await tabrelay(["users", "add", "Dave", "--data-dir", broker.dataDir]);
    expect(added.code, added.stderr).toBe(0);
    const token = /^\s+(trt_\S+)$/m.exec(added.stdout)?.[1];
    const dashboardToken = /^\s+(trd_\S+)$/m.exec(added.stdout)?.[1];
    const code = /^\s+(p_[a-z0-9]{12}\.\S+)$/m.exec(added.stdout)?.[1];
    expect(token).toBeTruthy();
    expect(dashboardToken).toBeTruthy();
    expect(code).toBeTruthy();
    expect(added.stdout).toContain("Dashboard token (shown once; for dave alone, to log in to the dashboard; never give it to an agent):");
    expect(added.stdout).toContain("Added user dave");

    const stub = new StubExtension({ port: broker.port, browserId: "dave-browser-0001", token: code!, label: "dave stub" });
    await stub.welcomed;
    const client = await connectClient(broker.url, token);
    expect((await call(client, "list_browsers")).text).toContain("dave stub");

    const listed = await tabrelay(["users", "list", "--data-dir", broker.dataDir]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^dave {2}member {2}active/m);
    expect(listed.stdout).toMatch(/ {2}token t_[a-z0-9]{16} {2}"first token" {2}created \S+ {2}last used 20/);
    expect(listed.stdout).toMatch(/ {2}dashboard token d_[a-z0-9]{16} {2}"dashboard" {2}created \S+ {2}last used never/);
    expect(listed.stdout).not.toContain(token!);
    expect(listed.stdout).not.toContain(dashboardToken!);

    const again = await tabrelay(["users", "add", "dave", "--data-dir", broker.dataDir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a user named "dave" exists already');
    const bad = await tabrelay(["users", "add", "Dave Smith", "--data-dir", broker.dataDir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("is not a user name");

    // The dashboard takes the dashboard token, never the MCP token printed beside it.
    expect((await loginWith(broker, token!)).status).toBe(401);
    const dash = await dashboardLogin(broker, dashboardToken!);
    expect((await dash.raw("/dashboard/api/state")).status).toBe(200);

    // A new dashboard token (the old one lost or seen): printed once, and the old one no longer logs in.
    const renewed = await tabrelay(["users", "dashboard-token", "dave", "--data-dir", broker.dataDir]);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(renewed.stdout).toMatch(/^trd_\S+\n$/);
    expect(renewed.stderr).toContain("the one it replaces no longer logs in");
    expect((await loginWith(broker, dashboardToken!)).status).toBe(401);
    expect((await loginWith(broker, renewed.stdout.trim())).status).toBe(303);
    // The agents' token is untouched.
    expect((await call(client, "list_browsers")).text).toContain("dave stub");

    const revoked = await tabrelay(["users", "revoke", "dave", "--data-dir", broker.dataDir]);
    expect(revoked.code, revoked.stderr).toBe(0);
    // Their dashboard login is shut at its next request, as their token is (not when the broker's sweep comes round).
    expect((await dash.raw("/dashboard/api/state")).status).toBe(401);
    // The broker did not revoke them itself: it finds out from the store, and disconnects the browser.
    await stub.closed;
    expect(broker.broker.registry.list().some((b) => b.info.label === "dave stub")).toBe(false);
    await expect(call(client, "list_browsers")).rejects.toThrow(/401|bearer token/);
    await client.close().catch(() => undefined);
  }, 60_000);
});

/** The login form fetched and posted with `token`, as a person does: the answer to the post. */
async function loginWith(b: TestBroker, token: string): Promise<Response> {
  const form = await fetch(`${b.url}/login`);
  const loginCookie = (form.headers.getSetCookie().find((c) => c.startsWith("tabrelay_login_")) ?? "").split(";")[0]!;
  const csrfField = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  return fetch(`${b.url}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: b.url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf: csrfField, token }).toString(),
  });
}

/** A dashboard session opened the way the login form does, and the calls its page makes. */
async function dashboardLogin(b: TestBroker, token: string) {
  const login = await loginWith(b, token);
  expect(login.status).toBe(303);
  const cookie = (login.headers.getSetCookie().find((c) => c.startsWith("tabrelay_session_")) ?? "").split(";")[0]!;
  const home = await fetch(`${b.url}/`, { headers: { Cookie: cookie } });
  const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(await home.text())?.[1] ?? "";
  const raw = (path: string) => fetch(`${b.url}${path}`, { headers: { Cookie: cookie } });
  return {
    raw,
    get: async (path: string): Promise<unknown> => (await raw(path)).json(),
    post: (path: string, fields: Record<string, string> = {}) =>
      fetch(`${b.url}${path}`, {
        method: "POST",
        headers: { Cookie: cookie, Origin: b.url, "X-CSRF-Token": csrf, "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      }),
    /** The audit stream's first batch of records. */
    events: async (path: string): Promise<Array<{ user?: string; tool: string }>> => {
      const controller = new AbortController();
      const response = await fetch(`${b.url}${path}`, { headers: { Cookie: cookie }, signal: controller.signal });
      const reader = response.body!.getReader();
      let text = "";
      // The backlog comes first, then "ready".
      while (!text.includes("event: ready")) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      controller.abort();
      return text
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .flatMap((l) => {
          const value: unknown = JSON.parse(l.slice(6));
          return Array.isArray(value) ? value : [value];
        })
        .filter((r): r is { user?: string; tool: string } => typeof r === "object" && r !== null && "tool" in r);
    },
  };
}

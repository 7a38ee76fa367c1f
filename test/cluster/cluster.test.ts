// Several brokers behind nginx (issue 16 §3): three brokers sharing a Redis (presence, forwarded calls, MCP
// sessions) and a PostgreSQL store (users), the documented deploy/nginx.conf in front of them, round robin with no
// stickiness. Alice's real Chromium is connected to broker 1 and Bob's to broker 2; their agents talk to nginx, so
// each request of theirs lands on whichever broker the turn falls on. What a user notices: every call reaches their
// own browser wherever it lands, never the other's, each call is audited once (on the broker holding the browser),
// a session ends everywhere, and a broker that leaves fails the calls waiting on it at once.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  connectClient,
  launchBrowser,
  MCP_TOKEN,
  PAIRING_TOKEN,
  openTab,
  page,
  snapshotOf,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { startNginx, type TestNginx } from "../nginx.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { startRedis, type TestRedis } from "../redis.js";

const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));

let redis: TestRedis;
let pg: TestPostgres;
let site: TestSite;
const brokers: TestBroker[] = [];
let nginx: TestNginx;
let alice: { token: string; browser: TestBrowser; browserId: string; client: Client };
let bob: { token: string; browser: TestBrowser; browserId: string; client: Client };

const yaml = () => `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Add to cart$" }
browsers:
  source: local
mcp:
  allowed_hosts: ["127.0.0.1"]
store:
  postgres_url: "${pg.url}"
cluster:
  redis_url: "${redis.url}"
`;

/** The audit records of all three brokers, for one user. */
const audited = (user: string) => brokers.flatMap((b, i) => b.broker.audit.list({ user, limit: 1000 }).map((r) => ({ ...r, broker: i })));

beforeAll(async () => {
  [redis, pg, site] = await Promise.all([startRedis(), startPostgres(), startSite("127.0.0.1")]);
  site.route(
    "/shop",
    page("Shop", `<p id="n">Cart: empty</p><button onclick="document.getElementById('n').textContent = 'Cart: 1 item'">Add to cart</button>`),
  );
  site.route("/slow", page("Slow", "<p>Nothing will appear here.</p>"));
  for (let i = 0; i < 3; i++) brokers.push(await startBroker({ yaml: yaml() }));
  const a = await brokers[0]!.broker.users.add("alice");
  const b = await brokers[0]!.broker.users.add("bob");
  // Each browser dials one broker directly (the real extension refuses a plain-ws relay it cannot prove: through
  // a load balancer it dials wss://, whose TLS proves the name).
  const aliceBrowser = await launchBrowser(brokers[0]!.port, a.pairingCode, "alice chromium");
  const bobBrowser = await launchBrowser(brokers[1]!.port, b.pairingCode, "bob chromium");
  const aliceId = (await waitFor("alice's browser", () => brokers[0]!.broker.registry.list().find((x) => x.info.label === "alice chromium"), 30_000)).info
    .browserId;
  const bobId = (await waitFor("bob's browser", () => brokers[1]!.broker.registry.list().find((x) => x.info.label === "bob chromium"), 30_000)).info.browserId;
  nginx = await startNginx(brokers.map((x) => x.port));
  // Every other broker knows each browser before the agents start (alice's dials broker 0, bob's broker 1).
  await waitFor("presence on every broker", () =>
    brokers[1]!.broker.context.cluster?.remoteBrowsers(a.user.id).length === 1 &&
    brokers[2]!.broker.context.cluster?.remoteBrowsers(a.user.id).length === 1 &&
    brokers[0]!.broker.context.cluster?.remoteBrowsers(b.user.id).length === 1 &&
    brokers[2]!.broker.context.cluster?.remoteBrowsers(b.user.id).length === 1
      ? true
      : undefined,
  );
  alice = { token: a.token, browser: aliceBrowser, browserId: aliceId, client: await connectClient(nginx.url, a.token) };
  bob = { token: b.token, browser: bobBrowser, browserId: bobId, client: await connectClient(nginx.url, b.token) };
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([alice?.client.close(), bob?.client.close()]);
  await Promise.allSettled([alice?.browser.close(), bob?.browser.close()]);
  await nginx?.stop();
  for (const b of brokers) await b.close().catch(() => undefined);
  await Promise.allSettled([redis?.stop(), pg?.stop(), site?.close()]);
});

describe("three brokers behind nginx", () => {
  it("lists each user's own browser whichever broker answers, and never the other's", async () => {
    for (let i = 0; i < 6; i++) {
      const listed = await call(alice.client, "list_browsers");
      expect(listed.text).toContain(alice.browserId);
      expect(listed.text).not.toContain(bob.browserId);
      const theirs = await call(bob.client, "list_browsers");
      expect(theirs.text).toContain(bob.browserId);
      expect(theirs.text).not.toContain(alice.browserId);
    }
  });

  it("runs a session's calls on the user's browser wherever they land, each audited once, on the browser's broker", async () => {
    const count = (tool: string) => audited("alice").filter((r) => r.tool === tool);
    const tools = ["open_tab", "snapshot", "click", "read_page", "close_tab"];
    const before = tools.map((t) => count(t).length);
    const tab = await openTab(alice.client, `${site.origin}/shop`);
    const snap = await snapshotOf(alice.client, tab);
    const clicked = await call(alice.client, "click", { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision });
    expect(clicked.isError, clicked.text).toBe(false);
    for (let i = 0; i < 5; i++) expect((await call(alice.client, "read_page", { tab, mode: "full" })).text).toContain("Cart: 1 item");
    await call(alice.client, "close_tab", { tab });
    // 1 open_tab + 1 snapshot + 1 click + 5 reads + 1 close_tab: one record each, all on broker 0 (Alice's browser's).
    expect(tools.map((t, i) => count(t).length - before[i]!)).toEqual([1, 1, 1, 5, 1]);
    expect(new Set(tools.flatMap((t) => count(t).map((r) => r.broker)))).toEqual(new Set([0]));
  });

  it("refuses Bob's browser to Alice on every broker, word for word as a made-up id, and audits it under her", async () => {
    for (let i = 0; i < 3; i++) {
      const theirs = await call(alice.client, "list_tabs", { browser: bob.browserId });
      const madeUp = await call(alice.client, "list_tabs", { browser: "no-such-browser" });
      expect(theirs.text).toMatch(/^unknown_browser/);
      expect(theirs.text.replace(bob.browserId, "X")).toBe(madeUp.text.replace("no-such-browser", "X"));
    }
    const refused = audited("alice").filter((r) => r.tool === "list_tabs" && r.code === "unknown_browser");
    expect(refused.length).toBeGreaterThanOrEqual(6);
    expect(audited("bob").filter((r) => r.tool === "list_tabs" && r.code === "unknown_browser")).toEqual([]);
  });

  it("holds a session's tab lease against the user's other session, whichever brokers their requests land on", async () => {
    const second = await connectClient(nginx.url, alice.token);
    try {
      const tab = await openTab(alice.client, `${site.origin}/shop`);
      for (let i = 0; i < 3; i++) {
        const theirs = await call(second, "read_page", { tab });
        expect(theirs.isError).toBe(true);
        expect(theirs.text).toMatch(/^tab_leased: /);
        expect((await call(second, "list_tabs")).text).not.toContain(`/shop`);
      }
      // Ending the first session (DELETE, on whichever broker) releases the lease everywhere and closes its tab.
      await (alice.client.transport as StreamableHTTPClientTransport).terminateSession();
      await alice.client.close();
      alice.client = await connectClient(nginx.url, alice.token);
      let last = "";
      await waitFor("the tab closed with its session", async () =>
        /^(no_such_tab|not_agent_tab)/.test((last = (await call(second, "read_page", { tab })).text)) ? true : undefined,
      ).catch((e: unknown) => {
        throw new Error(`${String(e)}; last: ${last.slice(0, 300)}`);
      });
    } finally {
      await second.close();
    }
  });

  it("copies every broker's audit records into the shared store, where `tabrelay audit --shared` reads them as one log", async () => {
    // Alice's calls were recorded on broker 0 (her browser's), Bob's on broker 1; each broker copies its own.
    const store = await brokers[2]!.broker.users.store();
    await waitFor(
      "the copies",
      async () => {
        const copied = await store.audit({});
        return copied.some((r) => r.user === "alice" && r.tool === "click") && copied.some((r) => r.user === "bob" && r.tool === "list_browsers")
          ? true
          : undefined;
      },
      10_000,
    );
    // The local log and its copy agree, record for record, once the copy caught up (it runs every 500 ms).
    const local = brokers[0]!.broker.audit.list({ user: "alice", limit: 1000 });
    const copied = await waitFor(
      "the copy to catch up",
      async () => {
        const all = await store.audit({ user: "alice" });
        return local.every((r) => all.some((c) => c.broker === brokers[0]!.broker.brokerId && c.localId === r.id)) ? all : undefined;
      },
      10_000,
    );
    for (const r of local)
      expect(copied.find((c) => c.broker === brokers[0]!.broker.brokerId && c.localId === r.id)).toMatchObject({
        tool: r.tool,
        decision: r.decision,
        time: r.time,
      });
    expect(new Set(copied.filter((r) => r.tool === "click").map((r) => r.broker))).toEqual(new Set([brokers[0]!.broker.brokerId]));
    // The CLI, from any broker's data dir.
    const out = spawnSync(process.execPath, [CLI, "audit", "--shared", "--limit", "1000", "--data-dir", brokers[2]!.dataDir], {
      encoding: "utf8",
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
    });
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toMatch(new RegExp(`click .*user=alice.* broker=${brokers[0]!.broker.brokerId}`));
    expect(out.stdout).toMatch(new RegExp(`list_browsers .*user=bob.* broker=${brokers[1]!.broker.brokerId}`));
  });

  it("lists the browsers a user started on any broker from every broker, naming the broker; stops one from any broker; never shows it to another user", async () => {
    const started = await call(alice.client, "browser_start");
    expect(started.isError, started.text).toBe(false);
    const id = /Started browser (\S+)/.exec(started.text)?.[1] ?? "";
    const holder = brokers.find((b) => b.broker.registry.list().some((x) => x.info.browserId === id));
    expect(holder).toBeDefined();
    try {
      // Three calls through nginx: one on each broker, the one that started it and two that did not.
      for (let i = 0; i < 3; i++) {
        const listed = await call(alice.client, "browser_list_sessions");
        expect(listed.text).toMatch(new RegExp(`- id: ${id} \\| .* \\| broker: ${holder!.broker.brokerId}`));
        expect((await call(bob.client, "browser_list_sessions")).text).not.toContain(id);
      }
    } finally {
      // Through nginx too: whichever broker takes it carries it to the one running the browser.
      expect((await call(alice.client, "browser_stop", { browser: id })).text).toContain(`Stopped browser ${id}`);
    }
    for (let i = 0; i < 3; i++) expect((await call(alice.client, "browser_list_sessions")).text).not.toContain(id);
  });

  it("answers /ready on each broker, and through nginx", async () => {
    for (const b of brokers) expect((await fetch(`${b.url}/ready`)).status).toBe(200);
    expect((await fetch(`${nginx.url}/ready`, { headers: { Host: "127.0.0.1" } })).status).toBe(200);
  });

  it("drains a broker: not ready at once, its calls in flight get their grace, then calls waiting on it fail with browser_disconnected", async () => {
    // Bob's browser is on broker 1; a call for it through broker 2 (direct) waits on a selector that never comes.
    const direct = await connectClient(brokers[2]!.url, bob.token);
    try {
      const tab = await openTab(direct, `${site.origin}/slow`);
      const started = Date.now();
      const waiting = call(direct, "wait_for", { tab, selector: "#never", timeout_ms: 25_000 });
      await new Promise((resolve) => setTimeout(resolve, 800));
      const draining = brokers[1]!.broker.drain(1000);
      const ready = await fetch(`${brokers[1]!.url}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ ready: false, reasons: ["draining"] });
      await draining;
      const answer = await waiting;
      expect(answer.isError).toBe(true);
      expect(answer.text).toMatch(/^browser_disconnected: /);
      // The grace (1 s) and a goodbye, not the call's own 25 s.
      expect(Date.now() - started).toBeLessThan(15_000);
      // Nothing of Bob's is left in presence: another call is not_connected, not a wait.
      expect((await call(direct, "list_browsers")).text).not.toContain(bob.browserId);
    } finally {
      await direct.close();
    }
  });
});

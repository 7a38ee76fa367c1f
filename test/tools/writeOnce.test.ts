// Writes at most once (issue 16 §4), end to end: the real MCP client, real Chromium with the extension, a page
// whose button the server counts. A retry after a dropped HTTP response and concurrent retries each press the button
// once; the same key with other arguments is idempotency_conflict; a key is its session's: another session, on this
// broker or on another sharing the PostgreSQL store, is refused naming the client (issue 24 §7); a call that never
// reached the page spends no key. The audit log has one record per call.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allowYaml,
  call,
  connectClient,
  launchBrowser,
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
import { startPostgres, type TestPostgres } from "../postgres.js";

const WRITE_POLICY = `  write:
    click:
      "127.0.0.1": { label: "^Add to cart$" }
`;

let site: TestSite;
let pg: TestPostgres;
let brokerA: TestBroker;
let brokerB: TestBroker;
let browser: TestBrowser;
let client: Client;
let proxy: DroppingProxy;
let hits = 0;

/** A pass-through proxy to a broker that, when told, lets the broker answer the next tools/call and drops the answer. */
interface DroppingProxy {
  url: string;
  dropNextCall(): void;
  close(): Promise<void>;
}

async function droppingProxy(target: TestBroker): Promise<DroppingProxy> {
  let drop = false;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const dropping = drop && body.includes('"tools/call"');
      if (dropping) drop = false;
      const upstream = request(
        { host: "127.0.0.1", port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: `127.0.0.1:${target.port}` } },
        (answer) => {
          if (dropping) {
            // The broker answered in full; the client never hears it, as when a connection breaks on the way back.
            answer.resume();
            answer.on("end", () => req.socket.destroy());
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropNextCall: () => void (drop = true),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function addToCart(c: Client, tab: number, key: string) {
  const snap = await snapshotOf(c, tab);
  return { snap, args: { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision, idempotency_key: key } };
}

const keyed = (broker: TestBroker, key: string) =>
  broker.broker.audit.list({ limit: 1000 }).filter((r) => (r.detail ?? "").includes(`"idempotency_key":"${key}"`) || r.tool === "click");

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/hit", (_req, res) => {
    hits++;
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end(String(hits));
  });
  site.route(
    "/shop",
    page(
      "Shop",
      `<p id="count">Cart: 0</p><button onclick="fetch('/hit', { method: 'POST' }).then((r) => r.text()).then((n) => (document.getElementById('count').textContent = 'Cart: ' + n))">Add to cart</button>`,
    ),
  );
  pg = await startPostgres();
  const yaml = `${allowYaml(WRITE_POLICY)}store:\n  postgres_url: "${pg.url}"\n`;
  brokerA = await startBroker({ yaml });
  brokerB = await startBroker({ yaml });
  browser = await launchBrowser(brokerA.port);
  await waitFor("the browser on broker A", () => (brokerA.broker.registry.list().length > 0 ? true : undefined), 30_000);
  proxy = await droppingProxy(brokerA);
  client = await connectClient(proxy.url);
}, 90_000);

afterAll(async () => {
  await client?.close();
  await proxy?.close();
  await browser?.close();
  await brokerA?.close();
  await brokerB?.close();
  await pg?.stop();
  await site?.close();
});

/** Waits for the page's own fetch to land, then a moment more in case a second one follows. */
async function settledHits(atLeast: number): Promise<number> {
  await waitFor(`${atLeast} hit(s) on /hit`, () => (hits >= atLeast ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 500));
  return hits;
}

describe("writes with an idempotency key", () => {
  it("advertises idempotency_key on the write tools an agent calls, and on no read tool", async () => {
    const { tools } = await client.listTools();
    const keyedTools = tools.filter((t) => "idempotency_key" in (t.inputSchema.properties ?? {})).map((t) => t.name);
    for (const name of ["click", "fill", "select_option", "set_checked", "press_key", "browser_run"]) expect(keyedTools).toContain(name);
    for (const name of ["read_url", "snapshot", "list_tabs", "screenshot", "open_tab"]) expect(keyedTools).not.toContain(name);
  });

  it("a retry after the HTTP response was dropped gets the first outcome, and the button was pressed once", async () => {
    hits = 0;
    const tab = await openTab(client, `${site.origin}/shop`);
    const { args } = await addToCart(client, tab, "order-1");
    proxy.dropNextCall();
    await expect(client.callTool({ name: "click", arguments: args })).rejects.toThrow();
    expect(await settledHits(1)).toBe(1);
    const retry = await call(client, "click", args);
    expect(retry.isError, retry.text).toBe(false);
    expect(retry.text).toContain("A retry: this is the outcome of the first call with this idempotency_key");
    expect(retry.text).toContain("nothing was sent to the browser now");
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hits).toBe(1);
    expect((await call(client, "read_page", { tab, mode: "full" })).text).toContain("Cart: 1");
    // One record for the click that ran, one for the replay, which says what it replayed.
    const records = keyed(brokerA, "order-1").filter((r) => r.tool === "click" && r.tab === tab);
    expect(records.map((r) => r.decision)).toEqual(["allowed", "allowed"]);
    expect(records.filter((r) => (r.detail ?? "").includes("replay_of"))).toHaveLength(1);
    await call(client, "close_tab", { tab });
  });

  it("five concurrent calls with one key press the button once and all get its outcome", async () => {
    hits = 0;
    const tab = await openTab(client, `${site.origin}/shop`);
    const { args } = await addToCart(client, tab, "order-2");
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(client, "click", args)));
    expect(await settledHits(1)).toBe(1);
    for (const answer of answers) expect(answer.isError, answer.text).toBe(false);
    expect(answers.filter((a) => a.text.includes("A retry"))).toHaveLength(4);
    await call(client, "close_tab", { tab });
  });

  it("the same key with other arguments is idempotency_conflict, runs nothing, and is audited as refused", async () => {
    hits = 0;
    const tab = await openTab(client, `${site.origin}/shop`);
    const { args } = await addToCart(client, tab, "order-3");
    expect((await call(client, "click", args)).isError).toBe(false);
    await settledHits(1);
    const other = await call(client, "click", { ...args, revision: undefined });
    expect(other.isError).toBe(true);
    expect(other.text).toMatch(/^idempotency_conflict: this idempotency_key was first used at \S+ for click with other arguments; nothing was run/);
    const fill = await call(client, "fill", { tab, ref: args.ref, text: "x", idempotency_key: "order-3" });
    expect(fill.text).toMatch(/^idempotency_conflict: .* for click;/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hits).toBe(1);
    const refused = brokerA.broker.audit.list({ limit: 1000 }).filter((r) => r.code === "idempotency_conflict");
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(refused.every((r) => r.decision === "refused")).toBe(true);
    await call(client, "close_tab", { tab });
  });

  it("a call that never reached the page (a stale ref) spends no key: the retry with a fresh ref runs", async () => {
    hits = 0;
    const tab = await openTab(client, `${site.origin}/shop`);
    const { args } = await addToCart(client, tab, "order-4");
    await call(client, "navigate", { tab, url: `${site.origin}/shop?again` }); // the ref is stale now
    const stale = await call(client, "click", args);
    expect(stale.text).toMatch(/^stale_ref/);
    expect(hits).toBe(0);
    const fresh = await addToCart(client, tab, "order-4");
    const ran = await call(client, "click", fresh.args);
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.text).not.toContain("A retry");
    expect(await settledHits(1)).toBe(1);
    await call(client, "close_tab", { tab });
  });

  it("a key is its session's: another session, here or on a broker sharing the store, gets neither the outcome nor a run", async () => {
    hits = 0;
    const tab = await openTab(client, `${site.origin}/shop`);
    const { args } = await addToCart(client, tab, "order-5");
    const first = await call(client, "click", args);
    expect(first.isError, first.text).toBe(false);
    expect(await settledHits(1)).toBe(1);
    const owner =
      /^idempotency_conflict: this idempotency_key belongs to another session \(client "[^"]+", first used at \S+\); nothing was run, and that call's outcome is that session's/;
    // Another session of the same user on this broker, with the same key and arguments (the tab is the first
    // session's, so its own click would be tab_leased: the key is judged before the call reaches the tab).
    const neighbour = await connectClient(brokerA.url);
    // Broker B has no browser at all: it could not have pressed anything.
    expect(brokerB.broker.registry.list()).toHaveLength(0);
    const elsewhere = await connectClient(brokerB.url);
    try {
      for (const other of [neighbour, elsewhere]) {
        const retry = await call(other, "click", args);
        expect(retry.isError).toBe(true);
        expect(retry.text).toMatch(owner);
        expect(retry.text).not.toContain(first.text.split("\n")[0]!);
      }
      // A new key on broker B does reach for a browser, and there is none. The store's URL names its account
      // "tabrelay" (postgres://tabrelay:<password>@...): the product's own words come through unredacted.
      expect((await call(elsewhere, "click", { ...args, idempotency_key: "order-6" })).text).toMatch(
        /^not_connected: no browser is connected to tabrelay; start one with `tabrelay launch`/,
      );
      // The key's own session still gets its outcome back (the positive control).
      const again = await call(client, "click", args);
      expect(again.text).toContain("A retry: this is the outcome of the first call");
      const refused = [...brokerA.broker.audit.list({ limit: 1000 }), ...brokerB.broker.audit.list({ limit: 1000 })].filter(
        (r) => r.code === "idempotency_conflict" && (r.detail ?? "").includes('"order-5"'),
      );
      expect(refused.map((r) => r.decision)).toEqual(["refused", "refused"]);
    } finally {
      await neighbour.close();
      await elsewhere.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hits).toBe(1);
    await call(client, "close_tab", { tab });
  });

  it("refuses a key that is not 1 to 200 printable characters, before anything runs", async () => {
    const bad = await call(client, "click", { tab: 1, ref: "e1", idempotency_key: "has space" });
    expect(bad.text).toMatch(/^invalid_params/);
    const long = await call(client, "click", { tab: 1, ref: "e1", idempotency_key: "k".repeat(201) });
    expect(long.text).toMatch(/^invalid_params/);
  });
});

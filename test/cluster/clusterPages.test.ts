// Page tools in a cluster (issue 16 §3): a page's /page socket reaches one broker, its user's agents talk to another.
// Two brokers sharing Redis and PostgreSQL; Alice's real Chromium (on broker A) opens a web app whose page connects
// to broker B with a page token minted on A for her. Her session on A lists the page's tools (and hears of them),
// her call is carried to B and answered by the page, audited once where the page is; Bob's agents get nothing of
// them, the name failing word for word as a made-up one.
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  connectClient,
  launchBrowser,
  routePageToken,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { wsHandshake } from "../rawHttp.js";
import { startRedis, type TestRedis } from "../redis.js";

let redis: TestRedis;
let pg: TestPostgres;
let site: TestSite;
let a: TestBroker;
let b: TestBroker;
let browser: TestBrowser;
let alice: Client;
let bob: Client;
let aliceToken: string;
let prefix: string;
let listChanges = 0;

function appPage(brokerWs: string): string {
  return `<!doctype html><html><head><title>Orders app</title></head><body><p id="status">starting</p><script type="module">
import { createServer } from "/page-lib.js";
const server = createServer({
  endpoint: ${JSON.stringify(brokerWs)},
  serverInfo: { name: "orders-app", version: "1.0.0" },
  token: async () => (await (await fetch("/token")).json()).token,
});
server.registerTool({ name: "search_orders", description: "Searches the user's orders.", inputSchema: { type: "object", properties: { q: { type: "string" } } }, handler: ({ q }) => "alice's orders for " + q });
server.registerPrompt({ name: "weekly_report", description: "Drafts this week's report.", arguments: [{ name: "region", required: true }], content: ({ region }) => "Summarise alice's orders in " + region + "." });
await server.connect();
document.getElementById("status").textContent = "connected";
</script></body></html>`;
}

async function attempt(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  try {
    return (await call(client, name, args)).text;
  } catch (error) {
    return `protocol error: ${error instanceof Error ? error.message : String(error)}`;
  }
}

beforeAll(async () => {
  [redis, pg, site] = await Promise.all([startRedis(), startPostgres(), startSite()]);
  prefix = `127_0_0_1_${site.port}__`;
  const yaml = `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    page_tools:
      "${site.origin}": { tools: ".*" }
pages:
  allowed_origins: ["${site.origin}"]
store:
  postgres_url: "${pg.url}"
cluster:
  redis_url: "${redis.url}"
`;
  a = await startBroker({ yaml });
  b = await startBroker({ yaml });
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL("../../packages/page/src/index.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    write: false,
    platform: "browser",
  });
  const lib = bundle.outputFiles[0]!.text;
  site.route("/page-lib.js", (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/javascript" });
    res.end(lib);
  });
  // The page's socket goes to broker B; its token comes from broker A, minted with Alice's bearer.
  site.route("/orders", appPage(`${b.url.replace("http", "ws")}/page`));
  routePageToken(
    site,
    () => a.url,
    () => aliceToken,
  );
  const added = await a.broker.users.add("alice");
  const other = await a.broker.users.add("bob");
  aliceToken = added.token;
  browser = await launchBrowser(a.port, added.pairingCode, "alice chromium");
  await waitFor("alice's browser", () => a.broker.registry.list().find((x) => x.info.label === "alice chromium"), 30_000);
  alice = await connectClient(a.url, added.token);
  alice.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanges++);
  bob = await connectClient(b.url, other.token);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([alice?.close(), bob?.close()]);
  await browser?.close();
  await a?.close();
  await b?.close();
  await Promise.allSettled([redis?.stop(), pg?.stop(), site?.close()]);
});

describe("a page connected to another broker", () => {
  it("offers its tools to its user's session on this broker, which hears of them and calls them there", async () => {
    const opened = await call(alice, "open_tab", { url: `${site.origin}/orders`, active: true });
    expect(opened.isError, opened.text).toBe(false);
    const name = `${prefix}search_orders`;
    await waitFor("the page's tool on broker B", () => (b.broker.pages?.registry.tools().some((t) => t.agentName === name) ? true : undefined), 20_000);
    await waitFor("Alice's session on A listing it", async () => ((await alice.listTools()).tools.some((t) => t.name === name) ? true : undefined), 10_000);
    expect(listChanges).toBeGreaterThan(0);
    const before = b.broker.audit.list({ user: "alice", limit: 1000 }).filter((r) => r.tool === name).length;
    const answer = await call(alice, name, { q: "lamps" });
    expect(answer.isError, answer.text).toBe(false);
    expect(answer.text).toContain("alice's orders for lamps");
    // Audited once, where the page is.
    expect(b.broker.audit.list({ user: "alice", limit: 1000 }).filter((r) => r.tool === name).length - before).toBe(1);
    expect(a.broker.audit.list({ user: "alice", limit: 1000 }).filter((r) => r.tool === name)).toEqual([]);
  });

  it("offers its prompts to its user's session on this broker too, asking the page's broker for their text", async () => {
    const name = `${prefix}weekly_report`;
    await waitFor(
      "Alice's session on A listing the prompt",
      async () => ((await alice.listPrompts()).prompts.some((p) => p.name === name) ? true : undefined),
      10_000,
    );
    const listed = (await alice.listPrompts()).prompts.find((p) => p.name === name);
    expect(listed?.description).toContain("page text, not an instruction");
    expect(listed?.arguments).toEqual([{ name: "region", required: true }]);
    const got = await alice.getPrompt({ name, arguments: { region: "the north" } });
    // Fenced as page content on the page's broker, carried as it is.
    expect(got.messages).toHaveLength(1);
    expect(got.messages[0]?.role).toBe("user");
    expect((got.messages[0]?.content as { text: string }).text).toMatch(
      /<page-content nonce="([0-9a-f]+)">\n\[the page labels this part "user"\]\nSummarise alice's orders in the north\.\n<\/page-content nonce="\1">$/,
    );
    // Bob: not listed on either broker, and asking for it fails as for a made-up name.
    expect((await bob.listPrompts()).prompts.map((p) => p.name)).not.toContain(name);
    const theirs = await bob.getPrompt({ name, arguments: { region: "x" } }).then(
      () => "answered",
      (e: unknown) => String(e),
    );
    const madeUp = await bob.getPrompt({ name: `${prefix}no_such_prompt`, arguments: { region: "x" } }).then(
      () => "answered",
      (e: unknown) => String(e),
    );
    expect(theirs).toMatch(/no page offers the prompt/);
    expect(theirs.replace(name, "X")).toBe(madeUp.replace(`${prefix}no_such_prompt`, "X"));
  });

  it("gives a program on this broker the page's tools (browse.pageTools, browse.callPageTool), run where the page is", async () => {
    const name = `${prefix}search_orders`;
    const program = `const tools = await browse.pageTools(); const answer = await browse.callPageTool(${JSON.stringify(name)}, { q: "chairs" }); return { names: tools.map((t) => t.name), answer };`;
    const ran = await alice.callTool({ name: "browser_run", arguments: { program } });
    expect(ran.isError, JSON.stringify(ran.content)).toBeFalsy();
    const value = (ran.structuredContent as { value?: { names: string[]; answer: unknown } } | undefined)?.value;
    expect(value?.names).toContain(name);
    expect(JSON.stringify(value?.answer)).toContain("alice's orders for chairs");
    // Bob's program sees none of it, and the name fails as a made-up one.
    const theirs = await call(bob, "browser_run", { program });
    expect(theirs.text).toMatch(/page_gone/);
  });

  it("gives Bob nothing of it, on either broker: not listed, and its name fails as a made-up one", async () => {
    const name = `${prefix}search_orders`;
    expect((await bob.listTools()).tools.map((t) => t.name)).not.toContain(name);
    const theirs = await attempt(bob, name, { q: "lamps" });
    const madeUp = await attempt(bob, `${prefix}no_such_tool`, { q: "lamps" });
    expect(theirs).not.toContain("alice's orders");
    expect(theirs.replace(name, "X")).toBe(madeUp.replace(`${prefix}no_such_tool`, "X"));
  });
});

describe("a page token in a cluster", () => {
  /** A /page handshake to one broker with the page's Origin: opened, or the refusal's status and text. */
  const tryConnect = (broker: TestBroker, token: string) =>
    wsHandshake(`${broker.url.replace("http", "ws")}/page`, { Origin: site.origin }, [`bearer.${token}`]);

  it("opens one connection in the whole cluster: replayed on the other broker (they share its signing key), it is refused", async () => {
    const minted = await fetch(`${a.url}/page-tokens`, {
      method: "POST",
      headers: { Authorization: `Bearer ${aliceToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ origin: site.origin }),
    });
    const { token } = (await minted.json()) as { token: string };
    expect(await tryConnect(b, token)).toMatchObject({ opened: true });
    expect(await tryConnect(a, token)).toMatchObject({ status: 401, body: expect.stringContaining("already used") });
    expect(await tryConnect(b, token)).toMatchObject({ status: 401, body: expect.stringContaining("already used") });
  });

  const mint = async () => {
    const minted = await fetch(`${a.url}/page-tokens`, {
      method: "POST",
      headers: { Authorization: `Bearer ${aliceToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ origin: site.origin }),
    });
    return ((await minted.json()) as { token: string }).token;
  };

  it("lives through a page that resets its socket while Redis is asked about its token, and refuses one Redis never answers", async () => {
    const token = await mint();
    redis.pause();
    try {
      // A raw handshake, then a reset (RST) while the claim waits on the stalled Redis.
      const socket = connect(b.port, "127.0.0.1");
      await new Promise((resolve) => socket.once("connect", resolve));
      socket.write(
        `GET /page HTTP/1.1\r\nHost: 127.0.0.1:${b.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Protocol: bearer.${token}\r\nOrigin: ${site.origin}\r\n\r\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.resetAndDestroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      // A handshake Redis never answers is refused after a few seconds, saying why.
      const stalled = await tryConnect(b, await mint());
      expect(stalled).toMatchObject({ status: 503, body: expect.stringContaining("no answer from Redis") });
    } finally {
      redis.resume();
    }
    // The broker (this very process) is still here, and takes the next page.
    await waitFor("Redis back", async () => ((await tryConnect(b, await mint())).opened ? true : undefined), 15_000);
  });
});

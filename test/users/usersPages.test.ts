// A team's broker, page tools and screenshot links: two users, each with a real Chromium carrying the extension paired
// with their own code, each opening the same web app in their own browser (its page asks its backend for a page token,
// minted with that user's bearer) and a WebMCP page. What one user's agents get of the other's page tools and
// screenshots: nothing. Another user's page tool name fails exactly as a made-up one (tools/call, prompts, code mode),
// the attempt is recorded under the user who made it, and another user's screenshot link leads nowhere.
import { fileURLToPath } from "node:url";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allowYaml,
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

interface Member {
  name: string;
  id: string;
  token: string;
  /** Their own login to the dashboard (never the MCP token, which their agent holds). */
  dashboardToken: string;
  client: Client;
  browser: TestBrowser;
  listChanges: number;
}

let broker: TestBroker;
let site: TestSite;
let alice: Member;
let bob: Member;
let prefix: string;

/** The app's page: loads the library, fetches its token from its own backend as ?as names, offers its user's tools. */
function appPage(brokerWs: string): string {
  return `<!doctype html><html><head><title>Orders app</title></head><body><p id="status">starting</p><p id="calls">calls: 0</p><script type="module">
import { createServer } from "/page-lib.js";
const as = new URLSearchParams(location.search).get("as");
let calls = 0;
const counted = (answer) => { calls++; document.getElementById("calls").textContent = "calls: " + calls; return answer; };
const server = createServer({
  endpoint: ${JSON.stringify(brokerWs)},
  serverInfo: { name: "orders-app", version: "1.0.0" },
  token: async () => (await (await fetch("/token?as=" + as)).json()).token,
});
server.registerTool({ name: "search_orders", description: "Searches the user's orders.", inputSchema: { type: "object", properties: { q: { type: "string" } } }, handler: ({ q }) => counted(as + "'s orders for " + q) });
server.registerTool({ name: as + "_notes", description: "The user's private notes.", inputSchema: { type: "object" }, handler: () => counted(as + "'s private notes") });
server.registerPrompt({ name: as + "_weekly", description: "This week's report.", content: "Summarise " + as + "'s week." });
await server.connect();
document.getElementById("status").textContent = "connected";
</script></body></html>`;
}

const webMcpPage = `<!doctype html><html><head><title>Cart</title></head><body><p id="calls">cart calls: 0</p><script>
const as = new URLSearchParams(location.search).get("as");
let calls = 0;
document.addEventListener("DOMContentLoaded", () => {
  document.modelContext.registerTool({ name: as + "_cart", description: "The user's cart.", inputSchema: { type: "object" }, execute: () => { calls++; document.getElementById("calls").textContent = "cart calls: " + calls; return as + "'s cart: 2 items"; } });
});
</script></body></html>`;

const names = async (m: Member) => (await m.client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith(prefix));

/** What tools/call answers: the tool's text, or the protocol error's message for a tool the caller has not got. */
async function attempt(m: Member, name: string, args: Record<string, unknown> = {}): Promise<string> {
  try {
    return (await call(m.client, name, args)).text;
  } catch (error) {
    return `protocol error: ${error instanceof Error ? error.message : String(error)}`;
  }
}

async function openTab(m: Member, url: string): Promise<number> {
  const opened = await call(m.client, "open_tab", { url, active: true });
  expect(opened.isError, opened.text).toBe(false);
  return Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
}

beforeAll(async () => {
  site = await startSite();
  prefix = `127_0_0_1_${site.port}__`;
  const yaml =
    allowYaml().replace("policy:\n", `policy:\n  write:\n    page_tools:\n      "${site.origin}": { tools: ".*" }\n`) +
    `pages:\n  allowed_origins: ["${site.origin}"]\n  webmcp: true\nscreenshots:\n  enabled: true\n  ttl_seconds: 120\n`;
  broker = await startBroker({ yaml });
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
  site.route("/orders", appPage(`${broker.url.replace("http", "ws")}/page`));
  site.route("/cart", webMcpPage);
  const tokens = new Map<string, string>();
  // The app's backend: asks the broker for a page token with its signed-in user's bearer, as an app would.
  routePageToken(
    site,
    () => broker.url,
    (req) => tokens.get(new URL(req.url ?? "/", site.origin).searchParams.get("as") ?? "") ?? "",
  );
  const join = async (name: string): Promise<Member> => {
    const added = await broker.broker.users.add(name);
    tokens.set(name, added.token);
    const browser = await launchBrowser(broker.port, added.pairingCode, `${name} chromium`);
    await waitFor(`${name}'s browser`, () => broker.broker.registry.list().find((b) => b.info.label === `${name} chromium`), 30_000);
    const member: Member = {
      name,
      id: added.user.id,
      token: added.token,
      dashboardToken: added.dashboardToken,
      client: await connectClient(broker.url, added.token),
      browser,
      listChanges: 0,
    };
    member.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      member.listChanges++;
    });
    return member;
  };
  alice = await join("alice");
  bob = await join("bob");
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([alice?.client.close(), bob?.client.close()]);
  await Promise.allSettled([alice?.browser.close(), bob?.browser.close()]);
  await broker?.close();
  await site?.close();
});

describe("page tools: each user's agents see and call only their own pages' tools", () => {
  let aliceTab: number;

  beforeAll(async () => {
    // Alice's page connects first: a later page of Bob's offering the same names must not answer for her.
    aliceTab = await openTab(alice, `${site.origin}/orders?as=alice`);
    await waitFor("Alice's page tools", async () => ((await names(alice)).includes(`${prefix}alice_notes`) ? true : undefined), 20_000);
    const heardBefore = alice.listChanges;
    await openTab(bob, `${site.origin}/orders?as=bob`);
    await waitFor("Bob's page tools", async () => ((await names(bob)).includes(`${prefix}bob_notes`) ? true : undefined), 20_000);
    // Give a stray notification time to arrive before the test below counts them.
    await new Promise((r) => setTimeout(r, 500));
    expect(alice.listChanges).toBe(heardBefore);
  }, 60_000);

  it("lists only the tools and prompts of the caller's own pages, and hears list_changed only for them", async () => {
    expect((await names(alice)).sort()).toEqual([`${prefix}alice_notes`, `${prefix}search_orders`]);
    expect((await names(bob)).sort()).toEqual([`${prefix}bob_notes`, `${prefix}search_orders`]);
    expect((await alice.client.listPrompts()).prompts.map((p) => p.name)).toEqual([`${prefix}alice_weekly`]);
    expect((await bob.client.listPrompts()).prompts.map((p) => p.name)).toEqual([`${prefix}bob_weekly`]);
  });

  it("a shared name runs on the caller's own page: Bob's newer page does not answer for Alice", async () => {
    expect(await attempt(alice, `${prefix}search_orders`, { q: "shoes" })).toContain("alice's orders for shoes");
    expect(await attempt(bob, `${prefix}search_orders`, { q: "shoes" })).toContain("bob's orders for shoes");
  });

  it("another user's page tool is as unknown as a made-up name, nothing reaches their page, and the attempt is recorded as a made-up one's", async () => {
    const before = (await call(alice.client, "read_page", { tab: aliceTab, mode: "full" })).text;
    const callsBefore = /calls: (\d+)/.exec(before)?.[1];
    const theirs = await attempt(bob, `${prefix}alice_notes`);
    const madeUp = await attempt(bob, `${prefix}nobody_notes`);
    expect(theirs).toMatch(/^protocol error: .*unknown tool/);
    expect(theirs.replace("alice_notes", "X")).toBe(madeUp.replace("nobody_notes", "X"));
    expect(theirs).not.toContain("private notes");
    const after = (await call(alice.client, "read_page", { tab: aliceTab, mode: "full" })).text;
    expect(/calls: (\d+)/.exec(after)?.[1]).toBe(callsBefore);

    const record = (tool: string) => broker.broker.audit.list({ user: "bob", limit: 200 }).filter((r) => r.tool === tool);
    const [theirsRecord] = record(`${prefix}alice_notes`);
    const [madeUpRecord] = record(`${prefix}nobody_notes`);
    expect(theirsRecord).toMatchObject({ user: "bob", client: "tabrelay-test", decision: "refused", code: "invalid_params", target: "unknown tool" });
    const shape = ({ id: _id, time: _time, tool: _tool, ...rest }: { id: number; time: number; tool: string }) => rest;
    expect(shape(theirsRecord!)).toEqual(shape(madeUpRecord!));
    // Alice's view of the log holds none of Bob's attempts.
    expect(broker.broker.audit.list({ user: "alice", limit: 500 }).some((r) => r.tool.endsWith("nobody_notes") || r.user === "bob")).toBe(false);
  });

  it("another user's page prompt is as unknown as a made-up one, and recorded alike", async () => {
    const get = (name: string) =>
      bob.client.getPrompt({ name }).then(
        () => "got it",
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
    const theirs = await get(`${prefix}alice_weekly`);
    const madeUp = await get(`${prefix}nobody_weekly`);
    expect(theirs).toContain("no page offers the prompt");
    expect(theirs.replace("alice_weekly", "X")).toBe(madeUp.replace("nobody_weekly", "X"));
    const prompts = broker.broker.audit.list({ user: "bob", limit: 200 }).filter((r) => r.tool === "page_prompt");
    expect(prompts.map((r) => `${r.target}:${r.decision}:${r.code}`)).toEqual([
      `prompt ${prefix}alice_weekly:refused:page_gone`,
      `prompt ${prefix}nobody_weekly:refused:page_gone`,
    ]);
  });

  it("a code-mode program lists and calls only its user's page tools; another's name fails as a made-up one, each call recorded", async () => {
    const program = `const names = (await browse.pageTools()).map((t) => t.name).sort();
const attempt = async (name) => { try { return JSON.stringify(await browse.callPageTool(name)); } catch (e) { return e.code + ": " + e.message; } };
return { names, own: await attempt(${JSON.stringify(`${prefix}bob_notes`)}), theirs: await attempt(${JSON.stringify(`${prefix}alice_notes`)}), madeUp: await attempt(${JSON.stringify(`${prefix}nobody_notes`)}) };`;
    const result = await bob.client.callTool({ name: "browser_run", arguments: { program } });
    const value = (result.structuredContent as { value: { names: string[]; own: string; theirs: string; madeUp: string } }).value;
    expect(value.names).toEqual([`${prefix}bob_notes`, `${prefix}search_orders`]);
    expect(value.own).toContain("bob's private notes");
    expect(value.theirs).toMatch(/^page_gone: no page offers a tool named/);
    expect(value.theirs.replace("alice_notes", "X")).toBe(value.madeUp.replace("nobody_notes", "X"));
    const rows = broker.broker.audit.list({ user: "bob", limit: 200 }).filter((r) => r.run !== undefined && r.tool.startsWith(prefix));
    const theirs = rows.find((r) => r.tool === `${prefix}alice_notes`);
    const madeUp = rows.find((r) => r.tool === `${prefix}nobody_notes`);
    expect(theirs).toMatchObject({ decision: "failed", code: "page_gone" });
    expect(theirs?.origin).toBeUndefined();
    expect({ ...theirs, id: 0, time: 0, tool: "", durationMs: 0 }).toEqual({ ...madeUp, id: 0, time: 0, tool: "", durationMs: 0 });
  });

  it("a page opened later for Alice tells Alice's agents, not Bob's", async () => {
    const bobHeard = bob.listChanges;
    const aliceHeard = alice.listChanges;
    const tab = await openTab(alice, `${site.origin}/cart?as=alice`);
    await waitFor("Alice's WebMCP tool", async () => ((await names(alice)).includes(`${prefix}alice_cart`) ? true : undefined), 20_000);
    await waitFor("Alice told", () => (alice.listChanges > aliceHeard ? true : undefined));
    await new Promise((r) => setTimeout(r, 500));
    expect(bob.listChanges).toBe(bobHeard);
    expect(await names(bob)).not.toContain(`${prefix}alice_cart`);
    await call(alice.client, "close_tab", { tab });
  });

  it("a WebMCP tool of a tab in Alice's browser is Alice's alone", async () => {
    const tab = await openTab(alice, `${site.origin}/cart?as=alice`);
    await waitFor("Alice's WebMCP tool", async () => ((await names(alice)).includes(`${prefix}alice_cart`) ? true : undefined), 20_000);
    expect(await attempt(alice, `${prefix}alice_cart`)).toContain("alice's cart: 2 items");
    const theirs = await attempt(bob, `${prefix}alice_cart`);
    const madeUp = await attempt(bob, `${prefix}nobody_cart`);
    expect(theirs.replace("alice_cart", "X")).toBe(madeUp.replace("nobody_cart", "X"));
    expect((await call(alice.client, "read_page", { tab, mode: "full" })).text).toContain("cart calls: 1");
    await call(alice.client, "close_tab", { tab });
  });

  it("Bob's dashboard shows him no page tools and his own attempts only; Alice's shows none of his", async () => {
    const bobs = await dashboardLogin(broker, bob.dashboardToken);
    const state = (await bobs.get("/dashboard/api/state")) as { pages: unknown };
    expect(state.pages).toBeNull();
    const bobEvents = await bobs.events("/dashboard/api/audit");
    expect(bobEvents.some((r) => r.tool === `${prefix}alice_notes`)).toBe(true);
    expect(bobEvents.every((r) => r.user === "bob")).toBe(true);
    const alices = await dashboardLogin(broker, alice.dashboardToken);
    const aliceEvents = await alices.events("/dashboard/api/audit");
    expect(aliceEvents.length).toBeGreaterThan(0);
    expect(aliceEvents.every((r) => r.user === "alice")).toBe(true);
  });
});

describe("screenshot links: a user's link works with their token only", () => {
  it("Alice's link opens with Alice's token; with Bob's it is a 404, word for word a made-up link's; without a token it is refused", async () => {
    const tab = await openTab(alice, `${site.origin}/orders?as=alice`);
    const shot = await call(alice.client, "screenshot", { tab });
    expect(shot.isError, shot.text).toBe(false);
    expect(shot.text).toContain("your tabrelay token");
    const link = /(http:\/\/\S+\/shots\/\S+)/.exec(shot.text)?.[1] ?? "";
    const as = (token?: string) => (url: string) => fetch(url, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
    const own = await as(alice.token)(link);
    expect(own.status).toBe(200);
    expect(own.headers.get("content-type")).toBe("image/png");
    expect((await own.arrayBuffer()).byteLength).toBeGreaterThan(1000);

    const madeUp = link.replace(/\/shots\/([0-9a-f])/, (_m, c: string) => `/shots/${c === "0" ? "1" : "0"}`);
    const theirs = await as(bob.token)(link);
    const nothing = await as(alice.token)(madeUp);
    expect(theirs.status).toBe(404);
    expect(nothing.status).toBe(404);
    expect(await theirs.text()).toBe(await nothing.text());
    expect((await as(bob.token)(madeUp)).status).toBe(404);
    // The user named in the link cannot be swapped for the caller's: the signature covers it.
    const renamed = link.replace(/([?&]u=)[^&]+/, `$1${encodeURIComponent(bob.id)}`);
    expect(renamed).not.toBe(link);
    expect((await as(bob.token)(renamed)).status).toBe(404);
    // Without the user's part the link no longer checks out either.
    expect((await as()(link.replace(/&u=[^&]+/, ""))).status).toBe(404);
    expect((await as()(link)).status).toBe(401);
    await call(alice.client, "close_tab", { tab });
  });
});

/** A dashboard session opened the way the login form does (as users.test.ts), and the calls its page makes. */
async function dashboardLogin(b: TestBroker, token: string) {
  const form = await fetch(`${b.url}/login`);
  const loginCookie = (form.headers.getSetCookie().find((c) => c.startsWith("tabrelay_login_")) ?? "").split(";")[0]!;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  const login = await fetch(`${b.url}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: b.url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
  expect(login.status).toBe(303);
  const cookie = (login.headers.getSetCookie().find((c) => c.startsWith("tabrelay_session_")) ?? "").split(";")[0]!;
  return {
    get: async (path: string): Promise<unknown> => (await fetch(`${b.url}${path}`, { headers: { Cookie: cookie } })).json(),
    /** The audit stream's first batch of records. */
    events: async (path: string): Promise<Array<{ user?: string; tool: string }>> => {
      const controller = new AbortController();
      const response = await fetch(`${b.url}${path}`, { headers: { Cookie: cookie }, signal: controller.signal });
      const reader = response.body!.getReader();
      let text = "";
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

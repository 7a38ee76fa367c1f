// Per-user policy (issue 16 §1): the config's policy is everyone's base; `users.alice.policy` narrows it for Alice
// (a deny entry) and adds a write grant for her only. Real Chromiums: Alice's and Bob's with the extension, each
// paired with their own code, and one Alice attaches over CDP. Her deny holds wherever the base's would: in the
// gate, in the network rules her browsers got (no request leaves for the refused path, redirects included), for
// writes; Bob is untouched by it, and her grant is not his.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchLocalChromium } from "../../packages/broker/src/index.js";
import {
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

const YAML = `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
      "localhost": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Add to cart$" }
browsers:
  source: local
users:
  alice:
    policy:
      deny:
        - { host: "127.0.0.1", path: "^/payroll" }
        - { host: "localhost" }
      write:
        click:
          "127.0.0.1": { label: "^Buy now$" }
`;

interface Member {
  client: Client;
  browser: TestBrowser;
  browserId: string;
}

let site: TestSite;
let broker: TestBroker;
let alice: Member;
let bob: Member;
let aliceCdp: { close(): Promise<void> };
let aliceCdpId: string;
const hits: string[] = [];

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/payroll", (req, res) => {
    hits.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page("Payroll", "<p>Salaries of everyone</p>"));
  });
  // A page that sends its tab to the payroll on another host name of the same server (localhost, which Alice's
  // deny refuses whole): her browsers' network rules must stop it before the request leaves.
  site.route("/bounce", (req, res) => {
    const who = new URL(req.url ?? "/", "http://x").searchParams.get("who") ?? "";
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page("Bounce", `<p>Moving on</p><script>location.href = "http://localhost:${site.port}/payroll?who=${encodeURIComponent(who)}";</script>`));
  });
  site.route(
    "/shop",
    page(
      "Shop",
      `<p id="n">0</p><button onclick="document.getElementById('n').textContent = 'cart'">Add to cart</button><button onclick="document.getElementById('n').textContent = 'bought'">Buy now</button>`,
    ),
  );
  broker = await startBroker({ yaml: YAML });
  const join = async (name: string): Promise<Member> => {
    const added = await broker.broker.users.add(name);
    const browser = await launchBrowser(broker.port, added.pairingCode, `${name} chromium`);
    const connected = await waitFor(`${name}'s browser`, () => broker.broker.registry.list().find((b) => b.info.label === `${name} chromium`), 30_000);
    return { client: await connectClient(broker.url, added.token), browser, browserId: connected.info.browserId };
  };
  alice = await join("alice");
  bob = await join("bob");
  // Alice also attaches a Chromium over CDP, as `tabrelay launch --cdp` does with her token.
  const local = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
  aliceCdp = local;
  const token = (await broker.broker.users.issueToken("alice", "cdp")).token;
  const attached = await fetch(`${broker.url}/browsers`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ endpoint: local.endpoint, label: "alice cdp" }),
  });
  expect(attached.status).toBe(201);
  aliceCdpId = ((await attached.json()) as { id: string }).id;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([alice?.client.close(), bob?.client.close()]);
  await Promise.allSettled([alice?.browser.close(), bob?.browser.close(), aliceCdp?.close()]);
  await broker?.close();
  await site?.close();
});

describe("a user's own policy over the base", () => {
  it("refuses Alice what her deny names, on both her browsers, and lets Bob read it", async () => {
    for (const browser of [alice.browserId, aliceCdpId]) {
      const refused = await call(alice.client, "read_url", { url: `${site.origin}/payroll?who=direct`, browser });
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^policy_denied: /);
      expect(refused.text).toContain("^/payroll");
    }
    const bobs = await call(bob.client, "read_url", { url: `${site.origin}/payroll?who=bob` });
    expect(bobs.isError, bobs.text).toBe(false);
    expect(bobs.text).toContain("Salaries of everyone");
    expect(hits).toEqual(["/payroll?who=bob"]);
  });

  it("stops a page's own navigation to a host Alice's deny names in her browsers before the request leaves (extension and CDP)", async () => {
    for (const [browser, who] of [
      [alice.browserId, "alice-extension"],
      [aliceCdpId, "alice-cdp"],
    ] as const) {
      const read = await call(alice.client, "read_url", { url: `${site.origin}/bounce?who=${who}`, browser });
      expect(read.text).not.toContain("Salaries of everyone");
      // Whatever the read said (the page was read before it moved, or the move was refused), nothing was sent.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(hits.filter((h) => h.includes(who))).toEqual([]);
    }
    // Bob's browser got the base's rules only: the same page takes his tab to the payroll.
    const tab = await openTab(bob.client, `${site.origin}/bounce?who=bob-bounce`);
    await waitFor("Bob's tab on the payroll", () => (hits.includes("/payroll?who=bob-bounce") ? true : undefined));
    await call(bob.client, "close_tab", { tab });
  });

  it("gives Alice her own write grant beside the base's; Bob has only the base's", async () => {
    const press = async (m: Member, label: string) => {
      const tab = await openTab(m.client, `${site.origin}/shop`);
      const snap = await snapshotOf(m.client, tab);
      const result = await call(m.client, "click", { tab, ref: snap.ref(label, "button"), revision: snap.revision });
      await call(m.client, "close_tab", { tab });
      return result;
    };
    expect((await press(alice, "Buy now")).isError).toBe(false);
    expect((await press(alice, "Add to cart")).isError).toBe(false);
    expect((await press(bob, "Add to cart")).isError).toBe(false);
    const denied = await press(bob, "Buy now");
    expect(denied.isError).toBe(true);
    expect(denied.text).toMatch(/^write_denied: /);
  });

  it("holds Alice's deny for writes too, and audits each refusal under her name", async () => {
    const refused = await call(alice.client, "open_tab", { url: `${site.origin}/payroll?who=open` });
    expect(refused.text).toMatch(/^policy_denied: /);
    const records = broker.broker.audit.list({ user: "alice", limit: 200 }).filter((r) => r.decision === "refused" && r.code === "policy_denied");
    expect(records.length).toBeGreaterThanOrEqual(3);
    expect(broker.broker.audit.list({ user: "bob", limit: 200 }).filter((r) => r.code === "policy_denied")).toEqual([]);
  });

  it("gives a browser Alice starts to Alice: Bob neither lists, uses nor stops it, each refusal as for a made-up id", async () => {
    const started = await call(alice.client, "browser_start");
    expect(started.isError, started.text).toBe(false);
    const id = /Started browser (\S+)/.exec(started.text)?.[1] ?? "";
    expect(id).toMatch(/^cdp-/);
    try {
      expect((await call(alice.client, "list_browsers")).text).toContain(id);
      expect((await call(alice.client, "browser_list_sessions")).text).toContain(id);
      // Held to her policy like her other browsers.
      expect((await call(alice.client, "read_url", { url: `${site.origin}/payroll?who=started`, browser: id })).text).toMatch(/^policy_denied: /);

      expect((await call(bob.client, "list_browsers")).text).not.toContain(id);
      expect((await call(bob.client, "browser_list_sessions")).text).not.toContain(id);
      const use = await call(bob.client, "list_tabs", { browser: id });
      expect(use.text.replace(id, "X")).toBe((await call(bob.client, "list_tabs", { browser: "cdp-madeup" })).text.replace("cdp-madeup", "X"));
      const stop = await call(bob.client, "browser_stop", { browser: id });
      expect(stop.text).toMatch(/^not_started_here/);
      expect(stop.text.replace(id, "X")).toBe((await call(bob.client, "browser_stop", { browser: "cdp-madeup" })).text.replace("cdp-madeup", "X"));
      expect((await call(alice.client, "list_browsers")).text).toContain(id);
    } finally {
      expect((await call(alice.client, "browser_stop", { browser: id })).text).toContain(`Stopped browser ${id}`);
    }
    // Stopped: Bob is not told it was.
    expect((await call(bob.client, "browser_stop", { browser: id })).text).not.toContain("it was stopped");
  });
});

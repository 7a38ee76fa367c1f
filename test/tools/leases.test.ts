// Several agents, one browser: each MCP session leases the tabs it opens (and the tabs those tabs open). Two real SDK
// clients over HTTP and two `tabrelay stdio` forwarders on one broker and one browser: first against the stub
// browser (the rules, fast: who sees what, tab_leased, session end, keep, close_tab, idle, shared tabs, the
// dashboard and the audit log), then end to end with a real Chromium, through the real extension and over CDP.
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { TabInfo } from "@tabrelay/protocol";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  allowYaml,
  attachBrowser,
  call,
  DASHBOARD_TOKEN,
  DRIVERS,
  MCP_TOKEN,
  openTab,
  PAIRING_TOKEN,
  page,
  startBroker,
  startSite,
  waitFor,
  type AttachedBrowser,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { StubError, StubExtension, stubTab } from "../stubExtension.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

/** An agent: an SDK client over HTTP with its own name, and a way to end its session (DELETE /mcp). */
interface Agent {
  client: Client;
  end(): Promise<void>;
}

async function httpAgent(b: TestBroker, name: string): Promise<Agent> {
  const client = new Client({ name, version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}` } } });
  await client.connect(transport);
  return {
    client,
    async end() {
      await transport.terminateSession();
      await client.close();
    },
  };
}

/** An agent behind `tabrelay stdio`, which forwards to the broker already on the port with a session of its own. */
async function stdioAgent(b: TestBroker, name: string): Promise<Agent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "stdio", "--port", String(b.port), "--data-dir", b.dataDir],
    env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
    stderr: "pipe",
  });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { client, end: () => client.close() };
}

const listedIds = (text: string) => [...text.matchAll(/- tab (\d+):/g)].map((m) => Number(m[1]));

/** A browser stand-in holding tabs: open, list, get, close, activate, navigate; `popup` opens a tab from a tab. */
function stubBrowser(b: TestBroker) {
  const tabs = new Map<number, TabInfo>();
  let next = 10;
  const get = (tabId: number): TabInfo => {
    const tab = tabs.get(tabId);
    if (!tab) throw new StubError({ code: "not_agent_tab", message: `tab ${tabId} is not one of the agent's tabs` });
    return tab;
  };
  const stub = new StubExtension({
    port: b.port,
    handlers: {
      "tabs.list": () => ({ tabs: [...tabs.values()] }),
      "tabs.open": ({ url }) => {
        const tab = stubTab(next++, url, { title: `Page ${next - 1}` });
        tabs.set(tab.tabId, tab);
        return { tab };
      },
      "tabs.get": ({ tabId }) => ({ tab: get(tabId) }),
      "tabs.activate": ({ tabId }) => ({ tab: get(tabId) }),
      "tabs.navigate": ({ tabId, url }) => {
        const tab = { ...get(tabId), url };
        tabs.set(tabId, tab);
        return { tab };
      },
      "tabs.close": ({ tabId }) => {
        get(tabId);
        tabs.delete(tabId);
        return { closed: true };
      },
    },
  });
  return {
    stub,
    tabs,
    /** A page in `opener` opens a new tab: the browser announces it (tab.created with its opener). */
    popup(opener: number): number {
      const tab = stubTab(next++, "http://127.0.0.1/popup");
      tabs.set(tab.tabId, tab);
      stub.send({ type: "event", event: "tab.created", params: { tab, openerTabId: opener } });
      return tab.tabId;
    },
    /** The user shares one of their tabs from the popup. */
    share(): number {
      const tab = stubTab(next++, "http://127.0.0.1/mine", { shared: true });
      tabs.set(tab.tabId, tab);
      return tab.tabId;
    },
    closedByBroker: () => stub.calls.filter((c) => c.method === "tabs.close").map((c) => Number(Reflect.get(c.params, "tabId"))),
  };
}

describe("leases, against a stub browser", () => {
  let b: TestBroker;
  let browser: ReturnType<typeof stubBrowser>;
  const agents: Agent[] = [];
  const agent = async (name: string, how: "http" | "stdio" = "http") => {
    const a = how === "http" ? await httpAgent(b, name) : await stdioAgent(b, name);
    agents.push(a);
    return a;
  };

  async function start(yaml = allowYaml()): Promise<void> {
    b = await startBroker({ yaml });
    browser = stubBrowser(b);
    await browser.stub.welcomed;
  }

  afterEach(async () => {
    await Promise.allSettled(agents.splice(0).map((a) => a.client.close()));
    browser?.stub.close();
    await b?.close();
  });

  it("each session sees only its own tabs; acting on another's fails with tab_leased naming the client, since when and what to do", async () => {
    await start();
    const alice = await agent("alice-agent");
    const bob = await agent("bob-agent");
    const aliceTab = await openTab(alice.client, "http://127.0.0.1/a");
    const bobTab = await openTab(bob.client, "http://127.0.0.1/b");

    const aliceList = await call(alice.client, "list_tabs");
    expect(listedIds(aliceList.text)).toEqual([aliceTab]);
    expect(aliceList.text).toContain("1 more tab belongs to other agents");
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([bobTab]);

    const before = Date.now();
    for (const [tool, args] of [
      ["activate_tab", { tab: aliceTab }],
      ["navigate", { tab: aliceTab, url: "http://127.0.0.1/elsewhere" }],
      ["close_tab", { tab: aliceTab }],
      ["read_page", { tab: aliceTab }],
      ["snapshot", { tab: aliceTab }],
      ["click", { tab: aliceTab, ref: "e1", revision: "r1" }],
    ] as const) {
      const refused = await call(bob.client, tool, args);
      expect(refused.isError, tool).toBe(true);
      expect(refused.text, tool).toMatch(/^tab_leased:/);
      expect(refused.text, tool).toContain('client "alice-agent"');
      expect(refused.text, tool).toMatch(/since \d{4}-\d\d-\d\dT/);
      expect(refused.text, tool).toMatch(/list_tabs.*open_tab/);
    }
    // Nothing of the refused calls reached the browser: the tab is as alice left it, and still hers.
    expect(browser.tabs.get(aliceTab)?.url).toBe("http://127.0.0.1/a");
    expect(browser.stub.calls.filter((c) => Reflect.get(c.params, "tabId") === aliceTab && c.type === "call").map((c) => c.method)).toEqual([]);
    expect((await call(alice.client, "activate_tab", { tab: aliceTab })).isError).toBe(false);

    // The audit log names each call's client, and the refusals as refusals.
    const records = b.broker.audit.list().filter((r) => r.time >= before);
    expect(records.filter((r) => r.code === "tab_leased").every((r) => r.client === "bob-agent" && r.decision === "refused" && r.tab === aliceTab)).toBe(true);
    expect(records.filter((r) => r.code === "tab_leased")).toHaveLength(6);
    expect(records.find((r) => r.tool === "activate_tab" && r.decision === "allowed")?.client).toBe("alice-agent");
  });

  it("a tab a leased tab opens is leased to the same session, even when the browser announces it before open_tab answers", async () => {
    await start();
    const alice = await agent("alice-agent");
    const bob = await agent("bob-agent");
    const tab = await openTab(alice.client, "http://127.0.0.1/a");
    const popup = browser.popup(tab);
    await waitFor("the popup to be alice's", async () => listedIds((await call(alice.client, "list_tabs")).text).includes(popup) || undefined);
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([]);
    expect((await call(bob.client, "activate_tab", { tab: popup })).text).toMatch(/^tab_leased: .*"alice-agent"/);

    // A page that opens a tab while it loads: the tab.created event comes before tabs.open's answer.
    const early = 500;
    browser.stub.handlers["tabs.open"] = ({ url }) => {
      const opened = stubTab(early, url);
      browser.tabs.set(early, opened);
      const child = stubTab(early + 1, "http://127.0.0.1/child");
      browser.tabs.set(early + 1, child);
      browser.stub.send({ type: "event", event: "tab.created", params: { tab: child, openerTabId: early } });
      return new Promise((resolve) => setTimeout(() => resolve({ tab: opened }), 100));
    };
    expect(await openTab(alice.client, "http://127.0.0.1/opens-a-tab")).toBe(early);
    expect(listedIds((await call(alice.client, "list_tabs")).text)).toEqual(expect.arrayContaining([early, early + 1]));
    expect((await call(bob.client, "activate_tab", { tab: early + 1 })).text).toMatch(/^tab_leased:/);
  });

  it("a session's end closes the tabs it opened (and their popups); one opened with keep: true stays, free to the next session", async () => {
    await start();
    const alice = await agent("alice-agent");
    const bob = await agent("bob-agent");
    const closing = await openTab(alice.client, "http://127.0.0.1/a");
    const popup = browser.popup(closing);
    const kept = Number(/Opened tab (\d+)/.exec((await call(alice.client, "open_tab", { url: "http://127.0.0.1/keep", keep: true })).text)?.[1]);
    await waitFor("the popup to be alice's", async () => listedIds((await call(alice.client, "list_tabs")).text).includes(popup) || undefined);
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([]);

    await alice.end();
    await waitFor("alice's tabs to close", () => (browser.closedByBroker().includes(closing) && browser.closedByBroker().includes(popup)) || undefined, 5000);
    expect(browser.closedByBroker()).not.toContain(kept);
    // The kept tab is anyone's now, listed as free; bob's first use makes it his.
    const free = (await call(bob.client, "list_tabs")).text;
    expect(listedIds(free)).toEqual([kept]);
    expect(free).toContain(`- tab ${kept}:`);
    expect(free).toMatch(/free: using it makes it yours/);
    expect((await call(bob.client, "activate_tab", { tab: kept })).isError).toBe(false);
    expect((await call(bob.client, "list_tabs")).text).not.toMatch(/free:/);
    const carol = await agent("carol-agent");
    expect((await call(carol.client, "activate_tab", { tab: kept })).text).toMatch(/^tab_leased: .*"bob-agent"/);
    // A tab bob only took is not his to close when his session ends.
    await bob.end();
    await new Promise((r) => setTimeout(r, 300));
    expect(browser.closedByBroker()).not.toContain(kept);
    expect((await call(carol.client, "activate_tab", { tab: kept })).isError).toBe(false);
  });

  it("close_tab ends the lease; a lease left unused for tabs.lease_idle_minutes ends and the tab stays open, visible to all", async () => {
    await start(allowYaml("tabs:\n  lease_idle_minutes: 0.02\n"));
    const alice = await agent("alice-agent");
    const bob = await agent("bob-agent");
    const closed = await openTab(alice.client, "http://127.0.0.1/a");
    expect((await call(alice.client, "close_tab", { tab: closed })).isError).toBe(false);
    expect(browser.tabs.has(closed)).toBe(false);

    const idle = await openTab(alice.client, "http://127.0.0.1/b");
    expect((await call(bob.client, "activate_tab", { tab: idle })).text).toMatch(/^tab_leased: .*1 minute/);
    await new Promise((r) => setTimeout(r, 1400));
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([idle]);
    expect(listedIds((await call(alice.client, "list_tabs")).text)).toEqual([idle]);
    expect((await call(bob.client, "activate_tab", { tab: idle })).isError).toBe(false);
    expect((await call(alice.client, "activate_tab", { tab: idle })).text).toMatch(/^tab_leased: .*"bob-agent"/);
    // Alice's session ends: the tab she no longer held stays open.
    await alice.end();
    await new Promise((r) => setTimeout(r, 300));
    expect(browser.tabs.has(idle)).toBe(true);
  });

  it("a tab the user shares is leased to the first session that uses it and released when the user stops sharing", async () => {
    await start();
    const alice = await agent("alice-agent");
    const bob = await agent("bob-agent");
    const shared = browser.share();
    expect(listedIds((await call(alice.client, "list_tabs")).text)).toEqual([shared]);
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([shared]);
    expect((await call(bob.client, "activate_tab", { tab: shared })).isError).toBe(false);
    expect(listedIds((await call(alice.client, "list_tabs")).text)).toEqual([]);
    expect((await call(alice.client, "activate_tab", { tab: shared })).text).toMatch(/^tab_leased: .*"bob-agent"/);

    // The user stops sharing, and shares it again later: it is free again, and alice may take it.
    browser.tabs.delete(shared);
    expect(listedIds((await call(bob.client, "list_tabs")).text)).toEqual([]);
    browser.tabs.set(shared, stubTab(shared, "http://127.0.0.1/mine", { shared: true }));
    expect((await call(alice.client, "activate_tab", { tab: shared })).isError).toBe(false);
    // The user's own tab is never closed with a session.
    await alice.end();
    await new Promise((r) => setTimeout(r, 300));
    expect(browser.closedByBroker()).not.toContain(shared);
  });

  it("two tabrelay stdio forwarders are two sessions: each sees its own tabs, and a forwarder's exit closes its tabs", async () => {
    await start();
    const one = await agent("stdio-one", "stdio");
    const two = await agent("stdio-two", "stdio");
    const http = await agent("http-agent");
    const tabOne = await openTab(one.client, "http://127.0.0.1/one");
    const tabTwo = await openTab(two.client, "http://127.0.0.1/two");
    expect(listedIds((await call(one.client, "list_tabs")).text)).toEqual([tabOne]);
    expect(listedIds((await call(two.client, "list_tabs")).text)).toEqual([tabTwo]);
    expect(listedIds((await call(http.client, "list_tabs")).text)).toEqual([]);
    expect((await call(two.client, "activate_tab", { tab: tabOne })).text).toMatch(/^tab_leased: .*"stdio-one"/);
    expect((await call(http.client, "close_tab", { tab: tabTwo })).text).toMatch(/^tab_leased: .*"stdio-two"/);
    await one.end();
    await waitFor("the first forwarder's tab to close", () => browser.closedByBroker().includes(tabOne) || undefined, 5000);
    expect(browser.tabs.has(tabTwo)).toBe(true);
    expect(listedIds((await call(two.client, "list_tabs")).text)).toEqual([tabTwo]);
  }, 30_000);

  it("the dashboard shows each tab's owner: the client holding it and since when, or free", async () => {
    await start();
    const alice = await agent("alice-agent");
    const held = await openTab(alice.client, "http://127.0.0.1/a");
    const free = browser.share();
    const state = (await (await b.broker.app.request("/dashboard/api/state", { headers: await dashboardCookie(b) })).json()) as {
      browsers: { tabs: { tabId: number; owner: { client: string; since: number } | null }[] }[];
    };
    const tabs = state.browsers[0]?.tabs ?? [];
    expect(tabs.find((t) => t.tabId === held)?.owner).toMatchObject({ client: "alice-agent", since: expect.any(Number) });
    expect(tabs.find((t) => t.tabId === free)?.owner).toBeNull();
  });
});

/** A dashboard session's cookie, logged in the way the form does. */
async function dashboardCookie(b: TestBroker): Promise<Record<string, string>> {
  const form = await fetch(`${b.url}/login`);
  const loginCookie =
    form.headers
      .getSetCookie()
      .find((c) => c.startsWith("tabrelay_login_"))
      ?.split(";")[0] ?? "";
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  const login = await fetch(`${b.url}/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: b.url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token: DASHBOARD_TOKEN }).toString(),
  });
  const cookie = login.headers
    .getSetCookie()
    .find((c) => c.startsWith("tabrelay_session_"))
    ?.split(";")[0];
  if (!cookie) throw new Error(`dashboard login failed: ${login.status}`);
  return { Cookie: cookie, Host: new URL(b.url).host };
}

describe.each(DRIVERS)("leases end to end: real Chromium with the %s driver, two agents", (driver) => {
  let site: TestSite;
  let b: TestBroker;
  let chromium: AttachedBrowser;

  beforeAll(async () => {
    site = await startSite("127.0.0.1");
    site.route("/alice", page("Alice's page", "<p>Alice works here.</p>"));
    site.route("/bob", page("Bob's page", "<p>Bob works here.</p>"));
    site.route("/kept", page("Kept page", "<p>Kept.</p>"));
    site.route("/opener", page("Opener", `<button onclick="window.open('/popup')">Open a tab</button>`));
    site.route("/popup", page("Popup page", "<p>A popup.</p>"));
    b = await startBroker({ yaml: allowYaml(`  write:\n    click:\n      "127.0.0.1": { label: ".*" }\n`) });
    // Popups allowed over CDP too, as for the extension's browser (harness.ts).
    chromium = await attachBrowser(b, driver, { allowPopups: true });
  }, 60_000);

  afterAll(async () => {
    await chromium?.close();
    await b?.close();
    await site?.close();
  });

  it("each agent sees only its own tabs, the other's are tab_leased, a popup of a leased tab is leased, and a session's end closes its tabs but the kept one", async () => {
    // One agent over HTTP, the other behind a `tabrelay stdio` forwarder.
    const alice = await httpAgent(b, "alice-agent");
    const bob = await stdioAgent(b, "bob-agent");
    try {
      const aliceTab = await openTab(alice.client, `${site.origin}/alice`);
      const bobTab = await openTab(bob.client, `${site.origin}/bob`);
      const kept = Number(/Opened tab (\d+)/.exec((await call(alice.client, "open_tab", { url: `${site.origin}/kept`, keep: true })).text)?.[1]);

      const aliceList = (await call(alice.client, "list_tabs")).text;
      expect(listedIds(aliceList).sort()).toEqual([aliceTab, kept].sort());
      expect(aliceList).not.toContain("Bob's page");
      const bobList = (await call(bob.client, "list_tabs")).text;
      expect(listedIds(bobList)).toEqual([bobTab]);
      expect(bobList).toContain("2 more tabs belong to other agents");

      const refused = await call(bob.client, "read_page", { tab: aliceTab });
      expect(refused.text).toMatch(/^tab_leased: tab \d+ belongs to another agent: client "alice-agent"/);
      expect(refused.text).not.toContain("Alice works here");
      expect((await call(alice.client, "read_page", { tab: aliceTab, mode: "full" })).text).toContain("Alice works here.");

      // A popup opened by a page in bob's tab is bob's.
      expect((await call(bob.client, "navigate", { tab: bobTab, url: `${site.origin}/opener` })).isError).toBe(false);
      const snap = await call(bob.client, "snapshot", { tab: bobTab });
      const ref = /button "Open a tab" \[ref=([^\]]+)\]/.exec(snap.text)?.[1] ?? "";
      const revision = /revision: (\S+)/.exec(snap.text)?.[1] ?? "";
      expect((await call(bob.client, "click", { tab: bobTab, ref, revision })).isError).toBe(false);
      const popup = await waitFor("the popup in bob's list", async () => listedIds((await call(bob.client, "list_tabs")).text).find((id) => id !== bobTab));
      expect(listedIds((await call(alice.client, "list_tabs")).text)).not.toContain(popup);
      expect((await call(alice.client, "activate_tab", { tab: popup })).text).toMatch(/^tab_leased: .*"bob-agent"/);

      // Alice's session ends: her tab closes in the browser, the kept one stays and is free.
      await alice.end();
      await waitFor("alice's tab to close", async () => !listedIds((await call(bob.client, "list_tabs")).text).includes(aliceTab) || undefined, 10_000);
      const after = listedIds((await call(bob.client, "list_tabs")).text);
      expect(after).toContain(kept);
      expect(after).toEqual(expect.arrayContaining([bobTab, popup]));
      expect((await call(bob.client, "read_page", { tab: kept, mode: "full" })).text).toContain("Kept.");
      const gone = await call(bob.client, "read_page", { tab: aliceTab });
      expect(gone.text).toMatch(/^(not_agent_tab|no_such_tab):/);
    } finally {
      await alice.client.close();
      await bob.end();
    }
  }, 90_000);
});

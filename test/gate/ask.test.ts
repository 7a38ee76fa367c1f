// Ask instead of refuse (issue 27 §2), as the user meets it: a real broker, a real Chromium with the real extension
// (and the CDP driver), agents on the MCP SDK's own client, and the person answering from the dashboard (a session
// logged in with the dashboard credential) or with `tabrelay ask` on the broker's machine. A click no grant allows,
// on a site of policy.ask.write, waits for the answer: allow once (this call passes, the next asks again), always (the
// narrow grant lands in config.yaml, the next passes unasked), deny, no answer in time; two agents asking at once;
// and the doors an agent holds (its MCP token, a replayed or late answer) change nothing.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DRIVERS,
  MCP_TOKEN,
  attachBrowser,
  auditRows,
  call,
  connectClient,
  openTab,
  page,
  snapshotOf,
  startBroker,
  startSite,
  waitFor,
  type AttachedBrowser,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { Person } from "../dashboardPerson.js";
import { raw } from "../rawHttp.js";
import { tabrelay } from "../cli/run.js";

const SHOP = page(
  "Shop",
  `<button id="add" onclick="document.getElementById('out').textContent = 'Added ' + (++window.n || (window.n = 1))">Add to cart</button>
   <button onclick="document.getElementById('out').textContent = 'Deleted'">Delete account</button>
   <button disabled>Pay</button>
   <label>Comment <input id="comment"></label>
   <p id="out">nothing yet</p>
   <p id="seen"></p>
   <script>
     // What the person sees while asked: tabrelay outlines the element in question (an overlay element of its own).
     const watch = new MutationObserver(() => {
       if (!document.querySelector("tabrelay-highlight")) return;
       watch.disconnect();
       document.getElementById("seen").textContent = "outlined while asked";
     });
     watch.observe(document.documentElement, { childList: true, subtree: true });
   </script>`,
);

for (const driver of DRIVERS) {
  describe(`policy.ask: a write without a grant waits for the user's answer (${driver})`, () => {
    let site: TestSite;
    let broker: TestBroker;
    let browser: AttachedBrowser;
    let agent: Client;
    let person: Person;

    beforeAll(async () => {
      site = await startSite();
      site.route("/shop", SHOP);
      broker = await startBroker({
        yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n      "localhost": [".*"]\n  ask:\n    timeout_s: 5\n    write: ["127.0.0.1"]\n`,
      });
      browser = await attachBrowser(broker, driver);
      agent = await connectClient(broker.url);
      person = await Person.login(broker.url);
    }, 60_000);

    afterAll(async () => {
      await agent?.close();
      await browser?.close();
      await broker?.close();
      await site?.close();
    });

    async function addToCart(client = agent): Promise<{ tab: number; click: Promise<{ text: string; isError: boolean }> }> {
      const tab = await openTab(client, `${site.origin}/shop`);
      const snap = await snapshotOf(client, tab);
      return { tab, click: call(client, "click", { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision }) };
    }

    it("asks, names the action, the element and the agent; allow once lets this click pass and the next asks again", async () => {
      const { tab, click } = await addToCart();
      const q = await person.question("Add to cart");
      expect(q.host).toBe(`127.0.0.1:${site.port}`);
      expect(q.text).toBe("click button «Add to cart»");
      expect(q.client).toBe("tabrelay-test");
      expect(q.always).toBe(`policy.write.click["127.0.0.1:${site.port}"] = { label: "^Add to cart$" }`);
      const answered = await person.answer(q.id, "once");
      expect(answered.status, answered.body).toBe(200);
      const done = await click;
      expect(done.isError, done.text).toBe(false);
      expect((await call(agent, "read_page", { tab })).text).toContain("Added 1");
      // The outline was drawn while the person was asked (sent before the question; the page saw it appear).
      await waitFor("the page to have seen the outline", async () =>
        (await call(agent, "read_page", { tab })).text.includes("outlined while asked") ? true : undefined,
      );

      // Once is once: the same click asks again, and this time the person says no.
      const snap = await snapshotOf(agent, tab);
      const again = call(agent, "click", { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision });
      const second = await person.question("Add to cart");
      expect(second.id).not.toBe(q.id);
      expect((await person.answer(second.id, "deny")).status).toBe(200);
      const refused = await again;
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain("write_denied");
      expect(refused.text).toContain("the user declined");
      expect((await call(agent, "read_page", { tab })).text).toContain("Added 1");

      // An answer replayed for the first question (answered already) changes nothing.
      const replay = await person.answer(q.id, "once");
      expect(replay.status).toBe(409);

      // The audit log says who answered what, through which door.
      const asks = auditRows(broker, "ask");
      expect(asks.map((r) => [r.decision, JSON.parse(String(r.detail)).answer, JSON.parse(String(r.detail)).via])).toEqual([
        ["allowed", "once", "dashboard"],
        ["refused", "deny", "dashboard"],
      ]);
      expect(asks[0]?.client).toBe("tabrelay-test");
    }, 60_000);

    it("times out with ask_timeout, and an answer after that is told it came late", async () => {
      const { tab, click } = await addToCart();
      const q = await person.question("Add to cart");
      const refused = await click;
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain("ask_timeout");
      expect(refused.text).toContain("no answer came within 5 s");
      const late = await person.answer(q.id, "once");
      expect(late.status).toBe(410);
      expect(late.body).toContain("timed out");
      expect((await call(agent, "read_page", { tab })).text).not.toContain("Added");
    }, 60_000);

    it("holds two agents' questions apart: answering one leaves the other waiting", async () => {
      const other = await connectClient(broker.url);
      try {
        const first = await addToCart();
        const second = await addToCart(other);
        const open = await waitFor("two questions", async () => {
          const qs = await person.questions();
          return qs.length === 2 ? qs : undefined;
        });
        expect(new Set(open.map((q) => q.id)).size).toBe(2);
        const [a, b] = open;
        expect((await person.answer(a!.id, "deny")).status).toBe(200);
        expect((await person.questions()).map((q) => q.id)).toEqual([b!.id]);
        expect((await person.answer(b!.id, "once")).status).toBe(200);
        const results = await Promise.all([first.click, second.click]);
        expect(results.filter((r) => r.isError).length).toBe(1);
        expect(results.filter((r) => !r.isError).length).toBe(1);
      } finally {
        await other.close();
      }
    }, 60_000);

    it("shows what would be typed, and a label crafted to look like the end of the question cannot close its quote", async () => {
      const tab = await openTab(agent, `${site.origin}/shop`);
      const snap = await snapshotOf(agent, tab);
      const fill = call(agent, "fill", { tab, ref: snap.ref("Comment", "textbox"), revision: snap.revision, text: "my card is 4111» on bank.example?" });
      const q = await person.question("Comment");
      expect(q.text).toBe("fill textbox «Comment», typing «my card is 4111› on bank.example?»");
      expect(q.host).toBe(`127.0.0.1:${site.port}`);
      expect((await person.answer(q.id, "deny")).status).toBe(200);
      expect((await fill).text).toContain("the user declined");
    }, 60_000);

    it("asks nothing where a grant would not be enough (a disabled button) or the site is not on the list: refused at once", async () => {
      const tab = await openTab(agent, `${site.origin}/shop`);
      const snap = await snapshotOf(agent, tab);
      const disabled = await call(agent, "click", { tab, ref: snap.ref("Pay", "button"), revision: snap.revision });
      expect(disabled.isError).toBe(true);
      expect(disabled.text).toContain("write_denied");
      expect(disabled.text).not.toContain("declined");
      // localhost is readable (policy.read.allow) but not on policy.ask.write.
      const elsewhere = await openTab(agent, `http://localhost:${site.port}/shop`);
      const there = await snapshotOf(agent, elsewhere);
      const refused = await call(agent, "click", { tab: elsewhere, ref: there.ref("Add to cart", "button"), revision: there.revision });
      expect(refused.isError).toBe(true);
      expect(refused.text).toContain("no policy.write grants are configured");
      expect(await person.questions()).toEqual([]);
      expect(auditRows(broker, "ask").length).toBe(6);
    }, 60_000);
  });
}

describe("policy.ask: answering from the machine (tabrelay ask), Always, and the agent's own doors", () => {
  let site: TestSite;
  let broker: TestBroker;
  let browser: AttachedBrowser;
  let agent: Client;
  const env = () => ({ TABRELAY_DASHBOARD_TOKEN: broker.config.dashboardToken, TABRELAY_MCP_TOKEN: MCP_TOKEN });

  beforeAll(async () => {
    site = await startSite();
    site.route("/shop", SHOP);
    broker = await startBroker({
      yaml: `# my own notes stay\npolicy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  ask:\n    timeout_s: 30\n    write: ["127.0.0.1"]\n`,
    });
    browser = await attachBrowser(broker, "extension");
    agent = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await agent?.close();
    await browser?.close();
    await broker?.close();
    await site?.close();
  });

  it("lists the question, and `allow --always` writes the narrow grant: the next click passes unasked", async () => {
    const tab = await openTab(agent, `${site.origin}/shop`);
    const snap = await snapshotOf(agent, tab);
    const progress: string[] = [];
    const click = agent.callTool({ name: "click", arguments: { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
      timeout: 60_000,
    });
    const listed = await waitFor("the question in tabrelay ask list", async () => {
      const run = await tabrelay(["ask", "list", "--data-dir", broker.dataDir, "--broker", broker.url], env());
      return run.stdout.includes("Add to cart") ? run : undefined;
    });
    expect(listed.code, listed.stderr).toBe(0);
    const id = /^(q_[0-9a-f]{32})\s/m.exec(listed.stdout)?.[1];
    expect(id, listed.stdout).toBeDefined();
    expect(listed.stdout).toContain(`127.0.0.1:${site.port}: may tabrelay-test click button «Add to cart»?`);

    const allowed = await tabrelay(["ask", "allow", id!, "--always", "--data-dir", broker.dataDir, "--broker", broker.url], env());
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout).toContain("Allowed, always");
    const result = await click;
    expect(result.isError).toBeFalsy();
    // The client heard that its call was waiting for the user.
    expect(
      progress.some((m) => m.startsWith("waiting for the user to answer: may tabrelay-test click button «Add to cart»")),
      progress.join("\n"),
    ).toBe(true);

    const yaml = readFileSync(join(broker.dataDir, "config.yaml"), "utf8");
    expect(yaml).toContain("# my own notes stay");
    expect(yaml).toContain(`127.0.0.1:${site.port}`);
    expect(yaml).toContain("^Add to cart$");
    // Applied live (the broker reloads the file within a second): the next click passes without a question.
    await waitFor("the broker to apply the grant", () => broker.config.writePolicy.describe().some((l) => l.includes(`127.0.0.1:${site.port}`)) || undefined);
    const s = await snapshotOf(agent, tab);
    const again = await call(agent, "click", { tab, ref: s.ref("Add to cart", "button"), revision: s.revision });
    expect(again.isError, again.text).toBe(false);
    const asks = auditRows(broker, "ask");
    expect(asks.map((r) => JSON.parse(String(r.detail)).via)).toEqual(["cli"]);
    // "Delete account" is still asked (the grant is for the one label): refused when nobody answers is the proof.
  }, 90_000);

  it("takes the ask list from the dashboard: a site taken off it is refused at once, put back it is asked again", async () => {
    const person = await Person.login(broker.url);
    const change = async (fields: Record<string, string>): Promise<void> => {
      const post = (extra: Record<string, string>) =>
        raw(`${broker.url}/dashboard/api/policy`, {
          method: "POST",
          headers: { Cookie: person.cookie, Origin: broker.url, "X-CSRF-Token": person.csrf, "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ ...fields, ...extra }).toString(),
        });
      const preview = await post({ preview: "1" });
      expect(preview.status, preview.body).toBe(200);
      const saved = await post({ base: (JSON.parse(preview.body) as { base: string }).base });
      expect(saved.status, saved.body).toBe(200);
    };
    const clickDelete = async () => {
      const tab = await openTab(agent, `${site.origin}/shop`);
      const snap = await snapshotOf(agent, tab);
      return call(agent, "click", { tab, ref: snap.ref("Delete account", "button"), revision: snap.revision });
    };
    const asks = () => broker.config.ask.asksWrite(`${site.origin}/shop`);
    await change({ action: "remove", section: "ask.write", host: "127.0.0.1" });
    await waitFor("the broker to apply the ask list", () => !asks() || undefined);
    const refused = await clickDelete();
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain("write_denied");
    expect(refused.text).not.toContain("declined");
    expect(await person.questions()).toEqual([]);
    await change({ action: "ask", host: "127.0.0.1" });
    expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).toContain("# my own notes stay");
    await waitFor("the broker to apply the ask list", () => asks() || undefined);
    const asked = clickDelete();
    const q = await person.question("Delete account");
    expect((await person.answer(q.id, "deny")).status).toBe(200);
    expect((await asked).text).toContain("the user declined");
  }, 60_000);

  it("a program's click is asked like a tool call's, and withdrawn when the program ends without waiting for it", async () => {
    const program = `await browse.open(${JSON.stringify(`${site.origin}/shop`)});
      const snap = await browse.snapshot({ find: "Delete account" });
      const button = snap.nodes.find((n) => n.role === "button" && n.name === "Delete account");
      void browse.click(button);
      await browse.waitFor({ text: "never on the page", timeoutMs: 3000 }).catch(() => null);
      return "left";`;
    const person = await Person.login(broker.url);
    const ran = agent.callTool({ name: "browser_run", arguments: { program } });
    const q = await person.question("Delete account");
    const result = await ran;
    expect(JSON.stringify(result.content)).toContain("left");
    // The run is over: its click does not wait on, to land later with nothing to report it.
    await waitFor("the question to be withdrawn", async () => ((await person.questions()).length === 0 ? true : undefined));
    expect((await person.answer(q.id, "once")).status).toBe(410);
    const asks = auditRows(broker, "ask");
    expect(JSON.parse(String(asks[asks.length - 1]?.detail)).answer).toBe("cancelled");
  }, 60_000);

  it("refuses the agent's MCP token at the approval endpoints, and a made-up id", async () => {
    const tab = await openTab(agent, `${site.origin}/shop`);
    const snap = await snapshotOf(agent, tab);
    const click = call(agent, "click", { tab, ref: snap.ref("Delete account", "button"), revision: snap.revision });
    const person = await Person.login(broker.url);
    const q = await person.question("Delete account");
    const withMcp = await raw(`${broker.url}/dashboard/api/asks/answer`, {
      method: "POST",
      headers: { Authorization: `Bearer ${MCP_TOKEN}`, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ id: q.id, answer: "always" }).toString(),
    });
    expect(withMcp.status).toBe(401);
    const listWithMcp = await raw(`${broker.url}/dashboard/api/asks`, { headers: { Authorization: `Bearer ${MCP_TOKEN}` } });
    expect(listWithMcp.status).toBe(401);
    expect(listWithMcp.body).not.toContain(q.id);
    const cli = await tabrelay(["ask", "deny", "q_0123456789abcdef0123456789abcdef", "--data-dir", broker.dataDir, "--broker", broker.url], env());
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("no open question has that id");
    expect((await person.answer(q.id, "deny")).status).toBe(200);
    const refused = await click;
    expect(refused.text).toContain("the user declined");
    expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).not.toContain("Delete account");
  }, 60_000);
});

describe("policy.ask.elicit: the agent's own client as one more place to ask (off by default)", () => {
  let site: TestSite;
  let browser: AttachedBrowser;
  const brokers: TestBroker[] = [];

  beforeAll(async () => {
    site = await startSite();
    site.route("/shop", SHOP);
  });

  afterAll(async () => {
    await browser?.close();
    for (const b of brokers) await b.close();
    await site?.close();
  });

  /** An MCP client that takes elicitations, answering each with `answer` and keeping what it was asked. */
  async function elicitingClient(url: string, answer: "once" | "deny"): Promise<{ client: Client; asked: string[] }> {
    const asked: string[] = [];
    const client = new Client({ name: "eliciting-client", version: "0" }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(String(request.params.message));
      return { action: "accept", content: { answer } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${MCP_TOKEN}` } } }));
    return { client, asked };
  }

  async function clickAdd(client: Client): Promise<{ text: string; isError: boolean }> {
    const tab = await openTab(client, `${site.origin}/shop`);
    const snap = await snapshotOf(client, tab);
    return await call(client, "click", { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision });
  }

  it("asks the client, and its answer is the user's: once passes, deny refuses; audited as through elicitation", async () => {
    const broker = await startBroker({
      yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  ask:\n    timeout_s: 20\n    write: ["127.0.0.1"]\n    elicit: true\n`,
    });
    brokers.push(broker);
    browser = await attachBrowser(broker, "extension");
    const yes = await elicitingClient(broker.url, "once");
    try {
      const passed = await clickAdd(yes.client);
      expect(passed.isError, passed.text).toBe(false);
      expect(yes.asked).toEqual([`tabrelay asks: may eliciting-client click button «Add to cart» on 127.0.0.1:${site.port}? (page: ${site.origin}/shop)`]);
    } finally {
      await yes.client.close();
    }
    const no = await elicitingClient(broker.url, "deny");
    try {
      const refused = await clickAdd(no.client);
      expect(refused.text).toContain("the user declined");
    } finally {
      await no.client.close();
    }
    expect(auditRows(broker, "ask").map((r) => [r.decision, JSON.parse(String(r.detail)).via])).toEqual([
      ["allowed", "elicitation"],
      ["refused", "elicitation"],
    ]);
    await browser.close();
  }, 90_000);

  it("is off by default: a client that takes elicitations is not asked, the person is", async () => {
    const broker = await startBroker({
      yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  ask:\n    timeout_s: 20\n    write: ["127.0.0.1"]\n`,
    });
    brokers.push(broker);
    browser = await attachBrowser(broker, "cdp");
    const agent = await elicitingClient(broker.url, "once");
    try {
      const tab = await openTab(agent.client, `${site.origin}/shop`);
      const snap = await snapshotOf(agent.client, tab);
      const click = call(agent.client, "click", { tab, ref: snap.ref("Add to cart", "button"), revision: snap.revision });
      const person = await Person.login(broker.url);
      const q = await person.question("Add to cart");
      expect((await person.answer(q.id, "deny")).status).toBe(200);
      expect((await click).text).toContain("the user declined");
      expect(agent.asked).toEqual([]);
    } finally {
      await agent.client.close();
    }
  }, 90_000);
});

// Code mode through the SDK's MCP client, a real broker, the real QuickJS sandbox pool and a real headless Chromium,
// driven by the real extension or over CDP: a program's browse.* commands are tool calls under the same gate,
// leases and audit (each record carrying the run's id); refs are the program's own and go stale as the tools' do;
// selectors must match one element; budgets can only be lowered; config can turn code mode off or leave commands
// out; the API's declarations are served behind the bearer token and type-check.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, connectClient, DRIVERS, MCP_TOKEN, page, startBroker, startSession, startSite, type TestBroker, type TestSite } from "../harness.js";

let site: TestSite;
let other: TestSite;

interface RunOutcome {
  text: string;
  isError: boolean;
  sc: {
    run: string;
    status: string;
    value?: unknown;
    logs: { level: string; text: string }[];
    failedCall?: { command: string; args: unknown[]; error: { code: string; message: string } };
    error?: { code: string; message: string };
    usage: { commands: number; wallMs: number };
  };
}

async function run(client: Client, program: string, extra: Record<string, unknown> = {}): Promise<RunOutcome> {
  const result = await client.callTool({ name: "browser_run", arguments: { program, ...extra } });
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content.map((c: { type: string; text?: string }) => (c.type === "text" ? (c.text ?? "") : "")).join("\n");
  return { text, isError: result.isError === true, sc: result.structuredContent as RunOutcome["sc"] };
}

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  other = await startSite("localhost");
  site.route(
    "/shop",
    page("Shop", `<h1>Shop</h1><button onclick="document.getElementById('out').textContent='clicked '+Date.now()">Go</button><p id="out">idle</p>`),
  );
  site.route("/nav-a", page("Nav A", `<button onclick="location.href='/nav-b'">Next</button>`));
  site.route("/nav-b", page("Nav B", `<button>Next</button><p>second page</p>`));
  site.route(
    "/three",
    page(
      "Three",
      `<button class="item">One</button><button class="item">Two</button><button class="item">Three</button><button id="only" onclick="this.textContent='Only'">Only</button>`,
    ),
  );
  site.route(
    "/form",
    page(
      "Form",
      `<form aria-label="Search" onsubmit="event.preventDefault();document.getElementById('out').textContent='searched '+document.getElementById('q').value"><label for="q">Search</label><input id="q"></form><p id="out">idle</p>
<label for="size">Size</label><select id="size"><option>Small</option><option>Large</option></select>
<input type="checkbox" id="gift"><label for="gift">Gift wrap</label>
<button onmouseover="document.getElementById('menu').textContent='menu open'">Menu</button><p id="menu">menu shut</p>
<div style="height:3000px"></div><p>The end</p>`,
    ),
  );
  site.route(
    "/states",
    page(
      "States",
      `<input id="on" type="checkbox" checked aria-label="On"><input id="off" type="checkbox" aria-label="Off"><button id="dis" disabled>Nope</button>
<input id="ro" readonly value="fixed" aria-label="Fixed"><input id="ed" aria-label="Free"><p id="gone" style="display:none">gone</p>
<div id="spot" style="position:absolute;left:100px;top:1500px;width:40px;height:30px">spot</div><div style="height:4000px"></div>
<iframe id="fr" src="/frame-field" width="400" height="120" style="position:absolute;left:0;top:200px;border:0;padding:0"></iframe>
<iframe id="xo" src="${other.origin}/pay" width="400" height="120" style="position:absolute;left:500px;top:200px"></iframe>`,
    ),
  );
  site.route(
    "/ref-states",
    page(
      "Ref states",
      `<input type="checkbox" id="gift" aria-label="Gift wrap"><input id="note" aria-label="Note" value="first"><button id="vanish">Vanish</button>
<button onclick="gift.checked=true;note.disabled=true;note.value='second';vanish.remove()">Go</button>
<iframe id="fr" src="/frame-field" width="400" height="120" style="position:absolute;left:0;top:200px;border:0;padding:0"></iframe>`,
    ),
  );
  site.route("/frame-field", page("Field", `<input name="card" aria-label="Card"><button>Pay inside</button>`));
  const at = (left: number, top: number, w: number, h: number) =>
    `position:absolute;left:${left}px;top:${top}px;width:${w}px;height:${h}px;margin:0;border:0;padding:0`;
  site.route(
    "/mouse",
    page(
      "Mouse",
      `<button style="${at(10, 10, 100, 40)}" onclick="document.getElementById('out').textContent='ok clicked'"><span>Go</span></button>
<button style="${at(150, 10, 100, 40)}" onclick="document.getElementById('out').textContent='DELETED'">Delete account</button>
<p style="${at(270, 10, 60, 40)}">Free gift</p><button style="${at(270, 10, 60, 40)};opacity:0" onclick="document.getElementById('out').textContent='HIJACKED'">Go</button>
<div id="menu" role="button" tabindex="0" style="${at(10, 60, 100, 30)}" onmouseover="this.textContent='hovered'">Menu</div>
<div id="list" style="${at(10, 100, 200, 100)};overflow:auto"><button style="display:block;width:180px;height:400px">Item</button></div>
<iframe id="same" src="/mouse-frame" style="${at(0, 250, 300, 100)}"></iframe>
<iframe id="xo" src="${other.origin}/pay" style="${at(350, 250, 300, 100)}"></iframe><p id="out" style="${at(10, 400, 200, 30)}">idle</p>`,
    ),
  );
  site.route("/mouse-frame", page("Mouse frame", `<button style="${at(20, 20, 100, 40)}" onclick="this.textContent='Next!'">Next</button>`));
  other.route("/pay", page("Pay", `<button onclick="document.body.append('paid')">Pay now</button>`));
}, 60_000);

afterAll(async () => {
  await site?.close();
  await other?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let broker: TestBroker;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({
      client,
      broker,
      close: closeSession,
    } = await startSession(driver, {
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
      "localhost": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^(Go|Next|Only|Size|Gift wrap|Search)$" }
    type:
      "127.0.0.1": { label: "^Search$" }
screenshots:
  enabled: true
code_mode:
  caps:
    wall_ms: 30000
`,
    }));
  }, 60_000);

  afterAll(() => closeSession());

  const recordsOf = (id: string) => broker.broker.audit.list().filter((r) => r.run === id);

  it("runs a program that opens a page, snapshots, clicks, reads and returns a value; each command is audited with the run's id", async () => {
    const { text, isError, sc } = await run(
      client,
      `const tab = await browse.open(${JSON.stringify(`${site.origin}/shop`)});
const snap = await browse.snapshot();
const go = snap.nodes.find((n) => n.name === "Go" && n.role === "button");
if (!go) throw new Error("no Go button in " + snap.tree);
const done = await browse.click(go);
const text: string = await browse.read({ mode: "full" });
log.info("clicked", go.ref);
return { title: tab.title, clicked: /clicked \\d+/.test(text), done: done.done, ref: go.ref, tree: snap.tree.includes("[ref=" + go.ref + "]") };`,
    );
    expect(isError, text).toBe(false);
    expect(sc.status).toBe("ok");
    expect(sc.value).toMatchObject({ title: "Shop", clicked: true, tree: true });
    expect((sc.value as { ref: string }).ref).toMatch(/^e\d+@1$/);
    expect(sc.logs).toEqual([{ level: "info", text: expect.stringMatching(/^clicked e\d+@1$/) }]);
    expect(sc.usage.commands).toBe(4);
    expect(text).toContain(`Run ${sc.run} ok (4 commands`);
    // Clients that show only the text see the value and the logs too, fenced as page content.
    expect(text).toMatch(/<page-content nonce="[0-9a-f]+">\n\{\n "value": \{\n {2}"title": "Shop"[\s\S]*"logs": \[[\s\S]*"text": "clicked e\d+@1"/);
    // The run's own record first (a write, recorded before it starts, completed with the program's hash and
    // status when it ends), then one record per command, each carrying the run id; last, the tab the program
    // opened and did not return, closed as the run ended.
    const records = recordsOf(sc.run);
    expect(records.map((r) => `${r.tool} ${r.decision}`)).toEqual([
      "browser_run allowed",
      "open_tab allowed",
      "snapshot allowed",
      "click allowed",
      "read_page allowed",
      "close_tab allowed",
    ]);
    expect(records[3]?.target).toBe('button "Go"');
    expect(JSON.parse(records[0]?.detail ?? "{}")).toMatchObject({
      status: "ok",
      program_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      usage: { commands: 4 },
    });
  });

  it("a ref from before a navigation fails with stale_ref; the program catches it, snapshots again and goes on", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/nav-a`)});
const first = await browse.snapshot();
const next = first.nodes.find((n) => n.name === "Next");
await browse.click(next);
await browse.waitFor({ text: "second page" });
let caught;
try { await browse.click(next); } catch (e) { caught = { code: e.code, message: e.message }; }
const again = await browse.snapshot();
return { old: next.ref, caught, fresh: again.nodes.find((n) => n.name === "Next").ref, url: await browse.get("url") };`,
    );
    expect(sc.status, text).toBe("ok");
    const value = sc.value as { old: string; fresh: string; url: string; caught: { code: string; message: string } };
    expect(value.caught.code).toBe("stale_ref");
    expect(value.caught.message).toMatch(/navigated|snapshot again/);
    expect(value.old).toMatch(/@1$/);
    expect(value.fresh).toMatch(/@2$/);
    expect(value.url).toBe(`${site.origin}/nav-b`);
  });

  it("a write to a host without a grant is refused with write_denied by the same gate, audited with the run id; uncaught, it is the run's failedCall", async () => {
    const { text, isError, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${other.origin}/pay`)});
await browse.click("button");
return "paid";`,
    );
    expect(isError).toBe(true);
    expect(sc.status).toBe("error");
    expect(sc.value).toBeUndefined();
    expect(sc.failedCall).toMatchObject({ command: "click", args: ["button"], error: { code: "write_denied" } });
    expect(sc.error?.code).toBe("write_denied");
    // Outside the fence the run's own words; the refusal's message (it quotes the page's label) is inside it.
    expect(text).toMatch(
      new RegExp(
        `^Run ${sc.run} failed at browse\\.click \\(2 commands, \\d+ ms\\): write_denied; the message and the call's arguments are in the output below`,
      ),
    );
    expect(text).toMatch(/<page-content nonce="([0-9a-f]+)">[\s\S]*clicking \\"Pay now\\" on localhost[\s\S]*<\/page-content nonce="\1">/);
    const records = recordsOf(sc.run);
    // A failed run's tab is closed as it ends (it returned nothing): no free tab is left for the next session.
    expect(records.map((r) => `${r.tool} ${r.decision} ${r.code ?? ""}`.trim())).toEqual([
      "browser_run refused write_denied",
      "open_tab allowed",
      "query allowed",
      "click refused write_denied",
      "close_tab allowed",
    ]);
    expect(records[3]?.target).toBe('button "Pay now"');
  });

  it("an uncaught refusal by the read policy ends the run with failedCall naming it; nothing after it ran", async () => {
    const { sc } = await run(client, `await browse.open("https://blocked.invalid/"); await browse.tabs.list(); return 1;`);
    expect(sc.failedCall).toMatchObject({ command: "open", args: ["https://blocked.invalid/"], error: { code: "policy_denied" } });
    expect(sc.usage.commands).toBe(1);
  });

  it("a selector target must match exactly one element: 0 and 3 matches are errors naming the count", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/three`)});
const out: Record<string, unknown> = {};
for (const selector of [".missing", ".item"]) {
  try { await browse.click(selector); } catch (e) { out[selector] = { code: e.code, message: e.message }; }
}
out.only = (await browse.click("#only")).done;
out.count = await browse.get("count", ".item");
out.text = await browse.get("text", "#only");
return out;`,
    );
    expect(sc.status, text).toBe("ok");
    expect(sc.value).toMatchObject({
      ".missing": { code: "element_not_found", message: expect.stringContaining('".missing" matched no element') },
      ".item": { code: "ambiguous_selector", message: expect.stringContaining('".item" matched 3 elements') },
      count: 3,
      text: "Only",
    });
  });

  it("the rest of the first slice: fill, press, select, check, hover, scroll, query, get; goto, back, forward, reload; tabs.new, list, select, close", async () => {
    const { text, sc } = await run(
      client,
      `const form = await browse.open(${JSON.stringify(`${site.origin}/form`)});
await browse.fill("#q", "shoes");
await browse.press("Enter");
await browse.waitFor({ text: "searched shoes" });
await browse.select("#size", "Large");
await browse.check("#gift", true);
await browse.hover("button");
await browse.waitFor({ text: "menu open", timeoutMs: 5000 });
const scrolled = await browse.scroll(undefined, { by: "bottom" });
const gift = (await browse.snapshot({ find: "Gift wrap" })).nodes.find((n) => n.role === "checkbox");
const fields = await browse.query("input, select", { limit: 5 });
const out = { q: await browse.get("value", "#q"), size: await browse.get("value", "#size"), gift: gift && gift.states, fields: fields.total, scrolled: typeof scrolled.done };
await browse.goto(${JSON.stringify(`${site.origin}/shop`)});
await browse.back();
const backAt = await browse.get("url");
await browse.forward();
const reloaded = await browse.reload();
const second = await browse.tabs.new(${JSON.stringify(`${site.origin}/three`)});
const listed = (await browse.tabs.list()).map((t) => t.id);
await browse.tabs.select(second.id);
const secondTitle = await browse.get("title");
await browse.tabs.close(second.id);
let afterClose;
try { await browse.get("title"); } catch (e) { afterClose = e.code; }
return { ...out, backAt, reloaded: reloaded.title, both: listed.includes(form.id) && listed.includes(second.id), secondTitle, afterClose };`,
    );
    expect(sc.status, `${text}\n${JSON.stringify(sc.failedCall)}`).toBe("ok");
    expect(sc.value).toEqual({
      q: "shoes",
      size: "Large",
      gift: expect.arrayContaining(["checked"]),
      fields: 3,
      scrolled: "string",
      backAt: `${site.origin}/form`,
      reloaded: "Shop",
      both: true,
      secondTitle: "Three",
      afterClose: "no_such_tab",
    });
  });

  it("is() reads visible, enabled, checked, editable; get('box') the document box; selectors take xpath= and enter frames with >>", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/states`)});
const is = (state, selector) => browse.is(state, selector);
const before = await browse.get("box", "#spot");
await browse.scroll(undefined, { by: "bottom" });
const after = await browse.get("box", "#spot");
const frameBox = await browse.get("box", "iframe#fr >> input[name=card]");
const crossBox = await browse.get("box", "iframe#xo >> button").catch((e) => e.code);
const byRef = await browse.is("visible", (await browse.query("#ed")).matches[0].ref).catch((e) => e.code + ": " + e.message);
const bad = await browse.is("pretty", "#on").catch((e) => e.code + ": " + e.message);
return {
  checked: [await is("checked", "#on"), await is("checked", "#off")],
  enabled: [await is("enabled", "#ed"), await is("enabled", "#dis")],
  editable: [await is("editable", "#ed"), await is("editable", "#ro"), await is("editable", "#on")],
  visible: [await is("visible", "#ed"), await is("visible", "#gone").catch((e) => e.code)],
  framed: [await is("editable", "iframe#fr >> input[name=card]"), await is("visible", "xpath=//button[@id='dis']")],
  before, after, frameBox, crossBox, byRef, bad,
  frameText: await browse.get("text", "iframe#fr >> xpath=//button"),
};`,
    );
    expect(sc.status, `${text}\n${JSON.stringify(sc.failedCall)}`).toBe("ok");
    const value = sc.value as Record<string, unknown>;
    expect(value).toMatchObject({
      checked: [true, false],
      enabled: [true, false],
      editable: [true, false, false],
      // An element a person cannot see matches no selector (no selector is an oracle for hidden text).
      visible: [true, "element_not_found"],
      framed: [true, true],
      before: { x: 100, y: 1500, width: 40, height: 30 },
      after: { x: 100, y: 1500, width: 40, height: 30 },
      crossBox: "not_actionable",
      frameText: "Pay inside",
    });
    // A same-origin frame's element: its box in the frame plus the frame's place in the page.
    const frameBox = value["frameBox"] as { x: number; y: number };
    expect(frameBox.x).toBeGreaterThanOrEqual(0);
    expect(frameBox.y).toBeGreaterThanOrEqual(200);
    expect(frameBox.y).toBeLessThan(240);
    expect(value["byRef"]).toBe(true);
    expect(value["bad"]).toMatch(/^invalid_params: browse\.is: `state` must be one of "visible", "enabled", "checked", "editable", got "pretty"/);
    // is() and get() read: no write grant was needed, every record is an allowed query.
    expect(
      new Set(
        recordsOf(sc.run)
          .filter((r) => r.tool !== "browser_run" && r.tool !== "open_tab" && r.tool !== "scroll" && r.tool !== "close_tab")
          .map((r) => `${r.tool} ${r.decision}`),
      ),
    ).toEqual(new Set(["query allowed", "describe_ref allowed"]));
  });

  it("is() and get() take a ref: the element is read fresh in the ref's own revision (the program's refs stay valid), a frame's ref too; a ref whose element is gone is stale_ref", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/ref-states`)});
const snap = await browse.snapshot();
const node = (name: string) => snap.nodes.find((n) => n.name === name)!;
const gift = node("Gift wrap").ref!, note = node("Note").ref!, card = node("Card").ref!, vanish = node("Vanish").ref!;
const before = { checked: await browse.is("checked", gift), enabled: await browse.is("enabled", note), value: await browse.get("value", note), card: await browse.is("editable", card), cardBox: await browse.get("box", card) };
await browse.click(node("Go").ref!);
const after = { checked: await browse.is("checked", node("Gift wrap")), enabled: await browse.is("enabled", note), value: await browse.get("value", note), id: await browse.get("attribute:id", note), text: await browse.get("text", card).catch((e) => e.code) };
const stale = await browse.get("text", vanish).catch((e) => e.code + ": " + e.message);
const count = await browse.get("count", gift).catch((e) => e.code);
return { before, after, stale, count };`,
    );
    expect(sc.status, `${text}\n${JSON.stringify(sc.failedCall)}`).toBe("ok");
    const value = sc.value as { before: { cardBox: { y: number } }; stale: string };
    expect(value).toMatchObject({
      before: { checked: false, enabled: true, value: "first", card: true },
      // The click on Go's ref worked after five reads by ref: they started no new revision.
      after: { checked: true, enabled: false, value: "second", id: "note", text: "" },
      count: "invalid_params",
    });
    // The frame's field: its box in the frame plus the frame's place in the page.
    expect(value.before.cardBox.y).toBeGreaterThanOrEqual(200);
    expect(value.stale).toMatch(/^stale_ref: /);
    // Reads by ref are read records of their own (describe_ref), allowed, carrying the run id.
    const records = recordsOf(sc.run);
    expect(records.filter((r) => r.tool === "describe_ref").map((r) => r.decision)).toEqual([...Array<string>(10).fill("allowed"), "failed"]);
  });

  it("a write on an element found through >> is gated as any: the frame's ungranted button is write_denied, audited with the run id", async () => {
    const { sc } = await run(client, `await browse.open(${JSON.stringify(`${site.origin}/states`)}); await browse.click("iframe#fr >> button"); return 1;`);
    expect(sc.failedCall).toMatchObject({ command: "click", args: ["iframe#fr >> button"], error: { code: "write_denied" } });
    const records = recordsOf(sc.run);
    // A failed run's tab is closed as it ends (it returned nothing): no free tab is left for the next session.
    expect(records.map((r) => `${r.tool} ${r.decision} ${r.code ?? ""}`.trim())).toEqual([
      "browser_run refused write_denied",
      "open_tab allowed",
      "query allowed",
      "click refused write_denied",
      "close_tab allowed",
    ]);
    expect(records[3]?.target).toBe('button "Pay inside"');
  });

  it("mouse.click/hover/scroll resolve the point to the element there and run the tool on its ref: the write gate's label check applies", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/mouse`)});
const go = await browse.mouse.click(60, 30);
const denied = await browse.mouse.click(200, 30).catch((e) => e.code + ": " + e.message);
const framed = await browse.mouse.click(70, 290);
const frameText = await browse.get("text", "iframe#same >> button");
const cross = await browse.mouse.click(400, 290).catch((e) => e.code + ": " + e.message);
const hovered = await browse.mouse.hover(60, 75);
const scrolled = await browse.mouse.scroll(60, 150, { by: 50 });
const nowhere = await browse.mouse.click(5000, 5000).catch((e) => e.code + ": " + e.message);
const veiled = await browse.mouse.click(300, 30).catch((e) => e.code + ": " + e.message);
return { go: go.hit, out: await browse.get("text", "#out"), denied, framed: framed.hit, frameText, cross, hovered: hovered.hit, menu: await browse.get("text", "#menu"), scrolled: scrolled.done, nowhere, veiled, after: await browse.get("text", "#out") };`,
    );
    expect(sc.status, `${text}\n${JSON.stringify(sc.failedCall)}`).toBe("ok");
    const value = sc.value as Record<string, string>;
    // The span inside the button is the button's: the click reached it.
    expect(value["go"]).toBe('button button "Go"');
    expect(value["out"]).toBe("ok clicked");
    expect(value["denied"]).toMatch(/^write_denied: clicking "Delete account"/);
    expect(value["framed"]).toMatch(/^button button "Next" in frame http:\/\/127\.0\.0\.1:\d+\/mouse-frame$/);
    expect(value["frameText"]).toBe("Next!");
    expect(value["cross"]).toMatch(/^not_actionable: the point \(400, 290\) is inside a cross-origin frame \(iframe#xo at http:\/\/localhost:\d+\/pay\)/);
    expect(value["hovered"]).toBe('div button "Menu"');
    expect(value["menu"]).toBe("hovered");
    // The list holding the button there scrolled (the button is brought into view first), not the page.
    expect(value["scrolled"]).toMatch(/^scrolled <div#list> "Item" to y=\d+ of 400$/);
    expect(value["nowhere"]).toMatch(/^element_not_found: browse\.mouse\.click: there is no element at \(5000, 5000\)/);
    // An invisible "Go" button laid over the page is hidden: a point on it acts on nothing.
    expect(value["veiled"]).toMatch(/^not_actionable: browse\.mouse\.click\(300, 30\): the element there \(button button \[hidden: \w+\]\) cannot be acted on/);
    expect(value["after"]).toBe("ok clicked");
    // The refused click is the click tool's refusal, audited with the run id and the element the point hit.
    const refused = recordsOf(sc.run).filter((r) => r.decision === "refused");
    expect(refused.map((r) => `${r.tool} ${r.code} ${r.target}`)).toEqual(['click write_denied button "Delete account"']);
  });

  it("screenshot gives a short-lived PNG link of the viewport or of one element (a selector target)", async () => {
    const { text, sc } = await run(
      client,
      `await browse.open(${JSON.stringify(`${site.origin}/shop`)});
return { page: await browse.screenshot(), button: await browse.screenshot({ target: "button" }) };`,
    );
    expect(sc.status, text).toBe("ok");
    const { page: whole, button } = sc.value as Record<"page" | "button", { link: string; width: number; height: number; pageUrl: string }>;
    expect(whole.pageUrl).toBe(`${site.origin}/shop`);
    expect(button.width).toBeLessThan(whole.width);
    const png = await fetch(whole.link);
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
  });

  it("the program works in the agent's own tabs: another session's tab is refused (tab_leased) and not selectable", async () => {
    const otherClient = await connectClient(broker.url);
    try {
      const opened = await otherClient.callTool({ name: "open_tab", arguments: { url: `${site.origin}/shop` } });
      const theirs = Number(/Opened tab (\d+)/.exec(JSON.stringify(opened.content))?.[1]);
      const started = await run(client, "return await browse.get('title');", { tab: theirs });
      expect(started.isError).toBe(true);
      expect(started.text).toMatch(/^tab_leased: /);
      const selected = await run(client, `try { await browse.tabs.select(${theirs}); } catch (e) { return e.code; } return "selected";`);
      expect(selected.sc.value).toBe("no_such_tab");
    } finally {
      await otherClient.close();
    }
  });

  it("a run reaches the browser with at most 4 commands at once and opens at most 20 tabs; commands still waiting when it ends never run", async () => {
    const url = `${site.origin}/shop`;
    const { text, sc } = await run(
      client,
      `const url = ${JSON.stringify(url)};
const opened = await Promise.allSettled(Array.from({ length: 30 }, () => browse.tabs.new(url)));
const refused = opened.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason.code);
for (const t of await browse.tabs.list()) if (t.url === url) await browse.tabs.close(t.id);
return { ok: opened.length - refused.length, refused: [...new Set(refused)] };`,
    );
    expect(sc.status, text).toBe("ok");
    expect(sc.value).toEqual({ ok: 20, refused: ["budget_exceeded"] });
    // Thirty opens started at once went to the browser four at a time (the audit's start and duration of each).
    const spans = recordsOf(sc.run)
      .filter((r) => r.tool === "open_tab")
      .map((r) => [r.time, r.time + r.durationMs - 1] as const);
    expect(spans).toHaveLength(20);
    const most = Math.max(...spans.map(([start]) => spans.filter(([s, e]) => s <= start && start <= e).length));
    expect(most).toBeLessThanOrEqual(4);
    // A program that starts forty and returns at once: what had not had its turn never opens a tab.
    const fired = await run(client, `for (let i = 0; i < 40; i++) browse.tabs.new(${JSON.stringify(url)}); return "returned";`);
    expect(fired.sc.value).toBe("returned");
    await new Promise((r) => setTimeout(r, 1500));
    const left = (await call(client, "list_tabs")).text;
    const ids = [...left.matchAll(/- tab (\d+): .*\/shop/g)].map((m) => Number(m[1]));
    expect(ids.length).toBeLessThanOrEqual(4);
    expect(recordsOf(fired.sc.run).filter((r) => r.tool === "open_tab").length).toBeLessThanOrEqual(4);
    for (const tab of ids) await call(client, "close_tab", { tab });
  });

  it("budgets lower than config's apply; asking more than the cap is invalid_params naming the cap", async () => {
    const lowered = await run(client, `await browse.tabs.list(); await browse.tabs.list(); return "both";`, { budgets: { commands: 1 } });
    expect(lowered.sc.status).toBe("budget_exceeded");
    expect(lowered.sc.error?.code).toBe("budget_exceeded");
    expect(lowered.sc.error?.message).toMatch(/commands/);
    const above = await run(client, `return 1;`, { budgets: { wall_ms: 40_000 } });
    expect(above.isError).toBe(true);
    expect(above.text).toMatch(/^invalid_params: budgets\.wall_ms is 40000 ms, above its cap of 30000 ms \(code_mode\.caps\.wall_ms/);
    // Below what a program can start in is refused too, naming the argument, rather than failing in the sandbox.
    const tiny = await run(client, `return 1;`, { budgets: { memory_mb: 0.01 } });
    expect(tiny.text).toMatch(/^invalid_params: `budgets\.memory_mb` must be at least 1, got 0\.01/);
    const fine = await run(client, `return (await browse.tabs.list()).length >= 0;`, { budgets: { wall_ms: 20_000, commands: 5 } });
    expect(fine.sc).toMatchObject({ status: "ok", value: true });
  });
});

describe("without a browser", () => {
  let off: TestBroker;
  let narrow: TestBroker;
  let offClient: Client;
  let narrowClient: Client;

  beforeAll(async () => {
    off = await startBroker({ yaml: "code_mode:\n  enabled: false\n" });
    narrow = await startBroker({ yaml: "code_mode:\n  deny: [read, fill]\n" });
    offClient = await connectClient(off.url);
    narrowClient = await connectClient(narrow.url);
  });

  afterAll(async () => {
    await offClient?.close();
    await narrowClient?.close();
    await off?.close();
    await narrow?.close();
  });

  it("code_mode.enabled: false refuses every program with code_mode_disabled and what to do instead", async () => {
    const { isError, text } = await run(offClient, "return 1;");
    expect(isError).toBe(true);
    expect(text).toMatch(/^code_mode_disabled: code mode is off .*code_mode\.enabled: false.*one call at a time/);
  });

  it("a denied command is not in the API: not declared, and absent from browse in a program", async () => {
    const api = await fetch(`${narrow.url}/api.d.ts`, { headers: { Authorization: `Bearer ${MCP_TOKEN}` } }).then((r) => r.text());
    expect(api).toContain("click(target: Target): Promise<ActResult>;");
    expect(api).not.toContain("read(");
    expect(api).not.toContain("fill(");
    const { sc } = await run(narrowClient, "return [typeof browse.read, typeof browse.click];");
    expect(sc.value).toEqual(["undefined", "function"]);
  });

  it("config that cannot hold stops start-up naming the key: an unknown command, a default above its cap, an unknown budget", async () => {
    await expect(startBroker({ yaml: "code_mode:\n  deny: [teleport]\n" })).rejects.toThrow(
      /code_mode\.deny names "teleport", which is not a browse command; the commands are: open, goto/,
    );
    await expect(startBroker({ yaml: "code_mode:\n  budgets: { commands: 50 }\n  caps: { commands: 10 }\n" })).rejects.toThrow(
      /code_mode\.budgets\.commands is 50 calls, above its cap code_mode\.caps\.commands \(10 calls\)/,
    );
    await expect(startBroker({ yaml: "code_mode:\n  budgets: { cpu: 5 }\n" })).rejects.toThrow(/code_mode\.budgets.*cpu/);
  });

  it("the broker keeps answering while a program spins, and the spinning program is stopped at its wall clock", async () => {
    let stopped = false;
    const spinning = run(narrowClient, "for (;;) { try { for (;;) {} } catch {} }", { budgets: { wall_ms: 3000, instructions: 10_000_000 } }).finally(
      () => (stopped = true),
    );
    await new Promise((r) => setTimeout(r, 300));
    const listed = await narrowClient.callTool({ name: "list_browsers", arguments: {} });
    expect(listed.isError).not.toBe(true);
    // Answered while the program still spun, not once it was stopped.
    expect(stopped).toBe(false);
    const { sc } = await spinning;
    expect(sc.status).toBe("budget_exceeded");
    expect(sc.error?.message).toMatch(/wall clock/);
  });

  it("a run the interrupt handler cannot stop (new Array(1e9) + '') still ends within its wall clock, with its result and audit record", async () => {
    const started = Date.now();
    const { sc } = await run(narrowClient, "return new Array(1e9) + '';", { budgets: { wall_ms: 2000 } });
    // Left to run, the program takes ~47 s (TESTING.md): ended at its wall, well before.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(sc.status).toBe("budget_exceeded");
    const record = narrow.broker.audit.list().find((r) => r.run === sc.run);
    expect(record).toMatchObject({ tool: "browser_run", decision: "failed", code: "budget_exceeded" });
  });

  it("a syntax error is reported as syntax_error and nothing runs", async () => {
    const { sc } = await run(narrowClient, "await browse.tabs.list(; return 1;");
    expect(sc.status).toBe("error");
    expect(sc.error?.code).toBe("syntax_error");
    expect(sc.usage.commands).toBe(0);
  });

  it("the API as the agent reads it matches the reviewed snapshot (guide and declarations, default config)", async () => {
    const get = (path: string) => fetch(`${off.url}${path}`, { headers: { Authorization: `Bearer ${MCP_TOKEN}` } }).then((r) => r.text());
    const doc = [await get("/api.md"), "## api.d.ts", "", "```ts", await get("/api.d.ts"), "```", ""].join("\n");
    await expect(doc).toMatchFileSnapshot("__snapshots__/browse-api.md");
  });

  it("GET /api.d.ts and /api.md need the MCP bearer token", async () => {
    for (const path of ["/api.d.ts", "/api.md"]) {
      expect((await fetch(`${narrow.url}${path}`)).status, path).toBe(401);
      expect((await fetch(`${narrow.url}${path}`, { headers: { Authorization: "Bearer wrong-token-0123456789abcdef" } })).status, path).toBe(401);
      const ok = await fetch(`${narrow.url}${path}`, { headers: { Authorization: `Bearer ${MCP_TOKEN}` } });
      expect(ok.status, path).toBe(200);
    }
    const guide = await fetch(`${narrow.url}/api.md`, { headers: { Authorization: `Bearer ${MCP_TOKEN}` } }).then((r) => r.text());
    expect(guide).toContain("stale_ref");
    expect(guide).toMatch(/`commands`: browse\.\* calls, default 256/);
  });

  it("browser_api returns declarations that type-check with a program written against them", async () => {
    const result = await narrowClient.callTool({ name: "browser_api", arguments: {} });
    const declarations = apiOf(result);
    expect(declarations).toContain("declare const browse");
    const program = `async function main() {
  const tab: Tab = await browse.open("https://example.com/");
  const snap = await browse.snapshot({ find: "Buy", limit: 5 });
  const node = snap.nodes[0];
  if (node) await browse.click(node);
  await browse.check("#gift", true);
  const found = await browse.query("a", { limit: 3 });
  await browse.waitFor({ text: "Done", timeoutMs: 500 });
  const n: string | number | null = await browse.get("count", "a");
  const box: Box = await browse.get("box", "iframe#pay >> xpath=//button");
  const seen: boolean = await browse.is("visible", "a");
  const hit: string = (await browse.mouse.click(box.x + box.width / 2, box.y + box.height / 2)).hit;
  log.info(tab.id, found.total, n, seen, hit);
  await browse.tabs.close(tab.id);
}
export {};`;
    const problems = typeCheck(declarations, program);
    expect(problems).toEqual([]);
    // And a mistake is caught: a command that is not there, an argument of the wrong type.
    expect(typeCheck(declarations, `async function f() { await browse.read(); await browse.check("#x", "yes"); }\nexport {};`).length).toBe(2);
  });
});

function apiOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const text = (Array.isArray(result.content) ? result.content : []).map((c: { type: string; text?: string }) => c.text ?? "").join("\n");
  // The declarations are the last ts block (the guide's example comes before them).
  const start = text.lastIndexOf("```ts\n");
  return start < 0 ? "" : text.slice(start + 6, text.lastIndexOf("\n```"));
}

/** tsc's diagnostics for the declarations plus a program, in memory (strict, no lib beyond ES2022). */
function typeCheck(declarations: string, program: string): string[] {
  const files = new Map([
    ["/api.d.ts", declarations],
    ["/program.ts", program],
  ]);
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) => {
    const text = files.get(name);
    return text !== undefined ? ts.createSourceFile(name, text, version) : read(name, version);
  };
  host.fileExists = (name) => files.has(name) || ts.sys.fileExists(name);
  const checked = ts.createProgram(["/api.d.ts", "/program.ts"], options, host);
  return ts.getPreEmitDiagnostics(checked).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

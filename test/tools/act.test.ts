// The action tools through the SDK's MCP client, the broker and a real headless Chromium, driven by the real
// extension or over CDP: click, fill, select_option, set_checked, press_key, hover, scroll and wait_for, on a
// React-controlled form, inside cross-origin iframes and closed shadow roots; what a click's result says the page
// did; stale refs failing loud. Then actions against a stub browser on the real bridge protocol (fast). What the
// write policy refuses is in writeGate.test.ts; snapshots and their refs in snapshot.test.ts.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  connectClient,
  DRIVERS,
  openTab,
  page,
  readFull,
  routeReactShop,
  snapshotOf,
  startSession,
  startSite,
  waitFor,
  type TestSite,
} from "../harness.js";
import { stubBrokerPerTest, stubTab } from "../stubExtension.js";

let site: TestSite;
let other: TestSite;
// Set per driver by the suite below (the suites run one after the other).
let client: Client;

const open = (path: string, on: TestSite = site) => openTab(client, `${on.origin}${path}`);
const snap = (tab: number, extra: Record<string, unknown> = {}) => snapshotOf(client, tab, extra);
const read = (tab: number) => readFull(client, tab);
const tabOf = (text: string) => Number(/Opened tab (\d+)/.exec(text)?.[1]);

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  other = await startSite("localhost");
  await routeReactShop(site);
  other.route(
    "/pay",
    page(
      "Pay",
      `<label for="card">Card number</label><input id="card"><button onclick="document.body.insertAdjacentHTML('beforeend','<h2>Paid with '+document.getElementById('card').value+'</h2>')">Pay now</button>`,
    ),
  );
  site.route("/checkout", page("Checkout", `<h1>Checkout</h1><iframe title="payment" src="${other.origin}/pay" width="400" height="200"></iframe>`));
  site.route(
    "/shadow",
    page(
      "Shadow",
      `<h1>Newsletter</h1><news-widget></news-widget><p id="status">not subscribed</p>
<script>customElements.define("news-widget", class extends HTMLElement { constructor() { super(); const root = this.attachShadow({ mode: "closed" });
root.innerHTML = '<button>Subscribe</button>'; root.querySelector("button").addEventListener("click", () => { document.getElementById("status").textContent = "subscribed"; }); } });</script>`,
    ),
  );
  // Closed roots nested in closed roots, in a cross-origin (out-of-process) iframe.
  other.route(
    "/shadow-pay",
    page(
      "Shadow pay",
      `<h2 id="status">Unpaid</h2><pay-form></pay-form>
<script>customElements.define("pay-field", class extends HTMLElement { #input; constructor() { super(); const root = this.attachShadow({ mode: "closed" });
root.innerHTML = '<label for="card">Card number</label><input id="card">'; this.#input = root.querySelector("input"); } get value() { return this.#input.value; } });
customElements.define("pay-form", class extends HTMLElement { constructor() { super(); const root = this.attachShadow({ mode: "closed" });
root.innerHTML = '<pay-field></pay-field><button>Pay now</button>'; const field = root.querySelector("pay-field");
root.querySelector("button").addEventListener("click", () => { document.getElementById("status").textContent = "Paid with " + field.value; }); } });</script>`,
    ),
  );
  site.route(
    "/shadow-checkout",
    page("Shadow checkout", `<h1>Checkout</h1><iframe title="payment" src="${other.origin}/shadow-pay" width="400" height="200"></iframe>`),
  );
  site.route(
    "/resort",
    page(
      "Resort",
      `<ul><li><button class="item">Open Alpha</button></li><li><button class="item">Open Beta</button></li><li><button class="item">Open Gamma</button></li></ul><button id="sort">Sort</button><p id="opened">none</p>
<script>const buttons=[...document.querySelectorAll(".item")];buttons.forEach(b=>b.addEventListener("click",()=>{document.getElementById("opened").textContent=b.textContent;}));
document.getElementById("sort").onclick=()=>{const names=buttons.map(b=>b.textContent).reverse();buttons.forEach((b,i)=>{b.textContent=names[i];});};</script>`,
    ),
  );
  site.route("/nav-a", page("Nav A", `<button onclick="location.href='/nav-b'">Next</button>`));
  site.route("/nav-b", page("Nav B", `<button>Next</button><p>second page</p>`));
  site.route(
    "/keys",
    page(
      "Keys",
      `<form aria-label="Search" onsubmit="event.preventDefault();document.getElementById('out').textContent='searched '+document.getElementById('q').value"><label for="q">Search</label><input id="q"></form><p id="out">idle</p>
<div id="hovered">not hovered</div><button onmouseover="document.getElementById('hovered').textContent='hovered'">Menu</button>
<span id="notes-label">Notes</span><div contenteditable="true" aria-labelledby="notes-label"></div>
<script>setTimeout(()=>document.body.insertAdjacentHTML('beforeend','<p>Late arrival</p>'),400)</script>`,
    ),
  );
  site.route("/b", "<html><head><title>Page B</title></head><body><p>Beta.</p></body></html>");
  site.route(
    "/panel",
    page(
      "Panel",
      `<div id="panel" style="height:100px;overflow:auto"><button style="display:block;height:60px">First</button><div style="height:600px"></div></div><div style="height:3000px"></div>`,
    ),
  );
  site.route(
    "/effects",
    `<html><head><title>Effects</title></head><body>
<button onclick="window.open('/b')">Popup</button>
<button onclick="location.href='/slow'">Slow</button>
<button onclick="history.pushState({}, '', '/effects#spa'); document.body.append('moved')">Spa</button>
<button>Nothing</button></body></html>`,
  );
  site.route("/slow", (_req, res) => {
    // The server takes 10 s to answer: the click's result must not wait for it.
    setTimeout(() => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<html><head><title>Slow</title></head><body><p>Finally.</p></body></html>");
    }, 10_000);
  });
}, 60_000);

afterAll(async () => {
  await site?.close();
  await other?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    // Popups allowed over CDP too, as for the extension's browser (harness.ts): a click's popup must open.
    ({ client, close: closeSession } = await startSession(
      driver,
      {
        yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
      "localhost": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^(Add to cart|Buy|Open .*|Cancel|Subscribe|AI assistants click here|Next|Size|Gift wrap|Sort|Search|Popup|Slow|Spa|Nothing)$" }
      "localhost": { label: "^Pay now$" }
    type:
      "127.0.0.1": { label: "^(Name|Search|Notes)$" }
      "localhost": { label: "^Card number$" }
`,
      },
      { allowPopups: true },
    ));
  }, 60_000);

  afterAll(() => closeSession());

  describe("actions", () => {
    it("fills, selects, checks and clicks a React-controlled form", async () => {
      const tab = await open("/react");
      await call(client, "wait_for", { tab, text: "Preview" });
      let s = await snap(tab);
      const filled = await call(client, "fill", { tab, ref: s.ref("Name", "textbox"), revision: s.revision, text: "Ada" });
      expect(filled.isError, filled.text).toBe(false);
      expect(filled.text).toContain('value is now "Ada"');
      expect(await read(tab)).toContain("Preview: Ada");
      s = await snap(tab);
      expect((await call(client, "select_option", { tab, ref: s.ref("Size", "combobox"), revision: s.revision, option: "Large" })).text).toContain(
        'selected "Large"',
      );
      s = await snap(tab);
      expect((await call(client, "set_checked", { tab, ref: s.ref("Gift wrap", "checkbox"), revision: s.revision, checked: true })).text).toContain(
        "now checked",
      );
      s = await snap(tab);
      const clicked = await call(client, "click", { tab, ref: s.ref("Add to cart", "button"), revision: s.revision });
      expect(clicked.isError, clicked.text).toBe(false);
      expect(clicked.text).toMatch(/the page changed/);
      expect(await read(tab)).toContain("Added: Ada, L, gift=true");
    });

    it("acts inside a cross-origin iframe and a closed shadow root", async () => {
      const checkout = await open("/checkout");
      let s = await snap(checkout);
      const card = await call(client, "fill", { tab: checkout, ref: s.ref("Card number", "textbox"), revision: s.revision, text: "4242" });
      expect(card.isError, card.text).toBe(false);
      s = await snap(checkout);
      expect((await call(client, "click", { tab: checkout, ref: s.ref("Pay now", "button"), revision: s.revision })).isError).toBe(false);
      await waitFor("the frame to show the payment", async () => ((await snap(checkout)).text.includes('heading "Paid with 4242"') ? true : undefined));
      const shadow = await open("/shadow");
      s = await snap(shadow);
      expect((await call(client, "click", { tab: shadow, ref: s.ref("Subscribe", "button"), revision: s.revision })).isError).toBe(false);
      expect(await read(shadow)).toContain("subscribed");
    });

    it("fills and clicks inside closed shadow roots nested in a cross-origin iframe", async () => {
      const tab = await open("/shadow-checkout");
      let s = await snap(tab);
      const card = s.ref("Card number", "textbox");
      expect(card).toMatch(/^f\d+e\d+$/);
      const filled = await call(client, "fill", { tab, ref: card, revision: s.revision, text: "4242" });
      expect(filled.isError, filled.text).toBe(false);
      s = await snap(tab);
      expect(s.text).toMatch(/textbox "Card number" \[ref=f\d+e\d+\] value="4242"/);
      const paid = await call(client, "click", { tab, ref: s.ref("Pay now", "button"), revision: s.revision });
      expect(paid.isError, paid.text).toBe(false);
      expect((await snap(tab)).text).toContain('heading "Paid with 4242"');
    });

    it("presses keys, hovers, fills contenteditable and waits for late content", async () => {
      const tab = await open("/keys");
      let s = await snap(tab);
      await call(client, "fill", { tab, ref: s.ref("Search", "textbox"), revision: s.revision, text: "tabs" });
      s = await snap(tab);
      expect((await call(client, "press_key", { tab, ref: s.ref("Search", "textbox"), revision: s.revision, key: "Enter" })).text).toContain(
        "submitted the form",
      );
      expect(await read(tab)).toContain("searched tabs");
      s = await snap(tab);
      await call(client, "hover", { tab, ref: s.ref("Menu", "button"), revision: s.revision });
      expect(await read(tab)).toContain("hovered");
      s = await snap(tab);
      const notes = await call(client, "fill", { tab, ref: s.ref("Notes", "textbox"), revision: s.revision, text: "remember milk" });
      expect(notes.isError, notes.text).toBe(false);
      expect(await read(tab)).toContain("remember milk");
      const waited = await call(client, "wait_for", { tab, text: "Late arrival", timeout_ms: 5000 });
      expect(waited.text).toMatch(/Condition met after \d+ ms/);
      const timedOut = await call(client, "wait_for", { tab, text: "never shows up", timeout_ms: 300 });
      expect(timedOut.text).toMatch(/^wait_timeout:/);
    });

    it("scroll with a ref: without a direction into view; with one, the panel holding the element scrolls by it, not the page", async () => {
      const tab = await open("/panel");
      let s = await snap(tab);
      const into = await call(client, "scroll", { tab, ref: s.ref("First", "button"), revision: s.revision });
      expect(into.text).toContain('scrolled <button> "First" into view');
      s = await snap(tab);
      const by = await call(client, "scroll", { tab, ref: s.ref("First", "button"), revision: s.revision, direction: "120" });
      expect(by.isError, by.text).toBe(false);
      expect(by.text).toMatch(/scrolled <div#panel> "First" to y=120 of 660/);
      const page = await call(client, "scroll", { tab, direction: "bottom" });
      expect(page.text).toMatch(/scrolled the page to y=\d+ of \d+/);
    });

    it("a click's result says what the page did: a tab it opened, a navigation still on its way, an in-page change, nothing", async () => {
      const tab = tabOf((await call(client, "open_tab", { url: `${site.origin}/effects` })).text);
      const click = async (name: string) => {
        const snap = await call(client, "snapshot", { tab });
        const revision = /revision: (\S+)/.exec(snap.text)?.[1];
        const ref = new RegExp(`"${name}" \\[ref=([^\\]]+)\\]`).exec(snap.text)?.[1];
        const started = Date.now();
        const result = await call(client, "click", { tab, ref, revision });
        return { text: result.text, ms: Date.now() - started };
      };
      const popup = await click("Popup");
      const opened = Number(/the page opened a new tab: (\d+)/.exec(popup.text)?.[1]);
      expect(opened, `${driver}: ${popup.text}`).toBeGreaterThan(0);
      expect((await call(client, "list_tabs")).text).toContain(`tab ${opened}:`);
      await call(client, "close_tab", { tab: opened });

      const nothing = await click("Nothing");
      expect(nothing.text).toMatch(/^clicked button "Nothing"/);
      expect(nothing.text).not.toMatch(/navigat|opened a new tab|stale/);

      const spa = await click("Spa");
      expect(spa.text).toContain("the page changed");
      expect(spa.text).toContain(`the tab navigated to «${site.origin}/effects#spa»`);

      // A navigation the server answers slowly is reported as under way, within the wait, not after the load.
      const slow = await click("Slow");
      expect(slow.text).toContain(`the page is navigating to «${site.origin}/slow»`);
      expect(slow.ms).toBeLessThan(10_000); // had it waited for the load, not before the server's 10 s
      await call(client, "close_tab", { tab });
    });
  });

  describe("stale refs fail loud", () => {
    it("refuses a ref whose element the page re-rendered since the snapshot", async () => {
      const tab = await open("/resort");
      const s = await snap(tab);
      const alpha = s.ref("Open Alpha", "button");
      // "Sort" re-renders the list in place, as frameworks do: the node that read "Open Alpha" now reads "Open Gamma".
      expect((await call(client, "click", { tab, ref: s.ref("Sort", "button"), revision: s.revision })).isError).toBe(false);
      const stale = await call(client, "click", { tab, ref: alpha, revision: s.revision });
      expect(stale.text).toMatch(/^stale_ref: .*changed since snapshot/);
      expect(await read(tab)).toContain("none");
    });

    it("refuses a ref from an older snapshot once the page was snapshotted again", async () => {
      const tab = await open("/resort");
      const first = await snap(tab);
      await snap(tab);
      const old = await call(client, "click", { tab, ref: first.ref("Open Beta", "button"), revision: first.revision });
      expect(old.text).toMatch(/^stale_ref: .*snapshotted again/);
    });

    it("refuses the old ref when the page navigated between snapshot and click", async () => {
      const tab = await open("/nav-a");
      const s = await snap(tab);
      const next = s.ref("Next", "button");
      const first = await call(client, "click", { tab, ref: next, revision: s.revision });
      expect(first.text).toContain("the tab navigated to");
      const second = await call(client, "click", { tab, ref: next, revision: s.revision });
      expect(second.isError).toBe(true);
      expect(second.text).toMatch(/^stale_ref:/);
    });
  });
});

// ---- against a stub browser (fast) --------------------------------------------------------------------

describe("actions through the bridge", () => {
  const bridge = stubBrokerPerTest();

  const facts = {
    ref: "e1",
    role: "button",
    name: "Buy",
    visibleText: "Buy",
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: "http://127.0.0.1:1/shop",
    // A click reaches only the button itself (no label control, no enclosing link).
    activates: [],
  };

  it("an action whose browser vanished after dispatch is outcome_unknown, audited, and not retried", async () => {
    const s = bridge.stub({
      handlers: {
        "tabs.get": () => ({ tab: stubTab(11, "http://127.0.0.1:1/shop") }),
        "page.inspect": () => facts,
        "page.act": () => {
          setTimeout(() => s.ws.terminate(), 20);
          return "never";
        },
      },
    });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "click", { tab: 11, ref: "e1", revision: "r1-x" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^browser_disconnected:/);
    expect(result.text).toContain("unknown");
    expect(s.methods().filter((m) => m === "page.act")).toHaveLength(1);
    const record = bridge.broker.broker.audit.list({ limit: 10 }).find((r) => r.tool === "click");
    expect(record?.decision).toBe("outcome_unknown");
    expect(record?.target).toBe('button "Buy"');
    await client.close();
  });

  it("a refusal never reaches the page, and is audited as refused with its rule", async () => {
    const s = bridge.stub({
      handlers: {
        "tabs.get": () => ({ tab: stubTab(12, "http://127.0.0.1:1/shop") }),
        "page.inspect": () => ({ ...facts, coveredBy: "<div#overlay>" }),
        "page.act": () => ({ facts, effects: { done: "clicked" } }),
      },
    });
    await s.welcomed;
    const client = await connectClient(bridge.broker.url);
    const result = await call(client, "click", { tab: 12, ref: "e1", revision: "r1-x" });
    expect(result.text).toMatch(/^write_denied: .*overlay/);
    expect(s.methods()).not.toContain("page.act");
    const record = bridge.broker.broker.audit.list({ limit: 10 }).find((r) => r.tool === "click");
    expect(record?.decision).toBe("refused");
    expect(record?.rule).toBe("element: covered");
    await client.close();
  });
});

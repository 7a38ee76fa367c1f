// snapshot through the SDK's MCP client, the broker and a real headless Chromium, driven by the real extension or
// over CDP: controls with role, name, value, state and refs plus a revision, into cross-origin iframes and closed
// shadow roots, on pages built to be hard (20,000 custom elements, 10,000 rows, a page too large to list whole).
// Acting on the refs is in act.test.ts; which frames a snapshot shows, in frameRule.test.ts.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, openTab, page, routeReactShop, snapshotOf, startSession, startSite, waitFor, type TestSite } from "../harness.js";

let site: TestSite;
let other: TestSite;
// Set per driver by the suite below (the suites run one after the other).
let client: Client;

const open = (path: string, on: TestSite = site) => openTab(client, `${on.origin}${path}`);
const snap = (tab: number, extra: Record<string, unknown> = {}) => snapshotOf(client, tab, extra);

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
  // A hostile page: 20,000 custom elements (most never defined, 400 defined without a root), and the one
  // closed root that matters last; then a root attached to an upgraded element later, after a snapshot.
  site.route("/giant", page("Giant", `${'<a href="#x">link</a> '.repeat(60_000)}<button>Last button</button>`));
  site.route(
    "/crowd",
    page(
      "Crowd",
      `<h1>Crowd</h1><div id="junk">${"<x-junk></x-junk>".repeat(19_600)}${"<x-plain></x-plain>".repeat(400)}</div><x-vault></x-vault><x-late></x-late>
<script>customElements.define("x-plain", class extends HTMLElement {});
customElements.define("x-vault", class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: "closed" }).innerHTML = "<button>Open vault</button>"; } });
customElements.define("x-late", class extends HTMLElement {});
setTimeout(() => { document.querySelector("x-late").attachShadow({ mode: "closed" }).innerHTML = "<button>Late door</button>"; }, 4000);</script>`,
    ),
  );
  site.route(
    "/shadow",
    page(
      "Shadow",
      `<h1>Newsletter</h1><news-widget></news-widget><p id="status">not subscribed</p>
<script>customElements.define("news-widget", class extends HTMLElement { constructor() { super(); const root = this.attachShadow({ mode: "closed" });
root.innerHTML = '<button>Subscribe</button>'; root.querySelector("button").addEventListener("click", () => { document.getElementById("status").textContent = "subscribed"; }); } });</script>`,
    ),
  );
  // Closed roots on ordinary hosts (every element attachShadow accepts), the body itself, nested, and in frames.
  const closedOn = (selector: string, html: string) =>
    `document.querySelector(${JSON.stringify(selector)}).attachShadow({ mode: "closed" }).innerHTML = ${JSON.stringify(html)};`;
  site.route(
    "/closed-hosts",
    page(
      "Closed hosts",
      `<h1>Hosts</h1><div id="d"></div><p>before <span id="s"></span> after</p><section id="sec"></section><p id="p"></p><h1 id="h"></h1><div id="outer"></div><p id="status">idle</p>
<script>${closedOn("#d", "<button>Div door</button><p>Secret div text</p>")}
${closedOn("#s", "<button>Span door</button>")}
${closedOn("#sec", "<h2>Section heading</h2><button>Section door</button>")}
${closedOn("#p", "<button>Paragraph door</button>")}
${closedOn("#h", "<button>Heading door</button>")}
const outer = document.getElementById("outer").attachShadow({ mode: "closed" });
outer.innerHTML = '<div><span id="inner"></span></div>';
outer.getElementById("inner").attachShadow({ mode: "closed" }).innerHTML = "<button>Deep door</button><p>Deep text</p>";
document.getElementById("d").addEventListener("click", () => {
  document.getElementById("status").textContent = "div door opened";
  const added = document.createElement("div");
  document.body.append(added);
  added.attachShadow({ mode: "closed" }).innerHTML = "<button>New door</button>";
});</script>`,
    ),
  );
  site.route(
    "/closed-body",
    page(
      "Closed body",
      `<h1>Light heading</h1><button>Light button</button><script>${closedOn("body", "<nav><button>Body door</button></nav><slot></slot>")}</script>`,
    ),
  );
  const framed = page("Framed", `<div id="f"></div><script>${closedOn("#f", "<button>Framed door</button>")}</script>`);
  site.route("/closed-framed", framed);
  other.route("/closed-framed", framed);
  site.route(
    "/closed-frames",
    page(
      "Closed frames",
      `<h1>Frames</h1><iframe title="same" src="/closed-framed" width="300" height="100"></iframe><iframe title="cross" src="${other.origin}/closed-framed" width="300" height="100"></iframe>`,
    ),
  );
  site.route(
    "/big",
    page(
      "Big table",
      `<table>${Array.from({ length: 2500 }, (_, i) => `<tr><td>Row ${i + 1}</td><td><a href="/r/${i + 1}">Open row ${i + 1}</a></td><td><button>Edit ${i + 1}</button></td><td><input aria-label="Qty ${i + 1}"></td></tr>`).join("")}</table>`,
    ),
  );
}, 60_000);

afterAll(async () => {
  await site?.close();
  await other?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    // Reads of both test sites: the checkout's payment frame is on the other one.
    ({ client, close: closeSession } = await startSession(driver, {
      yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n      "localhost": [".*"]\n  write:\n    click:\n      "127.0.0.1": { label: "^Div door$" }\n`,
    }));
  }, 60_000);

  afterAll(() => closeSession());

  describe("snapshot", () => {
    it("lists controls with role, name, value, state and refs, plus a revision", async () => {
      const tab = await open("/react");
      await call(client, "wait_for", { tab, text: "Preview" });
      const s = await snap(tab);
      expect(s.revision).toMatch(/^r\d+-/);
      expect(s.text).toMatch(/- heading "Shop" \[level=1\]/);
      expect(s.text).toMatch(/- textbox "Name" \[ref=e\d+\]/);
      expect(s.text).toMatch(/- combobox "Size" \[ref=e\d+\] value="Medium"/);
      expect(s.text).toMatch(/- checkbox "Gift wrap" \[ref=e\d+\]/);
      expect(s.text).toMatch(/- button "Add to cart" \[ref=e\d+\]/);
    });

    it("reaches into cross-origin iframes and closed shadow roots", async () => {
      const checkout = await open("/checkout");
      const s = await snap(checkout);
      expect(s.ref("Card number", "textbox")).toMatch(/^f\d+e\d+$/);
      expect(s.ref("Pay now", "button")).toMatch(/^f\d+e\d+$/);
      const shadow = await open("/shadow");
      expect((await snap(shadow)).ref("Subscribe", "button")).toMatch(/^e\d+$/);
    });

    it("reaches closed roots on div, span, section, p and h1 hosts, nested ones, and on the body itself", async () => {
      const tab = await open("/closed-hosts");
      const s = await snap(tab);
      for (const name of ["Div door", "Span door", "Section door", "Paragraph door", "Heading door", "Deep door"])
        expect(s.ref(name, "button"), name).toMatch(/^e\d+$/);
      expect(s.text).toMatch(/- heading "Section heading" \[level=2\]/);
      const body = await open("/closed-body");
      const b = await snap(body);
      expect(b.ref("Body door", "button")).toMatch(/^e\d+$/);
      expect(b.ref("Light button", "button")).toMatch(/^e\d+$/);
      expect(b.text).toMatch(/- heading "Light heading" \[level=1\]/);
    });

    it("reaches closed roots on ordinary hosts in a same-origin and in a cross-origin frame", async () => {
      const tab = await open("/closed-frames");
      const s = await snap(tab);
      const refs = [...s.text.matchAll(/- button "Framed door" \[ref=(f\d+e\d+)\]/g)].map((m) => m[1]);
      expect(refs, s.text).toHaveLength(2);
      expect(new Set(refs.map((ref) => ref?.split("e")[0])).size).toBe(2);
    });

    it("clicks a button inside a closed root on a div by its ref, then finds a host it inserted; read_page shows the text inside closed roots", async () => {
      const tab = await open("/closed-hosts");
      const s = await snap(tab);
      const clicked = await call(client, "click", { tab, ref: s.ref("Div door", "button"), revision: s.revision });
      expect(clicked.isError, clicked.text).toBe(false);
      // A host inserted after the first snapshot, its closed root attached at once.
      expect((await snap(tab)).ref("New door", "button")).toMatch(/^e\d+$/);
      const text = (await call(client, "read_page", { tab, mode: "full" })).text;
      expect(text).toContain("div door opened");
      expect(text).toContain("Secret div text");
      expect(text).toContain("Deep text");
      expect(text).toContain("Section heading");
      // The light DOM around the span host is still read, in order.
      expect(text).toMatch(/before[\s\S]*Span door[\s\S]*after/);
      const body = await open("/closed-body");
      const bodyText = (await call(client, "read_page", { tab: body, mode: "full" })).text;
      expect(bodyText).toContain("Body door");
      expect(bodyText).toContain("Light heading");
    });

    it("finds the one closed root among 20,000 custom elements, and a root attached after an earlier snapshot", async () => {
      const tab = await open("/crowd");
      const first = await call(client, "snapshot", { tab, find: "Open vault" });
      expect(first.isError, first.text).toBe(false);
      expect(first.text).toMatch(/- button "Open vault" \[ref=e\d+\]/);
      expect(first.text).not.toContain("Late door"); // attached 4 s after load
      // The page attaches a closed root to an element that was already defined (and looked at) before.
      const late = await waitFor(
        "the late closed root in a snapshot",
        async () => {
          const result = await call(client, "snapshot", { tab, find: "Late door" });
          return /- button "Late door" \[ref=e\d+\]/.test(result.text) ? result.text : undefined;
        },
        20_000,
      );
      expect(late).toContain("Late door");
    }, 60_000);

    it("keeps a 10,000-element page small and its last row reachable by find and by paging", async () => {
      const tab = await open("/big");
      const first = await call(client, "snapshot", { tab });
      expect(first.text.length).toBeLessThan(60_000);
      expect(first.text).not.toContain('"Edit 2500"');
      const revision = /revision: (\S+)/.exec(first.text)?.[1];
      const found = await call(client, "snapshot", { tab, revision, find: "Edit 2500" });
      expect(found.text).toMatch(/button "Edit 2500" \[ref=e\d+\]/);
      const next = Number(/offset=(\d+)/.exec(first.text)?.[1]);
      expect(next).toBeGreaterThan(0);
      const total = Number(/ of (\d+)/.exec(first.text)?.[1]);
      expect(total).toBeGreaterThanOrEqual(7500);
      const last = await call(client, "snapshot", { tab, revision, offset: total - 10, limit: 50 });
      expect(last.text).toContain('"Qty 2500"');
      expect(first.text).not.toContain("too large to list whole");
    });

    it("says when a page is too large to list whole, and scrolling with viewport_only still reaches its end", async () => {
      const tab = await open("/giant");
      // Scrolling the page needs no snapshot first.
      const early = await call(client, "scroll", { tab, direction: "down" });
      expect(early.isError, early.text).toBe(false);
      const whole = await call(client, "snapshot", { tab, find: "Last button" });
      expect(whole.text).toContain("(nothing matches");
      expect(whole.text).toContain("The page is too large to list whole: the list stops after 50,000 elements");
      const scrolled = await call(client, "scroll", { tab, direction: "bottom" });
      expect(scrolled.isError, scrolled.text).toBe(false);
      const view = await call(client, "snapshot", { tab, viewport_only: true, find: "Last button" });
      expect(view.text).toMatch(/button "Last button" \[ref=e\d+\]/);
    }, 60_000);
  });
});

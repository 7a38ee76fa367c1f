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
  other.route("/pay", page("Pay", `<label for="card">Card number</label><input id="card"><button onclick="document.body.insertAdjacentHTML('beforeend','<h2>Paid with '+document.getElementById('card').value+'</h2>')">Pay now</button>`));
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
    ({ client, close: closeSession } = await startSession(driver, { yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n      "localhost": [".*"]\n` }));
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

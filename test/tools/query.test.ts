// query through the SDK's MCP client, the broker and a real headless Chromium, driven by the real extension or over
// CDP: elements by CSS selector and by id / class, paged with a total, across the frames the read policy allows
// (same-origin and cross-origin) and into open and closed shadow roots (nested, and inside a frame); what a match
// carries (a password field's value never), what a person cannot see (matched by nothing, or by structure only), refs
// that click under the revision rules, and an invalid selector's message from the browser.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, openTab, page, readFull, startSession, startSite, type TestSite } from "../harness.js";

let site: TestSite;
let client: Client;

const open = (path: string) => openTab(client, `${site.origin}${path}`);
const query = (tab: number, args: Record<string, unknown>) => call(client, "query", { tab, ...args });

/** The part of a result inside the page-content envelope. */
function envelope(text: string): string {
  const match = /<page-content nonce="(\w+)">\n([\s\S]*?)\n<\/page-content nonce="\1">/.exec(text);
  if (!match?.[2]) throw new Error(`no page content in:\n${text}`);
  return match[2];
}

/** The ref and revision of the match whose first line contains `needle`. */
function refOf(text: string, needle: string): { ref: string; revision: string } {
  const line = text.split("\n").find((l) => l.startsWith("- ") && l.includes(needle) && l.includes("[ref="));
  const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
  const revision = /revision: (\S+)/.exec(text)?.[1];
  if (!ref || !revision) throw new Error(`no ref for ${needle} in:\n${text}`);
  return { ref, revision };
}

/** Nested closed roots: <x-outer> holds <x-inner>, which holds the button; an open root on a div and a closed one on a section beside them. */
const SHADOW = (label: string) => `<x-outer></x-outer><div id="openhost"></div><section id="closedhost"></section>
<script>customElements.define("x-inner", class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: "closed" }).innerHTML = '<button class="deep" onclick="this.textContent=\\'Pressed\\'">${label}</button>'; } });
customElements.define("x-outer", class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: "closed" }).innerHTML = '<p class="hit">In outer root</p><x-inner></x-inner>'; } });
document.getElementById("openhost").attachShadow({ mode: "open" }).innerHTML = '<span class="inside-open hit">Open inside</span>';
document.getElementById("closedhost").attachShadow({ mode: "closed" }).innerHTML = '<span class="hit">Closed section</span>';</script>`;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  const results = Array.from(
    { length: 25 },
    (_, i) =>
      `<li class="result item"><a class="result-link" href="/r/${i + 1}" data-testid="r${i + 1}" title="Result ${i + 1} title" aria-describedby="x">Result ${i + 1}</a></li>`,
  ).join("");
  site.route(
    "/list",
    page(
      "List",
      `<h1>Results</h1><ul>${results}</ul>
<div id="price" class="card"><span class="price">$12.50</span></div>
<p class="gone" style="display:none">Hidden note</p>
<img class="pic" src="/img/a.png" alt="A picture">
<form><input name="user" value="alice"><input type="password" name="pw" value="hunter2-secret"><textarea name="bio">Likes tea</textarea></form>
<script>document.querySelector('[name=pw]').value = "typed-secret"; document.querySelector('[name=user]').value = "alice-typed";</script>`,
    ),
  );
  site.route("/shadow", page("Shadow", `<h1>Shadow</h1>${SHADOW("Deep button")}`));
  site.route("/inner", page("Inner", `<p class="hit">Same-origin frame</p>${SHADOW("Frame deep")}`));
  site.route(
    "/framed",
    page(
      "Framed",
      `<p class="hit">Top page</p><iframe title="inner" src="/inner" width="500" height="200"></iframe>
<iframe title="widget" src="http://localhost:${site.port}/widget" width="500" height="200"></iframe>
<iframe title="secret" src="http://localhost:${site.port}/secret" width="500" height="200"></iframe>`,
    ),
  );
  site.route("/widget", page("Widget", `<p class="hit">Cross-origin frame</p>`));
  site.route("/secret", page("Secret", `<p class="hit">SECRETFRAME</p>`));
  site.route(
    "/planted",
    page(
      "Planted",
      `<style>.sneak{position:absolute;left:-9999px}.op{opacity:0}</style><h1>Planted</h1>
<p class="x sneak">OFFSCREEN-INJECT</p><p class="x op">OPACITY-INJECT</p>
<p class="x" style="display:none" title="TITLE-INJECT" aria-label="ARIA-INJECT">NONE-INJECT</p>
<img class="x" style="display:none" src="/a.png" alt="ALT-INJECT"><p class="x">Seen words</p>
<p class="x white" style="color:#fff" title="WHITE-TITLE-INJECT" aria-label="WHITE-ARIA-INJECT">WHITE-INJECT</p><span class="x" title="FLAT-INJECT" style="display:inline-block;width:40px;height:1px"></span>`,
    ),
  );
  // A checkout: card fields on the top page and in three frames (same-origin with a nested frame, cross-origin
  // readable, cross-origin outside the read policy), a Pay button, and a hidden note no XPath may match.
  site.route(
    "/checkout",
    page(
      "Checkout",
      `<input name="card" aria-label="Top card"><button>Pay</button><p class="hid" style="display:none" title="HIDDEN-XPATH">HIDDEN-XPATH</p>
<iframe id="checkout" title="pay" src="/pay" width="500" height="300"></iframe>
<iframe id="xo" title="xo" src="http://localhost:${site.port}/widget-pay" width="500" height="200"></iframe>
<iframe id="secret" title="secret" src="http://localhost:${site.port}/secret-pay" width="500" height="200"></iframe>`,
    ),
  );
  site.route("/pay", page("Pay", `<input name="card" aria-label="Frame card"><iframe id="nested" src="/nested" width="300" height="100"></iframe>`));
  site.route("/nested", page("Nested", `<button>Nested pay</button>`));
  site.route("/widget-pay", page("Widget pay", `<input name="card" aria-label="Cross card">`));
  site.route("/secret-pay", page("Secret pay", `<input name="card" aria-label="SECRETCARD">`));
  const at = (left: number, top: number, w: number, h: number) =>
    `position:absolute;left:${left}px;top:${top}px;width:${w}px;height:${h}px;margin:0;border:0;padding:0`;
  site.route(
    "/points",
    page(
      "Points",
      `<button style="${at(10, 10, 100, 40)}"><span>Go</span></button><iframe id="pf" src="/pointframe" style="${at(0, 100, 300, 100)}"></iframe>
<iframe id="px" src="http://localhost:${site.port}/widget-pay" style="${at(350, 100, 300, 100)}"></iframe>`,
    ),
  );
  site.route("/pointframe", page("Point frame", `<button style="${at(20, 20, 100, 40)}">Inside</button>`));
  site.route("/go", page("Go", `<button id="go" onclick="document.getElementById('out').textContent='went'">Go</button><p id="out">idle</p>`));
  site.route("/elsewhere", page("Elsewhere", `<button id="go">Go</button>`));
}, 60_000);

afterAll(() => site?.close());

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let close: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({ client, close } = await startSession(driver, {
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
      "localhost": ["^/widget"]
  write:
    click:
      "127.0.0.1": { label: "^(Go|Frame deep|Deep button)$" }
`,
    }));
  }, 60_000);

  afterAll(() => close());

  it("finds elements by selector, each with tag, role, name, text, absolute href, allowed attributes, visibility and a ref, inside the envelope", async () => {
    const tab = await open("/list");
    const result = await query(tab, { selector: "a.result-link" });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toContain("Matches 1-20 of 25.");
    expect(result.text).toMatch(/revision: r\d+-/);
    const listed = envelope(result.text);
    expect(listed).toMatch(/^- 1\. a link "Result 1" \[ref=e\d+\] \[visible\]$/m);
    expect(listed).toContain('  text: "Result 1"');
    expect(listed).toContain(`class="result-link" href="${site.origin}/r/1" title="Result 1 title" data-testid="r1" aria-describedby="x"`);
    expect(listed).toMatch(/^- 20\. a link "Result 20"/m);
    expect(listed).not.toContain("Result 21");
    expect(result.text).toContain(`Next: query with tab=${tab}, the same selector and offset=20.`);
    // An image's src is made absolute too; an element a person cannot see matches nothing.
    const pic = envelope((await query(tab, { selector: "img.pic" })).text);
    expect(pic).toContain(`src="${site.origin}/img/a.png"`);
    expect(pic).toContain('alt="A picture"');
    const gone = await query(tab, { selector: ".gone" });
    expect(gone.isError, gone.text).toBe(false);
    expect(gone.text).toContain("Matches: none.");
  });

  it("takes id and class shorthands, and pages with offset and limit over the total", async () => {
    const tab = await open("/list");
    const byId = await query(tab, { id: "price" });
    expect(byId.text).toContain("Matches 1-1 of 1.");
    expect(envelope(byId.text)).toMatch(/^- 1\. div generic \[visible\]\n {2}text: "\$12\.50"\n {2}id="price" class="card"$/m);
    const byClass = await query(tab, { class: "item result", offset: 20, limit: 10 });
    expect(byClass.text).toContain("Matches 21-25 of 25.");
    const listed = envelope(byClass.text);
    expect(listed.split("\n").filter((l) => l.startsWith("- "))).toHaveLength(5);
    expect(listed).toMatch(/^- 21\. li listitem|^- 21\. li generic/m);
    expect(listed).toContain('text: "Result 25"');
    expect(byClass.text).not.toContain("Next:");
    const page2 = await query(tab, { selector: "li", offset: 5, limit: 3 });
    expect(page2.text).toContain("Matches 6-8 of 25.");
    expect(page2.text).toContain("offset=8.");
    const both = await query(tab, { id: "price", class: "card" });
    expect(both.isError).toBe(true);
    expect(both.text).toMatch(/^invalid_params: give exactly one of selector, id, class/);
  });

  it("never returns a password field's value, and returns other fields' live values", async () => {
    const tab = await open("/list");
    const result = await query(tab, { selector: "input, textarea" });
    expect(result.isError, result.text).toBe(false);
    const listed = envelope(result.text);
    expect(listed).toContain('name="user" value="alice-typed"');
    expect(listed).toContain('name="bio" value="Likes tea"');
    expect(listed).toMatch(/^ {2}name="pw" type="password"$/m);
    expect(result.text).not.toContain("hunter2");
    expect(result.text).not.toContain("typed-secret");
  });

  it("matches nothing a person cannot see, and gives a match whose text is unseen by structure only: no text, name, title, alt or aria words", async () => {
    const tab = await open("/planted");
    const result = await query(tab, { selector: ".x" });
    expect(result.isError, result.text).toBe(false);
    // Off-screen, transparent and undisplayed elements are not matches; the seen paragraph, the white one and the flat box are.
    expect(result.text).toContain("Matches 1-3 of 3.");
    const listed = envelope(result.text);
    expect(listed).toContain('text: "Seen words"');
    expect(listed).toMatch(/^- 2\. p generic \[hidden: unseen\]\n {2}class="x white"$/m);
    expect(listed).toMatch(/^- 3\. span generic \[hidden: size\]\n {2}class="x"$/m);
    for (const planted of ["OFFSCREEN-INJECT", "OPACITY-INJECT", "TITLE-INJECT", "ARIA-INJECT", "NONE-INJECT", "ALT-INJECT", "WHITE-INJECT", "FLAT-INJECT"])
      expect(result.text).not.toContain(planted);
    // Nor can a selector test those words.
    for (const selector of ['[title*="INJECT"]', '[aria-label*="INJECT"]', '[alt*="INJECT"]', "xpath=//*[contains(., 'INJECT')]"]) {
      expect((await query(tab, { selector })).text, selector).toContain("Matches: none.");
    }
  });

  it("searches the frames the read policy allows, same-origin and cross-origin, and withholds the refused one", async () => {
    const tab = await open("/framed");
    const result = await query(tab, { selector: ".hit" });
    expect(result.isError, result.text).toBe(false);
    const listed = envelope(result.text);
    expect(listed).toContain('text: "Top page"');
    expect(listed).toContain('text: "Same-origin frame"');
    expect(listed).toContain('text: "Cross-origin frame"');
    expect(listed).toMatch(/- frame «Inner» at «http:\/\/127\.0\.0\.1:\d+\/inner»:/);
    expect(result.text).not.toContain("SECRETFRAME");
    expect(result.text).toContain("Frames withheld: 1 (outside the read policy; not searched).");
    // Top page, the inner frame's own paragraph and its three shadow roots' hits, the widget's: 6, the secret's not counted.
    expect(result.text).toContain("Matches 1-6 of 6.");
  });

  it("reaches into open and closed shadow roots, nested, on the page and inside a frame", async () => {
    const tab = await open("/shadow");
    const deep = await query(tab, { selector: "button.deep" });
    expect(envelope(deep.text)).toMatch(/^- 1\. button button "Deep button" \[ref=e\d+\] \[visible\]$/m);
    const hits = envelope((await query(tab, { class: "hit" })).text);
    expect(hits).toContain('text: "In outer root"');
    expect(hits).toContain('text: "Open inside"');
    expect(hits).toContain('text: "Closed section"');
    const framed = await open("/framed");
    const inFrame = await query(framed, { selector: ".deep" });
    expect(envelope(inFrame.text)).toMatch(/^- 1\. button button "Frame deep" \[ref=f\d+e\d+\] \[visible\]$/m);
  });

  it("gives refs the action tools take, in the top document and in a frame's closed shadow root", async () => {
    const tab = await open("/go");
    const go = refOf((await query(tab, { id: "go" })).text, '"Go"');
    const clicked = await call(client, "click", { tab, ...go });
    expect(clicked.isError, clicked.text).toBe(false);
    expect(await readFull(client, tab)).toContain("went");
    const framed = await open("/framed");
    const deep = refOf((await query(framed, { selector: ".deep" })).text, '"Frame deep"');
    const pressed = await call(client, "click", { tab: framed, ...deep });
    expect(pressed.isError, pressed.text).toBe(false);
    expect(envelope((await query(framed, { selector: ".deep" })).text)).toContain('"Pressed"');
  });

  it("refs go stale after navigation, and after a newer query or snapshot", async () => {
    const tab = await open("/go");
    const first = refOf((await query(tab, { id: "go" })).text, '"Go"');
    // A newer query starts a new revision: the first one's refs are stale, as after a newer snapshot.
    const second = refOf((await query(tab, { id: "go" })).text, '"Go"');
    const stale = await call(client, "click", { tab, ...first });
    expect(stale.isError).toBe(true);
    expect(stale.text).toMatch(/^stale_ref: /);
    const snap = await call(client, "snapshot", { tab });
    expect(snap.isError, snap.text).toBe(false);
    expect((await call(client, "click", { tab, ...second })).text).toMatch(/^stale_ref: /);
    const third = refOf((await query(tab, { id: "go" })).text, '"Go"');
    // The snapshot before that query is no longer the latest: paging it by its revision says so.
    const oldRevision = /revision: (\S+)/.exec(snap.text)?.[1];
    expect((await call(client, "snapshot", { tab, revision: oldRevision })).text).toMatch(/^stale_ref: /);
    const moved = await call(client, "navigate", { tab, url: `${site.origin}/elsewhere` });
    expect(moved.isError, moved.text).toBe(false);
    const afterNav = await call(client, "click", { tab, ...third });
    expect(afterNav.isError).toBe(true);
    expect(afterNav.text).toMatch(/^stale_ref: .*(navigated|reloaded)/);
  });

  it("enters frames with >>: same-origin, cross-origin, nested; a frame outside the read policy is withheld, not entered", async () => {
    const tab = await open("/checkout");
    const same = await query(tab, { selector: "iframe#checkout >> input[name=card]" });
    expect(same.isError, same.text).toBe(false);
    expect(same.text).toContain("Matches 1-1 of 1.");
    expect(envelope(same.text)).toMatch(/- frame «Pay» at «http:\/\/127\.0\.0\.1:\d+\/pay»:\n- 1\. input textbox "Frame card" \[ref=f\d+e\d+\] \[visible\]/);
    expect(same.text).not.toContain("Top card");
    const cross = await query(tab, { selector: "iframe#xo >> input[name=card]" });
    expect(cross.text).toContain("Matches 1-1 of 1.");
    expect(envelope(cross.text)).toContain('"Cross card"');
    const nested = await query(tab, { selector: "iframe#checkout >> iframe#nested >> button" });
    expect(nested.text).toContain("Matches 1-1 of 1.");
    expect(envelope(nested.text)).toMatch(/- 1\. button button "Nested pay" \[ref=f\d+e\d+\]/);
    // Into every frame: the two readable ones; the refused one is withheld, its field never listed.
    const all = await query(tab, { selector: "iframe >> input[name=card]" });
    expect(all.text).toContain("Matches 1-2 of 2.");
    expect(all.text).toContain("Frames withheld: 1 (outside the read policy; not searched).");
    const refused = await query(tab, { selector: "iframe#secret >> input[name=card]" });
    expect(refused.isError, refused.text).toBe(false);
    expect(refused.text).toContain("Matches: none.");
    expect(refused.text).toContain("Frames withheld: 1");
    for (const r of [all, refused]) expect(r.text).not.toContain("SECRETCARD");
    // A ref found through >> is gated like any frame ref (no fill grant here).
    const card = refOf((await query(tab, { selector: "iframe#checkout >> input[name=card]" })).text, '"Frame card"');
    const filled = await call(client, "fill", { tab, ...card, text: "4242" });
    expect(filled.text).toMatch(/^write_denied: /);
  });

  it("takes xpath= parts, in the page and behind >>; a hidden element matches nothing, by its attributes or its text", async () => {
    const tab = await open("/checkout");
    const pay = await query(tab, { selector: 'xpath=//button[text()="Pay"]' });
    expect(pay.isError, pay.text).toBe(false);
    expect(envelope(pay.text)).toMatch(/^- 1\. button button "Pay" \[ref=e\d+\] \[visible\]$/m);
    const framed = await query(tab, { selector: 'iframe#checkout >> xpath=//input[@name="card"]' });
    expect(framed.text).toContain("Matches 1-1 of 1.");
    expect(envelope(framed.text)).toContain('"Frame card"');
    for (const selector of ["xpath=//p[@class='hid']", "xpath=//p[contains(., 'HIDDEN-XPATH')]", "xpath=//*[@title='HIDDEN-XPATH']"]) {
      const hidden = await query(tab, { selector });
      expect(hidden.isError, hidden.text).toBe(false);
      expect(hidden.text, selector).toContain("Matches: none.");
    }
  });

  it("point=x,y is the element at a viewport point: in the page, in a same-origin frame (its own ref); refused across a cross-origin frame", async () => {
    const tab = await open("/points");
    const top = await query(tab, { selector: "point=60,30" });
    expect(top.isError, top.text).toBe(false);
    // The span under the point is inside the button: the button is what a click there reaches.
    expect(envelope(top.text)).toMatch(/^- 1\. button button "Go" \[ref=e\d+\] \[visible\]$/m);
    const framed = await query(tab, { selector: "point=70,140" });
    expect(envelope(framed.text)).toMatch(
      /- frame «Point frame» at «http:\/\/127\.0\.0\.1:\d+\/pointframe»:\n- 1\. button button "Inside" \[ref=f\d+e\d+\] \[visible\]/,
    );
    // The frame's element is gated as any: no click grant for its label.
    expect((await call(client, "click", { tab, ...refOf(framed.text, '"Inside"') })).text).toMatch(/^write_denied: /);
    const cross = await query(tab, { selector: "point=400,140" });
    expect(cross.isError).toBe(true);
    expect(cross.text).toMatch(/^not_actionable: the point \(400, 140\) is inside a cross-origin frame \(iframe#px at http:\/\/localhost:\d+\/widget-pay\)/);
    expect((await query(tab, { selector: "point=5000,5000" })).text).toContain("Matches: none.");
  });

  it("refuses an invalid XPath, or an invalid part of a >> chain, with invalid_params naming it", async () => {
    const tab = await open("/checkout");
    const bad = await query(tab, { selector: "xpath=//button[" });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/^invalid_params: the selector "xpath=\/\/button\[" is not valid XPath: .*fix it/);
    const part = await query(tab, { selector: "iframe >> div[" });
    expect(part.text).toMatch(/^invalid_params: the selector "iframe >> div\[" \(its part "div\["\) is not valid CSS/);
    const empty = await query(tab, { selector: "iframe >> " });
    expect(empty.text).toMatch(/^invalid_params: .*is empty: a `>>` needs a selector on both sides/);
  });

  it("refuses an invalid selector with invalid_params, quoting the browser's reason", async () => {
    const tab = await open("/list");
    const result = await query(tab, { selector: "div[" });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^invalid_params: the selector "div\[" is not valid CSS: .*'div\[' is not a valid selector/);
    const none = await query(tab, { selector: "section.nothing" });
    expect(none.isError, none.text).toBe(false);
    expect(none.text).toContain("Matches: none.");
  });
});

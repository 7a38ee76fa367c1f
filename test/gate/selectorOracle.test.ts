// Selectors are no oracle for hidden text (issue 24, point 3): query, code mode's browse.get("count") and wait_for
// match only what a person can see, and judge text and attribute predicates on what the tools would return. A
// display:none, transparent, off-screen or clipped element matches nothing; an element whose own text is unseen
// matches by structure, never by that text; a hidden field's value, a password's and a data-* attribute the tools
// never return cannot be tested. Whatever the secret, a right and a wrong guess count the same: none. Real Chromium,
// the real extension or CDP, the SDK's MCP client.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, openTab, page, startSession, startSite, type TestSite } from "../harness.js";

let site: TestSite;

/** Each secret and the element that hides it (its id). */
const HIDDEN: Record<string, string> = {
  h: "SECRET-DISPLAY",
  t: "SECRET-OPACITY",
  o: "SECRET-OFFSCREEN",
  c: "SECRET-CLIP",
  w: "SECRET-WHITE",
};

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route(
    "/oracle",
    page(
      "Oracle",
      `<style>.gone { display: none } .clear { opacity: 0 } .away { position: absolute; left: -9999px } .clip { position: absolute; clip: rect(0 0 0 0) }</style>
<h1>Oracle</h1>
<div id="h" class="gone">SECRET-DISPLAY-42</div>
<p id="t" class="clear">SECRET-OPACITY-42</p>
<p id="o" class="away">SECRET-OFFSCREEN-42</p>
<p id="c" class="clip">SECRET-CLIP-42</p>
<p id="w" style="color: #fff" title="SECRET-TITLE-42" aria-label="SECRET-ARIA-42">SECRET-WHITE-42</p>
<form><input type="hidden" name="token" value="HIDDEN-VALUE-42"><input id="hi" class="gone" value="HIDDEN-INPUT-42">
<input id="pw" type="password" value="PASSWORD-42" aria-label="Password"><input id="live" value="default" aria-label="Live"></form>
<div id="ds" data-secret="DATA-SECRET-42" data-testid="card">Shown card</div>
<button>Visible label</button> <a href="/next">Next</a>
<input placeholder="Search" aria-label="Search box">
<button data-testid="go">Go</button> <button aria-label="Close">x</button> <button disabled>Off</button>
<ul><li>One</li><li style="display: none">Hidden item</li><li>Two</li><li>Three</li></ul>
<iframe id="fr" src="/oracle-frame" width="400" height="120"></iframe>
<script>document.getElementById("live").value = "live-typed";</script>`,
    ),
  );
  site.route("/oracle-frame", page("Oracle frame", `<button>Framed button</button><p style="display: none">FRAME-SECRET-42</p>`));
  // Text that appears later: some a person sees, some drawn transparent, off-screen or clipped; words that fade out;
  // and a counter that changes the page every few milliseconds all along.
  site.route(
    "/later",
    page(
      "Later",
      `<h1>Later</h1><p id="fade">FADING WORDS</p><div id="ds" data-secret="DATA-SECRET-42">Shown card</div><p>Tick <span id="tick">0</span></p><div id="slot"></div>
<script>
let n = 0; setInterval(() => { document.getElementById("tick").textContent = String(++n); }, 10);
setTimeout(() => {
  document.getElementById("slot").innerHTML = '<p style="opacity: 0">LATE-TRANSPARENT</p><p style="position: absolute; left: -9999px">LATE-OFFSCREEN</p>'
    + '<p style="position: absolute; clip: rect(0 0 0 0)">LATE-CLIPPED</p><p style="display: none">LATE-NONE</p><p>LATE-SHOWN</p>';
  document.getElementById("fade").style.opacity = "0";
}, 300);
</script>`,
    ),
  );
}, 60_000);

afterAll(() => site?.close());

/** The number of matches a query reports. */
function total(text: string): number {
  if (text.includes("Matches: none.")) return 0;
  const of = /Matches \d+-\d+ of (\d+)\./.exec(text)?.[1];
  if (of === undefined) throw new Error(`no match count in:\n${text}`);
  return Number(of);
}

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let close: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({ client, close } = await startSession(driver));
  }, 60_000);

  afterAll(() => close());

  /** browse.get("count", selector) for each selector, in one program. */
  async function counts(selectors: string[]): Promise<Record<string, number>> {
    const program = `await browse.open(${JSON.stringify(`${site.origin}/oracle`)});
const out = {};
for (const s of ${JSON.stringify(selectors)}) out[s] = await browse.get("count", s);
return out;`;
    const result = await client.callTool({ name: "browser_run", arguments: { program } });
    const sc = result.structuredContent as { status: string; value?: Record<string, number>; failedCall?: unknown };
    expect(sc.status, JSON.stringify(sc)).toBe("ok");
    return sc.value ?? {};
  }

  it("browse.get('count') with XPath text predicates reads nothing of hidden text: a right and a wrong guess both count 0", async () => {
    const selectors: string[] = [];
    for (const [id, secret] of Object.entries(HIDDEN)) {
      for (const guess of [secret, "WRONG-GUESS"]) {
        selectors.push(
          `xpath=//*[@id="${id}"][contains(., "${guess}")]`,
          `xpath=//*[@id="${id}"][starts-with(normalize-space(.), "${guess}")]`,
          `xpath=//*[@id="${id}"][contains(substring(normalize-space(.), 1, 1), "${guess[0]}")]`,
          `xpath=//*[contains(text(), "${guess}")]`,
        );
      }
      selectors.push(`xpath=//*[@id="${id}"][string-length(normalize-space(.)) > 0]`, `xpath=//*[@id="${id}"][text()]`);
    }
    selectors.push(
      `xpath=//*[contains(., "SECRET-")]`,
      `xpath=//*[contains(@title, "SECRET")]`,
      `xpath=//*[contains(@aria-label, "SECRET")]`,
      "xpath=//p[contains(., 'FRAME-SECRET')]",
    );
    const counted = await counts(selectors);
    for (const selector of selectors) expect(counted[selector], selector).toBe(0);
    // Structure still matches where an element is drawn: the white paragraph's box is there, its words are not.
    const structure = await counts(['xpath=//p[@id="w"]', 'xpath=//div[@id="h"]', "#t", "#o", "#c", "#w"]);
    expect(structure).toEqual({ 'xpath=//p[@id="w"]': 1, 'xpath=//div[@id="h"]': 0, "#t": 0, "#o": 0, "#c": 0, "#w": 1 });
  });

  it("browse.get('count') with CSS attribute selectors tests no hidden field's value, no password's, no data-* attribute and no hidden title", async () => {
    const guesses = (scope: string, attribute: string, secret: string) => [
      `${scope}[${attribute}^="${secret}"]`,
      `${scope}[${attribute}^="WRONG"]`,
      `${scope}[${attribute}]`,
      `[${attribute}^="${secret}"]`,
    ];
    const selectors = [
      ...guesses('input[name="token"]', "value", "HIDDEN-VALUE"),
      ...guesses("#hi", "value", "HIDDEN-INPUT"),
      ...guesses("#pw", "value", "PASSWORD"),
      ...guesses("#ds", "data-secret", "DATA-SECRET"),
      ...guesses("#w", "title", "SECRET-TITLE"),
      ...guesses("#w", "aria-label", "SECRET-ARIA"),
      'input[name="token"]',
      "[data-secret]",
      "body:has(#h)",
      "form:has(input[type=hidden])",
      'div:has(> [data-secret^="D"])',
      "ul > li:nth-child(2):not(:empty)",
      'input[value="default"]',
    ];
    const counted = await counts(selectors);
    for (const selector of selectors) expect(counted[selector], selector).toBe(0);
  });

  it("positive controls: visible text, placeholders, data-testid, aria-label, disabled, live values, nth-child and frames still match", async () => {
    const counted = await counts([
      'xpath=//button[contains(., "Visible label")]',
      'xpath=//a[normalize-space()="Next"]',
      'input[placeholder="Search"]',
      "[data-testid=go]",
      "[aria-label=Close]",
      "button[disabled]",
      "li:nth-child(3)",
      'input[value="live-typed"]',
      "#pw",
      "input[type=password]",
      "#ds",
      '[data-testid="card"]',
      "xpath=//h1[text()='Oracle']",
      "ul:has(> li)",
    ]);
    expect(Object.entries(counted).filter(([, n]) => n !== 1)).toEqual([]);
    const tab = await openTab(client, `${site.origin}/oracle`);
    try {
      // The list keeps its live shape: the hidden item matches nothing, and holds its place.
      const second = await call(client, "query", { tab, selector: "li:nth-child(3)" });
      expect(second.text).toContain('text: "Two"');
      const framed = await call(client, "query", { tab, selector: "iframe >> button" });
      expect(total(framed.text)).toBe(1);
      expect(framed.text).toContain('"Framed button"');
      expect(total((await call(client, "query", { tab, selector: "iframe#fr >> xpath=//*[contains(., 'FRAME-SECRET')]" })).text)).toBe(0);
      // The query tool matches as browse.get does: the white paragraph by structure only, no secret in sight.
      const white = await call(client, "query", { tab, selector: "p" });
      expect(total(white.text)).toBe(1);
      expect(white.text).toMatch(/- 1\. p generic \[hidden: unseen\]\n {2}id="w"/);
      expect(white.text).not.toContain("SECRET");
    } finally {
      await call(client, "close_tab", { tab });
    }
  });

  it("wait_for text sees only text a person can see: transparent, off-screen, clipped and undisplayed text never appears; faded words are gone", async () => {
    const tab = await openTab(client, `${site.origin}/later`);
    try {
      const shown = await call(client, "wait_for", { tab, text: "LATE-SHOWN", timeout_ms: 10_000 });
      expect(shown.isError, shown.text).toBe(false);
      const gone = await call(client, "wait_for", { tab, text_gone: "FADING WORDS", timeout_ms: 1000 });
      expect(gone.isError, gone.text).toBe(false);
      for (const text of ["LATE-TRANSPARENT", "LATE-OFFSCREEN", "LATE-CLIPPED", "LATE-NONE"]) {
        const hidden = await call(client, "wait_for", { tab, text, timeout_ms: 1000 });
        expect(hidden.isError, text).toBe(true);
        expect(hidden.text, text).toMatch(/^wait_timeout: /);
      }
    } finally {
      await call(client, "close_tab", { tab });
    }
  });

  it("wait_for selector matches as query does: a data-* attribute never, a right and a wrong guess alike; a visible element at once", async () => {
    const tab = await openTab(client, `${site.origin}/later`);
    try {
      const card = await call(client, "wait_for", { tab, selector: "#ds", timeout_ms: 5000 });
      expect(card.isError, card.text).toBe(false);
      for (const selector of ['[data-secret^="DATA"]', '[data-secret^="WRONG"]', "xpath=//p[contains(., 'LATE-TRANSPARENT')]"]) {
        const waited = await call(client, "wait_for", { tab, selector, timeout_ms: 1000 });
        expect(waited.text, selector).toMatch(/^wait_timeout: /);
      }
      const late = await call(client, "wait_for", { tab, selector: "xpath=//p[contains(., 'LATE-SHOWN')]", timeout_ms: 5000 });
      expect(late.isError, late.text).toBe(false);
      const bad = await call(client, "wait_for", { tab, selector: "div[", timeout_ms: 1000 });
      expect(bad.text).toMatch(/^invalid_params: the selector "div\[" is not valid CSS/);
    } finally {
      await call(client, "close_tab", { tab });
    }
  });
});

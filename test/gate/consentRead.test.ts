// Readable mode reads the article, not the consent banner over it (issue 12, section 1), end to end: saved page
// shapes of each consent manager (packages/broker/test/fixtures/consent/), banners fixed or sticky by a stylesheet
// class with a neutral name (the in-page reader marks computed fixed / sticky boxes on the copy it sends, so the
// broker can judge them), one inside the <article>, a dialog, an inline-fixed one, and none. Through the SDK's MCP
// client, real Chromium, the real extension and CDP: the article's first paragraph leads, the byline shows in the
// result's header, the banner's words are gone; full mode keeps everything; the live page carries no mark.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, openTab, startSession, startSite, type TestSite } from "../harness.js";

const FIXTURES = new URL("../../packages/broker/test/fixtures/consent/", import.meta.url);
const LEAD = "LEAD: The harbour wall that held back the sea for two centuries finally gave way on Tuesday night.";
const STORY = Array.from(
  { length: 8 },
  (_, i) =>
    `<p>Paragraph ${i + 1}: the council's engineers had warned in three separate surveys that the mortar was failing, and each time the repairs were put off to the next budget, while the town argued about who should pay.</p>`,
).join("\n");
const HEADLINE = `<h1>The night the harbour wall fell</h1><p class="byline">By Mara Lind</p><p>${LEAD}</p>`;
const ARTICLE = `<main><article>${HEADLINE}${STORY}</article></main>`;

/** A banner with nothing but its words and buttons to tell what it is (a neutral class the stylesheet places). */
const banner = (attributes: string) =>
  `<div ${attributes}><p>BANNER: We use cookies and similar technologies to improve your experience, personalise content and ads, and analyse our traffic. By clicking Accept all you consent to our use of cookies.</p><button>Accept all</button><button>Reject all</button><a href="/privacy">Manage preferences</a></div>`;

function page(head: string, body: string): string {
  return `<!doctype html><html><head><title>Harbour</title>${head}</head><body>${body}</body></html>`;
}

/** path -> page, and the banner's own words as the result would show them. */
const SHAPES: Record<string, { html: string; words: string }> = {
  "/css-fixed": {
    html: page(`<style>.b7x { position: fixed; bottom: 0; left: 0; right: 0; background: #eee }</style>`, `${banner('class="b7x"')}${ARTICLE}`),
    words: "BANNER: We use cookies",
  },
  "/css-sticky-in-article": {
    html: page(
      `<style>.b7x { position: sticky; top: 0; background: #eee }</style>`,
      `<main><article>${banner('class="b7x"')}${HEADLINE}${STORY}</article></main>`,
    ),
    words: "BANNER: We use cookies",
  },
  "/css-fixed-in-article": {
    html: page(
      `<style>.q2 > div { position: fixed; bottom: 0; background: #eee }</style>`,
      `<main><article class="q2">${HEADLINE}${banner('class="z"')}${STORY}</article></main>`,
    ),
    words: "BANNER: We use cookies",
  },
  "/dialog": { html: page("", `${banner('class="m1" role="dialog" aria-label="Privacy choices"')}${ARTICLE}`), words: "BANNER: We use cookies" },
  "/inline-fixed": { html: page("", `${banner('class="m1" style="position: fixed; bottom: 0"')}${ARTICLE}`), words: "BANNER: We use cookies" },
};
for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith(".html"))) {
  const saved = readFileSync(new URL(name, FIXTURES), "utf8");
  const texts = saved
    .replace(/<[^>]+>/g, "\n")
    .split("\n")
    .map((t) => t.trim());
  const longest = texts.reduce((a, b) => (b.length > a.length ? b : a), "");
  SHAPES[`/saved/${name.replace(/\.html$/, "")}`] = { html: page("", `${saved}\n${ARTICLE}`), words: longest.slice(0, 40) };
}

let site: TestSite;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  for (const [path, shape] of Object.entries(SHAPES)) site.route(path, shape.html);
  site.route("/no-banner", page("", ARTICLE));
}, 60_000);

afterAll(async () => {
  await site?.close();
});

/** The first block of the fenced page text that is not a heading. */
function firstParagraph(text: string): string {
  const body = text.slice(text.indexOf("<page-content"));
  return (
    body
      .split("\n")
      .slice(1)
      .find((line) => line.trim() !== "" && !line.startsWith("#")) ?? ""
  );
}

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({ client, close: closeSession } = await startSession(driver));
  }, 60_000);

  afterAll(() => closeSession());

  it("read_url shows the byline as page text in its header, on a page with no banner", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/no-banner` });
    expect(result.isError, result.text).toBe(false);
    expect(result.text).toContain("Mode: readable");
    expect(result.text).toContain("Byline (page text): «By Mara Lind»");
    expect(result.text.indexOf("Byline (page text)")).toBeLessThan(result.text.indexOf("<page-content"));
    expect(firstParagraph(result.text)).toBe(LEAD);
  });

  for (const path of Object.keys(SHAPES)) {
    it(`readable mode drops the banner of ${path}: the first paragraph and the byline survive; full mode keeps it`, async () => {
      const { words } = SHAPES[path]!;
      const readable = await call(client, "read_url", { url: `${site.origin}${path}` });
      expect(readable.isError, readable.text).toBe(false);
      expect(readable.text).toContain("Mode: readable");
      expect(firstParagraph(readable.text), readable.text.slice(0, 1200)).toBe(LEAD);
      expect(readable.text).toContain("Byline (page text): «By Mara Lind»");
      expect(readable.text).not.toContain(words);
      expect(readable.text).not.toMatch(/\b(?:Accept all|Allow all|I Accept|Agree and close|Got it)\b/i);
      const full = await call(client, "read_url", { url: `${site.origin}${path}`, mode: "full" });
      expect(full.isError, full.text).toBe(false);
      expect(full.text.replace(/\s+/g, " ")).toContain(words);
      expect(full.text).toContain(LEAD);
    });
  }

  it("read_page (readable) of an open tab drops the stylesheet-sticky banner inside the article; the live page carries no mark", async () => {
    const tab = await openTab(client, `${site.origin}/css-sticky-in-article`);
    try {
      const readable = await call(client, "read_page", { tab });
      expect(readable.isError, readable.text).toBe(false);
      expect(firstParagraph(readable.text)).toBe(LEAD);
      expect(readable.text).toContain("Byline (page text): «By Mara Lind»");
      expect(readable.text).not.toContain("BANNER:");
      const marked = await call(client, "query", { tab, selector: "[data-tabrelay-position], [data-tabrelay-hidden]" });
      expect(marked.isError, marked.text).toBe(false);
      expect(marked.text).toContain("Matches: none.");
    } finally {
      await call(client, "close_tab", { tab });
    }
  });
});

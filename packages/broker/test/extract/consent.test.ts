// Readable mode drops consent, cookie and newsletter overlays (issue 12, section 1); full mode keeps everything.
// Each fixture under fixtures/consent/ is the markup one consent manager (or a plain banner, or a newsletter pop-up)
// puts into real pages; here it sits at the top of an article's <body>, where it becomes the article's first
// paragraph if nothing removes it, or at its end.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { dropConsentOverlays } from "../../src/extract/consent.js";
import { parseDocument } from "../../src/extract/dom.js";
import { extract } from "../../src/extract/extract.js";

const DIR = new URL("../fixtures/consent/", import.meta.url);
const SHAPES = readdirSync(DIR).filter((name) => name.endsWith(".html"));
const URL_ = "https://news.example/2026/12/01/harbour";
const LEAD = "The harbour wall that held back the sea for two centuries finally gave way on Tuesday night.";

const ARTICLE = `<header><nav><a href="/">Home</a> <a href="/news">News</a></nav></header>
<main><article>
<h1>The night the harbour wall fell</h1>
<p class="byline">By <a rel="author" href="/people/mara-lind">Mara Lind</a></p>
<p>${LEAD} Fishermen who had tied up for the storm watched the stones go one by one.</p>
${Array.from({ length: 8 }, (_, i) => `<p>Paragraph ${i + 1} of the report: the council's engineers had warned in three separate surveys that the mortar was failing, and each time the repairs were put off to the next budget, while the town argued about who should pay for a wall that protects everyone.</p>`).join("\n")}
</article></main>`;

/** The same story on a page without landmarks: one content column the banner is injected into. */
const PARAGRAPHS = ARTICLE.slice(ARTICLE.indexOf("<h1>"), ARTICLE.indexOf("</article>"));

type Where = "top" | "bottom" | "inside the content column";

function page(banner: string, where: Where): string {
  const body =
    where === "top"
      ? `${banner}\n${ARTICLE}`
      : where === "bottom"
        ? `${ARTICLE}\n${banner}`
        : `<div id="wrap"><div class="content">${banner}\n${PARAGRAPHS}</div></div>`;
  return `<!doctype html><html><head><title>The night the harbour wall fell</title></head><body>${body}</body></html>`;
}

/** The banner's own words, as a reader would spot them in the result: the start of its longest text. */
function bannerWords(banner: string): string {
  const texts = banner
    .replace(/<[^>]+>/g, "\n")
    .split("\n")
    .map((t) => t.trim());
  const longest = texts.reduce((a, b) => (b.length > a.length ? b : a), "");
  return longest.slice(0, 40);
}

describe.each(SHAPES)("a page with the %s overlay", (name) => {
  const banner = readFileSync(new URL(name, DIR), "utf8");

  it.each<Where>(["top", "bottom", "inside the content column"])(
    "in readable mode, %s: the overlay is gone, the article's first paragraph and byline stay",
    (where) => {
      const r = extract({ html: page(banner, where), url: URL_, mode: "readable" });
      expect(r.mode).toBe("readable");
      const firstParagraph = r.markdown.split(/\n\n+/).find((block) => !block.startsWith("#") && !block.startsWith("By "));
      expect(firstParagraph).toContain(LEAD);
      expect(r.byline).toMatch(/Mara Lind/);
      expect(r.markdown).not.toContain(bannerWords(banner));
      expect(r.markdown).not.toMatch(/\b(?:Accept all|Allow all|I Accept|AGREE|Agree and close|Got it|Subscribe)\b/i);
    },
  );

  it("in full mode: everything is kept", () => {
    const r = extract({ html: page(banner, "top"), url: URL_, mode: "full" });
    expect(r.markdown).toContain(LEAD);
    expect(r.markdown.replace(/\s+/g, " ")).toContain(bannerWords(banner));
  });
});

describe("what is not an overlay stays", () => {
  it("an article about baking cookies, in a container named for them", () => {
    const html = `<html><body><main><article class="cookie-recipe"><h1>Brown butter cookies</h1>
<p>These cookies are the ones I bake every December. Accept no substitutes for real butter, and let the dough rest overnight.</p>
<p>Cream the butter and sugar, fold in the flour, then chill. Bake at 180 degrees for eleven minutes, until the edges are golden.</p></article></main></body></html>`;
    const body = parseDocument(html).body!;
    expect(dropConsentOverlays(body)).toBe(0);
    expect(body.textContent).toContain("Accept no substitutes");
  });

  it("a page wrapper whose class says a banner is open", () => {
    const html = `<html><body><div id="page" class="page has-cookie-banner"><main><h1>Opening hours</h1><p>We accept cookies from customers' children on Saturdays, and all major cards.</p></main></div></body></html>`;
    const body = parseDocument(html).body!;
    expect(dropConsentOverlays(body)).toBe(0);
    expect(body.textContent).toContain("Opening hours");
  });

  it("a documentation section on HTTP cookies inside the article", () => {
    const html = `<html><body><article><h1>Set-Cookie</h1><section id="cookie-attributes" role="region" aria-label="Cookie attributes"><h2>Attributes</h2><p>The SameSite attribute lets servers require that a cookie is not sent with cross-site requests. Browsers accept Lax as the default.</p></section></article></body></html>`;
    const body = parseDocument(html).body!;
    expect(dropConsentOverlays(body)).toBe(0);
    expect(body.textContent).toContain("SameSite");
  });

  it("a fixed header that is not about consent", () => {
    const html = `<html><body><div style="position:fixed;top:0"><a href="/">Home</a> <button>Menu</button></div><article><h1>Hi</h1><p>Body text.</p></article></body></html>`;
    const body = parseDocument(html).body!;
    expect(dropConsentOverlays(body)).toBe(0);
  });
});

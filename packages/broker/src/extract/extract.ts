/**
 * HTML -> Markdown extraction.
 *
 * Both drivers send the serialized DOM of the rendered page with what a person cannot see marked by the in-page
 * reader (HIDDEN_MARK_ATTR, judged there from computed style and layout); the broker turns it into compact Markdown
 * for the agent, dropping the marked elements and counting what it withheld. Pipeline (parsed exactly once):
 *
 *   parse (linkedom) -> formulas (MathJax, KaTeX, MathML) to TeX placeholders (formulas.ts)
 *   -> prune marked, hidden and non-content elements from <body>
 *     readable: drop consent/cookie/newsletter overlays (consent.ts), run Readability (on a clone when a fallback
 *       is likely), keep its article unless it found nothing useful
 *     full (or fallback): use the pruned <body> of the original document
 *   -> absolutize/sanitize links and images -> Turndown -> tidy.
 *
 * Stages: dom.ts (parse), prune.ts, readable.ts, links.ts, markdown.ts with tables.ts (Turndown), postprocess.ts.
 * This module runs them and is the one importers use.
 */
import { isProbablyReaderable } from "@mozilla/readability";
import { withThousands } from "../util/format.js";
import { dropConsentOverlays } from "./consent.js";
import { parseDocument, type DomElement } from "./dom.js";
import { keepFormulas, mayHoldFormulas } from "./formulas.js";
import { baseUrl, fixLinksAndImages } from "./links.js";
import { turndown } from "./markdown.js";
import { countWords, dropLeadingTitle, firstNonEmpty, tidy } from "./postprocess.js";
import { prune } from "./prune.js";
import { nonLinkTextLength, readabilityFoundNothing, runReadability, type ReadabilityOutcome } from "./readable.js";
import { WithheldCount, type Withheld } from "./withheld.js";

export type { Withheld } from "./withheld.js";

export type ExtractMode = "readable" | "full";

export interface ExtractInput {
  html: string;
  url: string;
  title?: string;
  mode: ExtractMode;
}

export interface Extracted {
  title: string;
  url: string;
  markdown: string;
  /** What was actually used. */
  mode: ExtractMode;
  /** Readable was requested but the full page was converted: Readability found nothing useful, or the page was too big. */
  fellBack: boolean;
  /** Why readable mode fell back, in words for the agent. */
  fallbackReason?: string;
  byline?: string;
  wordCount: number;
  /** Text the page does not show a person (marked in the page, or hidden by inline style / attribute), dropped. */
  withheld?: Withheld;
}

function removeScripts(root: DomElement): void {
  for (const script of Array.from(root.querySelectorAll("script"))) script.remove();
}

/** Parses and prunes the page for full conversion. */
function fullBody(html: string): DomElement | null {
  const body = parseDocument(html).body;
  if (body !== null && mayHoldFormulas(html)) keepFormulas(body);
  if (body !== null) prune(body, false);
  return body;
}

/**
 * Readability's scoring grows much faster than the page on div-heavy markup (60,000 elements: ~5 s; 180,000:
 * ~18 s, the broker's event loop blocked all the while). Real articles have a few thousand elements and long
 * reference pages tens of thousands; beyond this many, readable mode converts the full page instead.
 */
const READABILITY_MAX_ELEMENTS = 30_000;

export function extract(input: ExtractInput): Extracted {
  const doc = parseDocument(input.html);
  const base = baseUrl(doc, input.url);
  const docTitle = doc.title;
  let body = doc.body;

  let root: DomElement | null = body;
  let mode: ExtractMode = "full";
  let fellBack = false;
  let readability: ReadabilityOutcome = {};
  const withheld = new WithheldCount();

  const huge = body !== null && input.mode === "readable" && body.querySelectorAll("*").length > READABILITY_MAX_ELEMENTS;
  if (body !== null && mayHoldFormulas(input.html)) keepFormulas(body); // before pruning: the math's words sit beside its drawing
  if (body !== null && input.mode === "readable" && !huge) {
    prune(body, true, withheld); // hidden text must not reach Readability either
    dropConsentOverlays(body); // else a cookie banner becomes the article's first paragraph
    // Readability mutates the document it reads. Pages that look like articles (the common case) hand it the
    // document itself: the fallback is then unlikely and re-parses. Other pages, where the fallback is likely, hand it
    // a clone and keep the original for the fallback, so no page is ever parsed twice in the likely path.
    const readerable = isProbablyReaderable(doc, { visibilityChecker: () => true }); // hidden nodes are gone already
    const reading = readerable ? doc : doc.cloneNode(true);
    readability = runReadability(reading);
    const page = body;
    if (readabilityFoundNothing(readability, readerable, () => nonLinkTextLength(page))) {
      fellBack = true;
      if (readerable) {
        body = fullBody(input.html);
        if (body !== null) dropConsentOverlays(body); // readable was asked for: no banner in its fallback either
      } else removeScripts(body); // the JSON-LD kept for Readability
      root = body;
    } else {
      root = readability.root ?? null;
      mode = "readable";
    }
  } else if (body !== null) {
    prune(body, false, withheld);
    fellBack = huge;
  }

  const title = firstNonEmpty(readability.title, docTitle, input.title, input.url);
  let markdown = "";
  if (root !== null) {
    fixLinksAndImages(root, base);
    markdown = dropLeadingTitle(tidy(turndown.turndown(root)), title).trim();
  }

  const result: Extracted = { title, url: input.url, markdown, mode, fellBack, wordCount: countWords(markdown) };
  if (readability.byline !== undefined) result.byline = readability.byline;
  const hidden = withheld.value();
  if (hidden !== undefined) result.withheld = hidden;
  if (fellBack)
    result.fallbackReason = huge
      ? `the page has over ${withThousands(READABILITY_MAX_ELEMENTS)} elements, too many for readable mode`
      : "readable found no article";
  return result;
}

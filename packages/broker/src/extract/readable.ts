// Readability and the fallback decision.
import { Readability } from "@mozilla/readability";
import { compactLength, isElement, type DomDocument, type DomElement, type DomNode } from "./dom.js";

/** Text length outside links: navigation, sidebars and footers are mostly links, real content mostly is not. */
export function nonLinkTextLength(el: DomElement): number {
  let length = compactLength(el.textContent);
  for (const a of Array.from(el.querySelectorAll("a"))) length -= compactLength(a.textContent);
  return length;
}

/** Below this many non-space characters Readability's article is treated as empty. */
const MIN_ARTICLE_CHARS = 200;
/** Share of the page's non-link text a non-article page's Readability result must keep. */
const MIN_NON_LINK_SHARE = 0.5;

/**
 * Decides whether Readability's result is useful. We fall back to full conversion when:
 *
 * 1. Readability returned nothing, threw, or its article has under MIN_ARTICLE_CHARS characters of text: it found no
 *    article (a short app-like page, a login wall, an error page).
 * 2. The page is not "probably readerable" (Readability's own cheap pre-check: no substantial paragraphs — app UIs,
 *    dashboards, list and search pages) AND the article kept less than half of the page's non-link text.
 *    Link text is left out of the comparison because nav bars, sidebars and footers are mostly links, and dropping
 *    those is the point of readable mode; dropping non-link text on a page without real paragraphs means Readability
 *    threw away the content itself (it deletes buttons, forms, and "unlikely" cards and tables).
 *
 * A plain "< 20% of the body text" rule was rejected: on a real article page a long comment thread or huge menus can
 * easily outweigh the article, and Readability is right to drop them. Rule 2 only applies when Readability itself
 * says the page does not look like an article, and the ratio ignores link-heavy boilerplate.
 *
 * `pageNonLinkText` is only needed (and only computed) for pages that are not readerable.
 */
export function readabilityFoundNothing(outcome: ReadabilityOutcome, readerable: boolean, pageNonLinkText: () => number): boolean {
  const root = outcome.root;
  if (root === undefined) return true;
  if (compactLength(outcome.text ?? root.textContent) < MIN_ARTICLE_CHARS) return true;
  if (readerable) return false;
  return nonLinkTextLength(root) < MIN_NON_LINK_SHARE * pageNonLinkText();
}

export interface ReadabilityOutcome {
  root?: DomElement;
  text?: string | null;
  title?: string;
  byline?: string;
}

export function runReadability(doc: DomDocument): ReadabilityOutcome {
  try {
    const article = new Readability(doc, { serializer: (node: DomNode) => node }).parse();
    if (article === null) return {};
    const content = article.content;
    return {
      root: isElement(content) ? content : undefined,
      text: article.textContent,
      title: article.title?.trim() || undefined,
      byline: article.byline?.trim() || undefined,
    };
  } catch {
    // Readability throws on some malformed documents; treat that like "no article".
    return {};
  }
}

// Pruning: non-content and hidden elements, removed before Readability or Turndown sees the tree.
import { HIDDEN_MARK_ATTR, HIDDEN_OWN_TEXT, HIDDEN_SUBTREE } from "@tabrelay/protocol";
import { isElement, TEXT_NODE, type DomElement, type DomNode } from "./dom.js";
import type { WithheldCount } from "./withheld.js";

/** Elements that never carry readable page text (or whose text is code/markup, not content). */
export const DROP_TAGS = new Set([
  "SCRIPT",
  "STYLE",
  "NOSCRIPT",
  "TEMPLATE",
  "SVG",
  "CANVAS",
  "IFRAME",
  "FRAME",
  "FRAMESET",
  "OBJECT",
  "EMBED",
  "APPLET",
  "LINK",
  "META",
  "BASE",
  // A closed <select> shows one option; its option list (e.g. 250 countries) is noise.
  "SELECT",
  "DATALIST",
]);

/** Inline styles that hide an element: a second line of defence for HTML that carries no in-page marks. */
const HIDDEN_STYLE = /(?:^|[;\s])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|content-visibility\s*:\s*hidden)\s*(?:!\s*important\s*)?(?:;|$)/i;

/** Landmarks that mark an aria-hidden element as the page's app root hidden behind an open modal. */
const MAIN_CONTENT_SELECTOR = "main, article, h1, [role=main]";

function isJsonLd(el: DomElement): boolean {
  return el.tagName === "SCRIPT" && (el.getAttribute("type") ?? "").trim().toLowerCase() === "application/ld+json";
}

function isHidden(el: DomElement): boolean {
  if (el.getAttribute(HIDDEN_MARK_ATTR) === HIDDEN_SUBTREE) return true;
  if (el.hasAttribute("hidden")) return true;
  const style = el.getAttribute("style");
  if (style !== null && style.length > 7 && HIDDEN_STYLE.test(style)) return true;
  if (el.tagName === "DIALOG" && !el.hasAttribute("open")) return true;
  const ariaHidden = el.getAttribute("aria-hidden");
  if (ariaHidden !== null && ariaHidden.trim().toLowerCase() === "true") {
    // aria-hidden alone does not hide anything visually. Sites set it on their whole app root while a modal (often
    // the cookie dialog) is open; dropping that would drop the page. Such roots hold the main landmarks; hidden
    // injection text does not need them (and if it is also visually hidden, the checks above catch it).
    return el.querySelector(MAIN_CONTENT_SELECTOR) === null;
  }
  return false;
}

const LANGUAGE_CLASS = /(?:^|\s)(?:lang(?:uage)?-|highlight-(?:source-)?)([\w#+.-]{1,30})(?:\s|$)/i;
/** Wrappers (GitHub "highlight-source-python", Pygments "highlight-python") name the language for their <pre>. */
const WRAPPER_LANGUAGE_CLASS = /(?:^|\s)highlight-(?:source-)?([\w#+.-]{1,30})(?:\s|$)/i;
const NO_LANGUAGE = /^(?:none|plain|plaintext|nohighlight)$/i;

function languageOf(el: DomElement, classPattern: RegExp): string | undefined {
  const attr = (el.getAttribute("data-lang") ?? el.getAttribute("data-language"))?.trim();
  if (attr !== undefined && /^[\w#+.-]{1,30}$/.test(attr) && !NO_LANGUAGE.test(attr)) return attr.toLowerCase();
  const m = classPattern.exec(el.getAttribute("class") ?? "");
  return m?.[1] !== undefined && !NO_LANGUAGE.test(m[1]) ? m[1].toLowerCase() : undefined;
}

/** Finds the code language of a <pre> from the usual highlighter markup (Prism, highlight.js, GitHub, Pygments). */
export function codeLanguage(pre: DomElement): string | undefined {
  const code = pre.firstElementChild?.tagName === "CODE" ? pre.firstElementChild : null;
  const lang = languageOf(pre, LANGUAGE_CLASS) ?? (code === null ? undefined : languageOf(code, LANGUAGE_CLASS));
  if (lang !== undefined) return lang;
  let ancestor = pre.parentNode;
  for (let i = 0; i < 2 && isElement(ancestor); i++, ancestor = ancestor.parentNode) {
    const found = languageOf(ancestor, WRAPPER_LANGUAGE_CLASS);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Element depth below which structure is flattened to text (see prune). */
const MAX_DEPTH = 128;

/** Removes the element's own text nodes (its children elements stay), counting their text. */
function dropOwnText(el: DomElement, withheld: WithheldCount | undefined): void {
  const texts: DomNode[] = [];
  for (let i = 0; i < el.childNodes.length; i++) {
    const node = el.childNodes[i];
    if (node !== undefined && node.nodeType === TEXT_NODE) texts.push(node);
  }
  withheld?.add(texts.map((t) => t.nodeValue ?? "").join(" "));
  for (const t of texts) t.remove();
}

/**
 * Removes non-content and hidden elements below `root` in one pass, and records code languages on <pre> elements as
 * data-lang (Readability strips class attributes). JSON-LD scripts are kept on request: Readability reads metadata
 * (title, byline) from them.
 */
export function prune(root: DomElement, keepJsonLd: boolean, withheld?: WithheldCount): void {
  const doomed: DomElement[] = [];
  const tooDeep: DomElement[] = [];
  const stack: [DomElement, number][] = [[root, 0]];
  if (root.getAttribute(HIDDEN_MARK_ATTR) === HIDDEN_SUBTREE) {
    withheld?.add(root.textContent ?? "");
    for (let child = root.firstElementChild; child !== null; child = child.nextElementSibling) doomed.push(child);
    for (const el of doomed) el.remove();
    dropOwnText(root, undefined);
    return;
  }
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [el, depth] = item;
    if (el.getAttribute(HIDDEN_MARK_ATTR) === HIDDEN_OWN_TEXT) dropOwnText(el, withheld);
    for (let child = el.firstElementChild; child !== null; child = child.nextElementSibling) {
      const dropTag = DROP_TAGS.has(child.tagName);
      if (dropTag ? !(keepJsonLd && isJsonLd(child)) : isHidden(child)) {
        // A template's content is markup no one sees: counted with the hidden text, unlike scripts and styles.
        if (!dropTag || child.tagName === "TEMPLATE") withheld?.add(child.textContent ?? "");
        doomed.push(child);
        continue;
      }
      if (child.tagName === "PRE") {
        const lang = codeLanguage(child);
        if (lang !== undefined) child.setAttribute("data-lang", lang);
      }
      if (depth + 1 >= MAX_DEPTH) tooDeep.push(child);
      else stack.push([child, depth + 1]);
    }
  }
  for (const el of doomed) el.remove();
  // Real pages nest a few dozen levels. Hostile ones nest thousands, which makes Readability quadratic and
  // overflows recursive converters: below MAX_DEPTH, keep the text and drop the structure.
  for (const el of tooDeep) el.replaceWith(el.textContent ?? "");
}

/**
 * HTML -> Markdown extraction.
 *
 * Both drivers send the serialized DOM of the rendered page with what a person cannot see marked by the in-page
 * reader (HIDDEN_MARK_ATTR, judged there from computed style and layout); the broker turns it into compact Markdown
 * for the agent, dropping the marked elements and counting what it withheld. Pipeline (parsed exactly once):
 *
 *   parse (linkedom) -> prune marked, hidden and non-content elements from <body>
 *     readable: clone the document, run Readability on the clone, keep its article unless it found nothing useful
 *     full (or fallback): use the pruned <body> of the original document
 *   -> absolutize/sanitize links and images -> Turndown -> tidy.
 */
import { isProbablyReaderable, Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
// Turndown's browser build: we hand it linkedom nodes, never strings, so it needs no HTML parser of its own (its
// Node build loads a second DOM implementation, domino, at import: ~1 MiB of heap for nothing).
import TurndownService from "turndown/lib/turndown.browser.cjs.js";
import { HIDDEN_MARK_ATTR, HIDDEN_OWN_TEXT, HIDDEN_SUBTREE } from "@tabrelay/protocol";
import { withThousands } from "../util/format.js";
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


// ---------------------------------------------------------------------------------------------------------------------
// The subset of the DOM we use. The broker compiles without the DOM lib, so linkedom's and Turndown's typings (which
// refer to browser globals) are loose; these structural types keep this module checked.

interface DomNode {
  readonly nodeType: number;
  readonly nodeName: string;
  readonly parentNode: DomNode | null;
  readonly childNodes: ArrayLike<DomNode>;
  readonly nextSibling: DomNode | null;
  readonly previousSibling: DomNode | null;
  readonly textContent: string | null;
  readonly nodeValue: string | null;
  remove(): void;
}

interface DomElement extends DomNode {
  readonly tagName: string;
  readonly firstElementChild: DomElement | null;
  readonly nextElementSibling: DomElement | null;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
  hasAttribute(name: string): boolean;
  querySelector(selectors: string): DomElement | null;
  querySelectorAll(selectors: string): ArrayLike<DomElement>;
  remove(): void;
  replaceWith(...nodes: string[]): void;
}

interface DomDocument extends DomNode {
  readonly documentElement: DomElement | null;
  readonly body: DomElement | null;
  readonly title: string;
  querySelector(selectors: string): DomElement | null;
  cloneNode(deep: boolean): DomDocument;
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

function isElement(node: DomNode | null | undefined): node is DomElement {
  return node != null && node.nodeType === ELEMENT_NODE;
}

function parseDocument(html: string): DomDocument {
  // Parsing boundary: linkedom is typed as returning a browser Window; we only rely on the DomDocument subset.
  const { document } = parseHTML(normalizeHtml(html)) as unknown as { document: DomDocument };
  return document;
}

/**
 * linkedom is not a spec-complete HTML parser: without explicit <html> and <body> tags it loses the content
 * (a bare fragment becomes the documentElement and body is empty). Serialized browser DOMs always have both, so this
 * only rewrites unusual inputs (fragments, hand-written pages).
 */
function normalizeHtml(html: string): string {
  if (/<html[\s>]/i.test(html) && /<body[\s>]/i.test(html)) return html;
  const inner = html
    .replace(/<!doctype[^>]*>/i, "")
    .replace(/<\/?html(?:\s[^>]*)?>/gi, "")
    .replace(/<\/?body(?:\s[^>]*)?>/gi, "");
  const head = /<head[\s>][\s\S]*?<\/head>/i.exec(inner);
  const headHtml = head ? head[0] : "<head></head>";
  const bodyHtml = head ? inner.replace(headHtml, "") : inner;
  return `<!DOCTYPE html><html>${headHtml}<body>${bodyHtml}</body></html>`;
}

// ---------------------------------------------------------------------------------------------------------------------
// Pruning: non-content and hidden elements.

/** Elements that never carry readable page text (or whose text is code/markup, not content). */
const DROP_TAGS = new Set([
  "SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "CANVAS", "IFRAME", "FRAME", "FRAMESET", "OBJECT", "EMBED",
  "APPLET", "LINK", "META", "BASE",
  // A closed <select> shows one option; its option list (e.g. 250 countries) is noise.
  "SELECT", "DATALIST",
]);

/** Inline styles that hide an element: a second line of defence for HTML that carries no in-page marks. */
const HIDDEN_STYLE =
  /(?:^|[;\s])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|content-visibility\s*:\s*hidden)\s*(?:!\s*important\s*)?(?:;|$)/i;

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
function codeLanguage(pre: DomElement): string | undefined {
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

/**
 * Removes non-content and hidden elements below `root` in one pass, and records code languages on <pre> elements as
 * data-lang (Readability strips class attributes). JSON-LD scripts are kept on request: Readability reads metadata
 * (title, byline) from them.
 */
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

function prune(root: DomElement, keepJsonLd: boolean, withheld?: WithheldCount): void {
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

// ---------------------------------------------------------------------------------------------------------------------
// Links and images.

const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:", "tel:", "ftp:"]);
const IMAGE_PROTOCOLS = new Set(["http:", "https:"]);
const INVISIBLE = /[\s\u200b-\u200d\u2060\ufeff]+/g;

function resolveUrl(raw: string, base: URL | undefined): URL | undefined {
  try {
    // The URL parser strips tabs/newlines and surrounding control characters, so "java\tscript:" and " JAVASCRIPT:"
    // come out with protocol "javascript:" and are rejected by the protocol allow-lists.
    return new URL(raw, base);
  } catch {
    return undefined;
  }
}

function firstSrcsetUrl(srcset: string | null): string | null {
  if (srcset === null) return null;
  const first = srcset.trim().split(/\s+/)[0];
  return first === undefined || first === "" ? null : first.replace(/,$/, "");
}

function imageUrl(img: DomElement, base: URL | undefined): string | undefined {
  // Lazy-loading pages put a data: placeholder in src and the real image in data-src / srcset.
  const candidates = [
    img.getAttribute("src"),
    img.getAttribute("data-src"),
    img.getAttribute("data-original"),
    img.getAttribute("data-lazy-src"),
    firstSrcsetUrl(img.getAttribute("srcset")),
    firstSrcsetUrl(img.getAttribute("data-srcset")),
  ];
  for (const raw of candidates) {
    if (raw === null || raw.trim() === "") continue;
    const url = resolveUrl(raw, base);
    if (url !== undefined && IMAGE_PROTOCOLS.has(url.protocol)) return url.href;
  }
  return undefined;
}

/**
 * Makes every link and image absolute (against <base href> when present), drops javascript:/data:/other unsafe
 * targets (link text is kept; images are replaced by their alt text or removed), and removes links left empty.
 */
function fixLinksAndImages(root: DomElement, base: URL | undefined): void {
  for (const img of Array.from(root.querySelectorAll("img"))) {
    const src = imageUrl(img, base);
    if (src !== undefined) {
      img.setAttribute("src", src);
      continue;
    }
    const alt = (img.getAttribute("alt") ?? "").replace(INVISIBLE, " ").trim();
    if (alt !== "") img.replaceWith(alt);
    else img.remove();
  }
  for (const a of Array.from(root.querySelectorAll("a"))) {
    const href = a.getAttribute("href");
    if (href !== null) {
      const url = resolveUrl(href, base);
      if (url !== undefined && LINK_PROTOCOLS.has(url.protocol)) a.setAttribute("href", url.href);
      else a.removeAttribute("href"); // Turndown then emits the bare link text.
    }
    if (a.querySelector("img") === null && (a.textContent ?? "").replace(INVISIBLE, "") === "") a.remove();
  }
}

function baseUrl(doc: DomDocument, pageUrl: string): URL | undefined {
  const page = resolveUrl(pageUrl, undefined);
  const href = doc.querySelector("base[href]")?.getAttribute("href");
  if (href == null || href.trim() === "") return page;
  const base = resolveUrl(href, page);
  return base !== undefined && IMAGE_PROTOCOLS.has(base.protocol) ? base : page;
}

// ---------------------------------------------------------------------------------------------------------------------
// Readability and the fallback decision.

function compactLength(text: string | null): number {
  return text === null ? 0 : text.replace(/\s+/g, "").length;
}

/** Text length outside links: navigation, sidebars and footers are mostly links, real content mostly is not. */
function nonLinkTextLength(el: DomElement): number {
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
function readabilityFoundNothing(
  outcome: ReadabilityOutcome,
  readerable: boolean,
  pageNonLinkText: () => number,
): boolean {
  const root = outcome.root;
  if (root === undefined) return true;
  if (compactLength(outcome.text ?? root.textContent) < MIN_ARTICLE_CHARS) return true;
  if (readerable) return false;
  return nonLinkTextLength(root) < MIN_NON_LINK_SHARE * pageNonLinkText();
}

interface ReadabilityOutcome {
  root?: DomElement;
  text?: string | null;
  title?: string;
  byline?: string;
}

function runReadability(doc: DomDocument): ReadabilityOutcome {
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

// ---------------------------------------------------------------------------------------------------------------------
// Turndown.

const CELL_END = "\uE000";
const ROW_END = "\uE001";
const HEAD_ROW = "\uE002";
const SENTINELS = /[\uE000-\uE002]/g;

function closestTable(node: DomNode): DomElement | undefined {
  for (let p = node.parentNode; p !== null; p = p.parentNode) {
    if (isElement(p) && p.tagName === "TABLE") return p;
  }
  return undefined;
}

function elementChildren(el: DomElement): DomElement[] {
  const out: DomElement[] = [];
  for (let c = el.firstElementChild; c !== null; c = c.nextElementSibling) out.push(c);
  return out;
}

function tableRows(table: DomElement): DomElement[] {
  const rows: DomElement[] = [];
  for (const child of elementChildren(table)) {
    if (child.tagName === "TR") rows.push(child);
    else if (child.tagName === "THEAD" || child.tagName === "TBODY" || child.tagName === "TFOOT") {
      for (const row of elementChildren(child)) if (row.tagName === "TR") rows.push(row);
    }
  }
  return rows;
}

function cellCount(row: DomElement): number {
  let n = 0;
  for (const c of elementChildren(row)) if (c.tagName === "TD" || c.tagName === "TH") n++;
  return n;
}

interface TableInfo {
  layout: boolean;
  firstRow: DomElement | undefined;
}

const tableInfoCache = new WeakMap<DomElement, TableInfo>();

/**
 * Tables used for page layout (nested tables, a single row or column, role=presentation) are emitted as plain blocks;
 * everything else becomes a pipe table.
 */
function tableInfo(table: DomElement): TableInfo {
  const cached = tableInfoCache.get(table);
  if (cached !== undefined) return cached;
  const role = (table.getAttribute("role") ?? "").toLowerCase();
  const rows = tableRows(table);
  const layout =
    role === "presentation" ||
    role === "none" ||
    table.querySelector("table") !== null ||
    rows.length < 2 ||
    rows.every((row) => cellCount(row) < 2);
  const info: TableInfo = { layout, firstRow: rows[0] };
  tableInfoCache.set(table, info);
  return info;
}

function inLayoutTable(node: DomNode): boolean {
  const table = closestTable(node);
  return table === undefined || tableInfo(table).layout;
}

function isHeadingRow(row: DomElement): boolean {
  if (row.parentNode?.nodeName === "THEAD") return true;
  const cells = elementChildren(row).filter((c) => c.tagName === "TD" || c.tagName === "TH");
  return cells.length > 0 && cells.every((c) => c.tagName === "TH");
}

function pipeTable(content: string): string {
  let rows = content
    .split(ROW_END)
    .filter((r) => r.includes(CELL_END))
    .map((raw) => {
      const r = raw.trim(); // blank rows (e.g. spacer <tr>s) contribute stray newlines
      const head = r.startsWith(HEAD_ROW);
      const cells = (head ? r.slice(1) : r).split(CELL_END).map((c) => c.trim());
      cells.pop(); // text after the last cell end: whitespace only
      return { head, cells };
    });
  rows = rows.filter((r, i) => (i === 0 && r.head) || r.cells.some((c) => c !== ""));
  if (rows.length === 0) return "";
  const width = rows.reduce((max, r) => Math.max(max, r.cells.length), 0);
  const line = (cells: string[]): string => {
    const padded = cells.concat(Array<string>(width - cells.length).fill(""));
    return `| ${padded.join(" | ")} |`;
  };
  const first = rows[0];
  const header = first !== undefined && first.head ? rows.shift()?.cells ?? [] : [];
  const out = [line(header), `|${" --- |".repeat(width)}`, ...rows.map((r) => line(r.cells))];
  return `\n\n${out.join("\n")}\n\n`;
}

function escapeDestination(url: string): string {
  // Balanced parentheses are fine in CommonMark link destinations; unbalanced ones would end the link early.
  let depth = 0;
  for (const ch of url) {
    if (ch === "(") depth++;
    else if (ch === ")" && --depth < 0) break;
  }
  return depth === 0 ? url : url.replace(/\(/g, "%28").replace(/\)/g, "%29");
}

/** Text of a <pre>, honouring <br> and block-level line wrappers some highlighters use instead of "\n". */
function preformattedText(node: DomNode): string {
  let out = "";
  const walk = (n: DomNode): void => {
    const children = n.childNodes;
    for (let i = 0; i < children.length; i++) {
      const c = children[i];
      if (c === undefined) continue;
      if (c.nodeType === TEXT_NODE) out += c.nodeValue ?? "";
      else if (isElement(c)) {
        if (c.tagName === "BR") out += "\n";
        else {
          walk(c);
          if ((c.tagName === "DIV" || c.tagName === "P") && !out.endsWith("\n")) out += "\n";
        }
      }
    }
  };
  walk(node);
  return out;
}

/**
 * Apps and navigation bars often place inline elements side by side with no whitespace between them and rely on CSS
 * (flex, gap, margins) to separate them, which would make "TodayLight rain14°" or "[Maps](…)[Settings](…)". Emit a space
 * between such siblings. Spans count only when both carry at least two characters (per-letter styling spans stay
 * glued), and nothing changes inside code.
 */
const SPACED_INLINE = new Set(["A", "BUTTON", "LABEL", "TIME", "IMG", "SPAN"]);

function spaceBefore(node: DomElement): string {
  if (!SPACED_INLINE.has(node.nodeName) || ("isCode" in node && node.isCode === true)) return "";
  let prev = node.previousSibling;
  let prevText = 0;
  // Look past empty siblings (icons, blank inputs) to the previous element that shows something.
  for (let i = 0; i < 4 && isElement(prev); i++) {
    prevText = compactLength(prev.textContent);
    if (prevText > 0 || prev.nodeName === "IMG") break;
    prev = prev.previousSibling;
  }
  if (!isElement(prev) || !SPACED_INLINE.has(prev.nodeName)) return "";
  if (prevText === 0 && prev.nodeName !== "IMG") return "";
  if (prev.nodeName === "SPAN" && node.nodeName === "SPAN" && (prevText < 2 || compactLength(node.textContent) < 2)) {
    return "";
  }
  return " ";
}

function createTurndown(): TurndownService {
  const td = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    fence: "```",
    bulletListMarker: "-",
    emDelimiter: "_",
    strongDelimiter: "**",
    hr: "---",
    linkStyle: "inlined",
  });

  // Second line of defence: pruning already removed these from the tree we convert.
  td.remove((node: DomElement) => DROP_TAGS.has(node.nodeName.toUpperCase()));

  td.addRule("preformatted", {
    filter: (node: DomElement) => node.nodeName === "PRE",
    replacement: (_content: string, node: DomElement) => {
      const code = preformattedText(node).replace(/\n$/, "");
      if (code.trim() === "") return "";
      const lang = node.getAttribute("data-lang") ?? codeLanguage(node) ?? "";
      let fence = "```";
      for (const m of code.matchAll(/^ {0,3}(`{3,})/gm)) {
        const run = m[1];
        if (run !== undefined && run.length >= fence.length) fence = "`".repeat(run.length + 1);
      }
      return `\n\n${fence}${lang}\n${code}\n${fence}\n\n`;
    },
  });

  td.addRule("heading", {
    filter: ["h1", "h2", "h3", "h4", "h5", "h6"],
    replacement: (content: string, node: DomElement) => {
      const text = content.replace(/\s*\n+\s*/g, " ").trim();
      return text === "" ? "" : `\n\n${"#".repeat(Number(node.nodeName.charAt(1)))} ${text}\n\n`;
    },
  });

  td.addRule("link", {
    filter: (node: DomElement) => node.nodeName === "A" && (node.getAttribute("href") ?? "") !== "",
    replacement: (content: string, node: DomElement) => {
      const text = content.replace(/\s*\n+\s*/g, " ").trim();
      if (text === "") return "";
      return `${spaceBefore(node)}[${text}](${escapeDestination(node.getAttribute("href") ?? "")})`;
    },
  });

  td.addRule("image", {
    filter: "img",
    replacement: (_content: string, node: DomElement) => {
      const src = node.getAttribute("src");
      if (src === null || src === "") return "";
      const alt = (node.getAttribute("alt") ?? "").replace(/[\s\u200b]+/g, " ").replace(/[[\]]/g, "").trim();
      return `${spaceBefore(node)}![${alt}](${escapeDestination(src)})`;
    },
  });

  td.addRule("spacedInline", {
    filter: ["span", "button", "label", "time"],
    replacement: (content: string, node: DomElement) => (content === "" ? "" : spaceBefore(node) + content),
  });

  td.addRule("listItem", {
    filter: "li",
    replacement: (content: string, node: DomElement) => {
      const parent = node.parentNode;
      let prefix = "- ";
      if (isElement(parent) && parent.tagName === "OL") {
        const start = Number.parseInt(parent.getAttribute("start") ?? "1", 10);
        let index = 0;
        for (let c = parent.firstElementChild; c !== null && c !== node; c = c.nextElementSibling) index++;
        prefix = `${(Number.isFinite(start) ? start : 1) + index}. `;
      }
      const isParagraph = content.endsWith("\n");
      const body = content.replace(/^\n+/, "").replace(/\n+$/, "") + (isParagraph ? "\n" : "");
      return prefix + body.replace(/\n/g, `\n${" ".repeat(prefix.length)}`) + (node.nextSibling ? "\n" : "");
    },
  });

  // Tables: cells and rows emit sentinel-delimited text that the table rule assembles into a pipe table, so that
  // column counts can be padded and the header row detected. Layout tables are emitted as plain blocks instead.
  td.addRule("tableCell", {
    filter: ["th", "td"],
    replacement: (content: string, node: DomElement) => {
      if (inLayoutTable(node)) return `\n\n${content}\n\n`;
      const text = content.replace(/\s*\n+\s*/g, " ").trim().replace(/\|/g, "\\|");
      const span = Math.min(20, Math.max(1, Number.parseInt(node.getAttribute("colspan") ?? "1", 10) || 1));
      return text + CELL_END.repeat(span);
    },
  });
  td.addRule("tableRow", {
    filter: "tr",
    replacement: (content: string, node: DomElement) => {
      if (inLayoutTable(node)) return `\n\n${content}\n\n`;
      const table = closestTable(node);
      const first = table === undefined ? undefined : tableInfo(table).firstRow;
      return (first === node && isHeadingRow(node) ? HEAD_ROW : "") + content + ROW_END;
    },
  });
  td.addRule("tableSection", {
    filter: ["thead", "tbody", "tfoot"],
    replacement: (content: string) => content,
  });
  // The table rule renders the caption (as a paragraph above the table).
  td.addRule("tableCaption", { filter: "caption", replacement: () => "" });
  td.addRule("table", {
    filter: "table",
    replacement: (content: string, node: DomElement) => {
      const caption = elementChildren(node).find((c) => c.tagName === "CAPTION");
      const captionText = caption === undefined ? "" : (caption.textContent ?? "").replace(/\s+/g, " ").trim();
      const body = tableInfo(node).layout ? `\n\n${content}\n\n` : pipeTable(content);
      return captionText === "" ? body : `\n\n${td.escape(captionText)}\n\n${body}`;
    },
  });

  return td;
}

const turndown = createTurndown();

// ---------------------------------------------------------------------------------------------------------------------
// Post-processing.

/** Collapses runs of blank lines to one (outside fenced code) and trims. */
function tidy(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  let blank = false;
  for (const line of markdown.replace(SENTINELS, "").split("\n")) {
    if (fence !== undefined) {
      out.push(line);
      const t = line.trim();
      if (t.startsWith(fence) && /^(`+|~+)$/.test(t)) fence = undefined;
      continue;
    }
    if (line.trim() === "") {
      if (!blank && out.length > 0) out.push("");
      blank = true;
      continue;
    }
    blank = false;
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (open?.[1] !== undefined) fence = open[1];
    out.push(line);
  }
  return out.join("\n").trim();
}

function normalizeTitle(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** Drops a leading heading that repeats the title: the caller prints the title itself. */
function dropLeadingTitle(markdown: string, title: string): string {
  const m = /^#{1,6}[ \t]+(.*)(?:\n+|$)/.exec(markdown);
  if (m?.[1] === undefined || normalizeTitle(m[1]) !== normalizeTitle(title)) return markdown;
  return markdown.slice(m[0].length);
}

function countWords(markdown: string): number {
  const text = markdown.replace(/\]\([^)\s]*\)/g, "]");
  let n = 0;
  for (const token of text.split(/\s+/)) if (/[\p{L}\p{N}]/u.test(token)) n++;
  return n;
}

function firstNonEmpty(...values: (string | null | undefined)[]): string {
  for (const v of values) {
    const t = v?.replace(/\s+/g, " ").trim();
    if (t) return t;
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------------------------

function removeScripts(root: DomElement): void {
  for (const script of Array.from(root.querySelectorAll("script"))) script.remove();
}

/** Parses and prunes the page for full conversion. */
function fullBody(html: string): DomElement | null {
  const body = parseDocument(html).body;
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
  if (body !== null && input.mode === "readable" && !huge) {
    prune(body, true, withheld); // hidden text must not reach Readability either
    // Readability mutates the document it reads. Pages that look like articles (the common case) hand it the
    // document itself: the fallback is then unlikely and re-parses. Other pages, where the fallback is likely, hand it
    // a clone and keep the original for the fallback, so no page is ever parsed twice in the likely path.
    const readerable = isProbablyReaderable(doc, { visibilityChecker: () => true }); // hidden nodes are gone already
    const reading = readerable ? doc : doc.cloneNode(true);
    readability = runReadability(reading);
    const page = body;
    if (readabilityFoundNothing(readability, readerable, () => nonLinkTextLength(page))) {
      fellBack = true;
      if (readerable) body = fullBody(input.html);
      else removeScripts(body); // the JSON-LD kept for Readability
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
  if (fellBack) result.fallbackReason = huge ? `the page has over ${withThousands(READABILITY_MAX_ELEMENTS)} elements, too many for readable mode` : "readable found no article";
  return result;
}

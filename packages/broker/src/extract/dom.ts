// The subset of the DOM extraction uses, and parsing. The broker compiles without the DOM lib, so linkedom's and
// Turndown's typings (which refer to browser globals) are loose; these structural types keep the extraction modules
// checked.
import { parseHTML } from "linkedom";

export interface DomNode {
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

export interface DomElement extends DomNode {
  readonly tagName: string;
  readonly ownerDocument: DomDocument;
  textContent: string | null;
  readonly firstElementChild: DomElement | null;
  readonly lastElementChild: DomElement | null;
  readonly nextElementSibling: DomElement | null;
  readonly previousElementSibling: DomElement | null;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  removeAttribute(name: string): void;
  hasAttribute(name: string): boolean;
  querySelector(selectors: string): DomElement | null;
  querySelectorAll(selectors: string): ArrayLike<DomElement>;
  contains(other: DomNode): boolean;
  closest(selectors: string): DomElement | null;
  remove(): void;
  replaceWith(...nodes: (string | DomNode)[]): void;
}

export interface DomDocument extends DomNode {
  readonly documentElement: DomElement | null;
  readonly body: DomElement | null;
  readonly title: string;
  querySelector(selectors: string): DomElement | null;
  createElement(tagName: string): DomElement;
  cloneNode(deep: boolean): DomDocument;
}

export const ELEMENT_NODE = 1;
export const TEXT_NODE = 3;

export function isElement(node: DomNode | null | undefined): node is DomElement {
  return node != null && node.nodeType === ELEMENT_NODE;
}

export function parseDocument(html: string): DomDocument {
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

export function compactLength(text: string | null): number {
  return text === null ? 0 : text.replace(/\s+/g, "").length;
}

export function elementChildren(el: DomElement): DomElement[] {
  const out: DomElement[] = [];
  for (let c = el.firstElementChild; c !== null; c = c.nextElementSibling) out.push(c);
  return out;
}

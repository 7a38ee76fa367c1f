// The document as the agent reads it: the HTML of the rendered page with every element a person cannot see
// marked (HIDDEN_MARK_ATTR), judged here where computed style, layout and colour are known. The live DOM is never
// touched: the marks go on a copy imported into an inert document (no browsing context: no custom-element
// constructors run, no image loads), walked in step with the live tree.
import {
  CONTENT_MAX_CHARS,
  CONTENT_MAX_ELEMENTS,
  HIDDEN_MARK_ATTR,
  HIDDEN_OWN_TEXT,
  HIDDEN_SUBTREE,
  type ContentCapped,
} from "@tabrelay/protocol";
import { hostedRoot } from "./flatTree.js";

export interface ContentParams {
  maxElements?: number;
  maxChars?: number;
}

export interface ContentValue {
  url: string;
  origin: string;
  title: string;
  html: string;
  capped?: ContentCapped;
}

/** Elements whose content extraction drops anyway, or that have no rendering of their own to judge. */
const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "LINK", "META", "BASE", "SVG", "svg", "CANVAS", "OBJECT", "EMBED", "HEAD", "SELECT", "DATALIST"]);
/** Landmarks that mark an aria-hidden / inert element as the page's app root behind an open modal (see isAppRoot). */
const MAIN_CONTENT = "main, article, h1, [role=main]";
/** Below this effective opacity nothing is legible. */
const MIN_OPACITY = 0.05;
/** Type smaller than this (px) is not legible. */
const MIN_FONT_PX = 3;
/** Text whose contrast ratio against the background it is drawn on is below this is not seen (white on #f5f5f5: 1.09). */
const MIN_CONTRAST = 1.15;

type Rgba = [number, number, number, number];

function parseColor(value: string): Rgba | undefined {
  const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)$/.exec(value);
  if (!m) return undefined;
  let alpha = m[4] === undefined ? 1 : Number.parseFloat(m[4]);
  if (m[4]?.endsWith("%")) alpha /= 100;
  return [Number(m[1]), Number(m[2]), Number(m[3]), alpha];
}

/** `top` painted over the opaque `bottom`. */
function over(top: Rgba, bottom: Rgba): Rgba {
  const a = top[3];
  return [top[0] * a + bottom[0] * (1 - a), top[1] * a + bottom[1] * (1 - a), top[2] * a + bottom[2] * (1 - a), 1];
}

function luminance(c: Rgba): number {
  const lin = (v: number) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
}

function contrast(a: Rgba, b: Rgba): number {
  const la = luminance(a);
  const lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/**
 * Whether text of colour `fill` (a computed colour string) is too faint on `background`. Pages reuse a handful of
 * colours over thousands of elements, and children share their parent's background object: answers are kept per
 * background, per fill.
 */
const faintCache = new WeakMap<Rgba, Map<string, boolean>>();
function faintOn(fillText: string, fill: Rgba, background: Rgba): boolean {
  let byFill = faintCache.get(background);
  if (!byFill) faintCache.set(background, (byFill = new Map()));
  let faint = byFill.get(fillText);
  if (faint === undefined) byFill.set(fillText, (faint = contrast(over(fill, background), background) < MIN_CONTRAST));
  return faint;
}

/** The computed value of a transparent background-color: most elements, no need to parse it. */
const TRANSPARENT = "rgba(0, 0, 0, 0)";

/** clip: rect(...) or clip-path shapes that leave (almost) nothing of the box. */
function clippedAway(clip: string, path: string): boolean {
  if (clip && clip !== "auto") {
    const n = clip.match(/-?[\d.]+/g)?.map(Number);
    if (n && n.length === 4 && (n[1]! - n[3]! < 2 || n[2]! - n[0]! < 2)) return true;
  }
  if (path && path !== "none") {
    const inset = /^inset\(\s*([\d.]+)%/.exec(path);
    if (inset && Number(inset[1]) >= 50) return true;
    if (/^(?:circle|ellipse)\(\s*0(?:px|%)?[\s)]/.test(path)) return true;
  }
  return false;
}

function hasOwnText(el: Element): boolean {
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 3 && /\S/.test(n.nodeValue ?? "")) return true;
  }
  return false;
}

/** aria-hidden / inert on a page's whole app root while a modal is open hides nothing a person sees. */
function isAppRoot(el: Element): boolean {
  return el.querySelector(MAIN_CONTENT) !== null;
}

interface Context {
  /** The colour the element is drawn on, when known (an image, a gradient or positioning make it unknown). */
  background: Rgba | undefined;
  /** Product of the element's and its ancestors' opacity. */
  opacity: number;
  /** position: absolute or fixed (clip applies to those only). */
  positioned: boolean;
  /** The scrollable area of the nearest scrolling ancestor (overflow auto / scroll), in viewport coordinates. */
  scrollArea?: Area;
}

interface Area {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

function outside(rect: DOMRect, area: Area): boolean {
  return rect.right <= area.left || rect.bottom <= area.top || rect.left >= area.right || rect.top >= area.bottom;
}

const SCROLLS = /^(?:auto|scroll)$/;

interface Extent {
  width: number;
  height: number;
  scrollX: number;
  scrollY: number;
}

/** How far the page can be scrolled: what lies beyond (left of 0, above 0, past the end) no person reaches. */
function pageExtent(): Extent {
  const root = document.scrollingElement ?? document.documentElement;
  const style = getComputedStyle(document.documentElement);
  const body = document.body ? getComputedStyle(document.body) : undefined;
  const clipsX = (s: CSSStyleDeclaration | undefined) => s !== undefined && (s.overflowX === "hidden" || s.overflowX === "clip");
  const clipsY = (s: CSSStyleDeclaration | undefined) => s !== undefined && (s.overflowY === "hidden" || s.overflowY === "clip");
  return {
    width: clipsX(style) || clipsX(body) ? innerWidth : Math.max(root.scrollWidth, innerWidth),
    height: clipsY(style) || clipsY(body) ? innerHeight : Math.max(root.scrollHeight, innerHeight),
    scrollX,
    scrollY,
  };
}

/**
 * Whether an element lies wholly beyond the page's scrollable area with no scrolling box around it to bring it into
 * view: the rule content() withholds such text by, for readers that judge one element (query).
 */
export function beyondPage(el: Element): boolean {
  const rect = el.getBoundingClientRect();
  if (rect.width <= 0 && rect.height <= 0) return false;
  const extent = pageExtent();
  const outsidePage = rect.right + extent.scrollX <= 0 || rect.bottom + extent.scrollY <= 0 || rect.left + extent.scrollX >= extent.width || rect.top + extent.scrollY >= extent.height;
  if (!outsidePage) return false;
  for (let node = el.parentElement; node && node !== document.body && node !== document.documentElement; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (SCROLLS.test(style.overflowX) || SCROLLS.test(style.overflowY)) return false;
  }
  return true;
}

/**
 * Why the element's subtree is not rendered for a person (nothing below it can show), HIDDEN_OWN_TEXT when only its
 * own text is not seen while its children may be, or undefined. `ctx` is the element's own (its opacity included).
 * Computed properties are read only where they can decide (each read costs ~0.5 us; pages have 10^4-10^5 elements).
 */
function judge(el: Element, style: CSSStyleDeclaration, rect: DOMRect, ctx: Context, extent: Extent): typeof HIDDEN_SUBTREE | typeof HIDDEN_OWN_TEXT | undefined {
  if (!el.checkVisibility()) {
    // display: contents has no box of its own, its children render.
    return style.display === "contents" ? undefined : HIDDEN_SUBTREE;
  }
  if (ctx.opacity < MIN_OPACITY) return HIDDEN_SUBTREE;
  if ((el.hasAttribute("inert") || el.getAttribute("aria-hidden")?.trim().toLowerCase() === "true") && !isAppRoot(el)) return HIDDEN_SUBTREE;
  if ((rect.width < 2 || rect.height < 2) && (style.overflowX !== "visible" || style.overflowY !== "visible")) return HIDDEN_SUBTREE;
  if (rect.width > 0 || rect.height > 0) {
    // Out of the page's scrollable area, and out of the nearest scrolling box's (an app that scrolls its content in a
    // box of its own keeps it there, below that box's fold, not hidden).
    const outsidePage = rect.right + extent.scrollX <= 0 || rect.bottom + extent.scrollY <= 0 || rect.left + extent.scrollX >= extent.width || rect.top + extent.scrollY >= extent.height;
    if (outsidePage && (ctx.scrollArea === undefined || outside(rect, ctx.scrollArea))) return HIDDEN_SUBTREE;
  }
  if (ctx.positioned && clippedAway(style.clip, "")) return HIDDEN_SUBTREE;
  const path = style.clipPath;
  if (path !== "none" && clippedAway("", path)) return HIDDEN_SUBTREE;
  if (!hasOwnText(el)) return undefined;
  if (el instanceof HTMLDetailsElement && !el.open) return HIDDEN_OWN_TEXT;
  if (style.visibility !== "visible") return HIDDEN_OWN_TEXT;
  if (Number.parseFloat(style.fontSize) < MIN_FONT_PX) return HIDDEN_OWN_TEXT;
  if (Number.parseFloat(style.textIndent) < -500) return HIDDEN_OWN_TEXT;
  const fillText = style.webkitTextFillColor;
  const fill = parseColor(fillText);
  if (fill && (fill[3] * ctx.opacity < 0.1 || (ctx.background && faintOn(fillText, fill, ctx.background)))) {
    // Gradient text (background-clip: text), outlined or shadowed text shows without a fill of its own.
    const painted = style.backgroundClip === "text" || style.webkitBackgroundClip === "text" || Number.parseFloat(style.webkitTextStrokeWidth) > 0 || style.textShadow !== "none";
    if (!painted) return HIDDEN_OWN_TEXT;
  }
  return undefined;
}

/** The colour the element and its children are drawn on, when known. */
function backgroundFor(style: CSSStyleDeclaration, inherited: Rgba | undefined, positioned: boolean): Rgba | undefined {
  if (style.backgroundImage !== "none") return undefined;
  const color = style.backgroundColor;
  // Transparent and not positioned: drawn on what its parent is drawn on (the same object, which faintOn relies on).
  if (color === TRANSPARENT) return positioned ? undefined : inherited;
  const own = parseColor(color);
  if (own && own[3] >= 0.99) return [own[0], own[1], own[2], 1];
  // A positioned box may be drawn over anything (an image, a video): what is under it is not its parent.
  const base = positioned ? undefined : inherited;
  if (base === undefined) return undefined;
  return own && own[3] > 0 ? over(own, base) : base;
}

/** The frame is not shown in its parent: a zero-size viewport, or (same origin) a hidden frame element. */
function frameHidden(): boolean {
  if (window === window.top) return false;
  if (innerWidth < 2 || innerHeight < 2) return true;
  try {
    for (let owner = window.frameElement, depth = 0; owner && depth < 16; owner = owner.ownerDocument.defaultView?.frameElement ?? null, depth++) {
      if (!owner.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return true;
      const win = owner.ownerDocument.defaultView;
      const r = owner.getBoundingClientRect();
      if (win && (r.right + win.scrollX <= 0 || r.bottom + win.scrollY <= 0)) return true;
    }
  } catch {
    // A cross-origin parent: its frame element cannot be seen from here.
  }
  return false;
}

export function content(params: ContentParams = {}): { ok: true; value: ContentValue } {
  const maxElements = params.maxElements ?? CONTENT_MAX_ELEMENTS;
  const maxChars = params.maxChars ?? CONTENT_MAX_CHARS;
  const base = { url: location.href, origin: self.origin, title: document.title, ...(document.readyState === "loading" ? { loading: true as const } : {}) };
  const live = document.documentElement;
  if (!live) return { ok: true, value: { ...base, html: "" } };
  const copy = document.implementation.createHTMLDocument("").importNode(live, true);
  for (const forged of copy.querySelectorAll(`[${HIDDEN_MARK_ATTR}]`)) forged.removeAttribute(HIDDEN_MARK_ATTR);

  const capped: ContentCapped = {};
  const liveBody = document.body;
  let bodyCopy: Element | undefined;
  for (let l = live.firstElementChild, c = copy.firstElementChild; l && c; l = l.nextElementSibling, c = c.nextElementSibling) {
    if (l === liveBody) bodyCopy = c;
  }
  if (liveBody && bodyCopy) {
    if (frameHidden()) bodyCopy.setAttribute(HIDDEN_MARK_ATTR, HIDDEN_SUBTREE);
    else {
      const elements = walk(liveBody, bodyCopy, maxElements);
      if (elements > maxElements) capped.elements = elements;
    }
  }

  let html = copy.outerHTML;
  if (html.length > maxChars) {
    capped.chars = html.length;
    // Cut before a tag rather than inside one.
    const cut = html.lastIndexOf("<", maxChars);
    html = html.slice(0, cut > maxChars / 2 ? cut : maxChars);
  }
  return { ok: true, value: { ...base, html, ...(capped.elements !== undefined || capped.chars !== undefined ? { capped } : {}) } };
}

/** Slots of the shadow trees shown in the copy that hold what was assigned to them (their live children are not shown). */
let filledSlots = new WeakSet<Element>();

/**
 * The live elements shown as `l`'s children, in the order of `c`'s children, when that is not `l`'s own children: a
 * shadow host (its root, closed ones where this script can reach them) and a slot filled with what is assigned to it.
 * A host's copy is rebuilt as the flat tree: a copy of its shadow tree, each slot holding the copies of the light
 * children assigned to it (or its fallback content); light children assigned nowhere are not shown, so not copied.
 */
function shownChildren(l: Element, c: Element): Element[] | undefined {
  if (l instanceof HTMLSlotElement && filledSlots.has(l)) return l.assignedElements();
  const root = hostedRoot(l);
  if (!root) return undefined;
  const copyOf = new Map<Node, ChildNode>();
  const light = l.childNodes;
  const lightCopies = [...c.childNodes];
  for (let i = 0; i < light.length && i < lightCopies.length; i++) copyOf.set(light[i]!, lightCopies[i]!);
  const doc = c.ownerDocument;
  c.replaceChildren(...[...root.childNodes].map((n) => doc.importNode(n, true)));
  const slots = root.querySelectorAll("slot");
  const slotCopies = c.querySelectorAll("slot");
  for (let i = 0; i < slots.length && i < slotCopies.length; i++) {
    const assigned = slots[i]!.assignedNodes();
    if (!assigned.length) continue;
    filledSlots.add(slots[i]!);
    slotCopies[i]!.replaceChildren(...assigned.map((n) => copyOf.get(n)).filter((n): n is ChildNode => n !== undefined));
  }
  return [...root.children];
}

/** The context the body's children are drawn in: the canvas behind the root, the root's and the body's opacity. */
function bodyContext(liveBody: Element): { ctx: Context; style: CSSStyleDeclaration } {
  const bodyStyle = getComputedStyle(liveBody);
  const rootStyle = getComputedStyle(document.documentElement);
  const canvas = backgroundFor(rootStyle, [255, 255, 255, 1], false) ?? [255, 255, 255, 1];
  const ctx: Context = { background: backgroundFor(bodyStyle, canvas, false), opacity: (Number.parseFloat(rootStyle.opacity) || 0) * (Number.parseFloat(bodyStyle.opacity) || 0), positioned: false };
  return { ctx, style: bodyStyle };
}

/** One element as the walk meets it in `ctx`: its mark (judge), and the context its children are drawn in. */
function enter(l: Element, ctx: Context, extent: Extent): { mark: ReturnType<typeof judge>; children: Context } {
  const style = getComputedStyle(l);
  const opacity = ctx.opacity * (Number.parseFloat(style.opacity) || 0);
  const position = style.position;
  const positioned = position === "absolute" || position === "fixed";
  const mine: Context = { background: backgroundFor(style, ctx.background, positioned), opacity, positioned, ...(ctx.scrollArea ? { scrollArea: ctx.scrollArea } : {}) };
  const rect = l.getBoundingClientRect();
  const mark = judge(l, style, rect, mine, extent);
  if (mark === HIDDEN_SUBTREE || !(SCROLLS.test(style.overflowY) || SCROLLS.test(style.overflowX))) return { mark, children: mine };
  const left = rect.left - l.scrollLeft;
  const top = rect.top - l.scrollTop;
  return { mark, children: { ...mine, scrollArea: { left, top, right: left + Math.max(l.scrollWidth, rect.width), bottom: top + Math.max(l.scrollHeight, rect.height) } } };
}

/**
 * Walks the live tree from `live` (drawn in `ctx`) and its copy in step, marking hidden elements on the copy; past
 * `maxElements` the copy's unvisited elements are removed. Returns how many elements were visited (maxElements + 1
 * when it stopped there). `shown` hears each element that is walked into, with its computed display.
 */
function markFrom(live: Element, copy: Element, ctx: Context, extent: Extent, maxElements: number, shown?: (copy: Element, display: string) => void): number {
  const stack: [Element, Element, Context][] = [];
  const pushChildren = (l: Element, c: Element, parent: Context) => {
    const start = stack.length;
    const children = shownChildren(l, c);
    if (children) {
      const copies = c.children;
      for (let i = 0; i < children.length && i < copies.length; i++) stack.push([children[i]!, copies[i]!, parent]);
    } else for (let lc = l.firstElementChild, cc = c.firstElementChild; lc && cc; lc = lc.nextElementSibling, cc = cc.nextElementSibling) stack.push([lc, cc, parent]);
    // Document order: the first child on top of the stack, so a walk cut short keeps the start of the page.
    for (let i = start, j = stack.length - 1; i < j; i++, j--) [stack[i], stack[j]] = [stack[j]!, stack[i]!];
  };
  stack.push([live, copy, ctx]);
  let visited = 0;
  while (stack.length) {
    if (visited >= maxElements) {
      for (const [, c] of stack) c.remove();
      return maxElements + 1;
    }
    const [l, c, parent] = stack.pop()!;
    visited++;
    if (SKIP.has(l.tagName)) continue;
    const { mark, children } = enter(l, parent, extent);
    if (mark === HIDDEN_SUBTREE) {
      c.setAttribute(HIDDEN_MARK_ATTR, HIDDEN_SUBTREE);
      continue;
    }
    if (mark) c.setAttribute(HIDDEN_MARK_ATTR, mark);
    shown?.(c, getComputedStyle(l).display);
    if (!l.firstElementChild && !filledSlots.has(l) && hostedRoot(l) === null) continue;
    pushChildren(l, c, children);
  }
  return visited;
}

/** Walks the live body and its copy in step, marking hidden elements on the copy (markFrom). */
function walk(liveBody: Element, bodyCopy: Element, maxElements: number): number {
  filledSlots = new WeakSet();
  const extent = pageExtent();
  const { ctx, style } = bodyContext(liveBody);
  const bodyMark = judge(liveBody, style, liveBody.getBoundingClientRect(), ctx, extent);
  if (bodyMark === HIDDEN_SUBTREE) {
    bodyCopy.setAttribute(HIDDEN_MARK_ATTR, HIDDEN_SUBTREE);
    return 1;
  }
  if (bodyMark) bodyCopy.setAttribute(HIDDEN_MARK_ATTR, bodyMark);
  let visited = 1;
  const children = shownChildren(liveBody, bodyCopy) ?? [...liveBody.children];
  const copies = [...bodyCopy.children];
  for (let i = 0; i < children.length && i < copies.length; i++) {
    if (visited >= maxElements) {
      for (const c of copies.slice(i)) c.remove();
      return maxElements + 1;
    }
    visited += markFrom(children[i]!, copies[i]!, ctx, extent, maxElements - visited);
    if (visited > maxElements) {
      for (const c of copies.slice(i + 1)) c.remove();
      return maxElements + 1;
    }
  }
  return visited;
}

/** The element's parent in the flat tree (a slotted element's slot, a shadow root's host). */
function flatParent(el: Element): Element | null {
  if (el.assignedSlot) return el.assignedSlot;
  if (el.parentElement) return el.parentElement;
  const root = el.parentNode;
  return root instanceof ShadowRoot ? root.host : null;
}

const INLINE = /^(?:inline|contents|ruby|ruby-text|none)$/;

/** Elements a query reads the text of, at most. */
const SEEN_MAX_ELEMENTS = 2000;

/**
 * One element as every read withholds by (judge, the rule content() marks the page with), for readers of one element
 * (query): hidden when it or an element around it is not rendered for a person, or when no text of it can be seen
 * although it has some; else the text a person can see in it, without what its descendants hide (undefined for an
 * element the walk skips, such as a select).
 */
export function seenText(el: Element, maxChars: number): { hidden: boolean; text: string | undefined } {
  const body = document.body;
  if (!body || !body.contains(el) && !(el.getRootNode() instanceof ShadowRoot)) return { hidden: true, text: "" };
  filledSlots = new WeakSet();
  const extent = pageExtent();
  const chain: Element[] = [];
  for (let n = flatParent(el); n && n !== body && n !== document.documentElement; n = flatParent(n)) chain.push(n);
  let { ctx, style } = bodyContext(body);
  if (judge(body, style, body.getBoundingClientRect(), ctx, extent) === HIDDEN_SUBTREE) return { hidden: true, text: "" };
  for (const node of chain.reverse()) {
    const step = enter(node, ctx, extent);
    if (step.mark === HIDDEN_SUBTREE) return { hidden: true, text: "" };
    ctx = step.children;
  }
  // A control the reader leaves to extraction (a select's options): its text is read another way.
  if (SKIP.has(el.tagName)) return { hidden: false, text: undefined };
  const copy = document.implementation.createHTMLDocument("").importNode(el, true) as Element;
  const blocks = new Set<Element>();
  markFrom(el, copy, ctx, extent, SEEN_MAX_ELEMENTS, (c, display) => {
    if (!INLINE.test(display)) blocks.add(c);
  });
  if (copy.getAttribute(HIDDEN_MARK_ATTR) === HIDDEN_SUBTREE) return { hidden: true, text: "" };
  const parts: string[] = [];
  let any = false;
  const read = (node: Element) => {
    const mark = node.getAttribute(HIDDEN_MARK_ATTR);
    if (mark === HIDDEN_SUBTREE || SKIP.has(node.tagName)) return;
    const block = blocks.has(node);
    if (block) parts.push(" ");
    for (let n = node.firstChild; n; n = n.nextSibling) {
      if (n.nodeType === 3) {
        if (/\S/.test(n.nodeValue ?? "")) any = true;
        if (mark !== HIDDEN_OWN_TEXT) parts.push(n.nodeValue ?? "");
      } else if (n instanceof Element) read(n);
    }
    if (block) parts.push(" ");
  };
  read(copy);
  const text = parts.join("").replace(/\s+/g, " ").trim().slice(0, maxChars);
  return { hidden: any && text === "", text };
}


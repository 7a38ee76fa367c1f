// The document as the agent reads it: the HTML of the rendered page with every element a person cannot see
// marked (HIDDEN_MARK_ATTR), judged here by the visibility rule (visibility.ts) where computed style, layout and
// colour are known. The live DOM is never
// touched: the marks go on a copy imported into an inert document (no browsing context: no custom-element
// constructors run, no image loads), walked in step with the live tree.
import {
  CONTENT_MAX_CHARS,
  CONTENT_MAX_ELEMENTS,
  HIDDEN_MARK_ATTR,
  HIDDEN_OWN_TEXT,
  HIDDEN_SUBTREE,
  POSITION_MARK_ATTR,
  type ContentCapped,
  type HiddenReason,
} from "@tabrelay/protocol";
import { hostedRoot } from "./flatTree.js";
import { MIN_OPACITY, applyDrawing } from "./paint.js";
import { mayBeStyled, startChecks } from "./styled.js";
import {
  bodyContext,
  contextOf,
  enter,
  flatParent,
  frameHidden,
  inPage,
  inTree,
  judge,
  MAX_BLUR_PER_FONT_PX,
  pageExtent,
  SKIP,
  type Context,
  type Extent,
} from "./visibility.js";

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

export function content(params: ContentParams = {}): { ok: true; value: ContentValue } {
  const maxElements = params.maxElements ?? CONTENT_MAX_ELEMENTS;
  const maxChars = params.maxChars ?? CONTENT_MAX_CHARS;
  const base = { url: location.href, origin: self.origin, title: document.title, ...(document.readyState === "loading" ? { loading: true as const } : {}) };
  const live = document.documentElement;
  if (!live) return { ok: true, value: { ...base, html: "" } };
  const copy = document.implementation.createHTMLDocument("").importNode(live, true);
  for (const forged of copy.querySelectorAll(`[${HIDDEN_MARK_ATTR}], [${POSITION_MARK_ATTR}]`)) {
    forged.removeAttribute(HIDDEN_MARK_ATTR);
    forged.removeAttribute(POSITION_MARK_ATTR);
  }

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
      // A host's shadow tree is styled by the root's own sheets too.
      const root = filledSlots.has(l) ? null : hostedRoot(l);
      const inside = root ? inTree(parent, root) : parent;
      const copies = c.children;
      for (let i = 0; i < children.length && i < copies.length; i++) stack.push([children[i]!, copies[i]!, inside]);
    } else
      for (let lc = l.firstElementChild, cc = c.firstElementChild; lc && cc; lc = lc.nextElementSibling, cc = cc.nextElementSibling)
        stack.push([lc, cc, parent]);
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
    const { mark, children, position, style } = enter(l, parent, extent);
    if (mark?.scope === HIDDEN_SUBTREE) {
      c.setAttribute(HIDDEN_MARK_ATTR, HIDDEN_SUBTREE);
      continue;
    }
    if (mark) c.setAttribute(HIDDEN_MARK_ATTR, mark.scope);
    if (position === "fixed" || position === "sticky") c.setAttribute(POSITION_MARK_ATTR, position);
    shown?.(c, style.display);
    if (!l.firstElementChild && !filledSlots.has(l) && hostedRoot(l) === null) continue;
    pushChildren(l, c, children);
  }
  return visited;
}

/** Walks the live body and its copy in step, marking hidden elements on the copy (markFrom). */
function walk(liveBody: Element, bodyCopy: Element, maxElements: number): number {
  filledSlots = new WeakSet();
  startChecks();
  const extent = pageExtent();
  const body = bodyContext(liveBody);
  const style = body.style;
  let ctx = body.ctx;
  const bodyMark = judge(liveBody, style, liveBody.getBoundingClientRect(), ctx, extent);
  if (bodyMark?.scope === HIDDEN_SUBTREE) {
    bodyCopy.setAttribute(HIDDEN_MARK_ATTR, HIDDEN_SUBTREE);
    return 1;
  }
  if (bodyMark) bodyCopy.setAttribute(HIDDEN_MARK_ATTR, bodyMark.scope);
  let visited = 1;
  const shown = shownChildren(liveBody, bodyCopy);
  const bodyRoot = shown ? hostedRoot(liveBody) : null;
  if (bodyRoot) ctx = inTree(ctx, bodyRoot);
  const children = shown ?? [...liveBody.children];
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

/** Displays that start no block of text (the words around them run on). */
export const INLINE = /^(?:inline|contents|ruby|ruby-text|none)$/;

/** Elements a query reads the text of, at most. */
const SEEN_MAX_ELEMENTS = 2000;

/**
 * The part of the rule the snapshot judges each listed element by, for many elements in one call (ancestors read
 * once): what it and its flat-tree ancestors hand down (applyDrawing: opacity, filter opacity and blur, masks). The
 * snapshot's own test covers display, visibility, zero opacity and boxes collapsed to nothing; the rest of the rule
 * (colour, clipping, type size) is judged on the element an action targets (the write gate's facts) and on every
 * read's text. Where no stylesheet, style attribute or animation of the document (and of the shadow roots around
 * the element) names opacity, a filter or a mask, none can apply, and nothing is read.
 */
export function drawnJudge(): (el: Element, root?: Document | ShadowRoot) => HiddenReason | undefined {
  startChecks();
  interface Drawn {
    opacity: number;
    blur: number;
  }
  const cache = new Map<Element, Drawn>();
  const drawnAt = (el: Element): Drawn => {
    const chain: Element[] = [];
    let cur: Drawn | undefined;
    for (let n: Element | null = el; n; n = flatParent(n)) {
      cur = cache.get(n);
      if (cur) break;
      chain.push(n);
    }
    let drawn: Drawn = cur ?? { opacity: 1, blur: 0 };
    for (let i = chain.length - 1; i >= 0; i--) {
      const next: Drawn = { opacity: drawn.opacity, blur: drawn.blur };
      const n = chain[i]!;
      applyDrawing(getComputedStyle(n), next, n instanceof HTMLElement ? () => ({ width: n.offsetWidth, height: n.offsetHeight }) : undefined);
      cache.set(n, next);
      drawn = next;
    }
    return drawn;
  };
  return (el, root) => {
    if (!mayBeStyled(el, "fades", root)) return undefined;
    const drawn = drawnAt(el);
    if (drawn.opacity < MIN_OPACITY) return "opacity";
    if (drawn.blur > 0 && drawn.blur >= Number.parseFloat(getComputedStyle(el).fontSize) * MAX_BLUR_PER_FONT_PX) return "unseen";
    return undefined;
  };
}

/**
 * One element as every read withholds by (judge, the rule content() marks the page with), for readers of one element
 * (query, the write gate's facts): why it is hidden (it or an element around it is not rendered for a person, or no
 * text of it can be seen although it has some: textOnly), and the text a person can see in it, without what its
 * descendants hide (undefined for an element the walk skips, such as a select).
 */
export function seenText(el: Element, maxChars: number): { hidden: HiddenReason | undefined; text: string | undefined; textOnly?: true } {
  if (!inPage(el)) return { hidden: "detached", text: "" };
  filledSlots = new WeakSet();
  startChecks();
  const extent = pageExtent();
  const ctx = contextOf(el, extent);
  if (!("opacity" in ctx)) return { hidden: ctx.reason, text: "" };
  // A control the reader leaves to extraction (a select's options): its text is read another way.
  if (SKIP.has(el.tagName)) return { hidden: undefined, text: undefined };
  const own = enter(el, ctx, extent).mark;
  if (own?.scope === HIDDEN_SUBTREE) return { hidden: own.reason, text: "" };
  const copy = document.implementation.createHTMLDocument("").importNode<Element>(el, true);
  const blocks = new Set<Element>();
  markFrom(el, copy, ctx, extent, SEEN_MAX_ELEMENTS, (c, display) => {
    if (!INLINE.test(display)) blocks.add(c);
  });
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
  const all = parts.join("").replace(/\s+/g, " ").trim();
  // Rendered, with text, none of it seen: hidden for every reader of its text (CSS generated content aside).
  if (any && all === "") return { hidden: own?.reason ?? "unseen", text: "", textOnly: true };
  return { hidden: undefined, text: all.slice(0, maxChars) };
}

// The visibility rule: why a person cannot see an element (judge), and what an element hands down to what is drawn
// inside it (enter: opacity, filters, background, clipping and scrolling boxes). One rule for every reader of the
// page: content() marks a copy of the document by it (content.ts), query and the write gate's facts judge one
// element by it (contextOf), the snapshot its inherited part (drawnJudge). Computed properties are read only where
// they can decide (styled.ts).
import { HIDDEN_OWN_TEXT, HIDDEN_SUBTREE, type HiddenReason } from "@tabrelay/protocol";
import { MIN_CONTRAST, MIN_OPACITY, type Paint, type Rgba, TRANSPARENT, applyDrawing, clippedAway, contrast, faintOn, over, parseColor } from "./paint.js";
import { type Styled, styledTree } from "./styled.js";

/** Elements whose content extraction drops anyway, or that have no rendering of their own to judge. */
export const SKIP = new Set([
  "SCRIPT",
  "STYLE",
  "NOSCRIPT",
  "TEMPLATE",
  "LINK",
  "META",
  "BASE",
  "SVG",
  "svg",
  "CANVAS",
  "OBJECT",
  "EMBED",
  "HEAD",
  "SELECT",
  "DATALIST",
]);
/** Landmarks that mark an aria-hidden / inert element as the page's app root behind an open modal (see isAppRoot). */
const MAIN_CONTENT = "main, article, h1, [role=main]";
/** Type smaller than this (px) is not legible. */
const MIN_FONT_PX = 3;
/** A blur whose radius reaches this share of the type size leaves no legible letter (blur(4px) on 16 px type). */
export const MAX_BLUR_PER_FONT_PX = 0.25;
/** Letter spacing this negative (a share of the type size) stacks the glyphs on one another. */
const MIN_LETTER_SPACING_EM = -0.4;

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

export interface Context {
  /** The colour the element is drawn on, when known (an image, a gradient or positioning make it unknown). */
  background: Rgba | undefined;
  /** Product of the element's and its ancestors' opacity (filter: opacity() and a transparent mask included). */
  opacity: number;
  /** position: absolute or fixed (clip applies to those only). */
  positioned: boolean;
  /** Sum of the blur() radii of the element's and its ancestors' filters, px. */
  blur: number;
  /** The colour filters of the element and its ancestors, when any. */
  paint?: Paint;
  /** The scrollable area of the nearest scrolling ancestor (overflow auto / scroll), in viewport coordinates. */
  scrollArea?: Area;
  /** The box of the nearest ancestor that clips its overflow (hidden / clip), in viewport coordinates. */
  clip?: Area;
  /** A positioned element lies between that clipping box (itself included) and here: absolute boxes stay inside it. */
  clipHeld?: boolean;
  /** Which of the properties only some style sets the trees around the element can set (styledTree). */
  styled: Styled;
  /** The element's and its ancestors' 2D transforms, composed (read only where some style can set one). */
  linear?: Linear;
}

/**
 * Why a person cannot see an element: its whole subtree (HIDDEN_SUBTREE) or only its own text (HIDDEN_OWN_TEXT), and
 * the reason named to the agent and the write gate. Constants: the walk allocates nothing per element.
 */
export interface Verdict {
  readonly scope: typeof HIDDEN_SUBTREE | typeof HIDDEN_OWN_TEXT;
  readonly reason: HiddenReason;
}
const subtree = (reason: HiddenReason): Verdict => Object.freeze({ scope: HIDDEN_SUBTREE, reason });
const ownText = (reason: HiddenReason): Verdict => Object.freeze({ scope: HIDDEN_OWN_TEXT, reason });
const V = {
  display: subtree("display"),
  opacity: subtree("opacity"),
  inert: subtree("inert"),
  ariaHidden: subtree("aria-hidden"),
  size: subtree("size"),
  offscreen: subtree("offscreen"),
  clipped: subtree("clipped"),
  closedDetails: ownText("display"),
  visibility: ownText("visibility"),
  tinyText: ownText("size"),
  indented: ownText("offscreen"),
  unseenText: ownText("unseen"),
} as const;

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

export interface Extent {
  width: number;
  height: number;
  scrollX: number;
  scrollY: number;
}

/** How far the page can be scrolled: what lies beyond (left of 0, above 0, past the end) no person reaches. */
export function pageExtent(): Extent {
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
  const outsidePage =
    rect.right + extent.scrollX <= 0 ||
    rect.bottom + extent.scrollY <= 0 ||
    rect.left + extent.scrollX >= extent.width ||
    rect.top + extent.scrollY >= extent.height;
  if (!outsidePage) return false;
  for (let node = el.parentElement; node && node !== document.body && node !== document.documentElement; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (SCROLLS.test(style.overflowX) || SCROLLS.test(style.overflowY)) return false;
  }
  return true;
}

/**
 * How much the element is drawn at, against its own layout size: transforms (scale, rotate, perspective) and zoom,
 * its own and its ancestors', show in its rendered box and not in offsetWidth / offsetHeight. 1 when unknown.
 */
function renderedScale(el: Element, rect: DOMRect): number {
  if (!(el instanceof HTMLElement)) return 1;
  const h = el.offsetHeight;
  const sy = h >= 4 ? rect.height / h : undefined;
  // Drawn at half its height or more: type is not shrunk out of reading (one layout read, the common case).
  if (sy !== undefined && sy >= 0.5) return 1;
  const w = el.offsetWidth;
  const sx = w >= 4 ? rect.width / w : undefined;
  // The area's ratio: a rotation by 90 degrees swaps width and height and shrinks nothing.
  if (sx !== undefined && sy !== undefined) return Math.sqrt(sx * sy);
  return sx ?? sy ?? 1;
}

/** The linear part of a 2D transform: x' = a x + c y, y' = b x + d y (CSS matrix(a, b, c, d, e, f) order). */
type Linear = readonly [number, number, number, number];

const multiply = (m: Linear, n: Linear): Linear => [m[0] * n[0] + m[2] * n[1], m[1] * n[0] + m[3] * n[1], m[0] * n[2] + m[2] * n[3], m[1] * n[2] + m[3] * n[3]];

/**
 * The element's own 2D transform, from its computed `transform`, `scale` and `rotate` (applied as rotate, then scale,
 * then transform), or undefined when it has none. Inline boxes are not transformed.
 */
function ownLinear(style: CSSStyleDeclaration): Linear | undefined {
  if (style.display === "inline") return undefined;
  let m: Linear | undefined;
  const transform = style.transform;
  if (transform && transform !== "none") {
    const values = /^matrix(3d)?\(([^)]*)\)$/.exec(transform);
    const n = values?.[2]?.split(",").map(Number);
    if (n && n.every(Number.isFinite)) m = values?.[1] ? [n[0]!, n[1]!, n[4]!, n[5]!] : [n[0]!, n[1]!, n[2]!, n[3]!];
  }
  const scale = style.scale;
  if (scale && scale !== "none") {
    const [x, y] = scale.split(/\s+/).map((v) => (v.endsWith("%") ? Number.parseFloat(v) / 100 : Number.parseFloat(v)));
    if (x !== undefined && Number.isFinite(x)) {
      const s: Linear = [x, 0, 0, y !== undefined && Number.isFinite(y) ? y : x];
      m = m ? multiply(s, m) : s;
    }
  }
  const rotate = /^(?:z\s+)?(-?[\d.]+)deg$/.exec(style.rotate ?? "");
  if (rotate) {
    const t = (Number(rotate[1]) * Math.PI) / 180;
    const r: Linear = [Math.cos(t), Math.sin(t), -Math.sin(t), Math.cos(t)];
    m = m ? multiply(r, m) : r;
  }
  return m;
}

/**
 * How much a transform shrinks type along its narrower axis: the smaller singular value of its linear part. A rotation
 * shrinks nothing; scaleX(0.05) makes 16 px letters slivers under a pixel wide, whatever the other axis does.
 */
function narrowest(m: Linear | undefined): number {
  if (!m) return 1;
  const sum = m[0] * m[0] + m[1] * m[1] + m[2] * m[2] + m[3] * m[3];
  const det = Math.abs(m[0] * m[3] - m[1] * m[2]);
  const largest = Math.sqrt((sum + Math.sqrt(Math.max(0, sum * sum - 4 * det * det))) / 2);
  return largest > 0 ? det / largest : 0;
}

/** The element's box was flattened by a transform or zoom: laid out with a size, drawn with (almost) none. */
function collapsed(el: Element, rect: DOMRect): boolean {
  if (!(el instanceof HTMLElement) || (rect.width >= 1 && rect.height >= 1)) return false;
  return (rect.width < 1 && el.offsetWidth >= 2) || (rect.height < 1 && el.offsetHeight >= 2);
}

/**
 * Why the element's subtree is not rendered for a person (nothing below it can show), or why only its own text is
 * not seen while its children may be, or undefined: the one rule every reader of the page goes by (content, query,
 * snapshot, the write gate's facts). `ctx` is the element's own (its opacity, filters and mask included). Computed
 * properties are read only where they can decide (each read costs ~0.5 us; pages have 10^4-10^5 elements).
 */
export function judge(el: Element, style: CSSStyleDeclaration, rect: DOMRect, ctx: Context, extent: Extent): Verdict | undefined {
  if (!el.checkVisibility()) {
    // display: contents has no box of its own, its children render.
    return style.display === "contents" ? undefined : V.display;
  }
  if (ctx.opacity < MIN_OPACITY) return V.opacity;
  if (el.hasAttribute("inert") && !isAppRoot(el)) return V.inert;
  if (el.getAttribute("aria-hidden")?.trim().toLowerCase() === "true" && !isAppRoot(el)) return V.ariaHidden;
  if (rect.width < 2 || rect.height < 2) {
    if (style.overflowX !== "visible" || style.overflowY !== "visible") return V.size;
    if (collapsed(el, rect)) return V.size;
  }
  if (rect.width > 0 || rect.height > 0) {
    // Out of the page's scrollable area, and out of the nearest scrolling box's (an app that scrolls its content in a
    // box of its own keeps it there, below that box's fold, not hidden).
    const outsidePage =
      rect.right + extent.scrollX <= 0 ||
      rect.bottom + extent.scrollY <= 0 ||
      rect.left + extent.scrollX >= extent.width ||
      rect.top + extent.scrollY >= extent.height;
    if (outsidePage && (ctx.scrollArea === undefined || outside(rect, ctx.scrollArea))) return V.offscreen;
    // Wholly outside the box that clips it (overflow hidden): drawn nowhere.
    if (ctx.clip && rect.width > 0 && rect.height > 0 && outside(rect, ctx.clip)) return V.clipped;
  }
  if (ctx.positioned && clippedAway(style.clip, "")) return V.clipped;
  const path = style.clipPath;
  if (path !== "none" && clippedAway("", path)) return V.clipped;
  if (!hasOwnText(el)) return undefined;
  if (el instanceof HTMLDetailsElement && !el.open) return V.closedDetails;
  if (style.visibility !== "visible") return V.visibility;
  const fontPx = Number.parseFloat(style.fontSize);
  // The type as drawn: transforms and zoom shrink it (scale(0.1) makes 16 px type 1.6 px).
  if (fontPx * (ctx.styled.shrinks ? Math.min(renderedScale(el, rect), narrowest(ctx.linear)) : 1) < MIN_FONT_PX) return V.tinyText;
  if (Number.parseFloat(style.textIndent) < -500) return V.indented;
  if (ctx.blur > 0 && ctx.blur >= fontPx * MAX_BLUR_PER_FONT_PX) return V.unseenText;
  const spacing = ctx.styled.spaces ? style.letterSpacing : "normal";
  if (spacing !== "normal" && Number.parseFloat(spacing) <= MIN_LETTER_SPACING_EM * fontPx) return V.tinyText;
  const fillText = style.webkitTextFillColor;
  const parsedFill = parseColor(fillText);
  const fill = parsedFill && ctx.paint ? ctx.paint(parsedFill) : parsedFill;
  if (
    fill &&
    (fill[3] * ctx.opacity < 0.1 ||
      (ctx.background && (ctx.paint ? contrast(over(fill, ctx.background), ctx.background) < MIN_CONTRAST : faintOn(fillText, fill, ctx.background))))
  ) {
    // Gradient text (background-clip: text), outlined or shadowed text shows without a fill of its own.
    const painted =
      style.backgroundClip === "text" ||
      style.webkitBackgroundClip === "text" ||
      Number.parseFloat(style.webkitTextStrokeWidth) > 0 ||
      style.textShadow !== "none";
    if (!painted) return V.unseenText;
  }
  return undefined;
}

/**
 * The one colour a background image of opaque gradients only paints (its stops all within MIN_CONTRAST of each
 * other: linear-gradient(#fff, #fff)); undefined for a picture, transparency or a real blend of colours.
 */
function gradientColour(image: string): Rgba | undefined {
  if (/url\(|image\(|element\(|paint\(|cross-fade\(/.test(image)) return undefined;
  const stops = image.match(/rgba?\([^)]*\)/g)?.map(parseColor);
  if (!stops || stops.length === 0) return undefined;
  const first = stops[0];
  if (!first) return undefined;
  for (const stop of stops) if (!stop || stop[3] < 0.99 || contrast(stop, first) >= MIN_CONTRAST) return undefined;
  return [first[0], first[1], first[2], 1];
}

/** The colour the element and its children are drawn on, when known (as drawn: through the colour filters on it). */
function backgroundFor(style: CSSStyleDeclaration, inherited: Rgba | undefined, positioned: boolean, paint?: Paint): Rgba | undefined {
  const image = style.backgroundImage;
  if (image !== "none") {
    const flat = gradientColour(image);
    return flat && paint ? paint(flat) : flat;
  }
  const color = style.backgroundColor;
  // Transparent and not positioned: drawn on what its parent is drawn on (the same object, which faintOn relies on).
  if (color === TRANSPARENT) return positioned ? undefined : inherited;
  const parsed = parseColor(color);
  const own = parsed && paint ? paint(parsed) : parsed;
  if (own && own[3] >= 0.99) return [own[0], own[1], own[2], 1];
  // A positioned box may be drawn over anything (an image, a video): what is under it is not its parent.
  const base = positioned ? undefined : inherited;
  if (base === undefined) return undefined;
  return own && own[3] > 0 ? over(own, base) : base;
}

/** The frame is not shown in its parent: a zero-size viewport, or (same origin) a hidden frame element. */
export function frameHidden(): boolean {
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

/** The context the body's children are drawn in: the canvas behind the root, the root's and the body's opacity. */
export function bodyContext(liveBody: Element): { ctx: Context; style: CSSStyleDeclaration } {
  const bodyStyle = getComputedStyle(liveBody);
  const rootStyle = getComputedStyle(document.documentElement);
  const canvas = backgroundFor(rootStyle, [255, 255, 255, 1], false) ?? [255, 255, 255, 1];
  const ctx: Context = { background: undefined, opacity: 1, positioned: false, blur: 0, styled: styledTree(document) };
  applyDrawing(rootStyle, ctx);
  applyDrawing(bodyStyle, ctx);
  ctx.background = backgroundFor(bodyStyle, canvas, false, ctx.paint);
  return { ctx, style: bodyStyle };
}

const CLIPS = /^(?:hidden|clip)$/;

/**
 * One element as the walk meets it in `ctx`: its verdict (judge), the context its children are drawn in, whether it
 * is fixed or sticky (for the broker's overlay judgement), and the computed style and box it was judged by.
 */
export function enter(
  l: Element,
  ctx: Context,
  extent: Extent,
): { mark: Verdict | undefined; children: Context; position: string; style: CSSStyleDeclaration; rect: DOMRect } {
  const style = getComputedStyle(l);
  const position = style.position;
  const positioned = position === "absolute" || position === "fixed";
  const mine: Context = { background: undefined, opacity: ctx.opacity, positioned, blur: ctx.blur, styled: ctx.styled };
  if (ctx.paint) mine.paint = ctx.paint;
  if (ctx.linear) mine.linear = ctx.linear;
  if (ctx.styled.shrinks) {
    const own = ownLinear(style);
    if (own) mine.linear = mine.linear ? multiply(mine.linear, own) : own;
  }
  if (ctx.styled.fades) applyDrawing(style, mine, l instanceof HTMLElement ? () => ({ width: l.offsetWidth, height: l.offsetHeight }) : undefined);
  else mine.opacity *= Number.parseFloat(style.opacity) || 0;
  mine.background = backgroundFor(style, ctx.background, positioned, mine.paint);
  if (ctx.scrollArea) mine.scrollArea = ctx.scrollArea;
  // A fixed box escapes every clipping ancestor; an absolute one those outside its containing block.
  if (ctx.clip && position !== "fixed" && (position !== "absolute" || ctx.clipHeld)) {
    mine.clip = ctx.clip;
    mine.clipHeld = ctx.clipHeld === true || position !== "static";
  }
  const rect = l.getBoundingClientRect();
  const mark = judge(l, style, rect, mine, extent);
  if (mark === undefined || mark.scope !== HIDDEN_SUBTREE) {
    const overflowX = style.overflowX;
    const overflowY = style.overflowY;
    if (SCROLLS.test(overflowY) || SCROLLS.test(overflowX)) {
      const left = rect.left - l.scrollLeft;
      const top = rect.top - l.scrollTop;
      // What the box scrolls can be brought into view: no clip from outside it is judged inside.
      const children: Context = {
        ...mine,
        scrollArea: { left, top, right: left + Math.max(l.scrollWidth, rect.width), bottom: top + Math.max(l.scrollHeight, rect.height) },
      };
      delete children.clip;
      delete children.clipHeld;
      return { mark, children, position, style, rect };
    }
    if (CLIPS.test(overflowX) && CLIPS.test(overflowY)) {
      const c = mine.clip;
      const clip = c
        ? { left: Math.max(c.left, rect.left), top: Math.max(c.top, rect.top), right: Math.min(c.right, rect.right), bottom: Math.min(c.bottom, rect.bottom) }
        : { left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom };
      return { mark, children: { ...mine, clip, clipHeld: position !== "static" }, position, style, rect };
    }
  }
  return { mark, children: mine, position, style, rect };
}

/** The element's parent in the flat tree (a slotted element's slot, a shadow root's host). */
export function flatParent(el: Element): Element | null {
  if (el.assignedSlot) return el.assignedSlot;
  if (el.parentElement) return el.parentElement;
  const root = el.parentNode;
  return root instanceof ShadowRoot ? root.host : null;
}

/**
 * The context `el` is drawn in (its flat-tree ancestors' opacity, filters, background, clipping and scrolling boxes
 * entered from the body down), or the verdict of the first ancestor that hides it.
 */
export function contextOf(el: Element, extent: Extent): Context | Verdict {
  const body = document.body;
  if (!body) return V.display;
  const chain: Element[] = [];
  for (let n = flatParent(el); n && n !== body && n !== document.documentElement; n = flatParent(n)) chain.push(n);
  const { ctx: bodyCtx, style } = bodyContext(body);
  const bodyMark = judge(body, style, body.getBoundingClientRect(), bodyCtx, extent);
  if (bodyMark?.scope === HIDDEN_SUBTREE) return bodyMark;
  let ctx = bodyCtx;
  // Inside a shadow tree, its root's own sheets style it too.
  const within = (node: Element, at: Context) => {
    const root = node.getRootNode();
    return root instanceof ShadowRoot ? inTree(at, root) : at;
  };
  for (let i = chain.length - 1; i >= 0; i--) {
    const step = enter(chain[i]!, within(chain[i]!, ctx), extent);
    if (step.mark?.scope === HIDDEN_SUBTREE) return step.mark;
    ctx = step.children;
  }
  return within(el, ctx);
}

export function inPage(el: Element): boolean {
  const body = document.body;
  return body !== null && (body.contains(el) || el.getRootNode() instanceof ShadowRoot) && el.isConnected;
}

/** The context `ctx` with what a shadow root's own styles can set besides. */
export function inTree(ctx: Context, root: ShadowRoot): Context {
  const own = styledTree(root);
  const styled = { fades: ctx.styled.fades || own.fades, shrinks: ctx.styled.shrinks || own.shrinks, spaces: ctx.styled.spaces || own.spaces };
  return { ...ctx, styled };
}

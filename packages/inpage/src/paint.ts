// How the page paints what it draws, for the visibility rule (content.ts): colours as the page computed them, the
// contrast of text on its background, the filters, masks and clips that fade, blur or cut a box away.

/** An element's size as laid out (px). */
export interface Box {
  width: number;
  height: number;
}

/** Below this effective opacity nothing is legible. */
export const MIN_OPACITY = 0.05;
/** Text whose contrast ratio against the background it is drawn on is below this is not seen (white on #f5f5f5: 1.09). */
export const MIN_CONTRAST = 1.15;

export type Rgba = [number, number, number, number];

export function parseColor(value: string): Rgba | undefined {
  const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)$/.exec(value);
  if (!m) return undefined;
  let alpha = m[4] === undefined ? 1 : Number.parseFloat(m[4]);
  if (m[4]?.endsWith("%")) alpha /= 100;
  return [Number(m[1]), Number(m[2]), Number(m[3]), alpha];
}

/** `top` painted over the opaque `bottom`. */
export function over(top: Rgba, bottom: Rgba): Rgba {
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

export function contrast(a: Rgba, b: Rgba): number {
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
export function faintOn(fillText: string, fill: Rgba, background: Rgba): boolean {
  let byFill = faintCache.get(background);
  if (!byFill) faintCache.set(background, (byFill = new Map()));
  let faint = byFill.get(fillText);
  if (faint === undefined) byFill.set(fillText, (faint = contrast(over(fill, background), background) < MIN_CONTRAST));
  return faint;
}

/** What a colour filter (brightness, contrast, invert, grayscale, saturate) makes of a colour drawn under it. */
export type Paint = (c: Rgba) => Rgba;

const clamp = (v: number) => Math.min(255, Math.max(0, v));

function colourFilter(name: string, amount: number): Paint | undefined {
  switch (name) {
    case "brightness":
      return (c) => [clamp(c[0] * amount), clamp(c[1] * amount), clamp(c[2] * amount), c[3]];
    case "contrast":
      return (c) => [clamp((c[0] - 127.5) * amount + 127.5), clamp((c[1] - 127.5) * amount + 127.5), clamp((c[2] - 127.5) * amount + 127.5), c[3]];
    case "invert": {
      const a = Math.min(1, amount);
      return (c) => [c[0] + (255 - 2 * c[0]) * a, c[1] + (255 - 2 * c[1]) * a, c[2] + (255 - 2 * c[2]) * a, c[3]];
    }
    case "sepia":
      return matrixPaint(sepiaMatrix(Math.min(1, amount)));
    case "hue-rotate":
      return matrixPaint(hueRotateMatrix(amount));
    case "grayscale":
    case "saturate": {
      const grey = name === "grayscale" ? Math.min(1, amount) : Math.max(0, 1 - amount);
      return (c) => {
        const y = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
        return [clamp(c[0] + (y - c[0]) * grey), clamp(c[1] + (y - c[1]) * grey), clamp(c[2] + (y - c[2]) * grey), c[3]];
      };
    }
    default:
      return undefined;
  }
}

type Matrix = readonly [number, number, number, number, number, number, number, number, number];

function matrixPaint(m: Matrix): Paint {
  return (c) => [
    clamp(m[0] * c[0] + m[1] * c[1] + m[2] * c[2]),
    clamp(m[3] * c[0] + m[4] * c[1] + m[5] * c[2]),
    clamp(m[6] * c[0] + m[7] * c[1] + m[8] * c[2]),
    c[3],
  ];
}

/** sepia(a), the Filter Effects spec's matrix. */
function sepiaMatrix(a: number): Matrix {
  const k = 1 - a;
  return [
    0.393 + 0.607 * k,
    0.769 - 0.769 * k,
    0.189 - 0.189 * k,
    0.349 - 0.349 * k,
    0.686 + 0.314 * k,
    0.168 - 0.168 * k,
    0.272 - 0.272 * k,
    0.534 - 0.534 * k,
    0.131 + 0.869 * k,
  ];
}

/** hue-rotate(degrees), the Filter Effects spec's matrix (feColorMatrix hueRotate). */
function hueRotateMatrix(degrees: number): Matrix {
  const t = (degrees * Math.PI) / 180;
  const cos = Math.cos(t);
  const sin = Math.sin(t);
  return [
    0.213 + cos * 0.787 - sin * 0.213,
    0.715 - cos * 0.715 - sin * 0.715,
    0.072 - cos * 0.072 + sin * 0.928,
    0.213 - cos * 0.213 + sin * 0.143,
    0.715 + cos * 0.285 + sin * 0.14,
    0.072 - cos * 0.072 - sin * 0.283,
    0.213 - cos * 0.213 - sin * 0.787,
    0.715 - cos * 0.715 + sin * 0.715,
    0.072 + cos * 0.928 + sin * 0.072,
  ];
}

/** An angle in degrees: deg (the computed form), rad, grad or turn. */
function degreesOf(arg: string): number {
  const value = Number.parseFloat(arg);
  if (arg.endsWith("grad")) return value * 0.9;
  if (arg.endsWith("rad")) return (value * 180) / Math.PI;
  if (arg.endsWith("turn")) return value * 360;
  return value;
}

/** A computed filter's effect on legibility: opacity() multiplies, blur() adds its radius, colour functions compose. */
function applyFilter(filter: string, into: { opacity: number; blur: number; paint?: Paint }): void {
  // One element's list applies left to right (brightness(0) invert(1) paints white); it is drawn inside its
  // ancestors' filters, which apply after it.
  let own: Paint | undefined;
  for (const m of filter.matchAll(/([a-z-]+)\(((?:[^()]|\([^()]*\))*)\)/g)) {
    const name = m[1]!;
    const arg = (m[2] ?? "").trim();
    const amount =
      name === "hue-rotate" ? (arg === "" ? 0 : degreesOf(arg)) : arg === "" ? 1 : arg.endsWith("%") ? Number.parseFloat(arg) / 100 : Number.parseFloat(arg);
    if (Number.isNaN(amount)) continue;
    if (name === "opacity") into.opacity *= Math.min(1, Math.max(0, amount));
    else if (name === "blur") into.blur += amount;
    else {
      const paint = colourFilter(name, amount);
      const before = own;
      if (paint) own = before ? (c) => paint(before(c)) : paint;
    }
  }
  if (!own) return;
  const mine = own;
  const outer = into.paint;
  into.paint = outer ? (c) => outer(mine(c)) : mine;
}

/**
 * What an element hands down to everything drawn inside it, besides its background and boxes: its opacity, the
 * opacity(), blur() and colour functions of its filter, a mask that leaves nothing (the reader's rule applies it in
 * enter(); the snapshot judges by it alone: drawnJudge).
 */
export function applyDrawing(style: CSSStyleDeclaration, into: { opacity: number; blur: number; paint?: Paint }, box?: () => Box): void {
  into.opacity *= Number.parseFloat(style.opacity) || 0;
  const filter = style.filter;
  if (filter !== "none") applyFilter(filter, into);
  const mask = style.maskImage;
  if (mask !== "none" && (maskHidesAll(mask) || maskPlacedAway(mask, style, box))) into.opacity = 0;
}

/**
 * A mask of gradients only, drawn at no size (mask-size: 0) or, not repeated, placed wholly off the element's box
 * (`boxOf`, its size, when known): no part of the element is inside it, so nothing of it shows. (An image mask's own
 * pixels are not read.)
 */
function maskPlacedAway(mask: string, style: CSSStyleDeclaration, boxOf: (() => Box) | undefined): boolean {
  if (/url\(|image\(|element\(|paint\(/.test(mask) || topLevelCommas(mask) > 0) return false;
  // One image: its layer is the first of each list.
  const first = (value: string) => (value.split(",")[0] ?? "").trim();
  const size = first(style.maskSize).split(/\s+/);
  if (size.some((v) => /^0(?:px|%)?$/.test(v))) return true;
  if (!boxOf || first(style.maskRepeat) !== "no-repeat") return false;
  const box = boxOf();
  // A gradient has no size of its own: auto, cover and contain draw it over the whole box.
  const extent = (v: string | undefined, whole: number) =>
    v?.endsWith("px") ? Number.parseFloat(v) : v?.endsWith("%") ? (Number.parseFloat(v) / 100) * whole : whole;
  const width = extent(size[0], box.width);
  const height = extent(size[1] ?? "auto", box.height);
  const [px, py] = first(style.maskPosition).split(/\s+/);
  const offset = (v: string | undefined, whole: number, drawn: number) =>
    v?.endsWith("px") ? Number.parseFloat(v) : v?.endsWith("%") ? ((whole - drawn) * Number.parseFloat(v)) / 100 : Number.NaN;
  const x = offset(px, box.width, width);
  const y = offset(py ?? px, box.height, height);
  return x >= box.width || x + width <= 0 || y >= box.height || y + height <= 0;
}

/** A mask of gradients only, every colour of them (nearly) transparent: nothing of the element shows. */
function maskHidesAll(mask: string): boolean {
  if (/url\(|image\(|element\(|paint\(/.test(mask)) return false;
  const colours = mask.match(/rgba?\([^)]*\)/g);
  if (!colours) return false;
  return colours.every((c) => (parseColor(c)?.[3] ?? 1) < MIN_OPACITY);
}

/** Commas outside parentheses: one fewer than the layers of a list value (a mask of several images). */
function topLevelCommas(value: string): number {
  let depth = 0;
  let commas = 0;
  for (const ch of value) {
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "," && depth === 0) commas++;
  }
  return commas;
}

/** The computed value of a transparent background-color: most elements, no need to parse it. */
export const TRANSPARENT = "rgba(0, 0, 0, 0)";

/** clip: rect(...) or clip-path shapes that leave (almost) nothing of the box. */
export function clippedAway(clip: string, path: string): boolean {
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

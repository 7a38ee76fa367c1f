// The element at a point of the tab's viewport (code mode's browse.mouse.*): document.elementFromPoint in the top
// document, into open and closed shadow roots and same-origin frames, to the element a click there would reach. Every
// document of the tab runs the same walk; the one where it ends describes and refs the element (query.ts), so a
// subframe's element gets its own document's ref, judged by the read policy's frame rule like any frame match.
import { hostedRoot } from "./flatTree.js";

/** Where a point lands: the frame path (window.frames indexes from the top) of its document and the point there. */
export type Hit = { path: number[]; x: number; y: number } | { crossOrigin: Element } | undefined;

/**
 * Where this document's viewport sits in the top document (CSS pixels, the top's scroll included), summed over
 * same-origin frame elements; undefined when an ancestor is cross-origin (its frame element cannot be read).
 */
export function documentOrigin(): { x: number; y: number } | undefined {
  let x = 0;
  let y = 0;
  let w: Window = window;
  try {
    for (let depth = 0; w !== w.top && depth < 32; depth++) {
      const owner = w.frameElement;
      if (!owner) return undefined;
      const offset = contentOffset(owner);
      x += offset.x;
      y += offset.y;
      w = w.parent;
    }
    return { x: x + w.scrollX, y: y + w.scrollY };
  } catch {
    return undefined;
  }
}

/** The offset of a frame element's content box in its document's viewport. */
function contentOffset(frame: Element): { x: number; y: number } {
  const r = frame.getBoundingClientRect();
  const s = getComputedStyle(frame);
  return { x: r.left + frame.clientLeft + (parseFloat(s.paddingLeft) || 0), y: r.top + frame.clientTop + (parseFloat(s.paddingTop) || 0) };
}

/** The topmost element at (x, y) of a document's viewport, inside open and closed shadow roots. */
export function elementAt(doc: Document, x: number, y: number): Element | undefined {
  let el = doc.elementFromPoint(x, y);
  if (!el) return undefined;
  for (let root = hostedRoot(el); root; root = hostedRoot(el)) {
    const inner = root.elementFromPoint(x, y);
    if (!inner || inner === el) break;
    el = inner;
  }
  return el;
}

/** This document's frame path: its index in its parent's window.frames, its parent's in its own, up to the top. */
export function framePath(): number[] | undefined {
  const path: number[] = [];
  let w: Window = window;
  try {
    for (let depth = 0; w !== w.top && depth < 32; depth++) {
      const parent: Window = w.parent;
      let index = -1;
      for (let i = 0; i < parent.length; i++) if (parent[i] === w) index = i;
      if (index < 0) return undefined;
      path.unshift(index);
      w = parent;
    }
  } catch {
    return undefined;
  }
  return path;
}

/**
 * Where (x, y) of the top viewport (CSS pixels) lands: walked from the top document through same-origin frames
 * (each document's script compares the path with its own and finds the element itself: elements of another
 * document are not its own). Undefined outside every document, or when this document cannot see the top one.
 */
export function hitAt(x: number, y: number): Hit {
  let doc: Document;
  try {
    doc = window.top!.document;
  } catch {
    return undefined; // behind a cross-origin frame: the top document's walk decides
  }
  const path: number[] = [];
  let px = x;
  let py = y;
  for (let depth = 0; depth < 32; depth++) {
    const el = elementAt(doc, px, py);
    if (!el) return undefined;
    // By name: the top document's elements belong to its realm, not to this document's (instanceof would fail).
    if (el.localName !== "iframe" && el.localName !== "frame") return { path, x: px, y: py };
    const frame = el as HTMLIFrameElement;
    let inner: Document | null;
    try {
      inner = frame.contentDocument;
    } catch {
      inner = null;
    }
    const view = doc.defaultView;
    const index = view ? Array.from({ length: view.length }, (_, i) => i).find((i) => view[i] === frame.contentWindow) : undefined;
    if (!inner || index === undefined) return { crossOrigin: el };
    path.push(index);
    const offset = contentOffset(el);
    px -= offset.x;
    py -= offset.y;
    doc = inner;
  }
  return undefined;
}

/** A frame element as an error names it: its tag, id and where it points. */
export function frameLabel(el: Element): string {
  const src = el.getAttribute("src");
  let where: string;
  try {
    where = src ? new URL(src, el.baseURI).href : "";
  } catch {
    where = src ?? "";
  }
  return `${el.localName}${el.id ? `#${el.id}` : ""}${where ? ` at ${where}` : ""}`;
}

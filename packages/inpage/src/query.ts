// DOM queries: the elements a CSS selector matches in this document and in every shadow root it holds (open ones,
// and closed ones this script can reach), in tree order, each described by a fixed allowlist of what it is. Refs of
// the actionable ones belong to the query's revision, as a snapshot's do (snapshot.ts mints and resolves them).
// A selector is parts joined by `>>`: each part before the last names frame elements the next part is looked for in
// (this document reports which of its frames each part enters, the broker follows the chain: tools/query.ts); a part
// `xpath=...` is XPath, evaluated in the document (document.evaluate cannot reach into shadow roots). Every part is
// matched in the document's visible copy (visibleCopy.ts): what a person cannot see matches nothing, and no selector
// tests text or an attribute the tools withhold.
import { type InpageQuery, type QueryMatch, type QueryParams } from "@tabrelay/protocol";
import { fail, type InpageResult } from "./api.js";
import { effectivelyDisabled } from "./reach.js";
import { isEditable } from "./facts.js";
import { accessibleName, hiddenReason, roleOf } from "./dom.js";
import { seenText } from "./content.js";
import { beyondPage } from "./visibility.js";
import { documentOrigin, elementAt, frameLabel, framePath, hitAt } from "./point.js";
import { renderedText } from "./rendered.js";
import { isInteractive, mintRef, resolve, startRevision } from "./snapshot.js";
import { visiblePage, type VisibleCopy } from "./visibleCopy.js";

const NAME_MAX = 200;
const TEXT_MAX = 300;
const ATTRIBUTE_MAX = 1000;

/** The attributes a match is described by (and aria-*); `value` is never a password field's. */
const ATTRIBUTES = new Set(["id", "class", "name", "type", "href", "src", "alt", "title", "data-testid", "value"]);

/** A selector's parts, split at each `>>` outside quotes, brackets and parentheses. */
export function selectorParts(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = "";
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "[" || c === "(") depth++;
    else if (c === "]" || c === ")") depth = Math.max(0, depth - 1);
    else if (depth === 0 && c === ">" && selector[i + 1] === ">") {
      parts.push(selector.slice(start, i).trim());
      start = i + 2;
      i++;
    }
  }
  parts.push(selector.slice(start).trim());
  return parts;
}

/** One part: a predicate on elements of the visible copy, made once the part is known valid. */
type Matcher = (copy: VisibleCopy) => (el: Element) => boolean;

/** One part of a selector (CSS, or `xpath=`), or the reason it is not valid CSS / XPath. */
export function matcherOf(part: string): Matcher | string {
  if (part === "") return "is empty: a `>>` needs a selector on both sides";
  const xpath = /^xpath=([\s\S]+)$/.exec(part)?.[1];
  if (xpath === undefined) {
    try {
      document.createDocumentFragment().querySelector(part);
    } catch (error) {
      return `is not valid CSS: ${error instanceof Error ? error.message : String(error)}`;
    }
    return () => (el) => el.matches(part);
  }
  // Checked on an empty document: one that selects no node set (count(//a)) fails there as on any.
  try {
    const empty = document.implementation.createHTMLDocument("");
    empty.evaluate(xpath, empty, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
  } catch (error) {
    return `is not valid XPath: ${error instanceof Error ? error.message.replace(/^Failed to execute 'evaluate' on 'Document': /, "") : String(error)}`;
  }
  return (copy) => {
    const set = new Set<Node>();
    const found = copy.doc.evaluate(xpath, copy.doc, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    for (let i = 0; i < found.snapshotLength; i++) set.add(found.snapshotItem(i)!);
    return (el) => set.has(el);
  };
}

/**
 * The live elements the parts match, in tree order (shadow trees before their hosts' light children): each part is
 * matched in the visible copy of this document (visibleCopy.ts), so an element a person cannot see matches nothing and
 * a predicate tests only the text and attributes the tools would give. `frame` hears each frame element with the parts
 * before the last that match it; `each` each element the last part matches.
 */
export function matchVisible(
  parts: Matcher[],
  each: ((live: Element) => void) | undefined,
  frame?: (live: Element, matched: boolean[]) => void,
): { capped: boolean } {
  const page = visiblePage();
  const copy = page.copy();
  const tests = parts.map((m) => m(copy));
  const last = tests[tests.length - 1]!;
  const chain = tests.slice(0, -1);
  const stack: Element[] = [copy.doc.documentElement];
  const push = (parent: Element | ShadowRoot) => {
    for (let child = parent.lastElementChild; child; child = child.previousElementSibling) stack.push(child);
  };
  while (stack.length) {
    const el = stack.pop()!;
    const live = copy.liveOf.get(el);
    if (!live) continue;
    if (each && last(el)) each(live);
    if (frame && chain.length && (el.localName === "iframe" || el.localName === "frame"))
      frame(
        live,
        chain.map((test) => test(el)),
      );
    // A host's light children after its shadow tree (popped first), as the tree is rendered around its slots.
    push(el);
    if (el.shadowRoot) push(el.shadowRoot);
  }
  return { capped: page.capped || copy.capped };
}

/** This document's index in its parent's window.frames (cross-origin too: a WindowProxy compares by identity). */
function frameIndex(): number | undefined {
  if (window === window.top) return undefined;
  try {
    const parent = window.parent;
    for (let i = 0; i < parent.length; i++) if (parent[i] === window) return i;
  } catch {
    // a parent that cannot be listed: the frame is in no chain
  }
  return undefined;
}

/** A frame element's index in this window's frames. */
function childIndex(el: Element): number | undefined {
  if (!(el instanceof HTMLIFrameElement || el instanceof HTMLFrameElement) || !el.contentWindow) return undefined;
  for (let i = 0; i < window.length; i++) if (window[i] === el.contentWindow) return i;
  return undefined;
}

function checked(el: Element): boolean {
  if (el instanceof HTMLInputElement && (el.type === "checkbox" || el.type === "radio")) return el.checked;
  return el.getAttribute("aria-checked") === "true";
}

function statesOf(el: Element): string[] {
  return [effectivelyDisabled(el) ? "disabled" : "", checked(el) ? "checked" : "", isEditable(el) ? "editable" : ""].filter(Boolean);
}

function cap(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function absolute(value: string, el: Element): string {
  try {
    return new URL(value, el.baseURI).href;
  } catch {
    return value;
  }
}

function isPassword(el: Element): boolean {
  return el instanceof HTMLInputElement && (el.type === "password" || el.getAttribute("type")?.toLowerCase() === "password");
}

function attributesOf(el: Element): Record<string, string> {
  const out: Record<string, string> = {};
  for (const attr of el.attributes) {
    const name = attr.name;
    if (!ATTRIBUTES.has(name) && !name.startsWith("aria-")) continue;
    if (name === "value") continue; // below: a field's live value, never a password's
    const value = name === "href" || name === "src" ? absolute(attr.value, el) : attr.value;
    out[name] = cap(value, ATTRIBUTE_MAX);
  }
  if (isPassword(el)) return out;
  const live = el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement ? el.value : el.getAttribute("value");
  if (live !== null && (live !== "" || el.hasAttribute("value"))) out["value"] = cap(live, ATTRIBUTE_MAX);
  return out;
}

/** The attributes of a hidden match that carry no page words: what it is and where it points. */
const STRUCTURAL = new Set(["id", "class", "name", "type", "href", "src", "data-testid"]);

function structural(attributes: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(attributes).filter(([name]) => STRUCTURAL.has(name)));
}

/** An element the page made draggable (draggable="true"): a point query refs it, so mouse.drag can grab it. */
function grabbable(el: Element): boolean {
  return el.getAttribute("draggable") === "true";
}

function describe(el: Element, grab = false, ref?: string): QueryMatch {
  const role = roleOf(el);
  const name = accessibleName(el, role);
  // The content reader's rule decides (seenText), hiddenReason names the cause where it knows one.
  const seen = seenText(el, TEXT_MAX);
  const hidden = hiddenReason(el, false) ?? (beyondPage(el) ? "offscreen" : seen.hidden ? "unseen" : undefined);
  // What a person cannot see is described by structure only: no text, no name, no text-bearing attributes, so hidden
  // words (an instruction planted offscreen or in a display:none title) reach the agent from query no more than from a read.
  const match: QueryMatch = {
    tag: el.localName,
    role,
    name: hidden === undefined ? cap(name, NAME_MAX) : "",
    text: hidden === undefined ? cap(seen.text ?? renderedText(el).text, TEXT_MAX) : "",
    attributes: hidden === undefined ? attributesOf(el) : structural(attributesOf(el)),
  };
  if (hidden !== undefined) match.hidden = hidden;
  if (ref !== undefined) match.ref = ref;
  else if (hidden === undefined && (isInteractive(el, role) || (grab && grabbable(el)))) match.ref = mintRef(el, role, name);
  const states = statesOf(el);
  if (states.length) match.states = states;
  const origin = documentOrigin();
  if (origin) {
    const r = el.getBoundingClientRect();
    match.box = { x: r.x + origin.x, y: r.y + origin.y, width: r.width, height: r.height };
  }
  return match;
}

/** The element at a point, or the closest actionable one holding it (a click on a button's icon is the button's). */
function actionableAt(el: Element): Element {
  for (let at: Element | null = el; at; at = at.parentElement ?? (at.parentNode instanceof ShadowRoot ? at.parentNode.host : null)) {
    if (isInteractive(at, roleOf(at)) || grabbable(at)) return at;
  }
  return el;
}

/** `point=x,y`: the element at that point of the tab's viewport, in whichever document it lies (point.ts). */
function pointQuery(x: number, y: number, params: Omit<QueryParams, "tabId">): InpageResult<InpageQuery> {
  const hit = hitAt(x, y);
  const isTop = window === window.top;
  if (isTop && hit && "crossOrigin" in hit) {
    return fail(
      "not_actionable",
      `the point (${x}, ${y}) is inside a cross-origin frame (${frameLabel(hit.crossOrigin)}), which a point cannot be resolved across; find the element with a selector entering it ("iframe >> button") and pass its ref`,
    );
  }
  startRevision(params.revision);
  const own = framePath();
  const el = hit && "path" in hit && own && own.join() === hit.path.join() ? elementAt(document, hit.x, hit.y) : undefined;
  const mine = el !== undefined;
  const matches = el && params.upTo > 0 && (!isTop || params.skip === 0) ? [describe(actionableAt(el), true)] : [];
  const index = frameIndex();
  return {
    ok: true,
    value: {
      url: location.href,
      origin: self.origin,
      title: document.title,
      count: mine ? 1 : 0,
      first: isTop ? params.skip : 0,
      matches,
      ...(index !== undefined ? { frameIndex: index } : {}),
    },
  };
}

/**
 * `ref=e3`: the element a ref of the query's revision names, read fresh, in the revision it belongs to (no new
 * revision: the tab's refs stay valid). A document that does not hold it (another frame, a stale ref) counts none;
 * the broker keeps the answer of the ref's own document.
 */
function refQuery(ref: string, params: Omit<QueryParams, "tabId">): InpageResult<InpageQuery> {
  const found = resolve(ref, params.revision);
  const matches = found.ok && params.upTo > 0 ? [describe(found.value.el, false, ref)] : [];
  const index = frameIndex();
  return {
    ok: true,
    value: {
      url: location.href,
      origin: self.origin,
      title: document.title,
      count: found.ok ? 1 : 0,
      first: 0,
      matches,
      ...(index !== undefined ? { frameIndex: index } : {}),
    },
  };
}

export function query(params: Omit<QueryParams, "tabId">): InpageResult<InpageQuery> {
  const byRef = /^ref=(e\d+)$/.exec(params.selector.trim());
  if (byRef) return refQuery(byRef[1]!, params);
  const point = /^point=(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)$/.exec(params.selector.trim());
  if (point) return pointQuery(Number(point[1]), Number(point[2]), params);
  const parts = selectorParts(params.selector);
  const matchers: Matcher[] = [];
  for (const part of parts) {
    const made = matcherOf(part);
    if (typeof made === "string") {
      const which = parts.length === 1 ? "" : ` (its part ${JSON.stringify(part)})`;
      return fail(
        "invalid_params",
        `the selector ${JSON.stringify(params.selector)}${which} ${made}; fix it: CSS, or xpath=<expression>, parts joined by >> to enter frames`,
      );
    }
    matchers.push(made);
  }
  const chain = matchers.slice(0, -1);
  const enters: number[][] = chain.map(() => []);
  startRevision(params.revision);
  // The tab's matches start with the top document's: only it may skip to the page asked for. Behind a `>>` the top
  // document holds none (its frames do).
  const isTop = window === window.top;
  const first = isTop ? params.skip : 0;
  const counts = !(isTop && chain.length > 0);
  const matches: QueryMatch[] = [];
  let count = 0;
  const { capped } = matchVisible(
    matchers,
    counts
      ? (el) => {
          if (count >= first && count < params.upTo) matches.push(describe(el));
          count++;
        }
      : undefined,
    (el, matched) => {
      const index = childIndex(el);
      if (index !== undefined) matched.forEach((m, k) => m && enters[k]!.push(index));
    },
  );
  const index = frameIndex();
  return {
    ok: true,
    value: {
      url: location.href,
      origin: self.origin,
      title: document.title,
      count,
      first,
      matches,
      ...(capped ? { capped: true } : {}),
      ...(index !== undefined ? { frameIndex: index } : {}),
      ...(chain.length ? { enters } : {}),
    },
  };
}

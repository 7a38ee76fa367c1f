// DOM queries: the elements a CSS selector matches in this document and in every shadow root it holds (open ones,
// and closed ones this script can reach), in tree order, each described by a fixed allowlist of what it is. Refs of
// the actionable ones belong to the query's revision, as a snapshot's do (snapshot.ts mints and resolves them).
import { CONTENT_MAX_ELEMENTS, type InpageQuery, type QueryMatch, type QueryParams } from "@tabrelay/protocol";
import { fail, type InpageResult } from "./api.js";
import { accessibleName, hiddenReason, roleOf } from "./dom.js";
import { hostedRoot } from "./flatTree.js";
import { beyondPage, seenText } from "./content.js";
import { renderedText } from "./rendered.js";
import { isInteractive, mintRef, startRevision } from "./snapshot.js";

const NAME_MAX = 200;
const TEXT_MAX = 300;
const ATTRIBUTE_MAX = 1000;

/** The attributes a match is described by (and aria-*); `value` is never a password field's. */
const ATTRIBUTES = new Set(["id", "class", "name", "type", "href", "src", "alt", "title", "data-testid", "value"]);

/** The browser's own reason, when the selector is not valid CSS. */
function invalidSelector(selector: string): string | undefined {
  try {
    document.createDocumentFragment().querySelector(selector);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
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

function describe(el: Element): QueryMatch {
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
  else if (isInteractive(el, role)) match.ref = mintRef(el, role, name);
  return match;
}

export function query(params: Omit<QueryParams, "tabId">): InpageResult<InpageQuery> {
  const reason = invalidSelector(params.selector);
  if (reason !== undefined) return fail("invalid_params", `the selector ${JSON.stringify(params.selector)} is not valid CSS: ${reason}`);
  startRevision(params.revision);
  // The tab's matches start with the top document's: only it may skip to the page asked for.
  const first = window === window.top ? params.skip : 0;
  const matches: QueryMatch[] = [];
  let count = 0;
  let walked = 0;
  const stack: Element[] = document.documentElement ? [document.documentElement] : [];
  const push = (parent: Element | ShadowRoot) => {
    const children = parent.children;
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  };
  while (stack.length && walked < CONTENT_MAX_ELEMENTS) {
    const el = stack.pop()!;
    walked++;
    if (el.matches(params.selector)) {
      if (count >= first && count < params.upTo) matches.push(describe(el));
      count++;
    }
    // A host's light children after its shadow tree (popped first), as the tree is rendered around its slots.
    push(el);
    const root = hostedRoot(el);
    if (root) push(root);
  }
  return {
    ok: true,
    value: { url: location.href, origin: self.origin, title: document.title, count, first, matches, ...(stack.length ? { capped: true } : {}) },
  };
}

// The page as selectors see it (query, wait_for): a copy of the document, in an inert document, holding only what a
// person can see, so that a selector is no oracle for what every read withholds. The live flat tree is walked once by
// the visibility rule (enter: what content() marks); the copy keeps the live tree's shape (light trees, shadow roots
// attached open), and in it:
// - an element the rule hides whole (or the walk never reaches: unassigned light children, past the element cap) is
//   a bare placeholder of its tag, no attribute, no child, that never matches;
// - text is only the text a person can see (an element's own text the rule hides is left out, so is a textarea's
//   default text: its live value stands in); no comment;
// - attributes are the queryable ones only (QUERYABLE, aria-*), a field's `value` its live value (never a password's),
//   and an element the tools describe by structure only (its text unseen, its own box invisible or under 2 px, inside
//   inert or aria-hidden) keeps none that carry page words (STRUCTURE_ONLY).
// Matching runs on the copy (CSS with matches(), XPath with the copy's evaluate) and maps back to the live elements.
import { CONTENT_MAX_ELEMENTS, HIDDEN_OWN_TEXT, HIDDEN_SUBTREE } from "@tabrelay/protocol";
import { INLINE } from "./content.js";
import { hostedRoot } from "./flatTree.js";
import { startChecks } from "./styled.js";
import { bodyContext, enter, frameHidden, inTree, judge, pageExtent, SKIP, type Context } from "./visibility.js";

/** Attributes a selector may test on an element shown with its text: those query returns, and those that say what an element is. */
const QUERYABLE = new Set([
  ...["id", "class", "name", "type", "href", "src", "alt", "title", "data-testid", "value"],
  ...["role", "for", "placeholder", "disabled", "checked", "selected", "readonly", "required", "multiple", "open", "hidden", "inert"],
  ...["lang", "dir", "tabindex", "contenteditable", "draggable", "target", "rel"],
]);

/** What a selector may test on an element described by structure only: no attribute that carries page words. */
const STRUCTURE_ONLY = new Set([...QUERYABLE].filter((name) => !["alt", "title", "value", "placeholder"].includes(name)));

/** Elements never drawn: nothing in them matches. */
const NEVER_SHOWN = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "LINK", "META", "BASE", "HEAD", "DATALIST"]);

/** Controls the walk does not enter whose content is drawn: a select's options (in the list it opens), an svg's shapes and text. */
const ENTERED = new Set(["select", "svg"]);

/** Copy elements past this many (placeholders included) are left out: a page of a million empty divs stays bounded. */
const COPY_MAX_FACTOR = 2;

type Add = (
  el: Element,
  parent: Shown | undefined,
  own: boolean,
  block: boolean,
  structure: boolean,
  nodes: Node[] | undefined,
  ownTextHidden?: boolean,
) => Shown;

interface Shown {
  readonly parent: Shown | undefined;
  /** The element is described by structure only (query's `hidden`): it keeps no attribute with page words. */
  structure: boolean;
  /** Its text is its own, or a skipped control's (a select's options): not counted in its parent's. */
  readonly own: boolean;
  readonly block: boolean;
  /** It or its flat descendants hold text, and text a person sees. */
  anyText: boolean;
  seenText: boolean;
}

export interface VisiblePage {
  /** The walk stopped at its element cap: later elements match nothing. */
  readonly capped: boolean;
  /** The text a person can see in the body, blocks apart (not normalised). */
  text(): string;
  /** The copy to match in (built on first use). */
  copy(): VisibleCopy;
}

export interface VisibleCopy {
  readonly doc: Document;
  /** The copy left out elements past its cap. */
  readonly capped: boolean;
  /** The live element of each copy element a selector may match (placeholders have none). */
  readonly liveOf: Map<Element, Element>;
}

/** What is rendered in `l`'s place, in order: a filled slot's assigned nodes, a host's shadow tree, else its children. */
function flatNodes(l: Element, root: ShadowRoot | null): Node[] {
  if (l instanceof HTMLSlotElement) {
    const assigned = l.assignedNodes();
    if (assigned.length) return assigned;
  }
  const nodes: Node[] = [];
  for (let n = (root ?? l).firstChild; n; n = n.nextSibling) nodes.push(n);
  return nodes;
}

const WORDS = /\S/;

/** Walks the page by the visibility rule: which live elements a person can see, and which text nodes. */
export function visiblePage(maxElements = CONTENT_MAX_ELEMENTS): VisiblePage {
  const shown = new Map<Element, Shown>();
  const order: Shown[] = [];
  const texts = new Set<Node>();
  let capped = false;
  const add: Add = (el, parent, own, block, structure, nodes, ownTextHidden = false) => {
    let words = false;
    const kept = !ownTextHidden && !(el instanceof HTMLTextAreaElement) && !(el instanceof HTMLIFrameElement);
    for (let i = 0; nodes && i < nodes.length; i++) {
      const n = nodes[i]!;
      if (n.nodeType !== 3) continue;
      words ||= WORDS.test(n.nodeValue ?? "");
      if (kept) texts.add(n);
    }
    const entry: Shown = { parent, structure, own, block, anyText: words, seenText: words && !ownTextHidden };
    shown.set(el, entry);
    order.push(entry);
    return entry;
  };
  const html = document.documentElement;
  const body = document.body;
  const root = html ? add(html, undefined, false, true, false, undefined) : undefined;
  if (body && !frameHidden()) {
    startChecks();
    const extent = pageExtent();
    const start = bodyContext(body);
    const rect = body.getBoundingClientRect();
    const mark = judge(body, start.style, rect, start.ctx, extent);
    const stack: [Element, Context, Shown | undefined][] = [];
    const pushChildren = (nodes: Node[], ctx: Context, entry: Shown) => {
      for (let i = nodes.length - 1; i >= 0; i--) {
        const n = nodes[i]!;
        if (n.nodeType === 1) stack.push([n as Element, ctx, entry]);
      }
    };
    const shaded = new Map<Element, boolean>();
    /** Inside inert or aria-hidden (in its own tree, as closest() looks): what the walk keeps there is an app root behind a modal. */
    const underShade = (el: Element): boolean => {
      let known = shaded.get(el);
      if (known === undefined) {
        const up = el.parentElement;
        known = el.hasAttribute("inert") || el.getAttribute("aria-hidden") === "true" || (up !== null && underShade(up));
        shaded.set(el, known);
      }
      return known;
    };
    if (mark?.scope !== HIDDEN_SUBTREE) {
      const hosted = hostedRoot(body);
      const nodes = flatNodes(body, hosted);
      const entry = add(body, root, false, true, mark !== undefined || start.style.visibility !== "visible", nodes, mark?.scope === HIDDEN_OWN_TEXT);
      pushChildren(nodes, hosted ? inTree(start.ctx, hosted) : start.ctx, entry);
      let visited = 1;
      while (stack.length) {
        if (visited >= maxElements) {
          capped = true;
          break;
        }
        const [l, parentCtx, parent] = stack.pop()!;
        visited++;
        if (SKIP.has(l.tagName)) {
          if (NEVER_SHOWN.has(l.tagName)) continue;
          // A control the walk does not enter (select, svg, canvas, object, embed): judged on its own.
          const own = enter(l, parentCtx, extent);
          if (own.mark?.scope === HIDDEN_SUBTREE) continue;
          const entry = add(l, parent, true, !INLINE.test(own.style.display), hiddenBox(own.style, own.rect) || underShade(l), undefined);
          visited += inside(l, entry, add, maxElements - visited);
          continue;
        }
        const { mark, children, style, rect } = enter(l, parentCtx, extent);
        if (mark?.scope === HIDDEN_SUBTREE) continue;
        const hosted = l instanceof HTMLSlotElement ? null : hostedRoot(l);
        const nodes = flatNodes(l, hosted);
        const entry = add(
          l,
          parent,
          false,
          !INLINE.test(style.display),
          mark !== undefined || hiddenBox(style, rect) || underShade(l),
          nodes,
          mark?.scope === HIDDEN_OWN_TEXT,
        );
        pushChildren(nodes, hosted ? inTree(children, hosted) : children, entry);
      }
    }
  }
  // A page whose body no person sees shows nothing at all.
  if (html && body && !shown.has(body)) shown.delete(html);
  // Text seen or not, up the flat tree (children come after their parents in `order`): an element with text of which
  // a person sees none is described by structure only, as query's reader describes it.
  for (let i = order.length - 1; i >= 0; i--) {
    const entry = order[i]!;
    if (entry.anyText && !entry.seenText) entry.structure = true;
    const parent = entry.parent;
    if (!parent || entry.own) continue;
    parent.anyText ||= entry.anyText;
    parent.seenText ||= entry.seenText;
  }
  let built: VisibleCopy | undefined;
  return {
    capped,
    text: () => (body && shown.has(body) ? textOf(body, shown, texts) : ""),
    copy: () => (built ??= copyOf(shown, texts, maxElements)),
  };
}

/** describe()'s box test beyond the walk's: visibility on its own box, or a box under 2 px. */
function hiddenBox(style: CSSStyleDeclaration, rect: DOMRect): boolean {
  return style.visibility !== "visible" || rect.width < 2 || rect.height < 2;
}

/**
 * What a control the walk does not enter shows: a select its options (in the list it opens), an svg what it draws;
 * canvas, object and embed nothing of their own. Returns how many elements were added.
 */
function inside(l: Element, entry: Shown, add: Add, max: number): number {
  const select = l.localName === "select";
  if (!ENTERED.has(l.localName)) return 0;
  const parents = new Map<Element, Shown>([[l, entry]]);
  let added = 0;
  for (const d of l.querySelectorAll("*")) {
    const parent = d.parentElement ? parents.get(d.parentElement) : undefined;
    if (!parent || added >= max) continue;
    const drawn = select ? getComputedStyle(d).display !== "none" : d.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
    if (!drawn) continue;
    parents.set(d, add(d, parent, false, select, false, flatNodes(d, null)));
    added++;
  }
  return added;
}

/** The text a person can see under `body`, in flat-tree order, a space around each block. */
function textOf(body: Element, shown: Map<Element, Shown>, texts: Set<Node>): string {
  const parts: string[] = [];
  const stack: (Node | string)[] = [body];
  while (stack.length) {
    const n = stack.pop()!;
    if (typeof n === "string") parts.push(n);
    else if (n.nodeType === 3) {
      if (texts.has(n)) parts.push(n.nodeValue ?? "");
    } else if (n instanceof Element) {
      const entry = shown.get(n);
      if (!entry) continue;
      if (entry.block) {
        parts.push(" ");
        stack.push(" ");
      }
      if (SKIP.has(n.tagName) && !ENTERED.has(n.localName)) continue;
      const nodes = flatNodes(n, SKIP.has(n.tagName) || n instanceof HTMLSlotElement ? null : hostedRoot(n));
      for (let i = nodes.length - 1; i >= 0; i--) stack.push(nodes[i]!);
    }
  }
  return parts.join("");
}

function isPassword(el: Element): boolean {
  return el instanceof HTMLInputElement && (el.type === "password" || el.getAttribute("type")?.toLowerCase() === "password");
}

const HTML_NS = "http://www.w3.org/1999/xhtml";

/** A bare element of `l`'s name in `doc` (a plain span where the name cannot be made again). */
function placeholder(doc: Document, l: Element): Element {
  try {
    return l.namespaceURI === HTML_NS ? doc.createElement(l.localName) : doc.createElementNS(l.namespaceURI, l.localName);
  } catch {
    return doc.createElement("span");
  }
}

/** `l` as the copy shows it: its queryable attributes, its live value and state. */
function shownElement(doc: Document, l: Element, entry: Shown, host: boolean): Element {
  // A shallow clone into the inert document (no constructor runs, nothing loads), then what may not be tested goes. A
  // host is made anew: a clone would bring a clonable shadow root along, whole.
  const c = host ? placeholder(doc, l) : doc.importNode(l, false);
  if (host) {
    for (const attr of l.attributes) {
      try {
        if (attr.namespaceURI === null) c.setAttribute(attr.name, attr.value);
      } catch {
        // a name the parser took that setAttribute refuses: not queryable
      }
    }
  }
  const allowed = entry.structure ? STRUCTURE_ONLY : QUERYABLE;
  const attributes = c.attributes;
  for (let i = attributes.length - 1; i >= 0; i--) {
    const attr = attributes[i]!;
    if (attr.namespaceURI === null && (allowed.has(attr.name) || (!entry.structure && attr.name.startsWith("aria-")))) continue;
    c.removeAttributeNode(attr);
  }
  if (l instanceof HTMLInputElement || l instanceof HTMLTextAreaElement || l instanceof HTMLSelectElement) {
    c.removeAttribute("value");
    const live = l.value;
    if (!entry.structure && !isPassword(l) && (live !== "" || l.hasAttribute("value"))) c.setAttribute("value", live);
  }
  if (l instanceof HTMLInputElement && c instanceof HTMLInputElement) {
    c.checked = l.checked;
    if (!isPassword(l) && l.type !== "file") c.value = l.value;
  } else if (l instanceof HTMLTextAreaElement && !entry.structure) c.textContent = l.value;
  else if (l instanceof HTMLOptionElement && c instanceof HTMLOptionElement) c.selected = l.selected;
  return c;
}

/** The copy of the document: the live tree's shape, what is not shown left as bare placeholders. */
function copyOf(shown: Map<Element, Shown>, texts: Set<Node>, maxElements: number): VisibleCopy {
  const doc = document.implementation.createHTMLDocument("");
  const liveOf = new Map<Element, Element>();
  const live = document.documentElement;
  if (!live) return { doc, liveOf, capped: false };
  let budget = maxElements * COPY_MAX_FACTOR;
  const stack: [Node, Node | undefined][] = [[live, undefined]];
  while (stack.length) {
    const [l, parent] = stack.pop()!;
    if (l.nodeType === 3) {
      if (parent && texts.has(l)) parent.appendChild(doc.createTextNode(l.nodeValue ?? ""));
      continue;
    }
    if (!(l instanceof Element)) continue;
    if (budget-- <= 0) break;
    const entry = shown.get(l);
    const root = entry ? hostedRoot(l) : null;
    const c = entry ? shownElement(doc, l, entry, root !== null) : placeholder(doc, l);
    if (parent) parent.appendChild(c);
    else doc.replaceChild(c, doc.documentElement);
    if (!entry) continue;
    liveOf.set(c, l);
    if (l instanceof HTMLTextAreaElement) continue;
    if (root) {
      let copyRoot: ShadowRoot | undefined;
      try {
        copyRoot = c.attachShadow({ mode: "open" });
      } catch {
        // an element the copy cannot host a root on: its shadow tree is left out
      }
      if (copyRoot) for (let n = root.lastChild; n; n = n.previousSibling) stack.push([n, copyRoot]);
    }
    for (let n = l.lastChild; n; n = n.previousSibling) stack.push([n, c]);
  }
  return { doc, liveOf, capped: budget < 0 };
}

// The flat tree, as a person sees it and events travel it: shadow roots (closed ones included where this script
// can reach them), slots and what is assigned to them.

declare const chrome: { dom?: { openOrClosedShadowRoot?: (el: Element) => ShadowRoot | null } } | undefined;

/** Closed shadow roots handed in by a driver without chrome.dom (CDP reads them with DOM.describeNode). */
const adoptedRoots = new WeakMap<Element, ShadowRoot>();

/** Whether the root is new to this script. */
export function adoptShadowRoot(root: ShadowRoot): boolean {
  if (adoptedRoots.get(root.host) === root) return false;
  adoptedRoots.set(root.host, root);
  return true;
}

/** The elements attachShadow accepts besides custom elements (valid custom element names all hold a "-"). */
const HOST_NAMES = new Set([
  "article",
  "aside",
  "blockquote",
  "body",
  "div",
  "footer",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "header",
  "main",
  "nav",
  "p",
  "section",
  "span",
]);
const HTML_NS = "http://www.w3.org/1999/xhtml";

/** Whether `el` can be a shadow host at all: asking for a closed root anywhere else is wasted. */
export function canHostShadow(el: Element): boolean {
  const name = el.localName;
  return (HOST_NAMES.has(name) || name.includes("-")) && el.namespaceURI === HTML_NS;
}

/** An element's open root, or its closed one where this script can reach it; null for elements that cannot host one. */
export function hostedRoot(el: Element): ShadowRoot | null {
  return canHostShadow(el) ? (el.shadowRoot ?? shadowRootOf(el)) : null;
}

/**
 * Open and closed shadow roots; extensions see closed ones through chrome.dom (Chrome) or the element's own
 * openOrClosedShadowRoot (Firefox, to content scripts).
 */
export function shadowRootOf(el: Element): ShadowRoot | null {
  const api = typeof chrome === "object" ? chrome?.dom?.openOrClosedShadowRoot : undefined;
  if (api) {
    try {
      return api(el);
    } catch {
      return el.shadowRoot;
    }
  }
  const firefox = (el as Element & { openOrClosedShadowRoot?: ShadowRoot | null }).openOrClosedShadowRoot;
  if (firefox !== undefined) return firefox;
  return el.shadowRoot ?? adoptedRoots.get(el) ?? null;
}

/**
 * An element's children as they are rendered (the flat tree): a shadow host shows its shadow root, a slot what
 * is assigned to it (or its fallback content), any other element its own children.
 */
export function flatChildren(node: Element): Node[] {
  if (node instanceof HTMLSlotElement) {
    const assigned = node.assignedNodes({ flatten: true });
    return assigned.length ? assigned : [...node.childNodes];
  }
  const root = shadowRootOf(node);
  return root ? [...root.childNodes] : [...node.childNodes];
}

/** The slot a light-DOM child is shown in (assignedSlot is null for slots of closed roots, so those are looked up). */
function slotOf(el: Element): HTMLSlotElement | null {
  if (el.assignedSlot) return el.assignedSlot;
  const parent = el.parentElement;
  const root = parent ? shadowRootOf(parent) : null;
  if (!root) return null;
  for (const slot of root.querySelectorAll("slot")) if (slot.assignedElements().includes(el)) return slot;
  return null;
}

/**
 * The next element up the path an event takes: the slot a slotted element is shown in, else its parent, and from
 * the top of a shadow tree its host.
 */
export function composedParent(el: Element): Element | null {
  const slot = slotOf(el);
  if (slot) return slot;
  if (el.parentElement) return el.parentElement;
  const root = el.parentNode;
  return root instanceof ShadowRoot ? root.host : null;
}

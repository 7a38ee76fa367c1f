// Roles, accessible names, visibility and hit testing: the facts the broker's policy decides on.
import type { HiddenReason } from "@tabrelay/protocol";

declare const chrome: { dom?: { openOrClosedShadowRoot?: (el: Element) => ShadowRoot | null } } | undefined;

/** Closed shadow roots handed in by a driver without chrome.dom (CDP reads them with DOM.describeNode). */
const adoptedRoots = new WeakMap<Element, ShadowRoot>();

export function adoptShadowRoot(root: ShadowRoot): void {
  adoptedRoots.set(root.host, root);
}

/** Open and closed shadow roots; extensions may see closed ones through chrome.dom. */
export function shadowRootOf(el: Element): ShadowRoot | null {
  const api = typeof chrome === "object" ? chrome?.dom?.openOrClosedShadowRoot : undefined;
  if (api) {
    try {
      return api(el);
    } catch {
      return el.shadowRoot;
    }
  }
  return el.shadowRoot ?? adoptedRoots.get(el) ?? null;
}

const INVISIBLE_CHARS = /[\u200b-\u200d\u2060\ufeff\u00ad\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c]/g;

export function normalize(text: string | null | undefined): string {
  return (text ?? "").replace(INVISIBLE_CHARS, "").replace(/\s+/g, " ").trim();
}

const INPUT_ROLES: Record<string, string> = {
  button: "button",
  submit: "button",
  reset: "button",
  image: "button",
  checkbox: "checkbox",
  radio: "radio",
  range: "slider",
  number: "spinbutton",
  search: "searchbox",
  email: "textbox",
  tel: "textbox",
  text: "textbox",
  url: "textbox",
  password: "textbox",
  date: "textbox",
  "datetime-local": "textbox",
  month: "textbox",
  time: "textbox",
  week: "textbox",
  color: "button",
  file: "button",
};

const LANDMARKS: Record<string, string> = { NAV: "navigation", MAIN: "main", ASIDE: "complementary", SEARCH: "search" };

export const INTERACTIVE_ROLES = new Set([
  "button",
  "link",
  "textbox",
  "searchbox",
  "checkbox",
  "radio",
  "combobox",
  "listbox",
  "option",
  "menuitem",
  "menuitemcheckbox",
  "menuitemradio",
  "tab",
  "switch",
  "slider",
  "spinbutton",
  "treeitem",
]);

export const LANDMARK_ROLES = new Set(["banner", "navigation", "main", "contentinfo", "complementary", "form", "region", "search", "dialog", "alertdialog"]);

/** The element's role: the first valid token of role="", else the implicit role of its tag. */
export function roleOf(el: Element): string {
  const explicit = el.getAttribute("role")?.trim().split(/\s+/)[0];
  if (explicit) return explicit.toLowerCase();
  const tag = el.tagName;
  switch (tag) {
    case "A":
    case "AREA":
      return el.hasAttribute("href") ? "link" : "generic";
    case "BUTTON":
    case "SUMMARY":
      return "button";
    case "INPUT": {
      const type = (el.getAttribute("type") ?? "text").toLowerCase();
      if (type === "hidden") return "none";
      if ((type === "text" || type === "search" || type === "email" || type === "tel" || type === "url") && el.hasAttribute("list")) return "combobox";
      return INPUT_ROLES[type] ?? "textbox";
    }
    case "TEXTAREA":
      return "textbox";
    case "SELECT":
      return el.hasAttribute("multiple") || Number(el.getAttribute("size") ?? "0") > 1 ? "listbox" : "combobox";
    case "OPTION":
      return "option";
    case "IMG":
      return el.getAttribute("alt") === "" ? "presentation" : "img";
    case "H1":
    case "H2":
    case "H3":
    case "H4":
    case "H5":
    case "H6":
      return "heading";
    case "HEADER":
      return el.closest("article, aside, main, nav, section") ? "generic" : "banner";
    case "FOOTER":
      return el.closest("article, aside, main, nav, section") ? "generic" : "contentinfo";
    case "FORM":
      return "form";
    case "SECTION":
      return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") ? "region" : "generic";
    case "DIALOG":
      return "dialog";
    case "IFRAME":
    case "FRAME":
      return "iframe";
    default:
      if (el instanceof HTMLElement && el.isContentEditable && !el.parentElement?.isContentEditable) return "textbox";
      return LANDMARKS[tag] ?? "generic";
  }
}

const NAME_FROM_CONTENT = new Set(["button", "link", "heading", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "treeitem", "checkbox", "radio", "switch", "cell", "columnheader", "rowheader", "tooltip"]);

function byIds(el: Element, attr: string): Element[] {
  const ids = el.getAttribute(attr)?.trim().split(/\s+/) ?? [];
  const root = el.getRootNode();
  const lookup = root instanceof ShadowRoot || root instanceof Document ? root : el.ownerDocument;
  return ids.map((id) => lookup.getElementById(id)).filter((e): e is HTMLElement => e !== null);
}

function labelsOf(el: Element): Element[] {
  return el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement ? [...(el.labels ?? [])] : [];
}

function isButtonInput(el: Element): el is HTMLInputElement {
  return el instanceof HTMLInputElement && ["button", "submit", "reset", "image"].includes(el.type);
}

/** A practical subset of the accessible-name computation (accname 1.2). */
export function accessibleName(el: Element, role = roleOf(el)): string {
  const labelledBy = byIds(el, "aria-labelledby");
  if (labelledBy.length) return normalize(labelledBy.map((e) => e.textContent ?? "").join(" "));
  const aria = normalize(el.getAttribute("aria-label"));
  if (aria) return aria;
  if (isButtonInput(el)) return normalize(el.type === "image" ? el.alt || el.value : el.value) || (el.type === "submit" ? "Submit" : el.type === "reset" ? "Reset" : "");
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) {
    const labels = labelsOf(el).map((l) => normalize(l.textContent)).filter(Boolean);
    if (labels.length) return labels.join(" ");
    return normalize(el.getAttribute("title")) || normalize(el.getAttribute("placeholder"));
  }
  if (el instanceof HTMLImageElement) return normalize(el.alt) || normalize(el.title);
  if (el.tagName === "IFRAME") return normalize(el.getAttribute("title")) || normalize(el.getAttribute("name"));
  if (NAME_FROM_CONTENT.has(role)) {
    const content = normalize(flatTextContent(el)) || imagesAlt(el);
    if (content) return content.slice(0, 200);
  }
  return normalize(el.getAttribute("title"));
}

function imagesAlt(el: Element): string {
  return normalize([...el.querySelectorAll("img[alt], svg[aria-label]")].map((i) => i.getAttribute("alt") ?? i.getAttribute("aria-label") ?? "").join(" "));
}

/** What a person sees as the control's label (the write policy matches it together with the name). */
export function visibleLabel(el: Element): string {
  return readLabel(el).text;
}

/**
 * The control's label as a person reads it (generated content included, text they cannot see left out), and why
 * that reading cannot be trusted, if it cannot (see labelConflictOf).
 */
export function readLabel(el: Element): { text: string; conflict?: string } {
  const read = (parts: Element[]): { text: string; conflict?: string } => {
    const texts: string[] = [];
    let conflict: string | undefined;
    for (const part of parts) {
      const rendered = renderedText(part);
      conflict ??= labelConflictOf(rendered);
      if (rendered.text) texts.push(rendered.text);
    }
    return { text: texts.join(" "), ...(conflict ? { conflict } : {}) };
  };
  if (isButtonInput(el)) return { text: normalize(el.type === "image" ? el.alt : el.value) };
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) {
    const labels = read(labelsOf(el).filter((l) => isVisible(l)));
    if (labels.text) return labels;
    const labelledBy = read(byIds(el, "aria-labelledby").filter((l) => isVisible(l)));
    if (labelledBy.text) return labelledBy;
    if ((el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && !el.value) return { text: normalize(el.placeholder), ...(labels.conflict ? { conflict: labels.conflict } : {}) };
    const conflict = labels.conflict ?? labelledBy.conflict;
    return { text: "", ...(conflict ? { conflict } : {}) };
  }
  const own = read([el]);
  if (own.text || own.conflict) return own;
  const labelledBy = read(byIds(el, "aria-labelledby").filter((l) => isVisible(l)));
  if (labelledBy.text || labelledBy.conflict) return labelledBy;
  return { text: imagesAlt(el) };
}

function isVisible(el: Element): boolean {
  return el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
}

/** Why a person could not see this element, or undefined when they can. */
export function hiddenReason(el: Element, requireInViewport: boolean): HiddenReason | undefined {
  if (!el.isConnected) return "detached";
  if (el.closest("[inert]")) return "inert";
  if (el.closest('[aria-hidden="true"]')) return "aria-hidden";
  if (!el.checkVisibility()) return "display";
  if (!el.checkVisibility({ checkVisibilityCSS: true })) return "visibility";
  if (!el.checkVisibility({ checkOpacity: true })) return "opacity";
  for (let node: Element | null = el; node; node = node.parentElement) {
    if (Number(getComputedStyle(node).opacity) < 0.05) return "opacity";
  }
  const rect = el.getBoundingClientRect();
  if (rect.width < 2 || rect.height < 2) return "size";
  if (clipped(el, rect)) return "clipped";
  if (requireInViewport && !intersectsViewport(rect)) return "offscreen";
  return undefined;
}

export function intersectsViewport(rect: DOMRect): boolean {
  return rect.bottom > 0 && rect.right > 0 && rect.top < innerHeight && rect.left < innerWidth;
}

/** Clipped away by clip / clip-path or by an ancestor with overflow hidden (the "sr-only" family). */
function clipped(el: Element, rect: DOMRect): boolean {
  const style = getComputedStyle(el);
  if (/^rect\(0(px)?,? 0(px)?,? 0(px)?,? 0(px)?\)$/.test(style.clip.replace(/\s+/g, " ").replace(/ /g, ""))) return true;
  if (/inset\(\s*(50|100)%/.test(style.clipPath)) return true;
  for (let node = el.parentElement; node; node = node.parentElement) {
    const s = getComputedStyle(node);
    if (s.overflow === "visible" && s.overflowX === "visible" && s.overflowY === "visible") continue;
    const box = node.getBoundingClientRect();
    const w = Math.min(rect.right, box.right) - Math.max(rect.left, box.left);
    const h = Math.min(rect.bottom, box.bottom) - Math.max(rect.top, box.top);
    if (w < 2 || h < 2) return true;
  }
  return false;
}

export function describeElement(el: Element): string {
  const id = el.id ? `#${el.id}` : "";
  const cls = typeof el.className === "string" && el.className.trim() ? `.${el.className.trim().split(/\s+/).slice(0, 2).join(".")}` : "";
  const text = normalize(el.textContent).slice(0, 40);
  return `<${el.tagName.toLowerCase()}${id}${cls}>${text ? ` "${text}"` : ""}`;
}

/** The element a click at the element's centre would reach, when it is not the element (or its label). */
export function coveringElement(el: Element): Element | undefined {
  const rect = el.getBoundingClientRect();
  const x = rect.left + rect.width / 2;
  const y = rect.top + rect.height / 2;
  const root = el.getRootNode();
  const hit = (root instanceof ShadowRoot ? root : document).elementFromPoint(x, y);
  if (!hit) return undefined;
  if (hit === el || el.contains(hit)) return undefined;
  // A shadow host reports itself for hits inside its tree; a <label> forwards clicks to its control.
  if (hit.contains(el) && (shadowRootOf(hit) !== null || hit.tagName === "LABEL")) return undefined;
  if (labelsOf(el).includes(hit) || labelsOf(el).some((l) => l.contains(hit))) return undefined;
  return hit;
}

/** Attribute values a decoy might carry instructions in. */
export function attributeText(el: Element): string {
  const parts: string[] = [];
  for (const attr of el.attributes) {
    if (attr.name === "style" || attr.name === "class" || attr.name === "href" || attr.name === "src") continue;
    if (attr.value) parts.push(attr.value);
  }
  return normalize(parts.join(" ")).slice(0, 1000);
}

// ---- what a person reads: DOM text plus CSS-generated content ------------------------------------

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

/** Text nodes reached reading down the flat tree, for names from content (textContent stops at slots and roots). */
function flatTextContent(el: Element): string {
  if (shadowRootOf(el) === null && el.querySelector("slot") === null) return el.textContent ?? "";
  const parts: string[] = [];
  let budget = 5000;
  const walk = (node: Node): void => {
    if (--budget < 0) return;
    if (node instanceof Text) parts.push(node.data);
    else if (node instanceof Element) {
      if (node.tagName === "SCRIPT" || node.tagName === "STYLE" || node.tagName === "TEMPLATE") return;
      for (const child of flatChildren(node)) walk(child);
    }
  };
  walk(el);
  return parts.join("");
}

/** Elements read per label at most: a larger one cannot be read as a person would, and is reported so. */
const MAX_LABEL_ELEMENTS = 2000;

/** Private-use code points: icon fonts draw pictures with them, never words. */
const PRIVATE_USE = /[\p{Co}]/gu;
const WORDY = /[\p{L}\p{N}]/u;

function alphaOf(color: string): number {
  if (color === "transparent") return 0;
  const m = /^rgba?\(([^)]*)\)$/.exec(color.trim());
  if (!m) return 1;
  const parts = m[1]!.split(/[\s,/]+/).filter(Boolean);
  if (parts.length < 4) return 1;
  const a = parts[3]!;
  return a.endsWith("%") ? Number(a.slice(0, -1)) / 100 : Number(a);
}

/** Whether text drawn with this style leaves ink a person can read (fill colour, stroke, size). */
function inkVisible(style: CSSStyleDeclaration): boolean {
  if (style.visibility !== "visible") return false;
  if (Number.parseFloat(style.fontSize) < 4) return false;
  const fill = style.getPropertyValue("-webkit-text-fill-color") || style.color;
  if (alphaOf(fill) >= 0.1) return true;
  const stroke = Number.parseFloat(style.getPropertyValue("-webkit-text-stroke-width") || "0");
  return stroke > 0 && alphaOf(style.getPropertyValue("-webkit-text-stroke-color")) >= 0.1;
}

/** The strings of a computed `content` value (attr() is already resolved there); counters, quotes, images and the alt text after "/" are not text a label is made of. */
export function contentStrings(value: string): string {
  if (value === "none" || value === "normal" || value === "") return "";
  let out = "";
  let i = 0;
  while (i < value.length) {
    const c = value[i]!;
    if (c === "/") break; // alternative text for speech, not drawn
    if (c === '"' || c === "'") {
      i++;
      while (i < value.length && value[i] !== c) {
        if (value[i] === "\\") {
          const hex = /^[0-9a-fA-F]{1,6} ?/.exec(value.slice(i + 1));
          if (hex) {
            out += String.fromCodePoint(Math.min(Number.parseInt(hex[0].trim(), 16), 0x10ffff));
            i += 1 + hex[0].length;
          } else {
            out += value[i + 1] ?? "";
            i += 2;
          }
        } else {
          out += value[i];
          i++;
        }
      }
      i++;
      continue;
    }
    if (c === "(") {
      // counter(...), url(...), attr(...) left unresolved: skip the whole function.
      let depth = 1;
      i++;
      while (i < value.length && depth > 0) {
        if (value[i] === "(") depth++;
        else if (value[i] === ")") depth--;
        i++;
      }
      continue;
    }
    i++;
  }
  return out.replace(PRIVATE_USE, "");
}

/** Counter styles that draw only numbers, letters of the alphabet in order or bullets. */
const PLAIN_COUNTER_STYLES = new Set(["decimal", "decimal-leading-zero", "lower-roman", "upper-roman", "lower-alpha", "upper-alpha", "lower-latin", "upper-latin", "lower-greek", "disc", "circle", "square", "none"]);

/** A custom @counter-style can draw any words ("symbols: 'Delete account'"): such content cannot be read here. */
function customCounter(content: string): boolean {
  for (const m of content.matchAll(/counters?\(([^)]*)\)/g)) {
    const args = (m[1] ?? "").split(",").map((a) => a.trim());
    const style = m[0].startsWith("counters(") ? args[2] : args[1];
    if (style !== undefined && !PLAIN_COUNTER_STYLES.has(style.toLowerCase())) return true;
  }
  return false;
}

function generatedText(el: Element, which: "::before" | "::after" | "::marker", opacity: number): string {
  const style = getComputedStyle(el, which);
  const text = contentStrings(style.content) + (customCounter(style.content) ? " [text drawn by a custom CSS counter style] " : "");
  // Content with no letter or digit (arrows, stars, separators, icon glyphs) decorates; it is not words.
  if (!WORDY.test(text) || style.display === "none" || opacity * Number(style.opacity || "1") < 0.05 || !inkVisible(style)) return "";
  return text;
}

export interface RenderedText {
  /** What a person reads, generated content included, normalised. */
  text: string;
  /** DOM text inside the element that a person cannot read (transparent, tiny, moved out of the element's box). */
  unseen: string;
  /** Text that CSS generated content adds. */
  generated: string;
  /** The element had more than MAX_LABEL_ELEMENTS elements inside: the texts are incomplete. */
  capped: boolean;
}

const INLINE_DISPLAY = /^(inline|contents|ruby|ruby-text)$/;

/** Reads the element as a person sees it: visible text nodes and ::before / ::after content, in order. */
export function renderedText(el: Element): RenderedText {
  const shown: string[] = [];
  const unseen: string[] = [];
  const generated: string[] = [];
  const box = el.getBoundingClientRect();
  let elements = 0;
  let capped = false;
  const textSeen = (node: Text): boolean => {
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      // Under 4 px high (tiny type, a scale() transform) no one reads it.
      if (r.width >= 1 && r.height >= 4 && r.right > box.left && r.left < box.right && r.bottom > box.top && r.top < box.bottom) return true;
    }
    return false;
  };
  const walk = (node: Element, opacity: number): void => {
    if (capped) return;
    if (++elements > MAX_LABEL_ELEMENTS) {
      capped = true;
      return;
    }
    const style = getComputedStyle(node);
    // display: contents (slots, wrappers) has no box of its own, so checkVisibility() is false, but its children show.
    if (style.display === "none" || (style.display !== "contents" && !node.checkVisibility())) return;
    const own = opacity * Number(style.opacity || "1");
    const block = !INLINE_DISPLAY.test(style.display);
    if (block) shown.push(" ");
    if (style.display === "list-item") {
      const marker = generatedText(node, "::marker", own);
      if (marker) {
        shown.push(" ", marker, " ");
        generated.push(marker);
      }
    }
    const before = generatedText(node, "::before", own);
    if (before) {
      shown.push(" ", before, " ");
      generated.push(before);
    }
    const ink = own >= 0.05 && inkVisible(style);
    for (const child of flatChildren(node)) {
      if (child instanceof Text) {
        const data = child.data;
        if (!data.trim()) {
          shown.push(data);
          continue;
        }
        if (ink && textSeen(child)) shown.push(data);
        else unseen.push(data);
      } else if (child instanceof Element) {
        if (child.tagName === "BR") shown.push(" ");
        else if (child.tagName !== "SCRIPT" && child.tagName !== "STYLE" && child.tagName !== "TEMPLATE") walk(child, own);
      }
    }
    const after = generatedText(node, "::after", own);
    if (after) {
      shown.push(" ", after, " ");
      generated.push(after);
    }
    if (block) shown.push(" ");
  };
  walk(el, 1);
  return { text: normalize(shown.join("")), unseen: normalize(unseen.join(" ")), generated: normalize(generated.join(" ")), capped };
}

/** Why the rendered label cannot be trusted (see ElementFacts.labelConflict), or undefined. */
export function labelConflictOf(rendered: RenderedText): string | undefined {
  if (rendered.capped) return `it holds more than ${MAX_LABEL_ELEMENTS} elements, too many to read its label as a person would`;
  if (WORDY.test(rendered.generated) && WORDY.test(rendered.unseen)) {
    return `its text ${JSON.stringify(rendered.unseen.slice(0, 80))} is not visible while CSS-generated content shows ${JSON.stringify(rendered.generated.slice(0, 80))}`;
  }
  return undefined;
}

// ---- effective state ---------------------------------------------------------------------------

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

function inFirstLegend(el: Element, fieldset: HTMLFieldSetElement): boolean {
  const legend = [...fieldset.children].find((c) => c instanceof HTMLLegendElement);
  return legend !== undefined && legend.contains(el);
}

/**
 * Disabled as HTML and ARIA define it, whatever kind of element: the control's own state (which covers a disabled
 * fieldset outside its first legend and a disabled optgroup for form controls), an inert subtree, aria-disabled on
 * it or an ancestor, and, for elements that are not form controls, a disabled fieldset or optgroup around them.
 */
export function effectivelyDisabled(el: Element): boolean {
  if (el.matches(":disabled")) return true;
  for (let node: Element | null = el; node; node = composedParent(node)) {
    if (node.hasAttribute("inert")) return true;
    if (node.getAttribute("aria-disabled")?.trim().toLowerCase() === "true") return true;
    if (node !== el && node instanceof HTMLFieldSetElement && node.disabled && !inFirstLegend(el, node)) return true;
    if (node instanceof HTMLOptGroupElement && node.disabled) return true;
  }
  return false;
}

// ---- what a click reaches (HTML activation behaviour) --------------------------------------------

/** Interactive content (HTML), as Chromium's label tests it: a click inside one is not forwarded by the label. */
function isInteractiveContent(el: Element): boolean {
  if (el instanceof HTMLAnchorElement) return el.hasAttribute("href");
  if (el instanceof HTMLInputElement) return el.type !== "hidden";
  if (el instanceof HTMLImageElement || el instanceof HTMLObjectElement) return el.hasAttribute("usemap");
  if (el instanceof HTMLMediaElement) return el.hasAttribute("controls");
  return (
    el instanceof HTMLButtonElement ||
    el instanceof HTMLSelectElement ||
    el instanceof HTMLTextAreaElement ||
    el instanceof HTMLLabelElement ||
    el instanceof HTMLDetailsElement ||
    el instanceof HTMLIFrameElement ||
    el instanceof HTMLEmbedElement
  );
}

const ACTIVATING_INPUTS = new Set(["checkbox", "radio", "submit", "image", "reset", "button", "file", "color"]);

/** Elements whose own click does something (HTML activation behaviour) besides the events a page listens to. */
function activatesByItself(el: Element): boolean {
  if (el instanceof HTMLAnchorElement || el instanceof HTMLAreaElement) return el.hasAttribute("href");
  if (el instanceof HTMLButtonElement) return true;
  if (el instanceof HTMLInputElement) return ACTIVATING_INPUTS.has(el.type);
  return false;
}

function shadowIncludingContains(outer: Element, inner: Element): boolean {
  for (let node: Element | null = inner; node; node = composedParent(node)) if (node === outer) return true;
  return false;
}

/**
 * The elements a click on `el` reaches through HTML's activation behaviours, besides `el` itself: the control
 * of a label the click lands in (unless it lands in interactive content inside the label), an enclosing link or
 * button (Chromium follows a link around a button), and, for each of those, what a click on it reaches in turn.
 * A <summary> only toggles its <details> and is not listed. Clicks a page's own script forwards are not seen here.
 */
export function activationReach(el: Element): { el: Element; via: string }[] {
  const reached: { el: Element; via: string }[] = [];
  const seen = new Set<Element>([el]);
  const visit = (target: Element, depth: number): void => {
    if (depth > 4) return;
    let interactiveSoFar = false;
    for (let node: Element | null = target; node; node = composedParent(node)) {
      if (node instanceof HTMLLabelElement) {
        const control = node.control;
        if (control && !shadowIncludingContains(control, target) && !(interactiveSoFar && node !== target) && !seen.has(control)) {
          seen.add(control);
          reached.push({ el: control, via: node === target ? "the control of this label" : "the control of the label it is in" });
          visit(control, depth + 1);
        }
      } else if (node !== target && activatesByItself(node) && !seen.has(node)) {
        seen.add(node);
        reached.push({ el: node, via: node instanceof HTMLAnchorElement || node instanceof HTMLAreaElement ? "the link it is inside" : "the control it is inside" });
      }
      if (isInteractiveContent(node)) interactiveSoFar = true;
    }
  };
  visit(el, 0);
  return reached;
}

// ---- what Enter submits (HTML implicit submission) -------------------------------------------------

const NO_IMPLICIT_SUBMIT = new Set(["submit", "reset", "button", "image", "file", "hidden"]);
const BLOCKS_IMPLICIT_SUBMISSION = new Set(["text", "search", "url", "tel", "email", "password", "date", "month", "week", "time", "datetime-local", "number"]);

function isSubmitButton(el: Element): el is HTMLButtonElement | HTMLInputElement {
  return (el instanceof HTMLButtonElement && el.type === "submit") || (el instanceof HTMLInputElement && (el.type === "submit" || el.type === "image"));
}

/** The form's default button: its first submit button in tree order, form= owners and image buttons included. */
export function defaultButton(form: HTMLFormElement): HTMLButtonElement | HTMLInputElement | undefined {
  const candidates: Element[] = [...form.elements].filter(isSubmitButton);
  // form.elements leaves out <input type=image> (for historical reasons).
  const root = form.getRootNode();
  if (root instanceof Document || root instanceof ShadowRoot) {
    for (const image of root.querySelectorAll("input")) if (image.type === "image" && image.form === form) candidates.push(image);
  }
  candidates.sort((a, b) => (a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  const first = candidates[0];
  return first && isSubmitButton(first) ? first : undefined;
}

/**
 * What an Enter in `el` submits, following HTML's implicit submission: in a single-line field of a form, a click
 * on the form's default button (nothing if that button is disabled); with no submit button, the form itself,
 * unless more than one field blocks implicit submission. `none` says why nothing is submitted.
 */
export function implicitSubmission(el: Element): { form: HTMLFormElement; button?: HTMLButtonElement | HTMLInputElement } | { none: string } {
  if (el instanceof HTMLTextAreaElement) return { none: "Enter in a text area adds a line; it submits no form" };
  if (!(el instanceof HTMLInputElement)) return { none: `Enter on a <${el.tagName.toLowerCase()}> submits no form (only single-line fields do)` };
  if (NO_IMPLICIT_SUBMIT.has(el.type)) return { none: `Enter on an <input type=${el.type}> submits no form here` };
  const form = el.form;
  if (!form) return { none: "the field belongs to no form" };
  const button = defaultButton(form);
  if (button) {
    if (button.matches(":disabled")) return { none: "its form's default button is disabled" };
    return { form, button };
  }
  const blocking = [...form.elements].filter((e) => e instanceof HTMLInputElement && BLOCKS_IMPLICIT_SUBMISSION.has(e.type)).length;
  if (blocking > 1) return { none: `its form has no submit button and ${blocking} fields, so Enter submits nothing` };
  return { form };
}

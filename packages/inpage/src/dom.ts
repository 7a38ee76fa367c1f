// Roles, accessible names, visibility and hit testing: the facts the broker's policy decides on.
import type { HiddenReason } from "@tabrelay/protocol";
import { seenText } from "./content.js";
import { shadowRootOf } from "./flatTree.js";
import { flatTextContent, labelConflictOf, normalize, renderedText } from "./rendered.js";

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

const NAME_FROM_CONTENT = new Set([
  "button",
  "link",
  "heading",
  "tab",
  "menuitem",
  "menuitemcheckbox",
  "menuitemradio",
  "option",
  "treeitem",
  "checkbox",
  "radio",
  "switch",
  "cell",
  "columnheader",
  "rowheader",
  "tooltip",
]);

function byIds(el: Element, attr: string): Element[] {
  const ids = el.getAttribute(attr)?.trim().split(/\s+/) ?? [];
  if (ids.length === 0) return [];
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
  if (isButtonInput(el))
    return normalize(el.type === "image" ? el.alt || el.value : el.value) || (el.type === "submit" ? "Submit" : el.type === "reset" ? "Reset" : "");
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) {
    const labels = labelsOf(el)
      .map((l) => normalize(l.textContent))
      .filter(Boolean);
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
    if ((el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && !el.value)
      return { text: normalize(el.placeholder), ...(labels.conflict ? { conflict: labels.conflict } : {}) };
    const conflict = labels.conflict ?? labelledBy.conflict;
    return { text: "", ...(conflict ? { conflict } : {}) };
  }
  const own = read([el]);
  if (own.text || own.conflict) return own;
  const labelledBy = read(byIds(el, "aria-labelledby").filter((l) => isVisible(l)));
  if (labelledBy.text || labelledBy.conflict) return labelledBy;
  return { text: imagesAlt(el) };
}

/** A label part a person can see (the reader's rule). */
function isVisible(el: Element): boolean {
  return el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true }) && seenText(el, 0).hidden === undefined;
}

/**
 * Why a person could not see this element, or undefined when they can: the content reader's rule (seenText: what
 * read_url / read_page withhold, query and the snapshot hide), then what a control needs besides to be used: no inert
 * or aria-hidden ancestor (an app root behind a modal included), a box of its own, and for the target of an action a
 * place in the viewport.
 */
export function hiddenReason(el: Element, requireInViewport: boolean): HiddenReason | undefined {
  if (!el.isConnected) return "detached";
  if (el.closest("[inert]")) return "inert";
  if (el.closest('[aria-hidden="true"]')) return "aria-hidden";
  const seen = seenText(el, 0);
  // Words CSS draws over text no one can see are the label a person reads: the label rules judge them
  // (labelConflictOf), the element itself is shown.
  if (seen.hidden !== undefined && !(seen.textOnly && renderedText(el).generated !== "")) return seen.hidden;
  // visibility: hidden on the control's own box (its text aside, which the reader judges).
  if (!el.checkVisibility({ checkVisibilityCSS: true })) return "visibility";
  const rect = el.getBoundingClientRect();
  if (rect.width < 2 || rect.height < 2) return "size";
  if (requireInViewport && !intersectsViewport(rect)) return "offscreen";
  return undefined;
}

export function intersectsViewport(rect: DOMRect): boolean {
  return rect.bottom > 0 && rect.right > 0 && rect.top < innerHeight && rect.left < innerWidth;
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

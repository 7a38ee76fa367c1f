// What a person reads: DOM text plus CSS-generated content, with what they cannot see left out, and the
// normalised form such text is compared in.
import { flatChildren, hostedRoot } from "./flatTree.js";

const INVISIBLE_CHARS = /[\u200b-\u200d\u2060\ufeff\u00ad\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c]/g;

/** Whether normalize would change the text: an invisible character, any whitespace but a lone inner space. */
const NOT_NORMAL = new RegExp(`${INVISIBLE_CHARS.source}|\\s\\s|[^\\S ]|^\\s|\\s$`);

export function normalize(text: string | null | undefined): string {
  if (!text) return "";
  if (!NOT_NORMAL.test(text)) return text;
  return text.replace(INVISIBLE_CHARS, "").replace(/\s+/g, " ").trim();
}

/** Text nodes reached reading down the flat tree, for names from content (textContent stops at slots and roots). */
export function flatTextContent(el: Element): string {
  // A slot is an element: one without element children holds none.
  if (hostedRoot(el) === null && (el.firstElementChild === null || el.querySelector("slot") === null)) return el.textContent ?? "";
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

/** Said in place of generated text the reader cannot resolve: it has letters, so no label matches it. */
const UNREADABLE = " [generated text that could not be read] ";

/** A CSS string starting at value[i] (its quote): its text, escapes undone, and the index past its closing quote. */
function cssString(value: string, i: number): { text: string; end: number } {
  const quote = value[i]!;
  let text = "";
  i++;
  while (i < value.length && value[i] !== quote) {
    if (value[i] === "\\") {
      const hex = /^[0-9a-fA-F]{1,6} ?/.exec(value.slice(i + 1));
      if (hex) {
        text += String.fromCodePoint(Math.min(Number.parseInt(hex[0].trim(), 16), 0x10ffff));
        i += 1 + hex[0].length;
      } else {
        text += value[i + 1] ?? "";
        i += 2;
      }
    } else {
      text += value[i];
      i++;
    }
  }
  return { text, end: i + 1 };
}

/**
 * The strings of a computed `content` value; counters' numbers, quotes, images and the alt text after "/" are not
 * text a label is made of. attr() is resolved in the computed value by Chrome; Firefox leaves it as written, so it
 * is resolved here against `el`, the element the ::before or ::after belongs to (its words are drawn all the same).
 * What cannot be read with certainty (an unbalanced function, an attribute in a namespace) is said as UNREADABLE:
 * the gate then matches no label, rather than reading less than the person sees.
 */
export function contentStrings(value: string, el?: Element): string {
  if (value === "none" || value === "normal" || value === "") return "";
  let out = "";
  let i = 0;
  while (i < value.length) {
    const c = value[i]!;
    if (c === "/") break; // alternative text for speech, not drawn
    if (c === '"' || c === "'") {
      const string = cssString(value, i);
      out += string.text;
      i = string.end;
      continue;
    }
    if (c === "(") {
      const name = /([a-zA-Z-]+)$/.exec(value.slice(0, i))?.[1]?.toLowerCase();
      const start = i + 1;
      // The whole function, its quoted arguments skipped as strings (a bracket inside one is text, not syntax).
      const strings: string[] = [];
      let depth = 1;
      i++;
      while (i < value.length && depth > 0) {
        const d = value[i]!;
        if (d === '"' || d === "'") {
          const string = cssString(value, i);
          strings.push(string.text);
          i = string.end;
          continue;
        }
        if (d === "(") depth++;
        else if (d === ")") depth--;
        i++;
      }
      if (depth > 0) return (out + UNREADABLE).replace(PRIVATE_USE, "");
      if (name === "attr") out += el ? attrText(value.slice(start, i - 1), el) : UNREADABLE;
      // counters(name, "separator"): the separator is drawn between the numbers.
      else if (name === "counters") out += strings[0] ?? "";
      continue;
    }
    i++;
  }
  return out.replace(PRIVATE_USE, "");
}

/** A CSS identifier as written in a computed value, its escapes undone ("data-a\\.b" is the attribute data-a.b). */
function cssIdent(text: string): string {
  return text.replace(/\\([0-9a-fA-F]{1,6} ?|[^\n])/g, (_, escaped: string) =>
    /^[0-9a-fA-F]{1,6} ?$/.test(escaped) ? String.fromCodePoint(Math.min(Number.parseInt(escaped.trim(), 16), 0x10ffff)) : escaped,
  );
}

/** attr(name), attr(name type) or attr(name type, fallback) as drawn for `el`: the attribute's value, else the fallback. */
function attrText(args: string, el: Element): string {
  const comma = args.search(/,(?=(?:[^"']|"[^"]*"|'[^']*')*$)/);
  const head = (comma < 0 ? args : args.slice(0, comma)).trim();
  const fallback = comma < 0 ? "" : args.slice(comma + 1).trim();
  // The name as written, up to its type: a hex escape takes the one space after it (backslash, "31 x" is "1x").
  const written = /^(?:\\[0-9a-fA-F]{1,6} ?|\\.|[^\s\\])+/.exec(head)?.[0] ?? "";
  // An attribute in a namespace (ns|name) is not one getAttribute can name.
  if (/^[^|]*\|/.test(written.replace(/\\./g, "__")) && !written.startsWith("|")) return UNREADABLE;
  const name = cssIdent(written.replace(/^\|/, ""));
  const value = name ? el.getAttribute(name) : null;
  if (value !== null) return value;
  return fallback ? contentStrings(fallback, el) : "";
}

/** Counter styles that draw only numbers, letters of the alphabet in order or bullets. */
const PLAIN_COUNTER_STYLES = new Set([
  "decimal",
  "decimal-leading-zero",
  "lower-roman",
  "upper-roman",
  "lower-alpha",
  "upper-alpha",
  "lower-latin",
  "upper-latin",
  "lower-greek",
  "disc",
  "circle",
  "square",
  "none",
]);

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
  const text = contentStrings(style.content, el) + (customCounter(style.content) ? " [text drawn by a custom CSS counter style] " : "");
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

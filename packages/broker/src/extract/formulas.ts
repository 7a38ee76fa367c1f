// Formulas: MathJax, KaTeX, MathML and TeX images turned into TeX before pruning, so that neither Readability (which
// drops MathJax's containers as menus) nor the hidden-text rules (KaTeX and MathJax mark their drawn glyphs
// aria-hidden and keep the words in MathML or TeX beside them) lose the math. Each formula becomes one placeholder
// element holding its TeX, which Turndown writes as $...$ or, for a display formula, a $$ block.
//
// Text a page hides from people stays withheld: a source marked hidden by the in-page reader, or hidden by the
// `hidden` attribute or an inline style, is never used (the formula is then left to pruning, as any other element).
// MathJax 2's <script type="math/tex"> is not drawn itself: its TeX is used only beside the formula MathJax drew
// from it, when every letter and digit it holds is among the drawn ones and every command is a known TeX command.
import { HIDDEN_MARK_ATTR, HIDDEN_SUBTREE } from "@tabrelay/protocol";
import { isElement, type DomElement } from "./dom.js";
import { annotationTex, mathmlToTex, mathTokens } from "./mathml.js";
import { TEX_COMMANDS } from "./texCommands.js";

/** The placeholder's attribute: "inline" or "block". Turndown's formula rule reads it. */
export const FORMULA_ATTR = "data-tabrelay-formula";

/** Cheap test on the HTML: pages without any of these skip the formula pass. */
const MAY_HOLD_FORMULAS = /<math[\s>]|<mjx-container|\bkatex\b|math\/tex|mwe-math-fallback|\bclass="latex"/i;

export function mayHoldFormulas(html: string): boolean {
  return MAY_HOLD_FORMULAS.test(html);
}

const HIDDEN_STYLE = /(?:^|[;\s])(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))/i;

/** Hidden from people by the in-page reader's mark, the `hidden` attribute or an inline style. */
function hiddenFromPeople(el: DomElement): boolean {
  return el.getAttribute(HIDDEN_MARK_ATTR) === HIDDEN_SUBTREE || el.hasAttribute("hidden") || HIDDEN_STYLE.test(el.getAttribute("style") ?? "");
}

/** As hiddenFromPeople, or its own text drawn invisibly (the reader's own-text mark): no drawn letters there. */
function drawsNoText(el: DomElement): boolean {
  return hiddenFromPeople(el) || el.hasAttribute(HIDDEN_MARK_ATTR);
}

/** `el` and its ancestors up to (and with) `top` are shown. */
function shownWithin(el: DomElement, top: DomElement): boolean {
  for (let n: DomElement | null = el; n !== null; n = isElement(n.parentNode) ? n.parentNode : null) {
    if (hiddenFromPeople(n)) return false;
    if (n === top) return true;
  }
  return true;
}

/** Replaces `target` by a placeholder holding `tex`. */
function place(target: DomElement, tex: string, block: boolean): void {
  const clean = tex.replace(/\s+/g, " ").trim();
  if (clean === "") return;
  const code = target.ownerDocument.createElement("code");
  code.setAttribute(FORMULA_ATTR, block ? "block" : "inline");
  code.textContent = clean;
  target.replaceWith(code);
}

/**
 * The TeX of a <math> element: its TeX annotation when it says no more than the formula draws (an annotation is never
 * drawn itself: a page could hide words there), else its MathML written as TeX.
 */
function texOfMath(math: DomElement): string {
  const annotation = annotationTex(math);
  const tex = annotation !== undefined && texAgreesWithDrawn(displayStyleless(annotation), mathTokens(math)) ? annotation : mathmlToTex(math);
  return displayStyleless(tex);
}

/** Wikipedia wraps every formula in {\displaystyle ...}: the wrapper says nothing to a reader. */
function displayStyleless(tex: string): string {
  const m = /^\{\\(?:displaystyle|textstyle)\s*([\s\S]*)\}$/.exec(tex.trim());
  return m?.[1] !== undefined ? m[1].trim() : tex.trim();
}

function lettersAndDigits(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const ch of text.match(/[\p{L}\p{N}]/gu) ?? []) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  return counts;
}

/** TeX that says no more than what is drawn: known commands only, and no letter or digit that is not drawn. */
export function texAgreesWithDrawn(tex: string, drawn: string): boolean {
  for (const m of tex.matchAll(/\\([a-zA-Z]+)/g)) if (!TEX_COMMANDS.has(m[1] ?? "")) return false;
  const words = tex.replace(/\\(?:begin|end)\{[a-zA-Z*]+\}/g, " ").replace(/\\[a-zA-Z]+/g, " ");
  const have = lettersAndDigits(drawn);
  for (const [ch, n] of lettersAndDigits(words)) if ((have.get(ch) ?? 0) < n) return false;
  return true;
}

/** Text of `el` outside elements hidden from people and outside `skip`. */
function shownText(el: DomElement, skip: (e: DomElement) => boolean): string {
  let out = "";
  for (let i = 0; i < el.childNodes.length; i++) {
    const c = el.childNodes[i];
    if (c === undefined) continue;
    if (isElement(c)) {
      if (!drawsNoText(c) && !skip(c)) out += shownText(c, skip);
    } else out += c.nodeValue ?? "";
  }
  return out;
}

function mathIn(container: DomElement): DomElement | undefined {
  const math = container.querySelector("math");
  return math !== null && shownWithin(math, container) ? math : undefined;
}

function katex(root: DomElement): void {
  for (const el of Array.from(root.querySelectorAll(".katex"))) {
    if (!root.contains(el) || hiddenFromPeople(el)) continue;
    const math = mathIn(el);
    if (math === undefined) continue; // KaTeX's HTML alone: its text is converted as any text
    const display = el.closest(".katex-display");
    place(display ?? el, texOfMath(math), display !== null || math.getAttribute("display") === "block");
  }
}

function mathjax3(root: DomElement): void {
  for (const el of Array.from(root.querySelectorAll("mjx-container"))) {
    if (!root.contains(el) || hiddenFromPeople(el)) continue;
    const math = mathIn(el);
    if (math !== undefined) place(el, texOfMath(math), el.getAttribute("display") === "true");
  }
}

const MATHJAX2_FRAME = /(?:^|\s)(?:MathJax|MathJax_Display|MathJax_SVG|MathJax_SVG_Display|MathJax_CHTML|MJXc-display|MathJax_MathContainer)(?:\s|$)/;

function mathjax2(root: DomElement): void {
  for (const script of Array.from(root.querySelectorAll('script[type^="math/tex"]'))) {
    const frame = script.previousElementSibling;
    if (frame === null || !MATHJAX2_FRAME.test(frame.getAttribute("class") ?? "") || hiddenFromPeople(frame)) continue;
    const preview = frame.previousElementSibling;
    const tex = (script.textContent ?? "").trim();
    const drawn = shownText(frame, (e) => /(?:^|\s)MJX_Assistive_MathML(?:\s|$)/.test(e.getAttribute("class") ?? ""));
    const block = /mode\s*=\s*display/i.test(script.getAttribute("type") ?? "") || frame.tagName === "DIV";
    const math = mathIn(frame);
    if (tex !== "" && texAgreesWithDrawn(tex, drawn)) place(frame, tex, block);
    else if (math !== undefined) place(frame, texOfMath(math), block);
    else continue;
    script.remove();
    if (preview !== null && /(?:^|\s)MathJax_Preview(?:\s|$)/.test(preview.getAttribute("class") ?? "")) preview.remove();
  }
}

function plainMathml(root: DomElement): void {
  for (const math of Array.from(root.querySelectorAll("math"))) {
    if (!root.contains(math) || !shownWithin(math, root)) continue;
    place(math, texOfMath(math), math.getAttribute("display") === "block");
  }
}

/** Images of formulas whose alt text is their TeX (Wikipedia's, WordPress's LaTeX images). */
function texImages(root: DomElement): void {
  for (const img of Array.from(root.querySelectorAll("img.mwe-math-fallback-image-inline, img.mwe-math-fallback-image-display, img.latex"))) {
    const alt = (img.getAttribute("alt") ?? "").trim();
    if (alt === "" || hiddenFromPeople(img)) continue;
    place(img, displayStyleless(alt), /display/.test(img.getAttribute("class") ?? ""));
  }
}

/** Turns the formulas below `root` into placeholders holding their TeX (see the top of this file). */
export function keepFormulas(root: DomElement): void {
  mathjax2(root);
  katex(root);
  mathjax3(root);
  texImages(root);
  plainMathml(root);
}

// MathML -> TeX, for formulas a page gives as MathML only (MathJax 3's assistive MathML, KaTeX's, Wikipedia's, a
// page's own <math>). The output is what an agent reads well: TeX structure (\frac, \sqrt, ^, _) around the
// formula's own symbols, kept as the Unicode characters the page draws (α, ≤, ∑).
import { elementChildren, isElement, TEXT_NODE, type DomElement, type DomNode } from "./dom.js";
import { HIDDEN_MARK_ATTR } from "@tabrelay/protocol";

/** Multi-letter identifiers TeX writes as operator names. */
const FUNCTIONS = new Set([
  "sin",
  "cos",
  "tan",
  "cot",
  "sec",
  "csc",
  "sinh",
  "cosh",
  "tanh",
  "arcsin",
  "arccos",
  "arctan",
  "log",
  "ln",
  "lg",
  "exp",
  "lim",
  "max",
  "min",
  "sup",
  "inf",
  "det",
  "dim",
  "ker",
  "deg",
  "gcd",
  "arg",
  "Pr",
]);

/** Accents drawn over (mover accent) or under a base. */
const ACCENTS: Record<string, string> = {
  "^": "hat",
  ˆ: "hat",
  "¯": "bar",
  "‾": "overline",
  "~": "tilde",
  "˜": "tilde",
  "→": "vec",
  "⃗": "vec",
  "˙": "dot",
  "¨": "ddot",
  "˘": "breve",
  ˇ: "check",
};

/** Invisible operators (function application, invisible times, ...): nothing to read. */
const INVISIBLE = /[\u2061-\u2064\u200b]/g;

function text(el: DomNode): string {
  return (el.textContent ?? "").replace(INVISIBLE, "").replace(/\s+/g, " ").trim();
}

/** A TeX group when the part is more than one symbol. */
function group(tex: string): string {
  return [...tex].length === 1 ? tex : `{${tex}}`;
}

function join(parts: string[]): string {
  return parts.filter((p) => p !== "").join(" ");
}

function tokenTex(el: DomElement): string {
  const t = text(el);
  switch (el.tagName) {
    case "MI":
      return FUNCTIONS.has(t) ? `\\${t}` : [...t].length > 1 ? `\\mathrm{${t}}` : t;
    case "MTEXT":
      return /[\p{L}\p{N}]/u.test(t) ? `\\text{${t}}` : t;
    case "MS":
      return `\\text{"${t}"}`;
    case "MO":
      return t === "−" ? "-" : t;
    default:
      return t;
  }
}

function children(el: DomElement): string[] {
  return elementChildren(el).map(toTex);
}

/** One MathML element (and what is below it) as TeX. */
export function toTex(el: DomElement): string {
  // Text the in-page reader found no person can see (hidden, or its own text drawn invisibly) is no part of a formula.
  if (el.hasAttribute(HIDDEN_MARK_ATTR)) return "";
  const kids = elementChildren(el);
  const [a, b, c] = kids.map(toTex);
  switch (el.tagName) {
    case "MI":
    case "MN":
    case "MO":
    case "MTEXT":
    case "MS":
      return tokenTex(el);
    case "MSPACE":
    case "MPHANTOM":
    case "ANNOTATION":
    case "ANNOTATION-XML":
    case "NONE":
    case "MPRESCRIPTS":
      return "";
    case "SEMANTICS":
      return kids[0] === undefined ? "" : toTex(kids[0]);
    case "MSUP":
      return `${group(a ?? "")}^${group(b ?? "")}`;
    case "MSUB":
      return `${group(a ?? "")}_${group(b ?? "")}`;
    case "MSUBSUP":
      return `${group(a ?? "")}_${group(b ?? "")}^${group(c ?? "")}`;
    case "MUNDER": {
      const accent = ACCENTS[text(kids[1] ?? el)];
      if (accent !== undefined && el.getAttribute("accentunder") === "true") return `\\underline{${a ?? ""}}`;
      return `${group(a ?? "")}_${group(b ?? "")}`;
    }
    case "MOVER": {
      const accent = ACCENTS[text(kids[1] ?? el)];
      if (accent !== undefined) return `\\${accent}{${a ?? ""}}`;
      return `${group(a ?? "")}^${group(b ?? "")}`;
    }
    case "MUNDEROVER":
      return `${group(a ?? "")}_${group(b ?? "")}^${group(c ?? "")}`;
    case "MFRAC":
      return `\\${el.getAttribute("linethickness") === "0" ? "binom" : "frac"}{${a ?? ""}}{${b ?? ""}}`;
    case "MSQRT":
      return `\\sqrt{${join(children(el))}}`;
    case "MROOT":
      return `\\sqrt[${b ?? ""}]{${a ?? ""}}`;
    case "MFENCED": {
      const separators = (el.getAttribute("separators") ?? ",").trim() || ",";
      const open = el.getAttribute("open") ?? "(";
      const close = el.getAttribute("close") ?? ")";
      return `${open}${children(el).join(`${separators.charAt(0)} `)}${close}`;
    }
    case "MTABLE": {
      const rows = kids.map((row) =>
        elementChildren(row)
          .filter((cell) => cell.tagName === "MTD")
          .map((cell) => join(children(cell))),
      );
      return `\\begin{matrix} ${rows.map((r) => r.join(" & ")).join(" \\\\ ")} \\end{matrix}`;
    }
    default:
      return kids.length === 0 ? text(el) : join(children(el));
  }
}

/** The TeX a <math> element carries as an annotation, if any. */
export function annotationTex(math: DomElement): string | undefined {
  const annotation = math.querySelector('annotation[encoding="application/x-tex"], annotation[encoding="TeX"]');
  const tex = annotation === null ? undefined : (annotation.textContent ?? "").trim();
  return tex === undefined || tex === "" ? undefined : tex;
}

/** A <math> element's letters and digits as drawn: the text of its token elements. */
export function mathTokens(math: DomElement): string {
  let out = "";
  const walk = (n: DomNode): void => {
    if (n.nodeType === TEXT_NODE) out += n.nodeValue ?? "";
    else if (isElement(n) && n.tagName !== "ANNOTATION" && n.tagName !== "ANNOTATION-XML" && !n.hasAttribute(HIDDEN_MARK_ATTR))
      for (let i = 0; i < n.childNodes.length; i++) {
        const c = n.childNodes[i];
        if (c !== undefined) walk(c);
      }
  };
  walk(math);
  return out;
}

/** The whole formula as TeX, whitespace collapsed. */
export function mathmlToTex(math: DomElement): string {
  return toTex(math).replace(/\s+/g, " ").trim();
}

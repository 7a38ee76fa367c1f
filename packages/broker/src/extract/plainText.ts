/**
 * The cheap conversion: serialized HTML -> plain text in one linear scan, no DOM. Used when a page is beyond what the
 * DOM conversion may parse (size, element count) or when that conversion overran its deadline. It honours the
 * in-page reader's hidden marks exactly as the DOM conversion does (a page cannot make itself huge to get its hidden
 * text through) and counts what it withheld.
 */
import { HIDDEN_MARK_ATTR, HIDDEN_OWN_TEXT, HIDDEN_SUBTREE } from "@tabrelay/protocol";
import { WithheldCount } from "./withheld.js";
import type { Extracted } from "./extract.js";

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr", "keygen"]);
/** Elements whose content is raw text up to their end tag. */
const RAW = new Set(["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"]);
/** Never text for a reader (as DROP_TAGS in extract.ts). */
const SKIP = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "canvas",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "select",
  "datalist",
  "head",
  "textarea",
  "xmp",
  "noembed",
  "noframes",
  "math",
]);
const BLOCK = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "body",
  "dd",
  "details",
  "dialog",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "header",
  "hr",
  "li",
  "main",
  "nav",
  "ol",
  "p",
  "pre",
  "section",
  "summary",
  "table",
  "tbody",
  "td",
  "tfoot",
  "th",
  "thead",
  "tr",
  "ul",
  "br",
  "caption",
]);
/** Blocks that follow one another without a blank line (list items, table rows). */
const TIGHT = new Set(["li", "tr", "dt", "dd"]);
const TOKEN = /<!--[\s\S]*?(?:-->|$)|<(\/?)([a-zA-Z][^\s/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>|<![^>]*>|<\?[^>]*>/g;
const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos|nbsp));/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };
const MARK = new RegExp(`\\s${HIDDEN_MARK_ATTR}\\s*=\\s*["']?(${HIDDEN_SUBTREE}|${HIDDEN_OWN_TEXT})\\b`, "i");
/** Text gathered per hidden element for counting and the AI-address test. */
const HIDDEN_SAMPLE = 4_000;

function decode(text: string): string {
  return text.replace(ENTITY, (_m, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) return NAMED[name] ?? "";
    const code = dec !== undefined ? Number(dec) : Number.parseInt(hex ?? "0", 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "";
  });
}

interface Open {
  name: string;
  /** This element starts a subtree that is not shown (marked hidden, or never text). */
  hides: boolean;
  ownTextHidden: boolean;
  /** Index in `hiddenText` of this element's withheld-text collector. */
  collector?: number;
}

export function plainText(input: { html: string; url: string; title?: string }): Extracted {
  const { html } = input;
  const out: string[] = [];
  const stack: Open[] = [];
  const withheld = new WithheldCount();
  const collectors: string[] = [];
  const beyond: number[] = [];
  let hiding = 0;
  let title = "";
  let last = 0;

  const text = (raw: string) => {
    if (raw === "") return;
    const top = stack[stack.length - 1];
    if (hiding > 0 || top?.ownTextHidden) {
      // Withheld: counted on the innermost collector that is open.
      for (let i = stack.length - 1; i >= 0; i--) {
        const c = stack[i]?.collector;
        if (c !== undefined) {
          if (collectors[c]!.length < HIDDEN_SAMPLE) collectors[c] += raw;
          else beyond[c] = (beyond[c] ?? 0) + raw.length;
          break;
        }
      }
      return;
    }
    out.push(decode(raw));
  };
  const close = (index: number) => {
    while (stack.length > index) {
      const el = stack.pop()!;
      if (el.hides) hiding--;
      if (el.collector !== undefined) withheld.add(decode(collectors[el.collector] ?? ""), beyond[el.collector]);
      if (BLOCK.has(el.name) && !TIGHT.has(el.name)) out.push("\n");
    }
  };

  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(html); m !== null; m = TOKEN.exec(html)) {
    text(html.slice(last, m.index));
    last = TOKEN.lastIndex;
    const name = m[2]?.toLowerCase();
    if (name === undefined) continue; // comment, doctype, processing instruction
    if (m[1] === "/") {
      for (let i = stack.length - 1; i >= 0; i--) {
        if (stack[i]!.name === name) {
          close(i);
          break;
        }
      }
      continue;
    }
    const attrs = m[3] ?? "";
    if (RAW.has(name)) {
      // Raw text runs to the end tag; only the title's is text for us.
      const end = html.toLowerCase().indexOf(`</${name}`, last);
      const stop = end < 0 ? html.length : end;
      if (name === "title" && title === "") title = decode(html.slice(last, stop)).replace(/\s+/g, " ").trim();
      const gt = end < 0 ? html.length : html.indexOf(">", end);
      last = gt < 0 ? html.length : gt + 1;
      TOKEN.lastIndex = last;
      if (BLOCK.has(name)) out.push("\n");
      continue;
    }
    if (BLOCK.has(name)) {
      out.push("\n");
      if (name === "li") out.push("- ");
      else if (/^h[1-6]$/.test(name)) out.push(`${"#".repeat(Number(name[1]))} `);
    }
    if (VOID.has(name) || attrs.endsWith("/")) continue;
    const mark = MARK.exec(attrs)?.[1];
    const hides = SKIP.has(name) || mark === HIDDEN_SUBTREE;
    const el: Open = { name, hides, ownTextHidden: mark === HIDDEN_OWN_TEXT };
    // Hidden text is counted (as the DOM conversion counts it); scripts and styles are not text at all.
    if ((hides && !SKIP.has(name)) || name === "template" || el.ownTextHidden) {
      el.collector = collectors.length;
      collectors.push("");
    }
    if (hides) hiding++;
    stack.push(el);
  }
  text(html.slice(last));
  close(0);

  const markdown = out
    .join("")
    .split("\n")
    .map((line) => line.replace(/[ \t\f\r\u00a0]+/g, " ").trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  let words = 0;
  for (const token of markdown.split(/\s+/)) if (/[\p{L}\p{N}]/u.test(token)) words++;
  const result: Extracted = { title: title || input.title?.trim() || input.url, url: input.url, markdown, mode: "full", fellBack: false, wordCount: words };
  const hidden = withheld.value();
  if (hidden !== undefined) result.withheld = hidden;
  return result;
}

// Turndown: HTML -> Markdown rules.
// Turndown's browser build: we hand it linkedom nodes, never strings, so it needs no HTML parser of its own (its
// Node build loads a second DOM implementation, domino, at import: ~1 MiB of heap for nothing).
import TurndownService from "turndown/lib/turndown.browser.cjs.js";
import { compactLength, elementChildren, isElement, TEXT_NODE, type DomElement, type DomNode } from "./dom.js";
import { FORMULA_ATTR } from "./formulas.js";
import { codeLanguage, DROP_TAGS } from "./prune.js";
import { CELL_END, closestTable, HEAD_ROW, inLayoutTable, isHeadingRow, pipeTable, ROW_END, tableInfo } from "./tables.js";

function escapeDestination(url: string): string {
  // Balanced parentheses are fine in CommonMark link destinations; unbalanced ones would end the link early.
  let depth = 0;
  for (const ch of url) {
    if (ch === "(") depth++;
    else if (ch === ")" && --depth < 0) break;
  }
  return depth === 0 ? url : url.replace(/\(/g, "%28").replace(/\)/g, "%29");
}

/** Text of a <pre>, honouring <br> and block-level line wrappers some highlighters use instead of "\n". */
function preformattedText(node: DomNode): string {
  let out = "";
  const walk = (n: DomNode): void => {
    const children = n.childNodes;
    for (let i = 0; i < children.length; i++) {
      const c = children[i];
      if (c === undefined) continue;
      if (c.nodeType === TEXT_NODE) out += c.nodeValue ?? "";
      else if (isElement(c)) {
        if (c.tagName === "BR") out += "\n";
        else {
          walk(c);
          if ((c.tagName === "DIV" || c.tagName === "P") && !out.endsWith("\n")) out += "\n";
        }
      }
    }
  };
  walk(node);
  return out;
}

/**
 * Apps and navigation bars often place inline elements side by side with no whitespace between them and rely on CSS
 * (flex, gap, margins) to separate them, which would make "TodayLight rain14°" or "[Maps](…)[Settings](…)". Emit a space
 * between such siblings. Spans count only when both carry at least two characters (per-letter styling spans stay
 * glued), and nothing changes inside code.
 */
const SPACED_INLINE = new Set(["A", "BUTTON", "LABEL", "TIME", "IMG", "SPAN"]);

function spaceBefore(node: DomElement): string {
  if (!SPACED_INLINE.has(node.nodeName) || ("isCode" in node && node.isCode === true)) return "";
  let prev = node.previousSibling;
  let prevText = 0;
  // Look past empty siblings (icons, blank inputs) to the previous element that shows something.
  for (let i = 0; i < 4 && isElement(prev); i++) {
    prevText = compactLength(prev.textContent);
    if (prevText > 0 || prev.nodeName === "IMG") break;
    prev = prev.previousSibling;
  }
  if (!isElement(prev) || !SPACED_INLINE.has(prev.nodeName)) return "";
  if (prevText === 0 && prev.nodeName !== "IMG") return "";
  if (prev.nodeName === "SPAN" && node.nodeName === "SPAN" && (prevText < 2 || compactLength(node.textContent) < 2)) {
    return "";
  }
  return " ";
}

function createTurndown(): TurndownService {
  const td = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    fence: "```",
    bulletListMarker: "-",
    emDelimiter: "_",
    strongDelimiter: "**",
    hr: "---",
    linkStyle: "inlined",
  });

  // Second line of defence: pruning already removed these from the tree we convert.
  td.remove((node: DomElement) => DROP_TAGS.has(node.nodeName.toUpperCase()));

  td.addRule("preformatted", {
    filter: (node: DomElement) => node.nodeName === "PRE",
    replacement: (_content: string, node: DomElement) => {
      const code = preformattedText(node).replace(/\n$/, "");
      if (code.trim() === "") return "";
      const lang = node.getAttribute("data-lang") ?? codeLanguage(node) ?? "";
      let fence = "```";
      for (const m of code.matchAll(/^ {0,3}(`{3,})/gm)) {
        const run = m[1];
        if (run !== undefined && run.length >= fence.length) fence = "`".repeat(run.length + 1);
      }
      return `\n\n${fence}${lang}\n${code}\n${fence}\n\n`;
    },
  });

  td.addRule("heading", {
    filter: ["h1", "h2", "h3", "h4", "h5", "h6"],
    replacement: (content: string, node: DomElement) => {
      const text = content.replace(/\s*\n+\s*/g, " ").trim();
      return text === "" ? "" : `\n\n${"#".repeat(Number(node.nodeName.charAt(1)))} ${text}\n\n`;
    },
  });

  td.addRule("link", {
    filter: (node: DomElement) => node.nodeName === "A" && (node.getAttribute("href") ?? "") !== "",
    replacement: (content: string, node: DomElement) => {
      const text = content.replace(/\s*\n+\s*/g, " ").trim();
      if (text === "") return "";
      return `${spaceBefore(node)}[${text}](${escapeDestination(node.getAttribute("href") ?? "")})`;
    },
  });

  td.addRule("image", {
    filter: "img",
    replacement: (_content: string, node: DomElement) => {
      const src = node.getAttribute("src");
      if (src === null || src === "") return "";
      const alt = (node.getAttribute("alt") ?? "")
        .replace(/[\s\u200b]+/g, " ")
        .replace(/[[\]]/g, "")
        .trim();
      return `${spaceBefore(node)}![${alt}](${escapeDestination(src)})`;
    },
  });

  td.addRule("spacedInline", {
    filter: ["span", "button", "label", "time"],
    replacement: (content: string, node: DomElement) => (content === "" ? "" : spaceBefore(node) + content),
  });

  td.addRule("listItem", {
    filter: "li",
    replacement: (content: string, node: DomElement) => {
      const parent = node.parentNode;
      let prefix = "- ";
      if (isElement(parent) && parent.tagName === "OL") {
        const start = Number.parseInt(parent.getAttribute("start") ?? "1", 10);
        let index = 0;
        for (let c = parent.firstElementChild; c !== null && c !== node; c = c.nextElementSibling) index++;
        prefix = `${(Number.isFinite(start) ? start : 1) + index}. `;
      }
      const isParagraph = content.endsWith("\n");
      const body = content.replace(/^\n+/, "").replace(/\n+$/, "") + (isParagraph ? "\n" : "");
      return prefix + body.replace(/\n/g, `\n${" ".repeat(prefix.length)}`) + (node.nextSibling ? "\n" : "");
    },
  });

  // Tables: cells and rows emit sentinel-delimited text that the table rule assembles into a pipe table, so that
  // column counts can be padded and the header row detected. Layout tables are emitted as plain blocks instead.
  td.addRule("tableCell", {
    filter: ["th", "td"],
    replacement: (content: string, node: DomElement) => {
      if (inLayoutTable(node)) return `\n\n${content}\n\n`;
      const text = content
        .replace(/\s*\n+\s*/g, " ")
        .trim()
        .replace(/\|/g, "\\|");
      const span = Math.min(20, Math.max(1, Number.parseInt(node.getAttribute("colspan") ?? "1", 10) || 1));
      return text + CELL_END.repeat(span);
    },
  });
  td.addRule("tableRow", {
    filter: "tr",
    replacement: (content: string, node: DomElement) => {
      if (inLayoutTable(node)) return `\n\n${content}\n\n`;
      const table = closestTable(node);
      const first = table === undefined ? undefined : tableInfo(table).firstRow;
      return (first === node && isHeadingRow(node) ? HEAD_ROW : "") + content + ROW_END;
    },
  });
  td.addRule("tableSection", {
    filter: ["thead", "tbody", "tfoot"],
    replacement: (content: string) => content,
  });
  // The table rule renders the caption (as a paragraph above the table).
  td.addRule("tableCaption", { filter: "caption", replacement: () => "" });
  td.addRule("table", {
    filter: "table",
    replacement: (content: string, node: DomElement) => {
      const caption = elementChildren(node).find((c) => c.tagName === "CAPTION");
      const captionText = caption === undefined ? "" : (caption.textContent ?? "").replace(/\s+/g, " ").trim();
      const body = tableInfo(node).layout ? `\n\n${content}\n\n` : pipeTable(content);
      return captionText === "" ? body : `\n\n${td.escape(captionText)}\n\n${body}`;
    },
  });

  // Formulas (formulas.ts): TeX as written, never escaped; a display formula as a $$ block.
  td.addRule("formula", {
    filter: (node: DomElement) => node.nodeName === "CODE" && node.hasAttribute(FORMULA_ATTR),
    replacement: (_content: string, node: DomElement) => {
      const tex = (node.textContent ?? "").trim();
      if (tex === "") return "";
      return node.getAttribute(FORMULA_ATTR) === "block"
        ? `\n\n$$\n${tex}\n$$\n\n`
        : `$${tex}$${/^[\p{L}\p{N}]/u.test(node.nextSibling?.textContent ?? "") ? " " : ""}`;
    },
  });

  return td;
}

export const turndown = createTurndown();

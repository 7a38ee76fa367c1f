// Post-processing of the Markdown.
import { SENTINELS } from "./tables.js";

/** Collapses runs of blank lines to one (outside fenced code) and trims. */
export function tidy(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  let blank = false;
  for (const line of markdown.replace(SENTINELS, "").split("\n")) {
    if (fence !== undefined) {
      out.push(line);
      const t = line.trim();
      if (t.startsWith(fence) && /^(`+|~+)$/.test(t)) fence = undefined;
      continue;
    }
    if (line.trim() === "") {
      if (!blank && out.length > 0) out.push("");
      blank = true;
      continue;
    }
    blank = false;
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (open?.[1] !== undefined) fence = open[1];
    out.push(line);
  }
  return out.join("\n").trim();
}

function normalizeTitle(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** Drops a leading heading that repeats the title: the caller prints the title itself. */
export function dropLeadingTitle(markdown: string, title: string): string {
  const m = /^#{1,6}[ \t]+(.*)(?:\n+|$)/.exec(markdown);
  if (m?.[1] === undefined || normalizeTitle(m[1]) !== normalizeTitle(title)) return markdown;
  return markdown.slice(m[0].length);
}

export function countWords(markdown: string): number {
  const text = markdown.replace(/\]\([^)\s]*\)/g, "]");
  let n = 0;
  for (const token of text.split(/\s+/)) if (/[\p{L}\p{N}]/u.test(token)) n++;
  return n;
}

export function firstNonEmpty(...values: (string | null | undefined)[]): string {
  for (const v of values) {
    const t = v?.replace(/\s+/g, " ").trim();
    if (t) return t;
  }
  return "";
}

/**
 * Splits long extracted text into pages for the agent. Offsets and lengths are in UTF-16 code units (JavaScript
 * string indices); a cut never separates a surrogate pair.
 */

export interface Page {
  /** The slice of text for this page. */
  text: string;
  /** Where this page starts (the requested offset, clamped to [0, total] and moved off a surrogate pair's 2nd half). */
  offset: number;
  /** Where the next page starts; undefined when this page reaches the end. */
  nextOffset?: number;
  /** Length of the whole text. */
  total: number;
  /** True when text remains after this page. */
  truncated: boolean;
}

/** A cut may move back by at most this share of the budget to land on a paragraph, line, or word boundary. */
const BOUNDARY_WINDOW = 0.1;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** True when index `i` falls between the two halves of a surrogate pair. */
function splitsPair(text: string, i: number): boolean {
  return i > 0 && i < text.length && isHighSurrogate(text.charCodeAt(i - 1)) && isLowSurrogate(text.charCodeAt(i));
}

/**
 * Returns the page of `text` starting at `offset` with at most `maxChars` characters. The cut prefers, within the last
 * 10% of the budget, the end of a paragraph ("\n\n"), then the end of a line, then a space; otherwise it cuts at
 * exactly `maxChars`. Concatenating the pages of a nextOffset chain reproduces `text` exactly.
 */
export function paginate(text: string, offset: number, maxChars: number): Page {
  if (!Number.isFinite(offset)) throw new RangeError(`offset must be a finite number, got ${offset}`);
  if (!Number.isFinite(maxChars) || maxChars < 1) throw new RangeError(`maxChars must be at least 1, got ${maxChars}`);
  const total = text.length;
  const budget = Math.floor(maxChars);
  let start = Math.max(0, Math.floor(offset));
  if (start >= total) return { text: "", offset: start, total, truncated: false };
  if (splitsPair(text, start)) start -= 1;

  const limit = start + budget;
  if (limit >= total) return { text: text.slice(start), offset: start, total, truncated: false };

  const windowStart = limit - Math.max(1, Math.floor(budget * BOUNDARY_WINDOW));
  let cut = limit;
  const paragraph = text.lastIndexOf("\n\n", limit - 2);
  const line = text.lastIndexOf("\n", limit - 1);
  const space = text.lastIndexOf(" ", limit - 1);
  if (paragraph >= windowStart && paragraph + 2 > start) cut = paragraph + 2;
  else if (line >= windowStart && line + 1 > start) cut = line + 1;
  else if (space >= windowStart && space + 1 > start) cut = space + 1;

  if (splitsPair(text, cut)) cut = cut - 1 > start ? cut - 1 : cut + 1; // a 1-char budget still makes progress
  return { text: text.slice(start, cut), offset: start, nextOffset: cut, total, truncated: true };
}

/**
 * The line appended to a truncated page, e.g.
 * "\n\n[… truncated: showed characters 0–20000 of 53211. To read on, call read_page again with offset=20000.]".
 * Returns "" when the page is not truncated.
 */
export function truncationMarker(page: Page, how: string): string {
  if (!page.truncated) return "";
  const end = page.nextOffset ?? page.offset + page.text.length;
  const instruction = how.trim().replace(/[.\s]+$/, "");
  return `\n\n[… truncated: showed characters ${page.offset}–${end} of ${page.total}. To read on, ${instruction}.]`;
}

/**
 * Strings a page writes (titles, URLs, frame names, dialog messages, download names) shown outside the
 * `<page-content>` envelope: one line, no control, bidi or invisible characters, no envelope markers, capped,
 * and quoted in «» with any «» of the page's own turned into ‹›, so the page can neither end the quote nor
 * start a line of the tool's own text.
 */

/** Line breaks and other control characters (C0, DEL, C1, line and paragraph separators): read as a space. */
const BREAKS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * Characters that show nothing or reorder what is shown: soft hyphen, combining grapheme joiner, Arabic letter
 * mark, Hangul fillers, Khmer and Mongolian invisibles, zero-width space/joiners, LRM/RLM, bidi embeddings and
 * overrides (U+202A-U+202E), word joiner, invisible operators and bidi isolates (U+2060-U+206F), variation
 * selectors, BOM, interlinear annotation marks, Unicode tag characters (U+E0000-U+E007F, used to smuggle text a
 * person cannot see).
 */
const INVISIBLE =
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;

/** The start of anything that looks like the envelope's markers ("<page-content", "</page-content ..."). */
const MARKER = /<(\s*\/?\s*page-(?:content|text))/gi;

/** Default caps, in characters. */
export const PAGE_TEXT_MAX = { title: 300, url: 1000, name: 200 } as const;

/** One line with nothing hidden: breaks as spaces, invisible characters removed, whitespace collapsed. */
export function plainLine(text: string): string {
  return String(text).replace(BREAKS, " ").replace(INVISIBLE, "").replace(/\s+/g, " ").trim();
}

/** plainLine's two patterns as sources (flags `g` and `gu`), for a script that runs in another realm (the dashboard's). */
export const PLAIN_LINE_PATTERNS = { breaks: BREAKS.source, invisible: INVISIBLE.source } as const;

/** plainLine, with anything that looks like the envelope's markers defused: for text inside tool results. */
export function cleanLine(text: string): string {
  return plainLine(text).replace(MARKER, "‹$1");
}

/** Cuts a string to `max` characters (code points, so no pair is split), marking the cut with "…". */
export function capped(text: string, max: number): { text: string; total: number; cut: boolean } {
  const chars = Array.from(text);
  if (chars.length <= max) return { text, total: chars.length, cut: false };
  return { text: `${chars.slice(0, max).join("")}…`, total: chars.length, cut: true };
}

/**
 * A page-controlled string as the tools show it: «cleaned, capped text», followed by a note when it was cut.
 * An empty string shows as «».
 */
export function pageText(value: string | undefined, max: number = PAGE_TEXT_MAX.title): string {
  const clean = cleanLine(value ?? "")
    .replace(/«/g, "‹")
    .replace(/»/g, "›");
  const cut = capped(clean, max);
  return `«${cut.text}»${cut.cut ? ` (cut at ${max} of ${cut.total} characters)` : ""}`;
}

/** Text for the envelope: anything that looks like its markers is defused (the page cannot know the nonce anyway). */
export function defuseMarkers(text: string): string {
  return text.replace(MARKER, "‹$1");
}

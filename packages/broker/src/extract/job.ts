/**
 * One read's conversion work: the top document and the frames the read policy let through, as one job so that a
 * worker can run it whole. Pure: no I/O, no node: modules (it runs in a worker thread, or in-process where there are
 * none). Size budget: a document beyond PARSE_MAX_CHARS characters or PARSE_MAX_TAGS tags is not parsed into a DOM
 * (linkedom + Readability + Turndown grow much faster than the page) but converted as plain text.
 */
import { extract, type ExtractInput, type Extracted } from "./extract.js";
import { plainText } from "./plainText.js";

/** Characters of HTML one document may have to be converted to Markdown through a DOM (2 MiB: ~0.5-1 s here). */
export const PARSE_MAX_CHARS = 2 * 1024 * 1024;
/** Tags one document may have to be converted through a DOM. */
export const PARSE_MAX_TAGS = 100_000;

export interface ReadJob {
  top: ExtractInput;
  /** Frames, converted in full mode. */
  frames: { html: string; url: string; title?: string }[];
  /** "plain": every document as plain text (the fallback after the DOM conversion overran its deadline). */
  how: "markdown" | "plain";
}

export interface ConvertedDoc extends Extracted {
  /** Set when the document was converted as plain text: why, in words for the agent. */
  plainBecause?: string;
}

export interface ReadJobResult {
  top: ConvertedDoc;
  frames: ConvertedDoc[];
}

function tagsBeyond(html: string, max: number): boolean {
  let n = 0;
  for (let i = html.indexOf("<"); i >= 0; i = html.indexOf("<", i + 1)) if (++n > max) return true;
  return false;
}

function tooBigToParse(html: string): string | undefined {
  if (html.length > PARSE_MAX_CHARS) return `its HTML is over ${PARSE_MAX_CHARS / 1048576} MiB, too large to convert to Markdown`;
  if (tagsBeyond(html, PARSE_MAX_TAGS)) return `it has over ${PARSE_MAX_TAGS / 1000},000 tags, too many to convert to Markdown`;
  return undefined;
}

function convert(input: ExtractInput, how: ReadJob["how"]): ConvertedDoc {
  const tooBig = how === "plain" ? undefined : tooBigToParse(input.html);
  if (how === "markdown" && tooBig === undefined) return extract(input);
  const because = tooBig ?? "converting it to Markdown took too long";
  const plain: ConvertedDoc = { ...plainText(input), plainBecause: because };
  if (input.mode === "readable") Object.assign(plain, { fellBack: true, fallbackReason: "converted as plain text, see Limit" });
  return plain;
}

export function runReadJob(job: ReadJob): ReadJobResult {
  return {
    top: convert(job.top, job.how),
    frames: job.frames.map((f) => convert({ ...f, mode: "full" }, job.how)),
  };
}

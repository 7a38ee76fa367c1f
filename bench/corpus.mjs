// The best readable read, checked against a public corpus kept outside the project: Mozilla Readability's test pages
// (each folder a saved `source.html` and the `expected.html` Readability's own tests expect). Per page, the words of
// tabrelay's readable Markdown against the words of expected.html's text, as bags of words: word F1, recall and
// precision; then the mean F1 over pages, how many pages keep under 90% of the expected words, the worst ten, and
// extract()'s median time per page.
//
//   node bench/corpus.mjs [dir]      dir: the folder of page folders (default: $TABRELAY_READ_CORPUS)
//
// Words: lowercased, split at whitespace and punctuation (runs of letters and digits), so that Markdown syntax
// (emphasis marks, heading hashes, table pipes, escapes) is not words; link and image targets are removed first. Three
// choices, each the same on both sides (`--plain` drops them: no alt text, TeX commands counted, CJK runs
// as one word; so measured, tabrelay's read before issue 28 scored the issue's figures, 0.992 and 3 pages):
//   - an image's alt text counts as words (Readability keeps the images; a formula drawn as an image is its alt);
//   - TeX command names (\frac, \sqrt) are syntax, not words, as Markdown's marks are;
//   - Chinese and Japanese, written without spaces, count one word per character, as word metrics for them do.
// Benchmarks are never test assertions.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

/** What Readability's tests use as the pages' URL. */
const PAGE_URL = "http://fakehost/test/page.html";
/** A page whose readable read keeps less than this share of the expected words counts as under recall. */
const RECALL_FLOOR = 0.9;

const GET_IT = `No corpus given. The corpus is Mozilla Readability's test pages, kept outside this repository:
  git clone --depth 1 https://github.com/mozilla/readability /tmp/readability   (or: git archive HEAD test/test-pages)
  node bench/corpus.mjs /tmp/readability/test/test-pages      (or set TABRELAY_READ_CORPUS to that folder)`;

/** Markdown to plain words: link and image targets out, fence lines out; the rest splits into words. */
export function markdownWords(markdown, { plain = false } = {}) {
  const text = markdown
    .replace(/^ {0,3}(`{3,}|~{3,}).*$/gm, " ")
    .replace(/!\[([^\]]*)\]\((?:[^()\s]|\([^()\s]*\))*\)/g, (_, alt) => (plain ? " " : ` ${alt} `))
    .replace(/\]\((?:[^()\s]|\([^()\s]*\))*\)/g, "]")
    .replace(/<(?:https?|mailto):[^>\s]*>/g, " ");
  return words(text, { plain });
}

const CJK = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}])/gu;

export function words(text, { plain = false } = {}) {
  if (plain) return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const spaced = text.replace(/\\[a-zA-Z]+/g, " ").replace(CJK, " $1 ");
  return spaced.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

function bag(list) {
  const counts = new Map();
  for (const w of list) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

/** Bag-of-words recall, precision and F1 of `got` against `want`. */
export function wordScore(got, want) {
  const g = bag(got);
  let common = 0;
  for (const [w, n] of bag(want)) common += Math.min(n, g.get(w) ?? 0);
  const recall = want.length === 0 ? 1 : common / want.length;
  const precision = got.length === 0 ? (want.length === 0 ? 1 : 0) : common / got.length;
  const f1 = recall + precision === 0 ? 0 : (2 * recall * precision) / (recall + precision);
  return { recall, precision, f1 };
}

async function expectedWords(html, { plain = false } = {}) {
  const { parseHTML } = await import("linkedom");
  // expected.html is a fragment: linkedom needs <html> and <body> to keep it.
  const { document } = parseHTML(`<!DOCTYPE html><html><head></head><body>${html}</body></html>`);
  const alts = plain ? [] : [...document.body.querySelectorAll("img[alt]")].map((img) => img.getAttribute("alt"));
  return words([document.body.textContent ?? "", ...alts].join(" "), { plain });
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const r3 = (n) => Math.round(n * 1000) / 1000;

/**
 * Scores every page folder of `dir` (those holding source.html and expected.html) with `extractModule.extract` in
 * readable mode. `runs`: timed extract() calls per page (after one untimed), the page's time being their median.
 */
export async function benchCorpus(extractModule, dir, { runs = 3, plain = false } = {}) {
  const { extract } = extractModule;
  const names = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, "source.html")) && existsSync(join(dir, e.name, "expected.html")))
    .map((e) => e.name)
    .sort();
  const scored = [];
  const times = [];
  for (const page of names) {
    const html = readFileSync(join(dir, page, "source.html"), "utf8");
    const want = await expectedWords(readFileSync(join(dir, page, "expected.html"), "utf8"), { plain });
    const result = extract({ html, url: PAGE_URL, mode: "readable" });
    const samples = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      extract({ html, url: PAGE_URL, mode: "readable" });
      samples.push(performance.now() - t0);
    }
    times.push(median(samples));
    const score = wordScore(markdownWords(result.markdown, { plain }), want);
    scored.push({ page, ...score, mode: result.mode, fellBack: result.fellBack, fallbackReason: result.fallbackReason });
  }
  const worst = [...scored]
    .sort((a, b) => a.f1 - b.f1)
    .slice(0, 10)
    .map((s) => ({ page: s.page, recall: r3(s.recall), precision: r3(s.precision), f1: r3(s.f1) }));
  return {
    pages: scored.length,
    f1: r3(scored.reduce((sum, s) => sum + s.f1, 0) / Math.max(1, scored.length)),
    underRecall: scored.filter((s) => s.recall < RECALL_FLOOR).length,
    worst,
    medianMs: Math.round(median(times) * 100) / 100,
    /** Every page's figures, for a closer look (not printed). */
    perPage: scored.map((s) => ({ ...s, recall: r3(s.recall), precision: r3(s.precision), f1: r3(s.f1) })),
  };
}

async function main() {
  const dir = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? process.env.TABRELAY_READ_CORPUS;
  if (!dir) {
    process.stdout.write(`${GET_IT}\n`);
    return;
  }
  if (!existsSync(dir)) throw new Error(`no corpus at ${dir}\n${GET_IT}`);
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const built = join(root, "packages/broker/dist/extract/extract.js");
  if (!existsSync(built)) throw new Error("packages/broker/dist is missing: run `node scripts/build.mjs` first");
  const plain = process.argv.includes("--plain");
  const result = await benchCorpus(await import(pathToFileURL(process.env.TABRELAY_EXTRACT_MODULE ?? built).href), dir, { plain });
  const { perPage, ...shown } = result;
  const fellBack = perPage.filter((p) => p.fellBack);
  process.stdout.write(
    [
      `readable read vs the corpus's expected text: ${result.pages} pages${plain ? " (--plain words)" : ""}`,
      `  word F1 (mean)      ${result.f1.toFixed(3)}   target >= 0.995`,
      `  recall < ${RECALL_FLOOR} pages   ${result.underRecall}       target 0`,
      `  extract() median    ${result.medianMs} ms per page`,
      `  fell back           ${fellBack.length}${fellBack.length ? ` (${fellBack.map((p) => `${p.page}: ${p.fallbackReason}`).join("; ")})` : ""}`,
      `  worst (F1, recall, precision):`,
      ...result.worst.map((w) => `    ${w.page.padEnd(36)} ${w.f1.toFixed(3)}  ${w.recall.toFixed(3)}  ${w.precision.toFixed(3)}`),
      "",
    ].join("\n"),
  );
  if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  });
}

// One generated section of a document (docs/, or the README), between a begin and an end marker: printed,
// rewritten (`--write`) or checked (`--check`, exit 1 when the document differs). Used by the scripts that keep
// tables in the docs in step with the one table in code (errors-table.mjs, mcp-clients-table.mjs, docs.mjs).
import { readFileSync, writeFileSync } from "node:fs";

/**
 * @param {{ name: string, script: string, source: string, begin: string, end: string, text: string, fix: string, file?: string }} section
 *   name: what the section is ("error table"); script: the calling script's path, for the usage line; source: the
 *   file in code it comes from; begin/end: the markers; text: the generated section; fix: the command that rewrites it;
 *   file: the document, from the repository's root (default README.md).
 * @param {string | undefined} mode undefined (print), "--write" or "--check"
 */
export function runReadmeSection(section, mode) {
  if (mode === undefined) {
    console.log(section.text);
    return;
  }
  const file = section.file ?? "README.md";
  const readmePath = new URL(`../${file}`, import.meta.url);
  const readme = readFileSync(readmePath, "utf8");
  const start = readme.indexOf(section.begin);
  const end = readme.indexOf(section.end);
  if (start < 0 || end < start) {
    console.error(`${file} has no ${section.begin} ... ${section.end} section`);
    process.exit(1);
  }
  const next = `${readme.slice(0, start + section.begin.length)}\n${section.text}\n${readme.slice(end)}`;
  if (mode === "--write") {
    if (next !== readme) writeFileSync(readmePath, next);
    console.log(`${file} ${section.name}: ${next === readme ? "up to date" : "rewritten"}`);
  } else if (mode === "--check") {
    if (next !== readme) {
      console.error(`${file}'s ${section.name} differs from ${section.source}: run \`${section.fix}\``);
      process.exit(1);
    }
    console.log(`${file} ${section.name}: matches the code`);
  } else {
    console.error(`usage: node ${section.script} [--write | --check]`);
    process.exit(2);
  }
}

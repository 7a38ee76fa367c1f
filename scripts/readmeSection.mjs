// One generated section of the README, between a begin and an end marker: printed, rewritten (`--write`) or
// checked (`--check`, exit 1 when the README differs). Used by the scripts that keep README tables in step with
// the one table in code (errors-table.mjs, mcp-clients-table.mjs).
import { readFileSync, writeFileSync } from "node:fs";

/**
 * @param {{ name: string, script: string, source: string, begin: string, end: string, text: string, fix: string }} section
 *   name: what the section is ("error table"); script: the calling script's path, for the usage line; source: the
 *   file in code it comes from; begin/end: the markers; text: the generated section; fix: the command that rewrites it.
 * @param {string | undefined} mode undefined (print), "--write" or "--check"
 */
export function runReadmeSection(section, mode) {
  if (mode === undefined) {
    console.log(section.text);
    return;
  }
  const readmePath = new URL("../README.md", import.meta.url);
  const readme = readFileSync(readmePath, "utf8");
  const start = readme.indexOf(section.begin);
  const end = readme.indexOf(section.end);
  if (start < 0 || end < start) {
    console.error(`README.md has no ${section.begin} ... ${section.end} section`);
    process.exit(1);
  }
  const next = `${readme.slice(0, start + section.begin.length)}\n${section.text}\n${readme.slice(end)}`;
  if (mode === "--write") {
    if (next !== readme) writeFileSync(readmePath, next);
    console.log(`README ${section.name}: ${next === readme ? "up to date" : "rewritten"}`);
  } else if (mode === "--check") {
    if (next !== readme) {
      console.error(`README.md's ${section.name} differs from ${section.source}: run \`${section.fix}\``);
      process.exit(1);
    }
    console.log(`README ${section.name}: matches the code`);
  } else {
    console.error(`usage: node ${section.script} [--write | --check]`);
    process.exit(2);
  }
}

// The README's "Error codes" table, generated from the one table in code (packages/protocol/src/errors.ts, as
// built in dist/). `node scripts/errors-table.mjs` prints it, `--write` rewrites the README between the markers,
// `--check` exits 1 when the README differs (test/errorCodes.test.ts runs it).
import { readFileSync, writeFileSync } from "node:fs";
import { ERRORS } from "../packages/protocol/dist/index.js";

const readmePath = new URL("../README.md", import.meta.url);
const BEGIN = "<!-- errors:begin: generated from packages/protocol/src/errors.ts by `node scripts/errors-table.mjs --write` -->";
const END = "<!-- errors:end -->";

const cell = (text) => text.replaceAll("|", "\\|");
const table = ["| code | meaning | next step |", "|---|---|---|", ...ERRORS.map((e) => `| \`${e.code}\` | ${cell(e.meaning)} | ${cell(e.next)} |`)].join("\n");

const mode = process.argv[2];
if (mode === undefined) {
  console.log(table);
} else {
  const readme = readFileSync(readmePath, "utf8");
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) {
    console.error(`README.md has no ${BEGIN} ... ${END} section`);
    process.exit(1);
  }
  const next = `${readme.slice(0, start + BEGIN.length)}\n${table}\n${readme.slice(end)}`;
  if (mode === "--write") {
    if (next !== readme) writeFileSync(readmePath, next);
    console.log(next === readme ? "README error table: up to date" : "README error table: rewritten");
  } else if (mode === "--check") {
    if (next !== readme) {
      console.error("README.md's error table differs from packages/protocol/src/errors.ts: run `node scripts/errors-table.mjs --write`");
      process.exit(1);
    }
    console.log("README error table: matches the code");
  } else {
    console.error("usage: node scripts/errors-table.mjs [--write | --check]");
    process.exit(2);
  }
}

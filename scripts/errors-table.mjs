// The README's "Error codes" table, generated from the one table in code (packages/protocol/src/errors.ts, as
// built in dist/). `node scripts/errors-table.mjs` prints it, `--write` rewrites the README between the markers,
// `--check` exits 1 when the README differs (test/tools/errorCodes.test.ts runs it).
import { ERRORS } from "../packages/protocol/dist/index.js";
import { runReadmeSection } from "./readmeSection.mjs";

const cell = (text) => text.replaceAll("|", "\\|");
const table = ["| code | meaning | next step |", "|---|---|---|", ...ERRORS.map((e) => `| \`${e.code}\` | ${cell(e.meaning)} | ${cell(e.next)} |`)].join("\n");

runReadmeSection(
  {
    name: "error table",
    script: "scripts/errors-table.mjs",
    source: "packages/protocol/src/errors.ts",
    begin: "<!-- errors:begin: generated from packages/protocol/src/errors.ts by `node scripts/errors-table.mjs --write` -->",
    end: "<!-- errors:end -->",
    text: table,
    fix: "node scripts/errors-table.mjs --write",
  },
  process.argv[2],
);

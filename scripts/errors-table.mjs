// docs/reference/errors.md: the table of error codes, generated from the one table in code (packages/protocol/src/errors.ts, as
// built in dist/). `node scripts/errors-table.mjs` prints it, `--write` rewrites the document between the markers,
// `--check` exits 1 when it differs (test/tools/errorCodes.test.ts runs it).
import { ERRORS } from "../packages/protocol/dist/index.js";
import { runReadmeSection } from "./readmeSection.mjs";

const cell = (text) => text.replaceAll("|", "\\|");
const table = ["| code | meaning | next step |", "|---|---|---|", ...ERRORS.map((e) => `| \`${e.code}\` | ${cell(e.meaning)} | ${cell(e.next)} |`)].join("\n");

runReadmeSection(
  {
    file: "docs/reference/errors.md",
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

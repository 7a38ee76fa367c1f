// The README's "MCP clients" section, generated from the one table in code (packages/cli/src/mcpClients.ts, as
// built in dist/), the table `tabrelay mcp-config` prints from. `node scripts/mcp-clients-table.mjs` prints it,
// `--write` rewrites the README between the markers, `--check` exits 1 when the README differs
// (packages/cli/test/mcpConfig.test.ts runs it).
import { readFileSync, writeFileSync } from "node:fs";
import { readmeSection } from "../packages/cli/dist/mcpClients.js";

const readmePath = new URL("../README.md", import.meta.url);
const BEGIN = "<!-- mcp-clients:begin: generated from packages/cli/src/mcpClients.ts by `node scripts/mcp-clients-table.mjs --write` -->";
const END = "<!-- mcp-clients:end -->";

const section = readmeSection();

const mode = process.argv[2];
if (mode === undefined) {
  console.log(section);
} else {
  const readme = readFileSync(readmePath, "utf8");
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) {
    console.error(`README.md has no ${BEGIN} ... ${END} section`);
    process.exit(1);
  }
  const next = `${readme.slice(0, start + BEGIN.length)}\n${section}\n${readme.slice(end)}`;
  if (mode === "--write") {
    if (next !== readme) writeFileSync(readmePath, next);
    console.log(next === readme ? "README MCP clients: up to date" : "README MCP clients: rewritten");
  } else if (mode === "--check") {
    if (next !== readme) {
      console.error("README.md's MCP clients section differs from packages/cli/src/mcpClients.ts: run `npm run build && node scripts/mcp-clients-table.mjs --write`");
      process.exit(1);
    }
    console.log("README MCP clients: matches the code");
  } else {
    console.error("usage: node scripts/mcp-clients-table.mjs [--write | --check]");
    process.exit(2);
  }
}

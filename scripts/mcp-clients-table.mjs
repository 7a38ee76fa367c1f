// docs/clients.md's "MCP clients" section, generated from the one table in code (packages/cli/src/mcpClients.ts, as
// built in dist/), the table `tabrelay mcp-config` prints from. `node scripts/mcp-clients-table.mjs` prints it,
// `--write` rewrites the document between the markers, `--check` exits 1 when it differs
// (test/cli/mcpConfig.test.ts runs it).
import { readmeSection } from "../packages/cli/dist/mcpClients.js";
import { runReadmeSection } from "./readmeSection.mjs";

runReadmeSection(
  {
    file: "docs/clients.md",
    name: "MCP clients",
    script: "scripts/mcp-clients-table.mjs",
    source: "packages/cli/src/mcpClients.ts",
    begin: "<!-- mcp-clients:begin: generated from packages/cli/src/mcpClients.ts by `node scripts/mcp-clients-table.mjs --write` -->",
    end: "<!-- mcp-clients:end -->",
    text: readmeSection(),
    fix: "npm run build && node scripts/mcp-clients-table.mjs --write",
  },
  process.argv[2],
);

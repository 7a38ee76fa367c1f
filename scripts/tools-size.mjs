#!/usr/bin/env node
// How many characters tools/list costs, tool by tool and part by part, measured as the bench measures it: the
// JSON of the tools array an MCP SDK client receives (JSON.stringify((await client.listTools()).tools).length),
// here over an in-memory transport. Every tool is listed: those for browsers the model starts (browser_start, ...)
// too, as with a `browsers.source` in config. Run after `npm run build`.
//   node scripts/tools-size.mjs           the table        node scripts/tools-size.mjs --fields   each field too
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

const at = (path) => new URL(`../${path}`, import.meta.url).href;
const { toolsFor } = await import(at("packages/broker/dist/catalog.js"));
const { createMcpServer } = await import(at("packages/broker/dist/mcp/adapter.js"));

/** What an SDK client receives from tools/list and initialize, for a broker listing `tools`. */
async function listed(tools) {
  // tools/list and initialize reach no service: the context is never read.
  const server = createMcpServer(/** @type {any} */ ({}), tools);
  const client = new Client({ name: "tools-size", version: "0" });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  const { tools: list } = await client.listTools();
  const instructions = client.getInstructions() ?? "";
  await client.close();
  await server.close();
  return { list, instructions };
}

const size = (value) => (value === undefined ? 0 : JSON.stringify(value).length);
const every = await listed(toolsFor({ browserSource: {} }));
const plain = await listed(toolsFor({}));
const showFields = process.argv.includes("--fields");

const rows = every.list.map((tool) => {
  const { name, description, inputSchema, annotations, ...rest } = tool;
  const fields = Object.entries(inputSchema.properties ?? {}).map(([field, schema]) => [field, size(schema)]);
  return { name, total: size(tool), description: size(description), schema: size(inputSchema), annotations: size(annotations), rest: size(rest), fields };
});
rows.sort((a, b) => b.total - a.total);
const pad = (value, width) => String(value).padStart(width);
console.log(`${"tool".padEnd(24)} ${pad("total", 6)} ${pad("descr", 6)} ${pad("schema", 6)} ${pad("annot", 6)}`);
for (const row of rows) {
  console.log(`${row.name.padEnd(24)} ${pad(row.total, 6)} ${pad(row.description, 6)} ${pad(row.schema, 6)} ${pad(row.annotations, 6)}`);
  if (showFields) for (const [field, chars] of row.fields) console.log(`  .${field.padEnd(21)} ${pad(chars, 6)}`);
}
const sum = (key) => rows.reduce((n, row) => n + row[key], 0);
console.log(`${"(sum of parts)".padEnd(24)} ${pad(sum("total"), 6)} ${pad(sum("description"), 6)} ${pad(sum("schema"), 6)} ${pad(sum("annotations"), 6)}`);
console.log(`\ntools/list, every tool (${every.list.length} tools): ${size(every.list)} characters`);
console.log(`tools/list, without browsers.source (${plain.list.length} tools, as the bench's broker): ${size(plain.list)} characters`);
console.log(`instructions (initialize, once a session): ${every.instructions.length} characters`);

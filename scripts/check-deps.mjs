// Enforces the import direction between packages (see ../shared/DESIGN.md, "Boundaries that must hold").
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const rules = [
  { dir: "packages/protocol/src", allow: [], why: "protocol is types only, with no runtime dependencies" },
  { dir: "packages/extension/src", allow: ["@tabrelay/protocol"], why: "the extension never imports broker code" },
  { dir: "packages/broker/src", deny: ["@tabrelay/extension", "tabrelay", "../../extension", "../../cli"], why: "the broker imports only protocol (and built artifacts)" },
];
const SDK = "@modelcontextprotocol/sdk";
const SDK_IMPORTER = "packages/broker/src/mcp/adapter.ts";

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

function imports(source) {
  const found = [];
  for (const m of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+["']([^"']+)["']/g)) found.push(m[1]);
  for (const m of source.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)) found.push(m[1]);
  return found;
}

const problems = [];
for (const rule of rules) {
  for (const file of files(join(root, rule.dir))) {
    const rel = relative(root, file);
    for (const spec of imports(readFileSync(file, "utf8"))) {
      const external = !spec.startsWith(".");
      if (rule.allow && external && !rule.allow.includes(spec)) problems.push(`${rel}: imports ${spec} (${rule.why})`);
      if (rule.deny?.some((d) => spec === d || spec.startsWith(`${d}/`))) problems.push(`${rel}: imports ${spec} (${rule.why})`);
      if (spec.startsWith(SDK) && rel !== SDK_IMPORTER) problems.push(`${rel}: imports ${spec} (only ${SDK_IMPORTER} may import the MCP SDK)`);
    }
  }
}
if (problems.length) {
  console.error(`Import boundaries broken:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("import boundaries: ok");

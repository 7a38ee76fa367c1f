#!/usr/bin/env node
// The references in docs/reference/ that come from the code, whole files: the CLI's commands (from the CLI's own
// help, as `tabrelay help COMMAND` prints it), the tools (from the tool table: name, kind, description, arguments as
// tools/list advertises them), and the configuration (the config.yaml a first start writes: every key at its
// default, config/template.ts). The error table (errors-table.mjs) and the MCP clients (mcp-clients-table.mjs) are
// sections of their documents. Run after `npm run build`.
//   node scripts/docs.mjs --write   rewrites them      node scripts/docs.mjs --check   exits 1 when one differs
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (path) => new URL(`../${path}`, import.meta.url);
const header = (what) => `<!-- generated from ${what} by \`node scripts/docs.mjs --write\`: edit the source, not this file -->\n\n`;

function cliReference() {
  const cli = fileURLToPath(at("packages/cli/bin/tabrelay.js"));
  const help = (args) => {
    const run = spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
    if (run.status !== 0) throw new Error(`tabrelay ${args.join(" ")} exited ${run.status}: ${run.stderr}`);
    return run.stdout.trimEnd();
  };
  const main = help(["--help"]);
  const commands = [...new Set([...main.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]))];
  return [
    header("the CLI's own help (packages/cli/src)"),
    "# Command line\n\n`tabrelay --help`:\n\n```text\n",
    main.replace(/^tabrelay \S+:/, "tabrelay VERSION:"),
    "\n```\n",
    ...commands.map((name) => `\n## tabrelay ${name}\n\n\`\`\`text\n${help(["help", name])}\n\`\`\`\n`),
  ].join("");
}

async function toolsReference() {
  const { tools } = await import(at("packages/broker/dist/catalog.js").href);
  const { advertisedInputSchema } = await import(at("packages/broker/dist/mcp/adapter.js").href);
  const listed = tools.filter((tool) => !tool.programOnly);
  return [
    header("the tool table (packages/broker/src/tools/)"),
    "# Tools\n\n",
    "Every tool tabrelay offers over MCP, as `tools/list` describes it to the model (arguments the server's instructions\n",
    "describe once for every tool, such as `browser`, `tab` and `ref`, are described here too). `read` tools never change a page;\n",
    "`write` tools act only where a policy.write grant allows (see the [safety model](../safety.md)). Errors: [error codes](errors.md).\n\n",
    "| tool | kind | title |\n|---|---|---|\n",
    ...listed.map((tool) => `| [\`${tool.name}\`](#${tool.name}) | ${tool.kind} | ${tool.title} |\n`),
    ...listed.map((tool) => {
      const schema = advertisedInputSchema(tool);
      // What tools/list says once, in the server's instructions (browser, tab, ref, ...), the tool's own schema says here.
      const own = z.toJSONSchema(tool.input, { io: "input" }).properties ?? {};
      const props = Object.entries(schema.properties ?? {}).map(([name, p]) => [name, { ...p, description: p.description ?? own[name]?.description }]);
      const required = new Set(schema.required ?? []);
      const args =
        props.length === 0
          ? "No arguments.\n"
          : [
              "| argument | type | |\n|---|---|---|\n",
              ...props.map(([name, p]) => `| \`${name}\`${required.has(name) ? "" : "?"} | ${typeOf(p)} | ${cell(p.description ?? "")} |\n`),
            ].join("");
      return `\n## ${tool.name}\n\n${tool.description}\n\n${args}`;
    }),
  ].join("");
}

function typeOf(p) {
  if (p.enum) return p.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" \\| ");
  if (p.type === "array") return `${typeOf(p.items ?? {})}[]`;
  if (p.anyOf) return p.anyOf.map(typeOf).join(" \\| ");
  return p.type ?? "any";
}

const cell = (text) => String(text).replaceAll("|", "\\|").replaceAll("\n", " ");

async function configReference() {
  const { CONFIG_TEMPLATE } = await import(at("packages/broker/dist/config/template.js").href);
  return [
    header("packages/broker/src/config/template.ts (held to the config schema by packages/broker/test/config/edit.test.ts)"),
    "# config.yaml, every key\n\n",
    "What a first start writes into the data dir when there is no config.yaml: every setting commented out at its\n",
    "default. The [configuration guide](../configuration.md) says how each part works.\n\n",
    "```yaml\n",
    CONFIG_TEMPLATE,
    "```\n",
  ].join("");
}

const documents = [
  ["docs/reference/cli.md", cliReference],
  ["docs/reference/tools.md", toolsReference],
  ["docs/reference/configuration.md", configReference],
];

const mode = process.argv[2];
if (mode !== "--write" && mode !== "--check") {
  console.error("usage: node scripts/docs.mjs --write | --check");
  process.exit(2);
}
let stale = 0;
for (const [file, make] of documents) {
  const text = await make();
  let current = "";
  try {
    current = readFileSync(at(file), "utf8");
  } catch {
    // not written yet
  }
  if (current === text) {
    console.log(`${file}: matches the code`);
  } else if (mode === "--write") {
    writeFileSync(at(file), text);
    console.log(`${file}: rewritten`);
  } else {
    console.error(`${file} differs from the code: run \`node scripts/docs.mjs --write\``);
    stale++;
  }
}
if (stale > 0) process.exit(1);
void root;

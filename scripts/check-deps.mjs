// Enforces the import direction between packages and between folders inside the broker (see ../shared/DESIGN.md,
// "Boundaries that must hold"). Each rule names a folder and what its files may import:
//   allow      external (bare) specifiers allowed; "node:*" allows every Node built-in; anything else is refused
//   typeOnly   external specifiers allowed only as `import type` / `export type` (no runtime code)
//   contained  relative imports must stay inside the rule's folder (a package reaches others by name only)
//   deny       specifiers refused, by name (a name ending in "/": its subpaths) or, for relative imports, by the
//              folder they resolve to
//   onlyFolders   relative imports must resolve inside one of these folders (typeFolders: as `import type` only)
//   typeOnlyFolders  relative imports into these folders must be `import type` (the code is handed in at run time)
//   except     folders below `dir` the rule does not cover (they have a rule of their own)
//
// The runtime-neutral core (DESIGN.md: "the core ... imports no node: module, so the same core runs in Node and on a
// Workers-style runtime") is not a folder but what packages/broker/src/core.ts (the @tabrelay/broker/core entry) and
// the MCP adapter reach. Three checks hold it, over the files reachable from CORE_ROOTS through runtime imports
// (`import type` and `export type` are erased, so they do not count; `import { type X }` does, as it still loads):
//   1. none imports a Node built-in (node:*, or a bare name like "fs") or a Node-only package (NODE_ONLY); a break
//      names the chain of imports that reached it;
//   2. none uses a Node-only global (NODE_GLOBALS: Buffer, process, setImmediate, timers' unref, require), found by
//      a scan of the code without its comments (a heuristic: TypeScript sees @types/node's globals everywhere);
//   3. core.ts bundles with esbuild for a neutral platform, resolving packages as a Workers build does (workerd,
//      worker, browser conditions), without needing any Node built-in: the dependencies are held to it too.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const BROKER = "packages/broker/src";
const rules = [
  { dir: "packages/protocol/src", allow: [], contained: true, why: "protocol is types only, with no runtime dependencies" },
  { dir: "packages/extension/src", allow: ["@tabrelay/protocol"], contained: true, why: "the extension never imports broker code" },
  { dir: "packages/page/src", allow: [], contained: true, why: "the page library is published alone and runs in any web page: no dependency at all" },
  { dir: "packages/inpage/src", allow: ["@tabrelay/protocol"], contained: true, why: "the in-page script runs inside pages: it imports only the protocol" },
  {
    dir: "packages/sandbox/src",
    except: ["packages/sandbox/src/node"],
    allow: ["quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync", "sucrase"],
    contained: true,
    why: "the sandbox's core runs on a Workers-style runtime too: QuickJS and sucrase only, no node: module (its Node runner is src/node/)",
  },
  {
    dir: "packages/sandbox/src/node",
    allow: ["node:*", "quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync"],
    why: "the sandbox's Node runner: worker threads over the core",
  },
  {
    dir: BROKER,
    deny: ["@tabrelay/extension", "@tabrelay/inpage", "tabrelay", "packages/extension", "packages/inpage", "packages/cli"],
    why: "the broker imports only protocol (and built artifacts)",
  },
  {
    dir: "packages/cli/src",
    allow: ["@tabrelay/broker", "@tabrelay/chat", "@tabrelay/agent-tools", "node:*"],
    deny: ["@tabrelay/broker/", "@tabrelay/chat/", "@tabrelay/agent-tools/"], // package entries only, no deep paths into dist or src
    contained: true,
    why: "the CLI reaches the broker, the dashboard's chat and agent-tools (the package's tabrelay/agent-tools entry) only through their package entries, never their source files",
  },
  {
    dir: "packages/chat/src",
    allow: ["@tabrelay/broker", "@tabrelay/agent-tools", "ai", "@ai-sdk/anthropic", "@ai-sdk/openai-compatible", "node:*"],
    deny: ["@tabrelay/broker/", "@tabrelay/agent-tools/"],
    contained: true,
    why: "the dashboard's chat reaches the broker and agent-tools only through their entries; the broker never imports it (one-way: broker <- agent-tools <- chat <- cli)",
  },
  {
    dir: "packages/agent-tools/src",
    allow: ["@tabrelay/broker", "@modelcontextprotocol/sdk", "ai", "zod", "node:*"],
    deny: ["@tabrelay/broker/"], // the broker's package entry only, as the CLI
    contained: true,
    why: "agent-tools reaches the broker only through @tabrelay/broker's entry; ai is its peer",
  },
  {
    dir: "packages/worker/src",
    except: ["packages/worker/src/node"],
    allow: ["@tabrelay/broker/core", "@tabrelay/sandbox", "hono", "tabrelay:assets", "tabrelay:quickjs-wasm"],
    contained: true,
    why: "the stateless entry runs on Workers-style runtimes: the broker's runtime-neutral core only (its build bundles for a neutral platform), never the Node broker",
  },
  {
    dir: "packages/worker/src/node",
    allow: ["@tabrelay/broker"],
    why: "the Vercel-style Node function: the same app, with the Node broker's socket (ws), in-page scripts and ranking from disk",
  },
  {
    dir: `${BROKER}/drivers`,
    deny: [`${BROKER}/tools`, `${BROKER}/policy`, `${BROKER}/gate`],
    why: "drivers do mechanics only: they enforce decisions handed to them and never import tools or policy",
  },
  {
    dir: `${BROKER}/policy`,
    allow: ["re2js", "zod"], // pure libraries, no I/O
    typeOnly: ["@tabrelay/protocol"],
    onlyFolders: [`${BROKER}/policy`, `${BROKER}/util`],
    typeFolders: [`${BROKER}/config`],
    why: "policy is pure decisions: it imports nothing but config types and util",
  },
  ...["tools", "code", "pages"].map((folder) => ({
    dir: `${BROKER}/${folder}`,
    except: [`${BROKER}/tools/runner.ts`],
    typeOnlyFolders: [`${BROKER}/gate`],
    why: "a call meets the gate in one stage, made by the runner (tools/runner.ts) and handed to the handler as ctx.gate (gate/stage.ts): a handler takes no verdict of its own",
  })),
  {
    dir: BROKER,
    except: [`${BROKER}/policy`, `${BROKER}/gate`, `${BROKER}/config`, `${BROKER}/index.ts`, `${BROKER}/core.ts`],
    deny: [`${BROKER}/policy`],
    why: "the policy is reached through the gate (gate/decisions.ts), compiled by config; only the package's entries re-export from it",
  },
];
const CORE_ROOTS = [`${BROKER}/core.ts`, `${BROKER}/mcp/adapter.ts`];
const NODE_ONLY = ["ws", "@hono/node-server", "@aws-sdk"];
const NODE_GLOBALS = [/\bBuffer\b/, /\bprocess\./, /\bsetImmediate\s*\(/, /\.unref\(\)/, /\b__dirname\b/, /\b__filename\b/, /\brequire\(/];
// Known breaks of a rule, each with the issue that removes it. "file: specifier" as the problem line names them.
const exceptions = new Map([]);
const SDK = "@modelcontextprotocol/sdk";
// One SDK importer per package that speaks MCP: the broker's adapter, and agent-tools' HTTP client.
const SDK_IMPORTERS = new Set(["packages/broker/src/mcp/adapter.ts", "packages/agent-tools/src/overHttp.ts"]);

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Every import and re-export of a module: its specifier, and whether it is type-only (erased at build). */
function imports(source) {
  const found = [];
  for (const m of source.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s+)?([^'"]*?)\s*from\s+["']([^"']+)["']/g)) {
    found.push({ spec: m[4], typeOnly: m[2] !== undefined });
  }
  for (const m of source.matchAll(/(?:^|\n)\s*import\s+["']([^"']+)["']/g)) found.push({ spec: m[1], typeOnly: false });
  for (const m of source.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)) found.push({ spec: m[1], typeOnly: false });
  return found;
}

/** The repository-relative path a relative specifier points at (the .ts source for a .js specifier). */
function target(file, spec) {
  const path = resolve(dirname(file), spec);
  const ts = path.replace(/\.js$/, ".ts");
  return relative(root, existsSync(ts) ? ts : path);
}

const inside = (path, dir) => path === dir || path.startsWith(`${dir}/`);
const external = (spec, list) => list.some((a) => a === spec || spec.startsWith(`${a}/`) || (a === "node:*" && spec.startsWith("node:")));

const problems = [];
const used = new Set();
function report(rel, spec, why) {
  const key = `${rel}: ${spec}`;
  if (exceptions.has(key)) used.add(key);
  else problems.push(`${rel}: imports ${spec} (${why})`);
}
for (const rule of rules) {
  for (const file of files(join(root, rule.dir))) {
    const rel = relative(root, file);
    if (rule.except?.some((d) => inside(rel, d))) continue;
    for (const { spec, typeOnly } of imports(readFileSync(file, "utf8"))) {
      const isRelative = spec.startsWith(".");
      const to = isRelative ? target(file, spec) : undefined;
      if (!isRelative && rule.allow && !external(spec, rule.allow) && !(typeOnly && rule.typeOnly && external(spec, rule.typeOnly))) {
        report(rel, spec, rule.typeOnly && external(spec, rule.typeOnly) ? `${rule.why}; only \`import type\` from ${spec}` : rule.why);
      }
      if (to && rule.contained && !inside(to, rule.dir)) report(rel, spec, rule.why);
      if (to && !typeOnly && rule.typeOnlyFolders?.some((d) => inside(to, d))) report(rel, spec, `${rule.why}; only \`import type\` from ${to}`);
      if (to && rule.onlyFolders && !rule.onlyFolders.some((d) => inside(to, d)) && !(typeOnly && rule.typeFolders?.some((d) => inside(to, d)))) {
        report(rel, spec, rule.typeFolders?.some((d) => inside(to, d)) ? `${rule.why}; only \`import type\` from ${to}` : rule.why);
      }
      if (rule.deny?.some((d) => (d.endsWith("/") ? spec.startsWith(d) : spec === d || spec.startsWith(`${d}/`)) || (to !== undefined && inside(to, d))))
        report(rel, spec, rule.why);
      if (spec.startsWith(SDK) && !SDK_IMPORTERS.has(rel)) report(rel, spec, `only ${[...SDK_IMPORTERS].join(" and ")} may import the MCP SDK`);
    }
  }
}
// The core: every file reachable from CORE_ROOTS through runtime imports, with the chain that reached it.
const builtins = new Set(builtinModules);
const isBuiltin = (spec) => spec.startsWith("node:") || builtins.has(spec.split("/")[0]);
const chains = new Map(CORE_ROOTS.map((rel) => [rel, [rel]]));
for (const [rel, chain] of chains) {
  const file = join(root, rel);
  const source = readFileSync(file, "utf8");
  for (const { spec, typeOnly } of imports(source)) {
    if (typeOnly) continue;
    if (spec.startsWith(".")) {
      const to = target(file, spec);
      if (!chains.has(to)) chains.set(to, [...chain, to]);
    } else if (isBuiltin(spec) || external(spec, NODE_ONLY)) {
      problems.push(
        `${chain.join(" > ")}: imports ${spec} (the core runs on Workers-style runtimes too: no node: module, no Node-only package; inject it from the Node broker, see core.ts)`,
      );
    }
  }
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  for (const pattern of NODE_GLOBALS) {
    const line = code.split("\n").find((l) => pattern.test(l));
    if (line !== undefined) problems.push(`${chain.join(" > ")}: uses a Node-only global (${pattern.source}): ${line.trim().slice(0, 120)}`);
  }
}
const needed = [];
try {
  await build({
    entryPoints: [join(root, CORE_ROOTS[0])],
    bundle: true,
    write: false,
    platform: "neutral",
    format: "esm",
    mainFields: ["browser", "module", "main"],
    conditions: ["workerd", "worker", "browser"],
    logLevel: "silent",
    plugins: [
      {
        name: "node-builtins",
        setup(b) {
          b.onResolve({ filter: /.*/ }, ({ path, importer }) => {
            if (!isBuiltin(path)) return undefined;
            needed.push(`${path} (imported by ${relative(root, importer)})`);
            return { path, external: true };
          });
        },
      },
    ],
  });
} catch (error) {
  const first = error.errors?.[0];
  problems.push(
    `${CORE_ROOTS[0]}: does not bundle for a neutral platform (run npm run build first: it resolves packages' dist): ${first ? `${first.text} at ${first.location?.file ?? "?"}` : error.message}`,
  );
}
for (const what of needed) problems.push(`${CORE_ROOTS[0]}: its neutral bundle needs the Node built-in ${what}`);

// No circle of modules inside a package (type imports included: a circle of types is a circle of meaning): what
// two modules share lives below both.
for (const dir of readdirSync(join(root, "packages"))) {
  const src = join(root, "packages", dir, "src");
  if (!existsSync(src)) continue;
  const graph = new Map();
  for (const file of files(src)) {
    const rel = relative(root, file);
    graph.set(
      rel,
      imports(readFileSync(file, "utf8"))
        .filter(({ spec }) => spec.startsWith("."))
        .map(({ spec }) => target(file, spec))
        .filter((to) => to !== rel),
    );
  }
  for (const circle of stronglyConnected(graph).filter((c) => c.length > 1)) {
    problems.push(
      `a circle of ${circle.length} modules (each reaches the others through its imports; break it by moving what they share below them): ${circle.sort().join(", ")}`,
    );
  }
}

// The broker's floors, the ground first (docs/development.md, "The broker's floors"). Each folder of packages/broker/src (or
// file at its top, by its name) stands on one floor and imports only from the floors below it: never a folder on a
// floor above (an arrow back up), never another folder of its own floor (siblings stay apart). Type imports count: a
// type is a dependency of meaning. Written as Playwright keeps a DEPS.list per folder, read from every import.
const FLOORS = [
  { floor: ["util", "version", "assets", "auth"], why: "leaves: helpers with no opinion of the product" },
  { floor: ["policy"], why: "the user's policy, compiled: pure decisions over URLs and element facts" },
  { floor: ["store"], why: "where state lasts (SQLite, PostgreSQL)" },
  { floor: ["config"], why: "config.yaml read, checked and compiled into policies and settings" },
  { floor: ["users"], why: "who calls: principals and their tokens" },
  { floor: ["audit", "screenshots"], why: "what every call leaves behind: its record, its images" },
  { floor: ["drivers"], why: "browsers, driven: mechanics only, decisions handed in" },
  { floor: ["http"], why: "the HTTP doors' helpers: bodies, forwarded addresses, /health" },
  { floor: ["gate"], why: "every decision the policy takes about a call, and what it does to tabs" },
  { floor: ["extract", "liveConfig", "launch"], why: "HTML to Markdown; the config as it changes; browsers started" },
  { floor: ["tools"], why: "the tools, the runner every call passes, and the interfaces of the services they use" },
  { floor: ["cluster", "code"], why: "services over the tools: other brokers of a cluster, code mode" },
  { floor: ["catalog", "mcp"], why: "every tool offered, in order; MCP served over the tools" },
  { floor: ["pages"], why: "the tools web pages offer (page tools, WebMCP), served as MCP tools" },
  { floor: ["dashboard"], why: "the user's view of it all" },
  { floor: ["app", "core", "cdpAttach"], why: "the HTTP app; the runtime-neutral core; browsers attached over CDP" },
  { floor: ["server"], why: "the Node broker, assembled" },
  { floor: ["index"], why: "the package's entry" },
];
const floorOf = new Map(FLOORS.flatMap(({ floor }, i) => floor.map((name) => [name, i])));
/** A broker file's folder (or, at the top, its name without .ts): the unit that stands on a floor. */
const unitOf = (rel) => relative(BROKER, rel).split("/")[0].replace(/\.ts$/, "");
for (const file of files(join(root, BROKER))) {
  const rel = relative(root, file);
  const from = unitOf(rel);
  const at = floorOf.get(from);
  if (at === undefined) {
    problems.push(`${rel}: ${from} stands on no floor of the broker: add it to FLOORS in scripts/check-deps.mjs`);
    continue;
  }
  for (const { spec } of imports(readFileSync(file, "utf8"))) {
    if (!spec.startsWith(".")) continue;
    const to = unitOf(target(file, spec));
    if (to === from) continue;
    const there = floorOf.get(to);
    if (there === undefined || there < at) continue;
    problems.push(
      there > at
        ? `${rel}: imports ${spec}, an arrow back up (${from}, floor ${at + 1}: ${FLOORS[at].why}; ${to} stands above it, floor ${there + 1}): move what both need down, or hand it in from above`
        : `${rel}: imports ${spec}, a sibling on its own floor (${FLOORS[at].floor.join(", ")}: ${FLOORS[at].why}): move what both need below them`,
    );
  }
}

/** Tarjan's strongly connected components of a graph of files: each a set of files that all reach each other. */
function stronglyConnected(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const out = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node), index.get(to)));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      out.push(component);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return out;
}

for (const key of exceptions.keys()) {
  if (!used.has(key)) problems.push(`${key}: listed as a known exception but no longer imported: remove it from scripts/check-deps.mjs`);
}
if (problems.length) {
  console.error(`Import boundaries broken:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(
  `import boundaries: ok${used.size ? ` (${used.size} known exceptions: ${[...used].join(", ")})` : ""}; runtime-neutral core: ${chains.size} files, no Node built-in or global`,
);

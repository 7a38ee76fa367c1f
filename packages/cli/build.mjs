// Bundles the CLI and the broker it runs into packages/cli/bundle (what bin/tabrelay.js loads).
//
// Why a bundle: the broker is a long-lived server whose resident memory is mostly code. One tree-shaken,
// minified file per load unit (the CLI + broker core; extraction and the CDP driver as chunks loaded on first
// use) holds far less source and fewer module records than ~400 files under node_modules (bench/: ~10 MiB less
// RSS after a read workload). `npm run build` compiles the TypeScript first (tsc -b); this reads that output.
import { build } from "esbuild";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));

/**
 * Source edits to dependencies that change when something happens, never what it computes: module-level work that
 * a read never needs is deferred to first use. Each edit must match exactly once: a dependency update that moves the
 * code fails the build here rather than silently losing the edit. Together (bench figure 4, `node bench/run.mjs
 * --only=tabrelay`, 3 runs each, alternating): 92.2 -> 86.8 MiB after the read workload, read_url median unchanged
 * (within this machine's noise). The bench's TABRELAY_BENCH_DIAG hook shows where resident memory is.
 */
const deferrals = [
  {
    // cssomnom (linkedom's CSSOM, loaded in the extraction worker) builds an Intl.NumberFormat when its module loads,
    // to serialize numbers in CSS values, which a read seldom does (none of bench/'s or the tests' pages do).
    // Building one makes ICU touch its locale, number and converter data, ~4.1 MiB of the node binary's pages
    // (where ICU's data lives), resident for good: they stay mapped after the worker exits. Figure 4: 91.3 -> 87.1
    // MiB (node binary pages 47.1 -> 43.0). The same formatter is now built on first use.
    file: /[\\/]cssomnom[\\/]dist[\\/]CSSStyleDeclaration-[^\\/]+\.js$/,
    edits: [
      ["const formatter = new Intl.NumberFormat(", "let formatter;\nconst newFormatter = () => new Intl.NumberFormat("],
      ["const formatted = formatter.format(val);", "const formatted = (formatter ??= newFormatter()).format(val);"],
    ],
  },
  {
    // linkedom parses a <style> element's CSS with cssomnom only when its .sheet is read, which no part of a read
    // does, but imports cssomnom when its module loads, so every extraction worker built cssomnom's tables and
    // classes. cssomnom is now loaded on the first .sheet read (esbuild keeps a required ES module's evaluation
    // lazy). The worker's heap once loaded: 6.5 -> 5.8 MiB used, 10.1 -> 9.3 MiB committed.
    file: /[\\/]linkedom[\\/]esm[\\/]html[\\/]style-element\.js$/,
    edits: [
      ["import {parse} from 'cssomnom/parse';\n", ""],
      ["return this[SHEET] = parse(this.textContent);", "return this[SHEET] = require('cssomnom/parse').parse(this.textContent);"],
    ],
  },
  {
    // The MCP SDK's JSON Schema validator (server: elicitation replies; client: tool output schemas) loads Ajv and
    // ajv-formats when its module loads and builds an Ajv instance in every Server and Client, though the broker
    // never validates through it on its own paths. Ajv is now loaded and built on the first getValidator() call.
    // The broker's main-thread heap after the read workload: 15.2 -> 14.7 MiB used, 18.2-18.4 -> 17.5-17.7 committed.
    file: /[\\/]@modelcontextprotocol[\\/]sdk[\\/]dist[\\/]esm[\\/]validation[\\/]ajv-provider\.js$/,
    edits: [
      ["import Ajv from 'ajv';\nimport _addFormats from 'ajv-formats';\n", ""],
      ["function createDefaultAjvInstance() {\n", "function createDefaultAjvInstance() {\n    const Ajv = require('ajv');\n"],
      ["const addFormats = _addFormats;", "const addFormats = require('ajv-formats');"],
      ["this._ajv = ajv ?? createDefaultAjvInstance();", "this._ajv = ajv;"],
      ["getValidator(schema) {", "getValidator(schema) {\n        this._ajv ??= createDefaultAjvInstance();"],
    ],
  },
];

/** Applies `deferrals` (an esbuild plugin); `applied` holds the ones that found their file. */
const applied = new Set();
const deferPlugin = {
  name: "tabrelay-deferrals",
  setup(b) {
    for (const { file, edits } of deferrals) {
      b.onLoad({ filter: file }, ({ path }) => {
        let contents = readFileSync(path, "utf8");
        for (const [from, to] of edits) {
          const at = contents.indexOf(from);
          if (at < 0 || contents.indexOf(from, at + 1) >= 0) throw new Error(`build.mjs: ${path}: expected one ${JSON.stringify(from)}; update the deferral`);
          contents = contents.slice(0, at) + to + contents.slice(at + from.length);
        }
        applied.add(file);
        return { contents, loader: "js" };
      });
    }
  },
};
const out = join(root, "bundle");
rmSync(out, { recursive: true, force: true });
const result = await build({
  // The extraction worker thread's script (the broker finds it through assets.ts); it shares the extraction chunk.
  // The code-mode sandbox's worker thread (its pool finds sandboxWorker.js beside the bundle's chunks).
  entryPoints: {
    main: join(root, "dist/main.js"),
    extractWorker: join(root, "../broker/dist/extract/worker.js"),
    sandboxWorker: join(root, "../sandbox/dist/node/worker.js"),
  },
  outdir: out,
  bundle: true,
  splitting: true, // keeps the broker's lazy imports (extraction, CDP driver, S3) lazy
  format: "esm",
  platform: "node",
  target: "node22",
  minify: true,
  sourcemap: "linked", // maps stack traces back with `node --enable-source-maps`
  legalComments: "none", // every bundled package's licence goes whole into THIRD_PARTY_LICENSES.txt (below)
  metafile: true,
  external: [
    "@aws-sdk/*", // optional S3 screenshot store, loaded on first use
    "bufferutil", // ws's optional native speed-ups
    "utf-8-validate",
  ],
  // CommonJS dependencies require() Node's built-ins; ESM output has no require of its own.
  banner: { js: 'import { createRequire as __tabrelayRequire } from "node:module"; const require = __tabrelayRequire(import.meta.url);' },
  logLevel: "warning",
  plugins: [deferPlugin],
});
for (const { file } of deferrals) if (!applied.has(file)) throw new Error(`build.mjs: no file matched ${file}; update the deferral`);
// The package's `tabrelay/agent-tools` entry (src/agentTools.ts): its own build, because its `ai` is the user's (a
// peer: their tool objects must be made by the `ai` their agent runs), while the CLI's chat carries its own. Into the
// same folder: its chunks find the extraction and sandbox workers, and assets/, where the CLI's do.
const library = await build({
  entryPoints: { agentTools: join(root, "dist/agentTools.js") },
  outdir: out,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  minify: true,
  legalComments: "none",
  metafile: true,
  external: ["ai", "@aws-sdk/*", "bufferutil", "utf-8-validate"],
  banner: { js: 'import { createRequire as __tabrelayRequire } from "node:module"; const require = __tabrelayRequire(import.meta.url);' },
  logLevel: "warning",
  plugins: [deferPlugin],
});
for (const input of Object.keys(library.metafile.inputs)) result.metafile.inputs[input] ??= library.metafile.inputs[input];
// QuickJS's wasm, which the sandbox pool loads from beside sandboxWorker.js (esbuild bundles JavaScript only).
copyFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"), join(out, "emscripten-module.wasm"));

// V8 keeps every loaded script's source in memory, as one byte per character only if all of it is Latin-1.
// esbuild escapes non-ASCII in strings but leaves it in regular expressions (Readability's "»", "正在加载") and
// template literals (the dashboard's "·"), which doubles the resident size of a whole chunk. \uXXXX means the
// same character in a string, a template literal and a regular expression alike.
for (const name of readdirSync(out)) {
  if (!name.endsWith(".js")) continue;
  const file = join(out, name);
  const source = readFileSync(file, "utf8");
  const ascii = source.replace(/[^\x00-\x7f]/gu, (ch, offset) => {
    const code = ch.codePointAt(0);
    // Outside the BMP, \uXXXX would mean two code units in a /u regular expression; after a backslash it would
    // change meaning: stop rather than guess.
    if (code > 0xffff || source[offset - 1] === "\\") throw new Error(`${name}: cannot escape U+${code.toString(16)} at ${offset}; escape it in the source`);
    return `\\u${code.toString(16).padStart(4, "0")}`;
  });
  if (ascii !== source) writeFileSync(file, ascii);
}

// Everything the bundle reads at run time, in the package's own assets/ (the broker's assets.ts looks there when it
// runs from this bundle): the extension's builds for Chrome and Firefox (loaded by `tabrelay start`, shown by `tabrelay extension`; it holds
// the in-page scripts the CDP driver injects too), the dashboard's browser scripts and stylesheet, the top-sites
// ranking with its licence. `npm run pack` ships bin/, bundle/ and assets/ as the `tabrelay` package.
const packages = join(root, "..");
const assets = join(root, "assets");
rmSync(assets, { recursive: true, force: true });
mkdirSync(join(assets, "dashboard"), { recursive: true });
if (!existsSync(join(packages, "extension/dist/manifest.json")))
  throw new Error("build.mjs: the extension is not built (packages/extension/build.mjs runs first)");
cpSync(join(packages, "extension/dist"), join(assets, "extension"), { recursive: true, filter: (path) => !/[\\/]\.[^\\/]*$/.test(path) }); // not the build stamp
cpSync(join(packages, "extension/dist-firefox"), join(assets, "extension-firefox"), { recursive: true });
for (const name of readdirSync(join(packages, "broker/src/dashboard/client"))) {
  if (/\.(js|css)$/.test(name)) copyFileSync(join(packages, "broker/src/dashboard/client", name), join(assets, "dashboard", name));
}
for (const name of ["top-sites.csv", "top-sites.LICENSE"]) copyFileSync(join(packages, "broker/data", name), join(assets, name));

// The licences of every package whose code is in the bundle (esbuild's list of inputs), and QuickJS's wasm: a
// bundle carries their code, so it carries their notices.
const requireHere = createRequire(import.meta.url);
const bundled = new Map();
const packageDirOf = (file) => {
  const at = file.lastIndexOf("node_modules/");
  if (at < 0) return undefined;
  const rest = file.slice(at + "node_modules/".length).split("/");
  return file.slice(0, at) + "node_modules/" + rest.slice(0, rest[0].startsWith("@") ? 2 : 1).join("/");
};
const inputs = Object.keys(result.metafile.inputs).map((file) => file.replaceAll("\\", "/"));
inputs.push(requireHere.resolve("@jitl/quickjs-wasmfile-release-sync/wasm").replaceAll("\\", "/"));
for (const file of inputs) {
  const dir = packageDirOf(file);
  if (dir === undefined || bundled.has(dir)) continue;
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const licenceFile = readdirSync(dir).find((name) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(name));
  bundled.set(dir, {
    name: manifest.name,
    version: manifest.version,
    license: manifest.license ?? "see its text",
    text: licenceFile ? readFileSync(join(dir, licenceFile), "utf8").trim() : undefined,
  });
}
const notices = [...new Map([...bundled.values()].map((p) => [`${p.name}@${p.version}`, p])).values()].sort((a, b) => a.name.localeCompare(b.name));
writeFileSync(
  join(out, "THIRD_PARTY_LICENSES.txt"),
  [
    `tabrelay's bundle (bundle/*.js, bundle/emscripten-module.wasm) holds code from the ${notices.length} packages below, each under its own licence.`,
    "",
    ...notices.map(
      (p) =>
        `${"=".repeat(78)}\n${p.name}@${p.version} (${p.license})\n${"=".repeat(78)}\n${p.text ?? `No licence file in the package; its package.json says: ${p.license}`}\n`,
    ),
  ].join("\n"),
);

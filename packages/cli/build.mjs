// Bundles the CLI and the broker it runs into packages/cli/bundle (what bin/tabrelay.js loads).
//
// Why a bundle: the broker is a long-lived server whose resident memory is mostly code. One tree-shaken,
// minified file per load unit (the CLI + broker core; extraction and the CDP driver as chunks loaded on first
// use) holds far less source and fewer module records than ~400 files under node_modules (bench/: ~10 MiB less
// RSS after a read workload). `npm run build` compiles the TypeScript first (tsc -b); this reads that output.
import { build } from "esbuild";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const out = join(root, "bundle");
rmSync(out, { recursive: true, force: true });
await build({
  // The extraction worker thread's script (the broker finds it through assets.ts); it shares the extraction chunk.
  entryPoints: { main: join(root, "dist/main.js"), extractWorker: join(root, "../broker/dist/extract/worker.js") },
  outdir: out,
  bundle: true,
  splitting: true, // keeps the broker's lazy imports (extraction, CDP driver, S3) lazy
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap: "linked", // maps stack traces back with `node --enable-source-maps`
  legalComments: "external",
  external: [
    "better-sqlite3", // native addon: loaded from node_modules
    "@aws-sdk/*", // optional S3 screenshot store, loaded on first use
    "bufferutil", // ws's optional native speed-ups
    "utf-8-validate",
  ],
  // CommonJS dependencies require() Node's built-ins; ESM output has no require of its own.
  banner: { js: 'import { createRequire as __tabrelayRequire } from "node:module"; const require = __tabrelayRequire(import.meta.url);' },
  logLevel: "warning",
});

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

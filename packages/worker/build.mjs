// Builds the Cloudflare Workers bundle, dist/worker.js (ES module syntax), from src/workers.ts and the broker's core
// (@tabrelay/broker/core, built by tsc -b first: `npm run build` at the root does both). A Worker has no disk, so the
// in-page scripts (built with the extension) and the shipped top-sites ranking are carried in the bundle as text
// (the virtual module tabrelay:assets). platform "neutral" resolves no Node built-in: a `node:` import anywhere in
// what the entry reaches fails this build, which is the runtime-neutral core's boundary, checked on every build.
// Nothing is deployed: `npx wrangler deploy` (with wrangler.toml) is the user's step.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const packages = join(here, "..");
const text = (path) => readFileSync(join(packages, path), "utf8");

const assets = {
  name: "tabrelay-assets",
  setup(b) {
    b.onResolve({ filter: /^tabrelay:assets$/ }, () => ({ path: "assets", namespace: "tabrelay" }));
    // Left as an import of the module beside the bundle: workerd and wrangler load a .wasm module as WebAssembly.Module.
    b.onResolve({ filter: /^tabrelay:quickjs-wasm$/ }, () => ({ path: "./quickjs.wasm", external: true }));
    b.onLoad({ filter: /.*/, namespace: "tabrelay" }, () => ({
      loader: "js",
      contents: [
        `export const inpage = ${JSON.stringify(text("extension/dist/inpage.js"))};`,
        `export const webmcp = ${JSON.stringify(text("extension/dist/webmcp.js"))};`,
        `export const topSites = ${JSON.stringify(text("broker/data/top-sites.csv"))};`,
      ].join("\n"),
    }));
  },
};

mkdirSync(join(here, "dist"), { recursive: true });
const requireHere = createRequire(join(packages, "sandbox", "package.json"));
copyFileSync(requireHere.resolve("@jitl/quickjs-wasmfile-release-sync/wasm"), join(here, "dist/quickjs.wasm"));
const result = await build({
  entryPoints: [join(here, "src/workers.ts")],
  outfile: join(here, "dist/worker.js"),
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  mainFields: ["module", "main"],
  conditions: ["workerd", "worker", "browser", "import", "default"],
  plugins: [assets],
  minify: process.env.TABRELAY_WORKER_MINIFY !== "0",
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});
writeFileSync(join(here, "dist/worker.meta.json"), JSON.stringify(result.metafile));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`worker: dist/worker.js ${(bytes / 1024).toFixed(0)} KiB`);

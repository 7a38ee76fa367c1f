#!/usr/bin/env node
// `npm run build`: the TypeScript project references (`tsc -b`, incremental by itself), then the three bundles
// (the extension, the CLI with the broker, the Workers entry), each only when a file it could be built from changed
// since it was last built, so `npm ci` (its `prepare`) then `npm test` build once. `--force` rebuilds every bundle.
// A bundle's inputs are taken wide: every file under packages/ but tests, build outputs and dependencies, plus the
// lockfile; its stamp (a file beside its output) is written only once it built.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const force = process.argv.includes("--force");
const BUNDLES = [
  { name: "extension", script: "packages/extension/build.mjs", stamp: "packages/extension/dist/.built" },
  { name: "cli", script: "packages/cli/build.mjs", stamp: "packages/cli/bundle/.built" },
  { name: "worker", script: "packages/worker/build.mjs", stamp: "packages/worker/dist/.built" },
];
const SKIP = new Set(["node_modules", "dist", "dist-firefox", "bundle", "test", ".turbo"]);

run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-b"], "tsc -b");
const inputs = Math.max(newest(join(root, "packages")), statSync(join(root, "package-lock.json")).mtimeMs);
for (const bundle of BUNDLES) {
  const stamp = join(root, bundle.stamp);
  if (!force && existsSync(stamp) && statSync(stamp).mtimeMs >= inputs) {
    console.log(`${bundle.name}: up to date`);
    continue;
  }
  run(process.execPath, [join(root, bundle.script)], bundle.name);
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}

/** The newest modification time of a file under `dir`, build outputs, tests and dependencies left out. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) latest = Math.max(latest, newest(join(dir, entry.name)));
    } else if (!entry.name.endsWith(".tsbuildinfo")) {
      latest = Math.max(latest, statSync(join(dir, entry.name)).mtimeMs);
    }
  }
  return latest;
}

function run(command, args, what) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`build: ${what} failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
}

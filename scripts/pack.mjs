#!/usr/bin/env node
// `npm run pack`: what a maintainer publishes, built from this checkout into release/:
//   release/tabrelay-<version>.tgz                      the `tabrelay` package (npm publish release/tabrelay-<version>.tgz)
//   release/tabrelay-page-<version>.tgz                 @tabrelay/page, for web apps offering their own tools
//   release/tabrelay-extension-chrome-<version>.zip     the Chrome extension, as the Chrome Web Store takes it
//   release/tabrelay-extension-firefox-<version>.zip    the same extension built for Firefox, as addons.mozilla.org takes it
// The `tabrelay` package is packages/cli's bin, bundle and assets (packages/cli/build.mjs puts the broker, the
// dashboard, the extension's build, the in-page scripts, the top-sites ranking and the sandbox's WASM there) with a
// package.json written for the registry: public, no dependency to install (all of it is in the bundle), no install
// script. test/release/package.test.ts installs the tarball into an empty folder outside the checkout and uses it.
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { versionMismatches } from "./version.mjs";
import { zipFolder } from "./zip.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const release = join(root, "release");
const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

const { version, mismatches } = versionMismatches();
if (mismatches.length > 0)
  fail(
    `versions differ from the root package.json's ${version}: ${mismatches.map((m) => `${m.file} (${m.value})`).join(", ")}; run node scripts/version.mjs set ${version}`,
  );
run(process.execPath, [join(root, "scripts/build.mjs")], "npm run build");

rmSync(release, { recursive: true, force: true });
mkdirSync(release, { recursive: true });

// The `tabrelay` package, staged: only what it runs and what a user reads.
const cli = join(root, "packages/cli");
const stage = join(release, "stage", "tabrelay");
mkdirSync(stage, { recursive: true });
cpSync(join(cli, "bin"), join(stage, "bin"), { recursive: true });
cpSync(join(cli, "assets"), join(stage, "assets"), { recursive: true });
cpSync(join(cli, "types"), join(stage, "types"), { recursive: true });
mkdirSync(join(stage, "bundle"));
for (const name of readdirSync(join(cli, "bundle"))) {
  // Source maps (4x the code) stay behind: the package is what runs; a stack trace maps back with this build's maps.
  if (!name.endsWith(".map") && !name.startsWith(".")) copyFileSync(join(cli, "bundle", name), join(stage, "bundle", name));
}
for (const name of ["LICENSE", "CHANGELOG.md", "README.md"]) copyFileSync(join(root, name), join(stage, name));
// The Workers entry for operators (docs/servers.md): the prebuilt bundle, QuickJS's wasm beside it, and a
// wrangler.toml whose main is that bundle; copy the folder and run `npx wrangler deploy` in it.
mkdirSync(join(stage, "worker"));
for (const name of ["worker.js", "quickjs.wasm"]) copyFileSync(join(root, "packages/worker/dist", name), join(stage, "worker", name));
const wrangler = readFileSync(join(root, "packages/worker/wrangler.toml"), "utf8");
if (!wrangler.includes('main = "dist/worker.js"')) fail('packages/worker/wrangler.toml no longer says main = "dist/worker.js": update pack.mjs');
writeFileSync(
  join(stage, "worker", "wrangler.toml"),
  wrangler
    .replace(
      /^# Cloudflare Workers deployment[\s\S]*?\n(?=name =)/,
      "# Cloudflare Workers deployment of tabrelay's stateless entry, as the tabrelay package ships it: copy this folder\n# (cp -r node_modules/tabrelay/worker my-tabrelay-worker), set the secrets below, then `npx wrangler deploy` in it.\n",
    )
    .replace('main = "dist/worker.js"', 'main = "worker.js"'),
);
const cliManifest = JSON.parse(readFileSync(join(cli, "package.json"), "utf8"));
const agentToolsManifest = JSON.parse(readFileSync(join(root, "packages/agent-tools/package.json"), "utf8"));
writeFileSync(
  join(stage, "package.json"),
  `${JSON.stringify(
    {
      name: "tabrelay",
      version,
      description: cliManifest.description,
      keywords: ["mcp", "model-context-protocol", "browser", "chrome-extension", "ai-agent", "cdp"],
      license: "Apache-2.0",
      type: "module",
      bin: { tabrelay: "bin/tabrelay.js" },
      // tabrelay/agent-tools: the tools as Vercel AI SDK tool objects, in this process or over HTTP (docs/clients.md).
      exports: { "./agent-tools": { types: "./types/agent-tools.d.ts", default: "./bundle/agentTools.js" }, "./package.json": "./package.json" },
      files: ["bin", "bundle", "assets", "types", "worker", "CHANGELOG.md"],
      engines: rootManifest.engines,
      // The S3 screenshot store (screenshots.store: s3) loads these on first use; tabrelay/agent-tools makes its tool
      // objects with the user's own `ai` (6 or 7). No one else needs them.
      peerDependencies: { ai: agentToolsManifest.peerDependencies.ai, "@aws-sdk/client-s3": "^3.0.0", "@aws-sdk/s3-request-presigner": "^3.0.0" },
      peerDependenciesMeta: { ai: { optional: true }, "@aws-sdk/client-s3": { optional: true }, "@aws-sdk/s3-request-presigner": { optional: true } },
    },
    null,
    2,
  )}\n`,
);
const tarball = npmPack(stage, `tabrelay-${version}.tgz`);

// @tabrelay/page as its own package.json says (no dependencies; tsc -b builds its dist), with the licence.
const pageStage = join(release, "stage", "page");
cpSync(join(root, "packages/page/dist"), join(pageStage, "dist"), { recursive: true, filter: (path) => !path.endsWith(".tsbuildinfo") });
for (const name of ["package.json", "README.md"]) copyFileSync(join(root, "packages/page", name), join(pageStage, name));
copyFileSync(join(root, "LICENSE"), join(pageStage, "LICENSE"));
const pageTarball = npmPack(pageStage, `tabrelay-page-${version}.tgz`);

// The extension for the Chrome Web Store: the store refuses a manifest with `key` (the key pins the id of an
// unpacked or bundled install to the one the broker knows); the store gives the published item its own id.
const extensionZip = join(release, `tabrelay-extension-chrome-${version}.zip`);
const extensionDir = join(root, "packages/extension/dist");
const manifest = JSON.parse(readFileSync(join(extensionDir, "manifest.json"), "utf8"));
if (manifest.version !== version) fail(`packages/extension/dist/manifest.json says ${manifest.version}, not ${version}: rebuild (npm run build)`);
zipFolder(extensionDir, extensionZip, (name, bytes) => {
  if (name === "config.json") fail("packages/extension/dist holds a launcher's config.json (a pairing secret): rebuild the extension");
  if (name !== "manifest.json") return bytes;
  const { key: _key, ...store } = JSON.parse(bytes.toString("utf8"));
  return Buffer.from(`${JSON.stringify(store, null, 2)}\n`);
});

// The same extension built for Firefox (packages/extension/dist-firefox), as addons.mozilla.org takes it: it has no
// `key`; its add-on id is in browser_specific_settings.gecko.
const firefoxZip = join(release, `tabrelay-extension-firefox-${version}.zip`);
const firefoxDir = join(root, "packages/extension/dist-firefox");
const firefoxManifest = JSON.parse(readFileSync(join(firefoxDir, "manifest.json"), "utf8"));
if (firefoxManifest.version !== version)
  fail(`packages/extension/dist-firefox/manifest.json says ${firefoxManifest.version}, not ${version}: rebuild (npm run build)`);
zipFolder(firefoxDir, firefoxZip, (name, bytes) => {
  if (name === "config.json") fail("packages/extension/dist-firefox holds a launcher's config.json (a pairing secret): rebuild the extension");
  return bytes;
});

rmSync(join(release, "stage"), { recursive: true, force: true });
for (const file of [tarball, pageTarball, extensionZip, firefoxZip])
  console.log(`pack: ${file.slice(root.length)} (${(statSync(file).size / 1024).toFixed(0)} KiB)`);
console.log(
  `pack: publish with npm publish release/tabrelay-${version}.tgz (and release/tabrelay-page-${version}.tgz); upload the Chrome zip in the Chrome Web Store's developer dashboard and the Firefox one at addons.mozilla.org (it signs it)`,
);

/** `npm pack` of `dir` into release/, checked to have made `expected`; its path. */
function npmPack(dir, expected) {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const result = spawnSync(npm, ["pack", "--pack-destination", release, "--json"], { cwd: dir, encoding: "utf8" });
  if (result.status !== 0) fail(`npm pack in ${dir} failed: ${result.stderr}`);
  const [{ filename }] = JSON.parse(result.stdout);
  if (filename !== expected) fail(`npm pack in ${dir} made ${filename}, expected ${expected}`);
  return join(release, filename);
}

function run(command, args, what) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) fail(`${what} failed (exit ${result.status ?? result.signal})`);
}

function fail(message) {
  console.error(`pack: ${message}`);
  process.exit(1);
}

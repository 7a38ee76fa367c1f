// Bundles the MV3 extension from one source for two browsers:
//   packages/extension/dist          Chrome (and Chromium-based browsers): the folder users load unpacked
//   packages/extension/dist-firefox  Firefox 139+ (an event page instead of a service worker)
// What differs between them is said here, in firefoxManifest(), and at run time in src/platform.ts (the one module
// that reads TABRELAY_BROWSER): no other file branches on the browser.
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));

/** The add-on id Firefox knows tabrelay by (browser_specific_settings.gecko.id): fixed, so an update replaces it. */
export const GECKO_ID = "extension@tabrelay";
/** tabGroups arrived in Firefox 139 (and 140 is the ESR line from which MV3 event pages have every API used here). */
const FIREFOX_MIN_VERSION = "139.0";

/**
 * Chrome's manifest as Firefox takes it: an event page (background.scripts; Firefox has no extension service
 * worker), its add-on id, no `key` or minimum Chrome version, and an explicit CSP for the extension's pages: Firefox's
 * default one upgrades ws:// to wss://, which would close the bridge to a broker on this machine (1015).
 */
export function firefoxManifest(chrome) {
  const { key: _key, minimum_chrome_version: _minimum, background, ...rest } = chrome;
  return {
    ...rest,
    background: { scripts: [background.service_worker] },
    content_security_policy: { extension_pages: "script-src 'self'" },
    browser_specific_settings: {
      gecko: { id: GECKO_ID, strict_min_version: FIREFOX_MIN_VERSION, data_collection_permissions: { required: ["none"] } },
    },
  };
}

const TARGETS = [
  { browser: "chrome", out: join(root, "dist"), esbuildTarget: "chrome116", manifest: (m) => m },
  { browser: "firefox", out: join(root, "dist-firefox"), esbuildTarget: `firefox${parseInt(FIREFOX_MIN_VERSION, 10)}`, manifest: firefoxManifest },
];

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const manifest = JSON.parse(readFileSync(join(root, "static/manifest.json"), "utf8"));
  for (const target of TARGETS) {
    rmSync(target.out, { recursive: true, force: true });
    mkdirSync(target.out, { recursive: true });
    await build({
      entryPoints: {
        background: join(root, "src/background.ts"),
        popup: join(root, "src/popup.ts"),
        // The in-page script, one source shared with the CDP driver, injected on demand into an isolated world.
        inpage: join(root, "../inpage/src/index.ts"),
        // WebMCP (pages.webmcp): document.modelContext in the main world, and its relay; registered content scripts on the allowed origins (src/webmcp.ts).
        webmcp: join(root, "../inpage/src/webmcp.ts"),
        webmcpRelay: join(root, "src/webmcpRelay.ts"),
      },
      outdir: target.out,
      bundle: true,
      format: "iife",
      target: target.esbuildTarget,
      define: { TABRELAY_BROWSER: JSON.stringify(target.browser) },
      logLevel: "warning",
    });
    cpSync(join(root, "static"), target.out, { recursive: true });
    writeFileSync(join(target.out, "manifest.json"), `${JSON.stringify(target.manifest(manifest), null, 2)}\n`);
  }
}

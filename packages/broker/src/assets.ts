// Files the broker reads at run time, found from this module's own location, never from the working directory.
// - In the CLI's bundle (the `tabrelay` package, installed or in this checkout's packages/cli): every file is in the
//   package's own assets/ folder beside bundle/ (packages/cli/build.mjs copies them there), so an installed package
//   needs nothing outside itself.
// - Under test and from the broker's build (packages/broker/src or dist): the files where they are made in the
//   checkout; both sit two directories below packages/.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(import.meta.url);
/** Running from the CLI's bundle (a chunk in <package>/bundle), not from the broker's build or sources. */
const inBundle = /[\\/]bundle[\\/][^\\/]*\.js$/.test(here);

function paths() {
  if (inBundle) {
    const pkg = join(dirname(here), "..");
    const assets = join(pkg, "assets");
    return {
      topSitesCsv: join(assets, "top-sites.csv"),
      extensionDir: join(assets, "extension"),
      firefoxExtensionDir: join(assets, "extension-firefox"),
      dashboardClient: join(assets, "dashboard"),
      inpageScript: join(assets, "extension", "inpage.js"),
      webmcpScript: join(assets, "extension", "webmcp.js"),
      extractWorker: join(pkg, "bundle", "extractWorker.js"),
    };
  }
  const packagesDir = join(dirname(here), "..", "..");
  return {
    topSitesCsv: join(packagesDir, "broker", "data", "top-sites.csv"),
    extensionDir: join(packagesDir, "extension", "dist"),
    firefoxExtensionDir: join(packagesDir, "extension", "dist-firefox"),
    dashboardClient: join(packagesDir, "broker", "src", "dashboard", "client"),
    inpageScript: join(packagesDir, "extension", "dist", "inpage.js"),
    webmcpScript: join(packagesDir, "extension", "dist", "webmcp.js"),
    // A worker thread needs JavaScript: under test, where the broker runs from its TypeScript sources, the build's.
    extractWorker: join(packagesDir, "broker", "dist", "extract", "worker.js"),
  };
}

export const assetPaths: {
  /** The shipped ranking of popular domains (see docs/configuration.md: source and licence). */
  readonly topSitesCsv: string;
  /** The built MV3 extension (what `tabrelay start` loads, and `tabrelay extension` shows). */
  readonly extensionDir: string;
  /** The same extension built for Firefox (what `tabrelay start --firefox` installs, and `tabrelay extension --firefox` shows). */
  readonly firefoxExtensionDir: string;
  /** The dashboard's browser scripts (ES modules) and stylesheet (dashboard/page.ts serves them). */
  readonly dashboardClient: string;
  /** The in-page snapshot/act script, built with the extension; the CDP driver injects the same file. */
  readonly inpageScript: string;
  /** The WebMCP shim (document.modelContext) for agent tabs' main world, built with the extension; the CDP driver injects the same file. */
  readonly webmcpScript: string;
  /** The extraction worker thread's script. */
  readonly extractWorker: string;
} = paths();

// Files the broker reads at run time, found from this module's own location. The broker's build
// (packages/broker/dist/assets.js), its sources under test (packages/broker/src/assets.ts) and the CLI's
// bundle (packages/cli/bundle/*.js) all sit two directories below packages/, so one rule serves all three.
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const packagesDir = fileURLToPath(new URL("../../", import.meta.url));
/** Running from the CLI's bundle (packages/cli/bundle), not from the broker's build or sources. */
const inBundle = /[\\/]cli[\\/]bundle[\\/][^\\/]*$/.test(fileURLToPath(import.meta.url));

export const assetPaths = {
  /** The shipped ranking of popular domains (see README: source and licence). */
  topSitesCsv: join(packagesDir, "broker", "data", "top-sites.csv"),
  /** The built MV3 extension. */
  extensionDir: join(packagesDir, "extension", "dist"),
  /** The dashboard's browser scripts (ES modules) and stylesheet, served from their sources (dashboard/page.ts). */
  dashboardClient: join(packagesDir, "broker", "src", "dashboard", "client"),
  /** The in-page snapshot/act script, built with the extension; the CDP driver injects the same file. */
  inpageScript: join(packagesDir, "extension", "dist", "inpage.js"),
  /** The WebMCP shim (document.modelContext) for agent tabs' main world, built with the extension; the CDP driver injects the same file. */
  webmcpScript: join(packagesDir, "extension", "dist", "webmcp.js"),
  /**
   * The extraction worker thread's script: the bundle's own when running from it, else the broker's build (also
   * under test, where the broker runs from its TypeScript sources but a worker needs JavaScript).
   */
  extractWorker: inBundle ? join(packagesDir, "cli", "bundle", "extractWorker.js") : join(packagesDir, "broker", "dist", "extract", "worker.js"),
} as const;

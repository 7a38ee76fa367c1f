// The in-page scripts the CDP driver injects, as the Node broker finds them: built with the extension
// (packages/extension/dist/inpage.js and webmcp.js, assets.ts), read from disk once per process. A read that fails
// is tried again on the next use (a build may have run since). Node-only: a Workers build passes the same scripts
// as strings bundled at build time (CdpBrowserOptions.scripts).
import { readFile } from "node:fs/promises";
import { assetPaths } from "../../assets.js";
import type { CdpScripts } from "./cdpCore.js";

let inpage: Promise<string> | undefined;
let webmcp: Promise<string> | undefined;

export const nodeCdpScripts: CdpScripts = {
  inpage() {
    inpage ??= readFile(assetPaths.inpageScript, "utf8").catch(() => {
      inpage = undefined;
      throw new Error(`the in-page script is missing at ${assetPaths.inpageScript}; run \`npm run build\``);
    });
    return inpage;
  },
  webmcp() {
    webmcp ??= readFile(assetPaths.webmcpScript, "utf8").catch((error: unknown) => {
      webmcp = undefined;
      throw new Error(
        `the WebMCP script is not built (${assetPaths.webmcpScript}): run npm run build (${error instanceof Error ? error.message : String(error)})`,
      );
    });
    return webmcp;
  },
};

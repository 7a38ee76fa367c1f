// Bundles the MV3 extension into packages/extension/dist (the folder users load unpacked).
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const out = join(root, "dist");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
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
  outdir: out,
  bundle: true,
  format: "iife",
  target: "chrome116",
  logLevel: "warning",
});
cpSync(join(root, "static"), out, { recursive: true });

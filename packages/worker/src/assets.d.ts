// The build's virtual module (build.mjs): files a Workers bundle carries as text, since a Worker has no disk.
declare module "tabrelay:assets" {
  /** The in-page script (packages/extension/dist/inpage.js). */
  export const inpage: string;
  /** The WebMCP shim (packages/extension/dist/webmcp.js). */
  export const webmcp: string;
  /** packages/broker/data/top-sites.csv. */
  export const topSites: string;
}

// QuickJS compiled to WebAssembly, imported as a module: a Worker may not compile wasm from bytes at run time.
declare module "tabrelay:quickjs-wasm" {
  const module: WebAssembly.Module;
  export default module;
}

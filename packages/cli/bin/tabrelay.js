#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --max-semi-space-size=1 --optimize-for-size --expose-gc
// The broker is a long-lived, mostly idle server: a small young generation and V8's size-over-speed mode
// keep its resident memory low (bench/: ~45 MiB less RSS after a read workload) at no visible cost to
// latency, where the browser's page load dominates. The bundle (packages/cli/build.mjs) holds less code.
// --expose-gc: the broker collects right after converting a page (packages/broker/src/util/memory.ts).
// MALLOC_ARENA_MAX=1: one malloc arena for all threads (glibc's per-thread caches stay): the extraction worker
// thread otherwise gets arenas of its own (bench figure 4: 93 MiB after the read workload, 90.3 with this).
// Node 22 marks node:sqlite (the store and the audit log) experimental and says so on stderr when it loads; 24 and
// later do not. That one line would read as a fault to a user: it is dropped, every other warning is printed as ever.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  if (/^SQLite is an experimental feature/.test(typeof warning === "string" ? warning : String(warning?.message))) return;
  return emitWarning.call(this, warning, ...rest);
};
// V8's compiled code for the bundle, kept between runs (Node 22.1+): a broker starts ~30% sooner. In the user's own
// cache folder, never a shared temporary one another account could write compiled code into; only for the commands
// that start a broker or a browser (a command that only looks writes nothing).
if (["start", "serve", "stdio", "launch"].includes(process.argv[2] ?? "")) {
  try {
    const { enableCompileCache } = await import("node:module");
    const { homedir } = await import("node:os");
    const { mkdirSync, statSync } = await import("node:fs");
    const xdg = process.env.XDG_CACHE_HOME;
    const cache = xdg && xdg.startsWith("/") ? xdg : homedir() && `${homedir()}/.cache`;
    const dir = cache ? `${cache}/tabrelay/compile-cache` : "";
    if (typeof enableCompileCache === "function" && dir) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Compiled code is code: only from a folder this account owns and no one else may write.
      const st = statSync(dir);
      if (st.uid === process.getuid?.() && (st.mode & 0o022) === 0) enableCompileCache(dir);
    }
  } catch {
    // No cache: the same start, only slower.
  }
}
try {
  await import("../bundle/main.js");
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("bundle/main.js")) throw error;
  process.stderr.write("tabrelay: not built yet: run `npm install` (or `npm run build`) in the tabrelay checkout\n");
  process.exit(4);
}

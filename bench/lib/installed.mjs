// Figure 5b: the `tabrelay` package as a user gets it. `npm run pack` of this checkout, installed with npm into an
// empty folder outside it; figure 5 then runs that package's bin (node_modules/.bin/tabrelay) instead of the
// checkout's, so the two cold starts compare the same code from the two places people run it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./common.mjs";

/** The installed package's bin, after packing and installing this checkout's current build. */
export function installPackage() {
  const pack = spawnSync(process.execPath, [join(ROOT, "scripts/pack.mjs")], { cwd: ROOT, encoding: "utf8" });
  if (pack.status !== 0) throw new Error(`npm run pack failed: ${pack.stderr || pack.stdout}`);
  const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-bench-installed-"));
  writeFileSync(join(dir, "package.json"), '{ "name": "bench-user", "private": true }\n');
  const install = spawnSync("npm", ["install", "--no-audit", "--no-fund", join(ROOT, "release", `tabrelay-${version}.tgz`)], { cwd: dir, encoding: "utf8" });
  if (install.status !== 0) throw new Error(`npm install of the tarball failed: ${install.stderr}`);
  return join(dir, "node_modules", ".bin", "tabrelay");
}

#!/usr/bin/env node
// tabrelay's version lives in one place, the root package.json; this carries it everywhere else it must be written
// down: every workspace package.json (and the versions they name of each other), the extension's manifest (what
// Chrome and the store show, and what the extension reports to the broker), and the two constants the code reads
// without a file system (the broker's VERSION, which `tabrelay --version` prints and the bridge's welcome carries,
// and agent-tools'). test/cli/version.test.ts holds them equal.
//   node scripts/version.mjs            lists anything that differs from the root's version (exit 1 if any)
//   node scripts/version.mjs set 0.2.0  writes 0.2.0 into the root and every place above
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;
const CONSTANTS = ["packages/broker/src/version.ts", "packages/agent-tools/src/version.ts"];
const CONSTANT = /export const VERSION = "([^"]*)";/;

/** Every place the version is written: [file, what it says, how to write another]. */
function places() {
  const found = [];
  const json = (file, read, write) => {
    const path = join(root, file);
    const data = JSON.parse(readFileSync(path, "utf8"));
    found.push({ file, value: read(data), write: (v) => (write(data, v), writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`)) });
  };
  json(
    "package.json",
    (d) => d.version,
    (d, v) => (d.version = v),
  );
  for (const dir of readdirSync(join(root, "packages")).sort()) {
    json(
      `packages/${dir}/package.json`,
      (d) => d.version,
      (d, v) => (d.version = v),
    );
    const data = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8"));
    for (const field of ["dependencies", "devDependencies", "peerDependencies"]) {
      for (const name of Object.keys(data[field] ?? {}).filter((n) => n.startsWith("@tabrelay/"))) {
        json(
          `packages/${dir}/package.json`,
          (d) => d[field][name],
          (d, v) => (d[field][name] = v),
        );
        found.at(-1).file += ` ${field}.${name}`;
      }
    }
  }
  json(
    "packages/extension/static/manifest.json",
    (d) => d.version,
    (d, v) => (d.version = v),
  );
  for (const file of CONSTANTS) {
    const path = join(root, file);
    const text = readFileSync(path, "utf8");
    found.push({
      file,
      value: CONSTANT.exec(text)?.[1],
      write: (v) => writeFileSync(path, readFileSync(path, "utf8").replace(CONSTANT, `export const VERSION = "${v}";`)),
    });
  }
  return found;
}

/** The root's version, and each place that says another. */
export function versionMismatches() {
  const all = places();
  const version = all[0].value;
  return { version, mismatches: all.filter((p) => p.value !== version).map(({ file, value }) => ({ file, value })) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, next] = process.argv.slice(2);
  if (command === "set") {
    if (!next || !SEMVER.test(next)) {
      console.error(`version: "${next ?? ""}" is not a version (MAJOR.MINOR.PATCH, e.g. 0.2.0)`);
      process.exit(2);
    }
    for (const place of places()) place.write(next);
    console.log(`version: ${next} written to the root package.json and ${places().length - 1} other places; run npm install to update the lockfile`);
  } else if (command === undefined) {
    const { version, mismatches } = versionMismatches();
    for (const m of mismatches) console.error(`version: ${m.file} says ${m.value}, the root package.json ${version} (node scripts/version.mjs set ${version})`);
    if (mismatches.length > 0) process.exit(1);
    console.log(`version: ${version} everywhere`);
  } else {
    console.error("usage: node scripts/version.mjs [set VERSION]");
    process.exit(2);
  }
}

// This install of tabrelay as other programs must start it: the Node that runs this process, the bin script it
// ran, and the node flags and environment bin/tabrelay.js's first line asks for (a service manager or an MCP
// client starts node directly, so the shebang would not apply). Read from the shebang so the two stay in step.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

export interface NodeLaunch {
  /** process.execPath. */
  node: string;
  /** Absolute path of bin/tabrelay.js. */
  bin: string;
  /** Flags for node before the script, from the shebang. */
  nodeFlags: string[];
  /** Variables the shebang sets (e.g. MALLOC_ARENA_MAX). */
  env: Record<string, string>;
}

/** bin/tabrelay.js of this install: the script node ran (npx's link resolved). */
export function binPath(): string {
  const script = process.argv[1];
  if (script) {
    try {
      const real = realpathSync(script);
      if (real.endsWith("tabrelay.js")) return real;
    } catch {
      // not a file: fall through
    }
  }
  // Run some other way (tests importing the bundle): the bundle sits in packages/cli/bundle beside bin/.
  return resolve(dirname(new URL(import.meta.url).pathname), "../bin/tabrelay.js");
}

/** `#!/usr/bin/env -S A=1 node --flag ...` -> env {A: "1"}, flags ["--flag", ...]; anything else: none. */
export function parseShebang(line: string): { env: Record<string, string>; nodeFlags: string[] } {
  const match = /^#!\s*\S*env\s+-S\s+(.*)$/.exec(line.trim());
  const words = match?.[1]?.split(/\s+/).filter(Boolean) ?? [];
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length; i++) {
    const assignment = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(words[i] ?? "");
    if (!assignment?.[1]) break;
    env[assignment[1]] = assignment[2] ?? "";
  }
  if (words[i] !== "node") return { env: {}, nodeFlags: [] };
  return { env, nodeFlags: words.slice(i + 1).filter((w) => w.startsWith("--")) };
}

export function nodeLaunch(): NodeLaunch {
  const bin = binPath();
  let firstLine = "";
  try {
    firstLine = readFileSync(bin, "utf8").split("\n", 1)[0] ?? "";
  } catch {
    // no bin script: no flags
  }
  return { node: process.execPath, bin, ...parseShebang(firstLine) };
}

/** The root package.json of this checkout (the one with `engines`), walking up from the bin script. */
export function rootPackageJson(start = dirname(binPath())): Record<string, unknown> | undefined {
  let dir = start;
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const raw: unknown = JSON.parse(readFileSync(file, "utf8"));
        if (raw && typeof raw === "object" && "engines" in raw) return Object.fromEntries(Object.entries(raw));
      } catch {
        // unreadable: keep walking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

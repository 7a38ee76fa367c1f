// The judgements `tabrelay doctor` makes, as pure functions of what it observed (versions, file modes, the
// /health body), so each can be read and tested on its own. commands/doctor.ts gathers the facts and prints.

export type Status = "ok" | "warn" | "fail";

export interface Check {
  status: Status;
  label: string;
  /** One line: what was found and, unless ok, what to do. Further lines only for an error that has them. */
  message: string;
}

/** Node's release lines and the day each stops getting fixes (nodejs.org/about/previous-releases). */
const NODE_END_OF_LIFE: Record<number, string> = {
  18: "2025-04-30",
  19: "2023-06-01",
  20: "2026-04-30",
  21: "2024-06-01",
  22: "2027-04-30",
  23: "2025-06-01",
  24: "2028-04-30",
  25: "2026-06-01",
  26: "2029-04-30",
};

function majorOf(version: string): number {
  return Number(/^v?(\d+)/.exec(version)?.[1] ?? NaN);
}

type Triple = [number, number, number];

function triple(text: string): Triple {
  const [a = 0, b = 0, c = 0] = text
    .replace(/^v/, "")
    .split(".")
    .map((n) => Number.parseInt(n, 10) || 0);
  return [a, b, c];
}

function compare(x: Triple, y: Triple): number {
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/**
 * Whether a version meets an `engines` range: alternatives joined by `||`, each of `^X.Y.Z`, `~X.Y.Z`, `>=X.Y.Z`,
 * `>X`, `<X`, `<=X`, `X.x` or `X` terms (space-separated terms all hold). Enough for what package.json files say.
 */
export function satisfies(version: string, range: string): boolean {
  const v = triple(version);
  return range.split("||").some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .every((term) => {
        const m = /^(\^|~|>=|<=|>|<|=)?\s*v?([\d.x*]+)$/.exec(term);
        if (!m?.[2]) return false;
        const t = triple(m[2].replace(/[x*]/g, "0"));
        const op = m[1] ?? "";
        if (op === "^") return v[0] === t[0] && compare(v, t) >= 0;
        if (op === "~") return v[0] === t[0] && v[1] === t[1] && compare(v, t) >= 0;
        if (op === ">=") return compare(v, t) >= 0;
        if (op === ">") return compare(v, t) > 0;
        if (op === "<=") return compare(v, t) <= 0;
        if (op === "<") return compare(v, t) < 0;
        const parts = m[2].split(".").filter((p) => p !== "x" && p !== "*").length;
        return v.slice(0, parts).every((n, i) => n === t[i]);
      }),
  );
}

export function nodeCheck(version: string, engines: string | undefined, today: Date): Check {
  const major = majorOf(version);
  if (engines && !satisfies(version, engines)) {
    const lowest = engines
      .split("||")
      .map((alternative) => triple(/\d+(?:\.\d+){0,2}/.exec(alternative)?.[0] ?? "0"))
      .reduce((a, b) => (compare(a, b) <= 0 ? a : b));
    return compare(triple(version), lowest) < 0
      ? {
          status: "fail",
          label: "node",
          message: `Node ${version} is older than tabrelay supports (engines: ${engines}); install Node 24 LTS, then run npm install again`,
        }
      : {
          status: "warn",
          label: "node",
          message: `Node ${version} is outside the versions tabrelay is tested on (engines: ${engines}); if something misbehaves, use Node 24 LTS`,
        };
  }
  const end = NODE_END_OF_LIFE[major];
  if (end !== undefined && today.toISOString().slice(0, 10) >= end) {
    return {
      status: "warn",
      label: "node",
      message: `Node ${version} reached its end of life on ${end} (no more security fixes); install Node 24 LTS (or 22), then run npm install and, if you use it, tabrelay service install again`,
    };
  }
  return { status: "ok", label: "node", message: `Node ${version}${engines ? ` (tabrelay needs ${engines})` : ""}` };
}

/** `Chromium 131.0.6778.85 built on Debian`, `Google Chrome 137.0.7151.55`. */
export function browserVersionCheck(path: string, versionOutput: string, minimumChrome: number): Check {
  const text = versionOutput.trim().split("\n")[0] ?? "";
  const major = Number(/(\d+)\.\d+\.\d+/.exec(text)?.[1] ?? NaN);
  if (!Number.isFinite(major)) {
    return {
      status: "warn",
      label: "browser version",
      message: `${path} --version said ${JSON.stringify(text)}, not a version tabrelay can read; check it is Chromium or Chrome`,
    };
  }
  if (major < minimumChrome) {
    return {
      status: "fail",
      label: "browser version",
      message: `${text}: the extension needs Chrome ${minimumChrome} or later; update it, or point CHROME_PATH at a newer Chromium`,
    };
  }
  const branded = /^Google Chrome(?! for Testing)/.test(text);
  if (branded && major >= 137) {
    return {
      status: "ok",
      label: "browser version",
      message: `${text}: branded Chrome 137+ ignores --load-extension unless --disable-features=DisableLoadExtensionCommandLineSwitch, which tabrelay start and launch pass; in a Chrome you start yourself, load the extension by hand (tabrelay pair)`,
    };
  }
  return { status: "ok", label: "browser version", message: `${text}${branded ? "" : " (loads the extension from the command line)"}` };
}

export interface FileFacts {
  path: string;
  exists: boolean;
  symlink?: boolean;
  kind?: "file" | "directory" | "other";
  mode?: number;
  uid?: number;
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8).padStart(3, "0")}`;
}

/** A path as a shell takes it (quoted only when it must be). */
export function quote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}

/** The data dir: 0700 and the user's own (the broker refuses another owner, and makes an open dir 0700). */
export function dataDirCheck(facts: FileFacts, me: number | undefined): Check {
  const label = "data dir";
  const dir = quote(facts.path);
  if (!facts.exists) return { status: "ok", label, message: `${facts.path} does not exist yet; tabrelay serve creates it (0700)` };
  if (facts.kind !== "directory")
    return { status: "fail", label, message: `${facts.path} is not a directory; pass --data-dir (or TABRELAY_DATA_DIR) naming a directory of your own` };
  if (me !== undefined && facts.uid !== me)
    return {
      status: "fail",
      label,
      message: `${facts.path} belongs to uid ${facts.uid}, not to you (uid ${me}); use a data dir of your own, or: chown ${me} ${dir} && chmod 700 ${dir}`,
    };
  const mode = facts.mode ?? 0;
  if (me !== undefined && mode & 0o022) {
    return {
      status: "fail",
      label,
      message: `${facts.path} is writable by ${mode & 0o002 ? "every user" : "its group"} (mode ${octal(mode)}): they could have replaced its tokens and config; fix: chmod 700 ${dir}, then look over its config.yaml`,
    };
  }
  if (me !== undefined && mode & 0o077)
    return {
      status: "warn",
      label,
      message: `${facts.path} is readable by other users (mode ${octal(mode)}); tabrelay serve makes it 0700 on start; now: chmod 700 ${dir}`,
    };
  return { status: "ok", label, message: `${facts.path} (mode ${octal(mode)})` };
}

/** A token file: the user's own regular file, 0600; readable by others means the token may have leaked. */
export function tokenFileCheck(label: string, facts: FileFacts, me: number | undefined): Check {
  const file = quote(facts.path);
  const renew = `rm ${file} and tabrelay creates a new one (then pair the browser again and update your MCP clients)`;
  if (!facts.exists) return { status: "ok", label, message: `${facts.path} does not exist yet; tabrelay serve creates it (0600)` };
  if (facts.symlink)
    return { status: "fail", label, message: `${facts.path} is a symbolic link; tabrelay reads tokens only from regular files; fix: ${renew}` };
  if (facts.kind !== "file") return { status: "fail", label, message: `${facts.path} is not a regular file; fix: ${renew}` };
  if (me === undefined) return { status: "ok", label, message: facts.path };
  if (facts.uid !== me)
    return { status: "fail", label, message: `${facts.path} belongs to uid ${facts.uid}, not to you (uid ${me}): another user put it there; fix: ${renew}` };
  const mode = facts.mode ?? 0;
  if (mode & 0o022)
    return {
      status: "fail",
      label,
      message: `${facts.path} is writable by ${mode & 0o002 ? "every user" : "its group"} (mode ${octal(mode)}), so anyone could have chosen the token; fix: ${renew}`,
    };
  if (mode & 0o044) {
    return {
      status: "fail",
      label,
      message: `${facts.path} is readable by other users (mode ${octal(mode)}): anyone on this machine may have read the token; fix: chmod 600 ${file}, and if that matters, ${renew}`,
    };
  }
  return { status: "ok", label, message: `${facts.path} (mode ${octal(mode)})` };
}

/** A config file in the data dir: not a link, not writable by others (it is not secret). */
export function configFileCheck(facts: FileFacts, me: number | undefined): Check | undefined {
  if (!facts.exists) return undefined;
  const label = "config";
  if (facts.symlink)
    return {
      status: "fail",
      label,
      message: `${facts.path} is a symbolic link, which tabrelay refuses in its data dir; replace it with a copy, or name the target with --config`,
    };
  const mode = facts.mode ?? 0;
  if (me !== undefined && facts.uid !== me && facts.uid !== 0)
    return {
      status: "fail",
      label,
      message: `${facts.path} belongs to uid ${facts.uid}; check it, then: chown ${me} ${quote(facts.path)} && chmod 600 ${quote(facts.path)}`,
    };
  if (me !== undefined && mode & 0o022)
    return {
      status: "fail",
      label,
      message: `${facts.path} is writable by others (mode ${octal(mode)}); check its contents, then: chmod 600 ${quote(facts.path)}`,
    };
  return undefined;
}

export interface HealthBrowser {
  id?: unknown;
  label?: unknown;
  kind?: unknown;
  /** The extension's browser: "chrome" or "firefox" (absent from brokers before the Firefox build). */
  product?: unknown;
  extensionVersion?: unknown;
}

/** The connected browsers from a /health body, and whether each one's extension is this broker's version. */
export function browserChecks(browsers: HealthBrowser[], brokerVersion: string): Check[] {
  const label = "browsers";
  if (browsers.length === 0) {
    return [{ status: "warn", label, message: "no browser is connected; run tabrelay launch (or start), or pair your own Chrome or Firefox (tabrelay pair)" }];
  }
  const checks: Check[] = [{ status: "ok", label, message: `${browsers.length} connected` }];
  for (const b of browsers) {
    const firefox = b.product === "firefox";
    const name = `${String(b.label ?? b.id ?? "a browser")}${b.kind === "cdp" ? " (CDP)" : firefox ? " (Firefox)" : ""}`;
    const extensionsPage = firefox ? "about:debugging#/runtime/this-firefox" : "chrome://extensions";
    if (b.kind === "cdp") {
      checks.push({ status: "ok", label: "connected", message: `${name}: driven over CDP, no extension` });
    } else if (typeof b.extensionVersion !== "string" || b.extensionVersion === "") {
      checks.push({
        status: "warn",
        label: "connected",
        message: `${name}: the broker does not report its extension version; compare it on ${extensionsPage} with ${brokerVersion}`,
      });
    } else if (b.extensionVersion !== brokerVersion) {
      checks.push({
        status: "warn",
        label: "connected",
        message: `${name}: extension ${b.extensionVersion}, broker ${brokerVersion}; run npm run build, then reload the extension on ${extensionsPage} (tabrelay launch copies the new one itself)`,
      });
    } else {
      checks.push({ status: "ok", label: "connected", message: `${name}: extension ${b.extensionVersion}, same as the broker` });
    }
  }
  return checks;
}

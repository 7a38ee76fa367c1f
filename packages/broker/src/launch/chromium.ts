import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { platform } from "node:os";
import { join, resolve } from "node:path";
import { assetPaths } from "../assets.js";
import { HEADLESS_DISABLED_FEATURES, mergeFeatureSwitches } from "./switches.js";

export class LaunchError extends Error {
  override readonly name = "LaunchError";
}

/** Chromium first: branded Google Chrome 137+ ignores --load-extension unless told otherwise. */
const CANDIDATES: Record<string, string[]> = {
  linux: [
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
    "/opt/google/chrome/chrome",
  ],
  darwin: [
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
  ],
  win32: [
    join(process.env["PROGRAMFILES"] ?? "C:\\Program Files", "Google\\Chrome\\Application\\chrome.exe"),
    join(process.env["LOCALAPPDATA"] ?? "", "Chromium\\Application\\chrome.exe"),
  ],
};

export function findChromium(env: NodeJS.ProcessEnv = process.env, explicit?: string): string {
  const wanted = explicit ?? env["CHROME_PATH"];
  if (wanted) {
    if (!existsSync(wanted))
      throw new LaunchError(`no browser at ${wanted} (from ${explicit ? "--chromium" : "CHROME_PATH"}); point it at a Chromium or Chrome binary`);
    return wanted;
  }
  const found = (CANDIDATES[platform()] ?? []).find((p) => existsSync(p));
  if (found) return found;
  throw new LaunchError(
    "no Chromium or Chrome found. Install one (Debian/Ubuntu: `apt-get install chromium`; macOS: install Google Chrome or Chromium) or set CHROME_PATH / pass --chromium PATH",
  );
}

/** The built MV3 extension (packages/extension/dist), or TABRELAY_EXTENSION_DIR. */
export function builtExtensionDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env["TABRELAY_EXTENSION_DIR"] ?? assetPaths.extensionDir;
  if (!existsSync(join(dir, "manifest.json"))) {
    throw new LaunchError(`the extension is not built at ${dir}; run \`npm run build\` in the tabrelay checkout`);
  }
  return resolve(dir);
}

/**
 * Copies the extension into the profile and writes config.json so the worker pairs itself on start (extension/src/seed.ts). The copy
 * lives inside the (private, 0700) profile, never in the source tree.
 */
export function prepareExtension(
  profileDir: string,
  bridgeUrl: string,
  pairingToken: string,
  label: string,
  env: NodeJS.ProcessEnv = process.env,
  options: { unsafePlainWs?: boolean; /** The build to copy (default: Chrome's, builtExtensionDir). */ sourceDir?: string } = {},
): string {
  const target = join(profileDir, "tabrelay-extension");
  rmSync(target, { recursive: true, force: true });
  cpSync(options.sourceDir ?? builtExtensionDir(env), target, { recursive: true });
  const seed = { url: bridgeUrl, token: pairingToken, label, ...(options.unsafePlainWs ? { unsafePlainWs: true } : {}) };
  writeFileSync(join(target, "config.json"), `${JSON.stringify(seed)}\n`, { mode: 0o600 });
  return target;
}

export interface LaunchOptions {
  chromiumPath: string;
  profileDir: string;
  extensionDir: string;
  headless: boolean;
  extraArgs?: string[];
  startUrl?: string;
  /** Where the browser's stderr goes; defaults to being discarded (Chromium is noisy without a display). */
  stderr?: "inherit" | "ignore";
  /** The browser's environment (default process.env), e.g. with DISPLAY set to a virtual display. */
  env?: NodeJS.ProcessEnv;
}

export interface LaunchedBrowser {
  process: ChildProcess;
  exited: Promise<number | null>;
  kill(): Promise<void>;
}

export function chromiumArgs(options: LaunchOptions): string[] {
  const args = [
    `--user-data-dir=${options.profileDir}`,
    `--load-extension=${options.extensionDir}`,
    `--disable-extensions-except=${options.extensionDir}`,
    // Branded Chrome 137+ disabled --load-extension; this switch restores it. Chromium ignores it.
    "--disable-features=DisableLoadExtensionCommandLineSwitch",
    "--no-first-run",
    "--no-default-browser-check",
  ];
  if (typeof process.getuid === "function" && process.getuid() === 0) args.push("--no-sandbox");
  if (options.headless) {
    args.push(
      "--headless=new",
      // Agent tabs open in the background, and Chrome lowers a background tab's renderer (nice 5 here, as root):
      // on a busy server a snapshot of a large page then took up to twice as long. No person looks at a headless
      // browser, so none of its tabs is in the background for anyone.
      "--disable-renderer-backgrounding",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
      "--window-size=1280,800",
      `--disable-features=${HEADLESS_DISABLED_FEATURES.join(",")}`,
    );
  }
  args.push(...(options.extraArgs ?? []));
  args.push(options.startUrl ?? "about:blank");
  return mergeFeatureSwitches(args);
}

export function launchChromium(options: LaunchOptions): LaunchedBrowser {
  mkdirSync(options.profileDir, { recursive: true, mode: 0o700 });
  return spawnBrowser(options.chromiumPath, chromiumArgs(options), options.stderr, options.env ?? process.env);
}

/** A browser process, started with its stdout discarded; kill() ends it (SIGTERM, then SIGKILL after 5 s). */
export function spawnBrowser(path: string, args: string[], stderr: "inherit" | "ignore" = "ignore", env: NodeJS.ProcessEnv = process.env): LaunchedBrowser {
  const child = spawn(path, args, { stdio: ["ignore", "ignore", stderr], env });
  const exited = new Promise<number | null>((resolveExit) => {
    child.once("exit", (code) => resolveExit(code));
    child.once("error", () => resolveExit(-1));
  });
  return {
    process: child,
    exited,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

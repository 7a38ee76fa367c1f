// Starts a local Chromium with remote debugging on a free port and hands back its DevTools endpoint.
//
// A --user-data-dir is always passed: Chrome 136+ refuses --remote-debugging-port on the default profile
// (so a debugger cannot read a user's real cookies), and a fresh profile keeps runs independent anyway.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LaunchError } from "./chromium.js";
import { HEADLESS_DISABLED_FEATURES, mergeFeatureSwitches } from "./switches.js";

export interface LaunchCdpOptions {
  chromiumPath: string;
  /** Profile folder; a temporary one (deleted on close) when absent. */
  profileDir?: string;
  headless: boolean;
  extraArgs?: string[];
  /** How long to wait for "DevTools listening on ..." (default 30 s). */
  startTimeoutMs?: number;
  /** Environment for the browser (e.g. DISPLAY of a virtual screen); default: this process's. */
  env?: NodeJS.ProcessEnv;
}

export interface LaunchedCdpBrowser {
  /** ws://127.0.0.1:<port>/devtools/browser/<id>: a credential, never log it. */
  endpoint: string;
  process: ChildProcess;
  /** Stops the browser (SIGTERM, then SIGKILL after 5 s) and deletes a temporary profile. */
  close(): Promise<void>;
}

const LISTENING = /DevTools listening on (wss?:\/\/\S+)/;
/** stderr kept while looking for the endpoint line; Chromium prints it within the first few lines. */
const MAX_SCAN = 64 * 1024;

export function cdpChromiumArgs(options: { profileDir: string; headless: boolean; extraArgs?: string[] }): string[] {
  const args = [
    // A free port, bound to 127.0.0.1 (Chromium's default without --remote-debugging-address).
    "--remote-debugging-port=0",
    `--user-data-dir=${options.profileDir}`,
    "--no-first-run",
    "--no-default-browser-check",
    // Without these Chromium floods refused connections where there is no network (see TESTING.md).
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-gpu",
    "--window-size=1280,800",
    // Chromium sets navigator.webdriver = true in every page of a browser started with a DevTools port; pages read
    // it to refuse or fingerprint automated visitors. The user's own Chrome (the extension path) says false.
    "--disable-blink-features=AutomationControlled",
  ];
  if (typeof process.getuid === "function" && process.getuid() === 0) args.push("--no-sandbox");
  // Headless, the browser starts with no tab: nobody sees one, and every tab in it is then one the agent
  // opened (list_tabs shows no stray about:blank). A visible browser opens a window for the person at it.
  if (options.headless) args.push("--headless=new", "--no-startup-window", `--disable-features=${HEADLESS_DISABLED_FEATURES.join(",")}`);
  args.push(...(options.extraArgs ?? []));
  if (!options.headless) args.push("about:blank");
  return mergeFeatureSwitches(args);
}

export async function launchLocalChromium(options: LaunchCdpOptions): Promise<LaunchedCdpBrowser> {
  const temporary = options.profileDir === undefined;
  const profileDir = options.profileDir ?? mkdtempSync(join(tmpdir(), "tabrelay-cdp-"));
  mkdirSync(profileDir, { recursive: true, mode: 0o700 });
  // Chromium's helper processes may still write into the profile for a moment after the browser exits.
  const removeProfile = async (): Promise<void> => {
    if (!temporary) return;
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await rm(profileDir, { recursive: true, force: true });
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
  };
  preferNoPreloading(profileDir);
  let child: ChildProcess;
  try {
    child = spawn(
      options.chromiumPath,
      cdpChromiumArgs({ profileDir, headless: options.headless, ...(options.extraArgs ? { extraArgs: options.extraArgs } : {}) }),
      {
        stdio: ["ignore", "ignore", "pipe"],
        env: options.env ?? process.env,
      },
    );
  } catch (error) {
    await removeProfile();
    throw new LaunchError(`cannot start ${options.chromiumPath}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const exited = new Promise<void>((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    child.once("exit", () => resolveExit());
    child.once("error", () => resolveExit());
  });
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    await removeProfile();
  };

  let endpoint: string;
  try {
    endpoint = await readEndpoint(child, options.startTimeoutMs ?? 30_000);
  } catch (error) {
    await kill();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    endpoint,
    process: child,
    close: () => (closing ??= kill()),
  };
}

/** Reads stderr until the endpoint line, then keeps draining it so a full pipe never blocks the browser. */
function readEndpoint(child: ChildProcess, timeoutMs: number): Promise<string> {
  const stderr = child.stderr;
  if (!stderr) return Promise.reject(new LaunchError("the browser's stderr is not readable"));
  return new Promise((resolve, reject) => {
    let seen = "";
    const finish = (error: LaunchError | undefined, endpoint?: string) => {
      clearTimeout(timer);
      stderr.off("data", onData);
      child.off("exit", onExit);
      child.off("error", onError);
      stderr.resume();
      stderr.on("data", () => undefined);
      if (error) reject(error);
      else if (endpoint) resolve(endpoint);
    };
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString("utf8")).slice(-MAX_SCAN);
      const match = LISTENING.exec(seen);
      if (match?.[1]) finish(undefined, match[1]);
    };
    // The last stderr lines say why Chromium quit; they never contain an endpoint (it was not printed yet).
    const tail = () => seen.trim().split("\n").slice(-3).join(" | ").slice(0, 500);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      finish(new LaunchError(`the browser exited (${signal ?? `code ${code}`}) before opening its DevTools port${seen ? `: ${tail()}` : ""}`));
    const onError = (error: Error) => finish(new LaunchError(`cannot start the browser: ${error.message}`));
    const timer = setTimeout(() => finish(new LaunchError(`the browser did not open its DevTools port within ${timeoutMs} ms`)), timeoutMs);
    stderr.on("data", onData);
    child.once("exit", onExit);
    child.once("error", onError);
  });
}

/**
 * "Preload pages" off in the profile (net.network_prediction_options 2, "never"): speculation rules and <link
 * rel=prerender> then neither prefetch nor prerender. Both are requests the browser makes for a page outside the
 * tab's own interception (a prerender runs in a target of its own): in an agent tab they would reach hosts the
 * policy refuses before any navigation is judged. Kept in a profile the user names; other settings are untouched.
 */
export function preferNoPreloading(profileDir: string): void {
  const file = join(profileDir, "Default", "Preferences");
  let prefs: Record<string, unknown> = {};
  try {
    prefs = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    // none yet (a fresh profile), or unreadable: Chromium would start it afresh anyway
  }
  const net = typeof prefs.net === "object" && prefs.net !== null ? (prefs.net as Record<string, unknown>) : {};
  if (net.network_prediction_options === 2) return;
  prefs.net = { ...net, network_prediction_options: 2 };
  mkdirSync(join(profileDir, "Default"), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify(prefs));
}

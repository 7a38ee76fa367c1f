// A local Firefox carrying tabrelay's Firefox build (packages/extension/dist-firefox), already paired: the Firefox
// side of `tabrelay start --firefox`. No remote protocol is started (Marionette and WebDriver BiDi set
// navigator.webdriver): the add-on is installed the way a profile holds add-ons, a proxy file in its extensions folder
// naming the prepared copy, which Firefox loads at start. An add-on Mozilla did not sign loads only where
// xpinstall.signatures.required may be turned off: Firefox ESR, Developer Edition, Nightly and unbranded builds
// (Debian's firefox-esr is one). A release Firefox takes the signed add-on from addons.mozilla.org instead.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { platform } from "node:os";
import { join } from "node:path";
import { assetPaths } from "../assets.js";
import { LaunchError, spawnBrowser, type LaunchedBrowser } from "./chromium.js";

/** The add-on id in the Firefox build's manifest (packages/extension/build.mjs GECKO_ID). */
export const FIREFOX_ADDON_ID = "extension@tabrelay";

const CANDIDATES: Record<string, string[]> = {
  linux: ["/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox-esr", "/usr/lib/firefox/firefox", "/usr/bin/firefox", "/snap/bin/firefox"],
  darwin: ["/Applications/Firefox.app/Contents/MacOS/firefox", "/Applications/Firefox Developer Edition.app/Contents/MacOS/firefox"],
  win32: [join(process.env["PROGRAMFILES"] ?? "C:\\Program Files", "Mozilla Firefox\\firefox.exe")],
};

export function findFirefox(env: NodeJS.ProcessEnv = process.env, explicit?: string): string {
  const wanted = explicit ?? env["FIREFOX_PATH"];
  if (wanted) {
    if (!existsSync(wanted))
      throw new LaunchError(`no browser at ${wanted} (from ${explicit ? "--firefox-path" : "FIREFOX_PATH"}); point it at a Firefox binary`);
    return wanted;
  }
  const found = (CANDIDATES[platform()] ?? []).find((p) => existsSync(p));
  if (found) return found;
  throw new LaunchError(
    "no Firefox found. Install Firefox ESR (Debian/Ubuntu: `apt-get install firefox-esr`), Developer Edition or Nightly, or set FIREFOX_PATH / pass --firefox-path PATH",
  );
}

/** The built Firefox extension (packages/extension/dist-firefox), or TABRELAY_FIREFOX_EXTENSION_DIR. */
export function builtFirefoxExtensionDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env["TABRELAY_FIREFOX_EXTENSION_DIR"] ?? assetPaths.firefoxExtensionDir;
  const manifest = join(dir, "manifest.json");
  if (!existsSync(manifest)) throw new LaunchError(`the Firefox extension is not built at ${dir}; run \`npm run build\` in the tabrelay checkout`);
  const id = (JSON.parse(readFileSync(manifest, "utf8")) as { browser_specific_settings?: { gecko?: { id?: unknown } } }).browser_specific_settings?.gecko?.id;
  if (id !== FIREFOX_ADDON_ID)
    throw new LaunchError(`${dir} is not tabrelay's Firefox build (its add-on id is ${JSON.stringify(id)}, not ${FIREFOX_ADDON_ID})`);
  return dir;
}

/**
 * Preferences of tabrelay's own Firefox profile: its add-on enabled without a prompt (add-ons in the profile's folder
 * are otherwise disabled until the person agrees), unsigned allowed (honoured by the builds named above only), and no
 * first-run pages, default-browser question or telemetry in a browser no one may be looking at (updates are left to
 * Firefox, as in any profile).
 */
const PREFS: Record<string, boolean | number | string> = {
  "xpinstall.signatures.required": false,
  // Add-ons from the profile's own folder only (scope 1), enabled without a prompt; none from the user's or the
  // system's folders (an add-on another program put there is not loaded into tabrelay's browser).
  "extensions.enabledScopes": 1,
  "extensions.autoDisableScopes": 14,
  // Look at the profile's add-ons at every start: a new tabrelay's build replaces the copy a profile already holds.
  "extensions.startupScanScopes": 1,
  "browser.shell.checkDefaultBrowser": false,
  "browser.startup.homepage_override.mstone": "ignore",
  "browser.aboutwelcome.enabled": false,
  "startup.homepage_welcome_url": "about:blank",
  "datareporting.policy.dataSubmissionEnabled": false,
  "toolkit.telemetry.reportingpolicy.firstRun": false,
  "browser.tabs.warnOnClose": false,
  "browser.warnOnQuit": false,
};

/**
 * Makes `profileDir` a profile that loads `extensionDir` (a prepared copy, its config.json written: prepareExtension)
 * at start: user.js with PREFS (and `extraPrefs`), and the proxy file extensions/<add-on id> naming the copy.
 */
export function prepareFirefoxProfile(profileDir: string, extensionDir: string, extraPrefs: Record<string, boolean | number | string> = {}): void {
  refuseForeignProfile(profileDir);
  mkdirSync(join(profileDir, "extensions"), { recursive: true, mode: 0o700 });
  const lines = Object.entries({ ...PREFS, ...extraPrefs }).map(([name, value]) => `user_pref(${JSON.stringify(name)}, ${JSON.stringify(value)});`);
  writeFileSync(join(profileDir, "user.js"), `${USER_JS_HEADER}\n${lines.join("\n")}\n`, {
    mode: 0o600,
  });
  writeFileSync(join(profileDir, "extensions", FIREFOX_ADDON_ID), `${extensionDir}\n`, { mode: 0o600 });
}

const USER_JS_HEADER = "// Written by tabrelay for the Firefox it starts; rewritten at each start.";

/**
 * A folder that is already a Firefox profile tabrelay did not make (the person's everyday one, given as --profile) is
 * refused: tabrelay's preferences turn signature checks off and load add-ons unasked, which a profile someone browses
 * with must not keep, and its own user.js would be lost.
 */
function refuseForeignProfile(profileDir: string): void {
  const userJs = join(profileDir, "user.js");
  if (existsSync(userJs) && readFileSync(userJs, "utf8").startsWith(USER_JS_HEADER)) return;
  if (existsSync(userJs) || existsSync(join(profileDir, "prefs.js")))
    throw new LaunchError(
      `${profileDir} is a Firefox profile tabrelay did not create; tabrelay allows unsigned add-ons in the profile it starts, which a profile you browse with must not keep: give --profile a new folder (or leave it out: <data-dir>/profile-firefox)`,
    );
}

export interface FirefoxLaunchOptions {
  firefoxPath: string;
  profileDir: string;
  headless: boolean;
  extraArgs?: string[];
  startUrl?: string;
  stderr?: "inherit" | "ignore";
  env?: NodeJS.ProcessEnv;
}

export function firefoxArgs(options: FirefoxLaunchOptions): string[] {
  return [
    "--profile",
    options.profileDir,
    "--no-remote",
    "--new-instance",
    ...(options.headless ? ["--headless", "--window-size=1280,800"] : []),
    ...(options.extraArgs ?? []),
    options.startUrl ?? "about:blank",
  ];
}

export function launchFirefox(options: FirefoxLaunchOptions): LaunchedBrowser {
  mkdirSync(options.profileDir, { recursive: true, mode: 0o700 });
  // MOZ_CRASHREPORTER_DISABLE: no crash reporter window for a browser tabrelay started.
  return spawnBrowser(options.firefoxPath, firefoxArgs(options), options.stderr, { ...(options.env ?? process.env), MOZ_CRASHREPORTER_DISABLE: "1" });
}

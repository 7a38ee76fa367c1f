// Starting the local browser for `launch` and `start`: with the extension paired to a bridge URL, or over CDP
// handed to a broker, and what to say when it exits.
import { join } from "node:path";
import {
  ConfigError,
  builtFirefoxExtensionDir,
  findChromium,
  findFirefox,
  launchChromium,
  launchFirefox,
  launchLocalChromium,
  prepareExtension,
  prepareFirefoxProfile,
  type BrokerConfig,
} from "@tabrelay/broker";
import { brokerBaseUrl, handOver, HandoverRefused } from "../handover.js";
import { parseBrokerUrl, plainRemoteRefusal, type BrokerAddress } from "../brokerUrl.js";
import { UsageError, bridgeUrlOf } from "./shared.js";

export async function runBrowser(
  config: BrokerConfig,
  values: {
    headless?: boolean;
    profile?: string;
    broker?: string;
    chromium?: string;
    firefox?: boolean;
    "firefox-path"?: string;
    vnc?: boolean;
    "unsafe-plain-ws"?: boolean;
  },
  extra: string[],
  bridgeUrl: string,
  env?: NodeJS.ProcessEnv,
) {
  const bridge = extensionBridgeUrl(values, bridgeUrl);
  const seed = { unsafePlainWs: values["unsafe-plain-ws"] === true };
  if (values.firefox) {
    const firefoxPath = findFirefox(process.env, values["firefox-path"]);
    // A profile of its own: Firefox and Chromium profiles are not each other's.
    const profileDir = values.profile ?? join(config.dataDir, "profile-firefox");
    const extensionDir = prepareExtension(profileDir, bridge, config.pairingToken, "tabrelay launch (Firefox)", process.env, {
      ...seed,
      sourceDir: builtFirefoxExtensionDir(process.env),
    });
    // On a virtual display no desktop notification service runs: Firefox draws the ask notifications itself there
    // (otherwise it closes an add-on's notification as soon as it is made). Written at every start, either way: the
    // profile keeps a preference it was once given, and a later start without --vnc has the desktop's service again.
    prepareFirefoxProfile(profileDir, extensionDir, { "alerts.useSystemBackend": values.vnc !== true });
    process.stderr.write(`tabrelay: starting ${firefoxPath}${values.headless ? " (headless)" : ""} with profile ${profileDir}\n`);
    return launchFirefox({ firefoxPath, profileDir, headless: values.headless ?? false, extraArgs: extra, ...(env ? { env } : {}) });
  }
  const chromiumPath = findChromium(process.env, values.chromium);
  const profileDir = values.profile ?? join(config.dataDir, "profile");
  const extensionDir = prepareExtension(profileDir, bridge, config.pairingToken, "tabrelay launch", process.env, seed);
  process.stderr.write(`tabrelay: starting ${chromiumPath}${values.headless ? " (headless)" : ""} with profile ${profileDir}\n`);
  return launchChromium({ chromiumPath, profileDir, extensionDir, headless: values.headless ?? false, extraArgs: extra, ...(env ? { env } : {}) });
}

/** --firefox with options that only mean something for Chromium: refused before anything starts. */
export function checkFirefoxOptions(values: { firefox?: boolean; cdp?: boolean; chromium?: string; "firefox-path"?: string }): void {
  if (!values.firefox) {
    if (values["firefox-path"] !== undefined) throw new UsageError("--firefox-path names the Firefox that --firefox starts: add --firefox");
    return;
  }
  if (values.cdp) throw new UsageError("--cdp drives Chromium over the DevTools protocol; Firefox runs tabrelay's extension: leave out --cdp or --firefox");
  if (values.chromium !== undefined) throw new UsageError("--chromium names a Chromium; with --firefox use --firefox-path");
}

/** The bridge URL the launched extension dials: --broker in any of its forms, over TLS unless on this machine. */
function extensionBridgeUrl(values: { broker?: string; "unsafe-plain-ws"?: boolean }, fallback: string): string {
  if (values.broker === undefined) return fallback;
  let address: BrokerAddress;
  try {
    address = parseBrokerUrl(values.broker);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const refusal = plainRemoteRefusal(address, values["unsafe-plain-ws"]);
  if (refusal) throw new UsageError(refusal);
  return address.bridge;
}

/**
 * launch --cdp: Chromium with remote debugging on a temporary profile (or --profile), handed to the broker at
 * --broker (default: this config's host and port). A refusal that retrying cannot fix closes the browser.
 */
export async function runCdpBrowser(
  config: BrokerConfig,
  values: { headless?: boolean; profile?: string; broker?: string; chromium?: string },
  extra: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ exited: Promise<number | null>; kill(): Promise<void> }> {
  let brokerUrl: string;
  try {
    brokerUrl = brokerBaseUrl(values.broker ?? bridgeUrlOf(config));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const chromiumPath = findChromium(process.env, values.chromium);
  process.stderr.write(
    `tabrelay: starting ${chromiumPath}${values.headless ? " (headless)" : ""} over CDP with ${values.profile ? `profile ${values.profile}` : "a temporary profile"}\n`,
  );
  const local = await launchLocalChromium({
    chromiumPath,
    headless: values.headless ?? false,
    extraArgs: extra,
    ...(env ? { env } : {}),
    ...(values.profile ? { profileDir: values.profile } : {}),
  });
  const browserExit = new Promise<number | null>((resolveExit) => local.process.once("exit", (code) => resolveExit(code)));
  const handover = handOver({
    brokerUrl,
    token: config.mcpToken,
    endpoint: local.endpoint,
    label: "launched Chromium (CDP)",
    log: (line) => process.stderr.write(`tabrelay: ${line}\n`),
  });
  const kill = async () => {
    handover.stop();
    await local.close(); // also removes a temporary profile
  };
  let refusal: unknown;
  const refused = handover.registered.then(
    () => new Promise<never>(() => undefined),
    async (error: unknown) => {
      refusal = error instanceof HandoverRefused ? new ConfigError(error.message) : error;
      await kill();
      throw refusal;
    },
  );
  // The browser exits when it is closed because of a refusal, too: that is the refusal's exit, not its own.
  const ownExit = browserExit.then((code) => {
    if (refusal !== undefined) throw refusal;
    return code;
  });
  const exited = Promise.race([ownExit, refused]).finally(() => handover.stop());
  return { exited, kill };
}

export function reportBrowserExit(code: number | null, headless: boolean): void {
  process.stderr.write(`tabrelay: the browser exited (${String(code)})\n`);
  if (code !== 0 && !headless && process.platform === "linux" && !process.env["DISPLAY"] && !process.env["WAYLAND_DISPLAY"]) {
    process.stderr.write("tabrelay: there is no display here; run with --headless, or under xvfb-run\n");
  }
}

/** Arguments after `--` go to the browser unchanged. */
export function splitExtra(args: string[]): { own: string[]; extra: string[] } {
  const at = args.indexOf("--");
  return at === -1 ? { own: args, extra: [] } : { own: args.slice(0, at), extra: args.slice(at + 1) };
}

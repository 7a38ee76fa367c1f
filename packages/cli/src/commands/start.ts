// `tabrelay start`: the broker and a local Chromium in one process, stopped together.
import { findChromium, findFirefox, launchLocalChromium, startVncDisplay } from "@tabrelay/broker";
import { launchWithVnc, vncWindowArgs } from "../vnc.js";
import { checkFirefoxOptions, reportBrowserExit, runBrowser, splitExtra } from "./browser.js";
import {
  COMMON_OPTIONS,
  EXIT,
  LAUNCH_OPTIONS,
  UsageError,
  bridgeUrlOf,
  configFrom,
  onShutdown,
  parse,
  printClientConfig,
  printHelp,
  startBroker,
} from "./shared.js";

export const START_HELP = `Usage: tabrelay start [--headless | --vnc] [--cdp | --firefox] [--host H] [--port P] [--config FILE] [--data-dir DIR] [--profile DIR] [--chromium PATH | --firefox-path PATH] [-- EXTRA_BROWSER_ARGS]

Runs the broker and a local Chromium carrying the extension, already paired. Ctrl-C stops both.
--firefox starts Firefox (ESR, Developer Edition or Nightly: the add-on is not signed by Mozilla) carrying
tabrelay's Firefox build of the extension instead (with --vnc too).
--cdp drives the local Chromium over the DevTools protocol instead of the extension (no extension
needed; for servers and CI). Its profile is temporary unless --profile is given (Chrome 136+ refuses
remote debugging of the default profile).`;

/** How long a call made before the launched browser connected waits for it (a slow machine's cold Chromium). */
const BROWSER_ARRIVAL_MS = 15_000;

export async function cmdStart(args: string[]): Promise<number | undefined> {
  const { own, extra } = splitExtra(args);
  const { values } = parse(own, { ...COMMON_OPTIONS, ...LAUNCH_OPTIONS });
  if (values.help) return printHelp(START_HELP);
  checkFirefoxOptions(values);
  const config = configFrom(values);
  if (values.vnc && values.headless) throw new UsageError("--vnc shows the browser on a virtual display: leave out --headless");
  // Fail before the broker starts.
  const browserPath = values.firefox ? findFirefox(process.env, values["firefox-path"]) : findChromium(process.env, values.chromium);
  const found = values.firefox ? { "firefox-path": browserPath } : { chromium: browserPath };
  const { broker, url } = await startBroker(config);
  if (values.vnc) {
    printClientConfig(url, config);
    const bridgeUrl = bridgeUrlOf(config, Number(new URL(url).port));
    // launchWithVnc handles the signals itself: no onShutdown here.
    return launchWithVnc({
      startDisplay: startVncDisplay,
      headfulCommand: async (env, view) => {
        const browserArgs = [...vncWindowArgs(view, values.firefox ? "firefox" : "chromium"), ...extra];
        if (!values.cdp) return runBrowser(config, { ...values, ...found }, browserArgs, bridgeUrl, env);
        const local = await launchLocalChromium({
          chromiumPath: browserPath,
          headless: false,
          env,
          extraArgs: browserArgs,
          ...(values.profile ? { profileDir: values.profile } : {}),
        });
        try {
          await broker.attachCdp(local.endpoint, { label: "local Chromium (CDP)", ownsBrowser: true });
        } catch (error) {
          await local.close();
          throw error;
        }
        const exited = new Promise<number | null>((resolveExit) => local.process.once("exit", (c) => resolveExit(c)));
        return { exited, kill: () => local.close() };
      },
      onStopped: () => broker.close(),
    });
  }
  if (values.cdp) {
    const local = await launchLocalChromium({
      chromiumPath: browserPath,
      headless: values.headless ?? false,
      extraArgs: extra,
      ...(values.profile ? { profileDir: values.profile } : {}),
    });
    try {
      await broker.attachCdp(local.endpoint, { label: "local Chromium (CDP)", ownsBrowser: true });
    } catch (error) {
      await local.close();
      await broker.close();
      throw error;
    }
    printClientConfig(url, config);
    onShutdown(async () => {
      await broker.close();
      await local.close();
    });
    const code = await new Promise<number | null>((resolveExit) => local.process.once("exit", (c) => resolveExit(c)));
    reportBrowserExit(code, values.headless ?? false);
    await broker.close();
    await local.close(); // removes a temporary profile before the process exits
    return code === 0 ? EXIT.ok : EXIT.failure;
  }
  // An agent's first call may come before the browser connected: it waits for it rather than fail (not_connected).
  broker.registry.expect(BROWSER_ARRIVAL_MS);
  printClientConfig(url, config);
  let browser: Awaited<ReturnType<typeof runBrowser>>;
  try {
    browser = await runBrowser(config, { ...values, ...found }, extra, bridgeUrlOf(config, Number(new URL(url).port)));
  } catch (error) {
    broker.registry.expect(0);
    throw error;
  }
  void browser.exited.then(() => broker.registry.expect(0));
  onShutdown(async () => {
    await browser.kill();
    await broker.close();
  });
  const code = await browser.exited;
  reportBrowserExit(code, values.headless ?? false);
  process.stderr.write("tabrelay: stopping the broker\n");
  await broker.close();
  return code === 0 ? EXIT.ok : EXIT.failure;
}

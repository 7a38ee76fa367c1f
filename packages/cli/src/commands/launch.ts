// `tabrelay launch`: a local Chromium for a broker that runs elsewhere (`tabrelay serve`), paired through the
// extension or handed over CDP.
import { startVncDisplay } from "@tabrelay/broker";
import { launchWithVnc, vncWindowArgs } from "../vnc.js";
import { checkFirefoxOptions, reportBrowserExit, runBrowser, runCdpBrowser, splitExtra } from "./browser.js";
import { COMMON_OPTIONS, EXIT, LAUNCH_OPTIONS, UsageError, bridgeUrlOf, configFrom, onShutdown, parse, printHelp } from "./shared.js";

export const LAUNCH_HELP = `Usage: tabrelay launch [--headless | --vnc] [--cdp | --firefox] [--profile DIR] [--broker URL] [--chromium PATH | --firefox-path PATH] [-- EXTRA_BROWSER_ARGS]

Starts Chromium/Chrome with the tabrelay extension loaded and paired with the broker, on a persistent
profile (default <data-dir>/profile). --broker is where the broker is, in any mode: http(s)://HOST:PORT or
ws(s)://HOST:PORT/bridge. A broker off this machine is reached only over TLS (https/wss) unless
--unsafe-plain-ws is given. Finds the browser via --chromium, CHROME_PATH, or the usual
install paths. Arguments after -- go to the browser unchanged. Ctrl-C closes the browser.
--cdp: no extension; the broker (\`tabrelay serve\`, default http://<host>:<port> from the config, or --broker URL)
drives the browser over the DevTools protocol. The profile is temporary unless --profile is given (Chrome 136+
refuses remote debugging of its default profile). Uses the MCP token of the same --data-dir or
TABRELAY_MCP_TOKEN; waits for the broker if it is not up yet and hands the browser over again after a restart.
--firefox: Firefox with tabrelay's Firefox build of the extension instead (profile <data-dir>/profile-firefox;
found via --firefox-path, FIREFOX_PATH, or the usual install paths). The add-on is not signed by Mozilla: it loads
in Firefox ESR, Developer Edition and Nightly; a release Firefox pairs the signed one from addons.mozilla.org.
--vnc: headful on a virtual display (Xvfb), viewable through a noVNC link on loopback with a password,
so a person can log in once on a server (needs: apt-get install xvfb x11vnc novnc websockify).`;

export async function cmdLaunch(args: string[]): Promise<number | undefined> {
  const { own, extra } = splitExtra(args);
  const { values } = parse(own, { ...COMMON_OPTIONS, ...LAUNCH_OPTIONS });
  if (values.help) return printHelp(LAUNCH_HELP);
  checkFirefoxOptions(values);
  const config = configFrom(values);
  if (values.vnc) {
    if (values.headless) throw new UsageError("--vnc shows the browser on a virtual display: leave out --headless");
    return launchWithVnc({
      startDisplay: startVncDisplay,
      headfulCommand: (env, view) =>
        values.cdp
          ? runCdpBrowser(config, values, [...vncWindowArgs(view), ...extra], env)
          : runBrowser(config, values, [...vncWindowArgs(view, values.firefox ? "firefox" : "chromium"), ...extra], bridgeUrlOf(config), env),
    });
  }
  if (values.cdp) {
    const browser = await runCdpBrowser(config, values, extra);
    onShutdown(() => browser.kill());
    const code = await browser.exited;
    reportBrowserExit(code, values.headless ?? false);
    await browser.kill();
    return code === 0 ? EXIT.ok : EXIT.failure;
  }
  const browser = await runBrowser(config, values, extra, bridgeUrlOf(config));
  onShutdown(() => browser.kill());
  const code = await browser.exited;
  reportBrowserExit(code, values.headless ?? false);
  return code === 0 ? EXIT.ok : EXIT.failure;
}

// `tabrelay pair`: how to load and pair the extension in a Chrome the user runs.
import { builtExtensionDir, isLoopback } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, bridgeUrlOf, configFrom, parse, printHelp } from "./shared.js";

export const PAIR_HELP = `Usage: tabrelay pair [--host H] [--port P] [--data-dir DIR]

Prints how to load the extension into a Chrome you run yourself and the code to pair it.`;

export async function cmdPair(args: string[]): Promise<number> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return printHelp(PAIR_HELP);
  const config = configFrom(values);
  let extensionDir: string;
  try {
    extensionDir = builtExtensionDir();
  } catch (error) {
    extensionDir = `(not built: ${error instanceof Error ? error.message : String(error)})`;
  }
  process.stdout.write(
    [
      "Pair a Chrome you run yourself with this tabrelay broker:",
      "",
      '1. Open chrome://extensions, switch on Developer mode, click "Load unpacked" and choose:',
      `     ${extensionDir}`,
      "2. Click the tabrelay toolbar icon and enter:",
      `     Broker URL:   ${bridgeUrlOf(config)}`,
      `     Pairing code: ${config.pairingToken}`,
      "3. The badge turns ON when the browser is connected; `tabrelay serve` must be running.",
      "",
      isLoopback(config.host) ? "" : "The broker listens beyond loopback: only pair browsers you trust, over a network you trust.",
    ].join("\n"),
  );
  return EXIT.ok;
}

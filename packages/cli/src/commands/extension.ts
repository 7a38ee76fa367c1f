// `tabrelay extension`: where the bundled Chrome (or Firefox) extension is and how to load it, or a copy of it in a folder of the
// user's choosing (a path inside an npm package changes with every update; a copy stays where Chrome loaded it).
// Creates no token and no file but the copy asked for.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { BUILTIN_EXTENSION_ID, FIREFOX_ADDON_ID, VERSION, builtExtensionDir, builtFirefoxExtensionDir } from "@tabrelay/broker";
import { EXIT, EnvironmentError, UsageError, parse, printHelp } from "./shared.js";

export const EXTENSION_HELP = `Usage: tabrelay extension [--firefox] [--out DIR]

Prints where tabrelay's Chrome extension is (bundled with this tabrelay), its version and id, and how to load it
into a Chrome you run yourself. --out DIR copies it into DIR (new or empty, or a copy made before: it is replaced),
a folder that stays put when tabrelay is updated; after an update, run it again and click Reload at
chrome://extensions. --firefox: the same for the extension's Firefox build. \`tabrelay start\` needs none of this:
it loads the extension into its own browser.`;

export async function cmdExtension(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { out: { type: "string" }, firefox: { type: "boolean" }, help: { type: "boolean", short: "h" } });
  if (values.help) return printHelp(EXTENSION_HELP);
  if (positionals.length > 0) throw new UsageError(`tabrelay extension takes no ${JSON.stringify(positionals[0])}; see tabrelay extension --help`);
  let dir: string;
  try {
    dir = values.firefox ? builtFirefoxExtensionDir() : builtExtensionDir();
  } catch (error) {
    throw new EnvironmentError(error instanceof Error ? error.message : String(error));
  }
  const manifest: unknown = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  const version = manifest && typeof manifest === "object" ? String(Reflect.get(manifest, "version")) : "?";
  if (values.out !== undefined) dir = copyTo(dir, resolve(values.out));
  const inPackage =
    values.out === undefined ? "   (This folder is inside the tabrelay package: `tabrelay extension --out DIR` makes a copy that stays put.)" : "";
  const lines = values.firefox
    ? [
        `tabrelay's Firefox extension ${version} (tabrelay ${VERSION}), add-on id ${FIREFOX_ADDON_ID}:`,
        `  ${dir}`,
        "",
        "To use it in a Firefox you run yourself:",
        '1. Open about:debugging#/runtime/this-firefox, click "Load Temporary Add-on..." and choose manifest.json in the folder',
        "   above (a temporary add-on stays until Firefox restarts; a lasting install is the add-on signed by addons.mozilla.org,",
        "   or, in Firefox ESR, Developer Edition or Nightly, this folder zipped with xpinstall.signatures.required off).",
        "2. Click the tabrelay toolbar icon and enter the broker URL and pairing code `tabrelay pair` prints.",
        inPackage,
        "",
      ]
    : [
        `tabrelay's Chrome extension ${version} (tabrelay ${VERSION}), id ${BUILTIN_EXTENSION_ID}:`,
        `  ${dir}`,
        "",
        "To use it in a Chrome you run yourself:",
        '1. Open chrome://extensions, switch on Developer mode, click "Load unpacked" and choose the folder above.',
        "2. Click the tabrelay toolbar icon and enter the broker URL and pairing code `tabrelay pair` prints.",
        inPackage,
        "",
      ];
  process.stdout.write(lines.join("\n"));
  return EXIT.ok;
}

/** Copies the extension into `out`: a new or empty folder, or an earlier copy (its manifest says tabrelay). */
function copyTo(from: string, out: string): string {
  if (existsSync(out) && readdirSync(out).length > 0) {
    let earlier: boolean;
    try {
      const manifest: unknown = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8"));
      earlier = !!manifest && typeof manifest === "object" && Reflect.get(manifest, "name") === "tabrelay";
    } catch {
      earlier = false;
    }
    if (!earlier) throw new UsageError(`${out} is not empty and holds no earlier copy of the extension; choose a new or empty folder`);
  }
  mkdirSync(out, { recursive: true });
  cpSync(from, out, { recursive: true, force: true });
  return out;
}

// `tabrelay policy update-sites`: replace the top-sites ranking the read policy uses.
import { renameSync, writeFileSync } from "node:fs";
import { ConfigError, defaultDataDir, loadConfig, parseRankingCsv, rankingFile } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, EnvironmentError, UsageError, parse, printHelp } from "./shared.js";

export const POLICY_HELP = `Usage: tabrelay policy update-sites --url URL [--data-dir DIR]

Downloads a Tranco-style CSV ("rank,domain" per line) and makes it the top-sites ranking used by the read
policy (saved as <data-dir>/top-sites.csv). policy.read.top_sites says how many of its domains are readable.`;

export async function cmdPolicy(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON_OPTIONS, url: { type: "string" } });
  if (values.help || positionals[0] !== "update-sites") {
    if (values.help) return printHelp(POLICY_HELP);
    throw new UsageError(`unknown policy command ${JSON.stringify(positionals[0] ?? "")}; try \`tabrelay policy update-sites --url URL\``);
  }
  if (!values.url) throw new UsageError("policy update-sites needs --url URL (a Tranco-style CSV: rank,domain per line)");
  const dataDir = values["data-dir"] ?? defaultDataDir();
  let text: string;
  try {
    const response = await fetch(values.url, { signal: AbortSignal.timeout(60_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    text = await response.text();
  } catch (error) {
    throw new EnvironmentError(`could not download ${values.url}: ${error instanceof Error ? error.message : String(error)}; the current ranking is unchanged`);
  }
  let domains: string[];
  try {
    domains = parseRankingCsv(text);
  } catch (error) {
    throw new ConfigError(`${values.url}: ${error instanceof Error ? error.message : String(error)}; the current ranking is unchanged`);
  }
  if (domains.length === 0) throw new ConfigError(`${values.url} holds no domains; the current ranking is unchanged`);
  loadConfig({ dataDir }); // creates the data dir and validates the current config first
  const target = rankingFile(dataDir);
  const temp = `${target}.tmp-${process.pid}`;
  writeFileSync(temp, ["rank,domain", ...domains.map((d, i) => `${i + 1},${d}`)].join("\n") + "\n", { mode: 0o600, flag: "wx" });
  renameSync(temp, target);
  process.stdout.write(`Saved ${domains.length} domains to ${target}. Restart the broker to use them.\n`);
  return EXIT.ok;
}

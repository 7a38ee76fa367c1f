// `tabrelay policy`: change what agents may read and do, in config.yaml (comments kept; a running broker applies it
// within a second), and replace the top-sites ranking the read policy uses.
import { renameSync, writeFileSync } from "node:fs";
import { ConfigError, allowRead, defaultDataDir, editConfigFile, grantWrite, loadConfig, parseRankingCsv, rankingFile, type GrantKind } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, EnvironmentError, UsageError, configFrom, parse, printHelp } from "./shared.js";

export const POLICY_HELP = `Usage: tabrelay policy allow-read HOST[/PATH] [--data-dir DIR | --config FILE]
       tabrelay policy grant click|type|upload HOST --label REGEX [--data-dir DIR | --config FILE]
       tabrelay policy grant keys HOST --keys REGEX --label REGEX [--data-dir DIR | --config FILE]
       tabrelay policy update-sites --url URL [--data-dir DIR]

allow-read   lets agents read HOST (HOST:PORT, *.HOST), at every path or at paths starting with /PATH:
             adds it under policy.read.allow in config.yaml.
grant        lets agents click, type into, upload to, or press keys on elements of HOST whose visible label
             matches REGEX (an RE2 regular expression; anchor it: "^Add to cart$"): sets policy.write.KIND.
update-sites downloads a Tranco-style CSV ("rank,domain" per line) and makes it the top-sites ranking
             (<data-dir>/top-sites.csv); policy.read.top_sites says how many of its domains are readable.

The edits keep config.yaml's comments and layout, are checked as a start would check them (a broken result is
never written), and a running tabrelay applies them within a second, without a restart.`;

const GRANT_KINDS: readonly GrantKind[] = ["click", "type", "upload", "keys"];

export async function cmdPolicy(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, { ...COMMON_OPTIONS, url: { type: "string" }, label: { type: "string" }, keys: { type: "string" } });
  if (values.help) return printHelp(POLICY_HELP);
  const [command, ...rest] = positionals;
  if (command === "allow-read") {
    const [target, extra] = rest;
    if (target === undefined || extra !== undefined)
      throw new UsageError("policy allow-read takes one HOST[/PATH], e.g. tabrelay policy allow-read docs.example.com/guide");
    return edit(values, (text) => allowRead(text, target));
  }
  if (command === "grant") {
    const [kind, host, extra] = rest;
    if (!GRANT_KINDS.includes(kind as GrantKind))
      throw new UsageError(`policy grant takes click, type, upload or keys first, not ${JSON.stringify(kind ?? "")}`);
    if (host === undefined || extra !== undefined) throw new UsageError(`policy grant ${kind} takes one HOST, then --label REGEX`);
    if (values.label === undefined)
      throw new UsageError('policy grant needs --label REGEX: the visible label of the elements allowed, e.g. --label "^Add to cart$"');
    const label = values.label;
    return edit(values, (text) => grantWrite(text, kind as GrantKind, host, label, values.keys));
  }
  if (command !== "update-sites") {
    throw new UsageError(
      `unknown policy command ${JSON.stringify(command ?? "")}; the commands are allow-read, grant and update-sites (tabrelay policy --help)`,
    );
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

/** One edit of config.yaml (created from the template first if there is none), said with where and what. */
function edit(values: { config?: string; "data-dir"?: string }, change: Parameters<typeof editConfigFile>[1]): number {
  const config = configFrom(values);
  const done = editConfigFile(config, change);
  process.stdout.write(`${config.configPath}: ${done.said}.\nA running tabrelay applies it within a second; tabrelay audit shows the change.\n`);
  return EXIT.ok;
}

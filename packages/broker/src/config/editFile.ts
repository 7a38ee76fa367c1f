// A `tabrelay policy` edit of config.yaml on disk: read as the broker reads it (fileSafety.ts), edited on the YAML
// document (edit.ts: comments kept), validated as a start would validate it, then written in one step (a temp file
// renamed over it, 0600) so that a running broker's watcher never reads half a file. A broken result is never written.
// `dryRun` (the dashboard's preview of a change) does all of it but the write.
import { existsSync } from "node:fs";
import { ConfigError, compileSettings, parseConfigText, type BrokerConfig } from "./build.js";
import type { Edited } from "./edit.js";
import { readOwnFile, writeSecretFile } from "./fileSafety.js";
import { loadRanking } from "./ranking.js";

export function editConfigFile(
  config: Pick<BrokerConfig, "configPath" | "configName" | "rankingPath">,
  edit: (text: string) => Edited,
  options: { dryRun?: boolean } = {},
): Edited {
  const path = config.configPath;
  const read = readOwnFile(path, "config");
  if (!read.ok) throw new ConfigError(read.message);
  const before = read.value ?? "";
  let edited: Edited;
  try {
    edited = edit(before);
  } catch (error) {
    throw new ConfigError(error instanceof Error ? error.message : String(error));
  }
  if (edited.text === before) return edited;
  // As a start would: a rule that does not compile is refused here, with the file left as it was.
  try {
    compileSettings(parseConfigText(edited.text, path), path, loadRanking(config.rankingPath), config.configName);
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/\nFix the file[^\n]*$/, "") : String(error);
    throw new ConfigError(`the change was not written (${path} is as it was): ${message}`);
  }
  if (options.dryRun === true) return edited;
  if (!existsSync(path) && before !== "") throw new ConfigError(`${path} went away while it was edited; run the command again`);
  writeSecretFile(path, edited.text);
  return edited;
}

// The top-sites ranking read from disk (the shipped packages/broker/data/top-sites.csv or the user's file) and parsed
// with the policy's parser: the file access lives here so that policy/ stays pure decisions.
import { readFileSync } from "node:fs";
import { assetPaths } from "../assets.js";
import { parseRankingCsv } from "../policy/topSites.js";

/** Absolute path of the shipped ranking, packages/broker/data/top-sites.csv. */
export function shippedRankingPath(): string {
  return assetPaths.topSitesCsv;
}

/** Reads and parses a ranking file (default: the shipped one). Throws with the path on failure. */
export function loadRanking(path: string = shippedRankingPath()): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot read the top-sites ranking at ${path}: ${why}`, { cause: error });
  }
  try {
    return parseRankingCsv(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(`${path}: ${why}`, { cause: error });
  }
}

/** The shipped ranking's domains, read from disk: what a Workers build bundles as text instead (parseRankingCsv). */
export function nodeRanking(): string[] {
  return loadRanking();
}

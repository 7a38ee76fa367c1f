/**
 * The ranking of popular domains that the read policy allows by default
 * (policy.read.top_sites). The shipped list is packages/broker/data/top-sites.csv,
 * in Tranco style: an optional "rank,domain" header, then "1,google.com" lines. Reading it from disk is
 * config's (config/ranking.ts): policy is pure decisions.
 */

import { canonicalizeHost, isIpHost } from "./canonicalUrl.js";

const HEADER = /^rank\s*,\s*domain$/i;
const RANKED_LINE = /^(\d+),([^,]*)$/;

function rankingError(lineNo: number, line: string, why: string): Error {
  return new Error(`top-sites ranking, line ${lineNo}: ${why} (got ${JSON.stringify(line)}; expected "rank,domain" such as "1,google.com", or just a domain)`);
}

/**
 * Parses a Tranco-style ranking ("rank,domain" lines, header optional; lines that are
 * just a domain are accepted too). Returns canonical domains in rank order, without
 * duplicates, with a leading "www." removed ("www.blogger.com" -> "blogger.com", which
 * the policy then applies to blogger.com and its subdomains).
 * Entries truncated for display (ending in "...") are skipped: they name no domain.
 * Ranks in the result are positions in the returned list.
 * Throws an Error naming the line on any other malformed input.
 */
export function parseRankingCsv(text: string): string[] {
  const domains: string[] = [];
  const seen = new Set<string>();
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  let sawContent = false;
  let lastRank = 0;

  for (const [index, rawLine] of lines.entries()) {
    const lineNo = index + 1;
    const line = rawLine.trim();
    if (line === "") continue;
    const first = !sawContent;
    sawContent = true;
    if (first && HEADER.test(line)) continue;
    if (/\s/.test(line)) throw rankingError(lineNo, line, "the line contains spaces");

    let domainText: string;
    const ranked = RANKED_LINE.exec(line);
    if (ranked !== null) {
      const rank = Number(ranked[1]);
      if (!Number.isSafeInteger(rank) || rank < 1) {
        throw rankingError(lineNo, line, "the rank must be a positive integer");
      }
      if (rank <= lastRank) {
        throw rankingError(lineNo, line, `ranks must increase (the previous rank was ${lastRank})`);
      }
      lastRank = rank;
      domainText = ranked[2] ?? "";
    } else if (line.includes(",")) {
      throw rankingError(lineNo, line, "a ranked line must be a number, one comma, and a domain");
    } else {
      domainText = line;
    }

    // A name cut short for display ("marketingplatform.google....", present in the upstream
    // top-sites list) names no domain. Skipping it can only make the policy stricter.
    if (domainText.endsWith("...") || domainText.endsWith("\u2026")) continue;

    const canonical = canonicalizeHost(domainText);
    if (canonical === undefined) {
      throw rankingError(lineNo, line, `${JSON.stringify(domainText)} is not a bare domain name`);
    }
    if (isIpHost(canonical)) {
      throw rankingError(lineNo, line, `${JSON.stringify(domainText)} is an IP address, not a domain`);
    }
    if (!canonical.includes(".")) {
      throw rankingError(lineNo, line, `${JSON.stringify(domainText)} is not a registrable domain`);
    }

    const rest = canonical.startsWith("www.") ? canonical.slice(4) : canonical;
    const domain = rest.includes(".") ? rest : canonical;
    if (seen.has(domain)) continue;
    seen.add(domain);
    domains.push(domain);
  }

  return domains;
}

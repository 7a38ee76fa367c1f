/**
 * The read policy: which URLs an agent may read through the user's browser.
 *
 * Order of evaluation (the first rule that decides wins):
 *   1. the URL must parse and use http: or https:           (else denied)
 *   2. policy.deny: host and its subdomains + path regex     (denied, always)
 *      tested against the path as sent and as common servers may read it (canonicalUrl.ts: decoded,
 *      ";" parameters dropped, in lower case); later rules must allow every such reading
 *   3. policy.read.allow: named host (+port) + path regex    (allowed, http or https)
 *   4. policy.read.enabled: false                            (any https URL allowed)
 *   5. top_sites: the first N domains of the ranking and their subdomains,
 *      https on the default port, never IP literals          (allowed)
 *   6. everything else, including any http:// URL or IP address not
 *      named in allow                                        (denied)
 *
 * Pure functions, deny on failure: check() never throws.
 */

import { canonicalizeHost, canonicalizeUrlDetailed, isIpHost, type CanonicalUrl } from "./canonicalUrl.js";
import { describeHost, hostMatches, parseHostKey, type HostPattern } from "./hostPattern.js";
import { compileRegex, errorText, shown, type ConfigPattern } from "./text.js";
import { compileNavigationRules } from "./navigationRules.js";
import type { NavigationRule } from "@tabrelay/protocol";

export type PolicyDecision = { ok: true; rule: string } | { ok: false; code: "policy_denied"; rule: string; message: string };

export interface ReadPolicyInput {
  deny: { host: string; path: string }[];
  /** How refusals name where the config lives ("config.yaml"; on a stateless host "the TABRELAY_CONFIG binding"). */
  configName?: string;
  read: { enabled: boolean; top_sites: number; allow: Record<string, string[]> };
}

export interface CompiledReadPolicy {
  check(url: string): PolicyDecision;
  /**
   * True when an http(s) URL matches the deny list. Used at the network layer (CDP), where subresources
   * from any CDN must still load but explicitly denied origins must not be contacted at all.
   */
  isDenied(url: string): boolean;
  /** The policy for the network layer: rules that stop navigation requests to refused origins (see navigationRules.ts). */
  navigationRules(): NavigationRule[];
  /** Human-readable lines for docs and the dashboard. */
  describe(): string[];
}

interface DenyRule {
  rawPath: string;
  pattern: HostPattern;
  path: ConfigPattern;
  rule: string;
}

interface AllowRule {
  key: string;
  pattern: HostPattern;
  paths: ConfigPattern[];
  rule: string;
}

const CONFIG_FILE_DEFAULT = "config.yaml";

function deny(subject: string, cause: string, rule: string, next: string): PolicyDecision {
  return {
    ok: false,
    code: "policy_denied",
    rule,
    // The subject can be a URL a page wrote (a redirect's target): capped like any page string.
    message: `policy_denied: ${subject.length > 300 ? `${subject.slice(0, 300)}…` : subject} is not readable: ${cause} (rule: ${rule}). ${next}`,
  };
}

/**
 * Compiles the policy section of the config plus a domain ranking (see loadRanking) into a
 * checker. Throws an Error naming the config key on a bad host key, bad regex or bad value.
 */
export function compileReadPolicy(input: ReadPolicyInput, ranking: readonly string[]): CompiledReadPolicy {
  const CONFIG_FILE = input.configName ?? CONFIG_FILE_DEFAULT;
  if (input === null || typeof input !== "object") throw new Error("policy: expected an object with deny and read");
  if (!Array.isArray(input.deny)) throw new Error("policy.deny: expected a list of { host, path } entries");
  const read = input.read;
  if (read === null || typeof read !== "object") throw new Error("policy.read: expected an object");
  if (typeof read.enabled !== "boolean") throw new Error("policy.read.enabled: expected true or false");
  if (!Number.isSafeInteger(read.top_sites) || read.top_sites < 0) {
    throw new Error(`policy.read.top_sites: expected a whole number >= 0 (0 disables the ranking), got ${String(read.top_sites)}`);
  }
  if (read.allow === null || typeof read.allow !== "object" || Array.isArray(read.allow)) {
    throw new Error('policy.read.allow: expected a map of host -> list of path regexes, e.g. "docs.example.com": ["^/guide/"]');
  }
  if (!Array.isArray(ranking)) throw new Error("top-sites ranking: expected a list of domains");

  const denyRules: DenyRule[] = input.deny.map((entry, index) => {
    const where = `policy.deny[${index}]`;
    if (entry === null || typeof entry !== "object") throw new Error(`${where}: expected { host, path }`);
    const pattern = parseHostKey(entry.host, `${where}.host`, true);
    const path = compileRegex(entry.path, `${where}.path`);
    return {
      rawPath: entry.path,
      pattern,
      path,
      rule: `deny[${index}] ${entry.host} ${entry.path}`,
    };
  });

  const allowRules: AllowRule[] = Object.entries(read.allow).map(([key, paths]) => {
    const where = `policy.read.allow[${JSON.stringify(key)}]`;
    const pattern = parseHostKey(key, where, false);
    if (!Array.isArray(paths) || paths.length === 0) {
      throw new Error(`${where}: expected a non-empty list of path regexes (use [".*"] for every path)`);
    }
    const compiled = paths.map((source, i) => compileRegex(source, `${where}[${i}]`));
    return { key, pattern, paths: compiled, rule: `read.allow[${JSON.stringify(key)}]` };
  });

  const topRanks = new Map<string, number>();
  const topCount = Math.min(read.top_sites, ranking.length);
  for (let i = 0; i < topCount; i++) {
    const raw = ranking[i] ?? "";
    const domain = canonicalizeHost(raw);
    if (domain === undefined || isIpHost(domain) || !domain.includes(".")) {
      throw new Error(`top-sites ranking, rank ${i + 1}: ${JSON.stringify(raw)} is not a domain name`);
    }
    if (!topRanks.has(domain)) topRanks.set(domain, i + 1);
  }

  /** The best-ranked listed domain that is the host or one of its parents. */
  function topSiteFor(host: string): { domain: string; rank: number } | undefined {
    let best: { domain: string; rank: number } | undefined;
    let candidate = host;
    for (;;) {
      const rank = topRanks.get(candidate);
      if (rank !== undefined && (best === undefined || rank < best.rank)) best = { domain: candidate, rank };
      const dot = candidate.indexOf(".");
      if (dot < 0) return best;
      candidate = candidate.slice(dot + 1);
    }
  }

  function evaluate(raw: string): PolicyDecision {
    const parsed = canonicalizeUrlDetailed(raw);
    if (!parsed.ok) {
      if (parsed.kind === "scheme") {
        return deny(
          shown(raw),
          parsed.reason,
          "default: http and https only",
          "Only http:// and https:// pages can be read; no configuration allows other schemes.",
        );
      }
      if (parsed.kind === "ambiguous") {
        const denied = parsed.url === undefined ? undefined : denyListDecision(parsed.url);
        if (denied !== undefined) return denied;
        return deny(
          shown(raw),
          parsed.reason,
          "default: ambiguous path",
          "Do not retry with another encoding of the path; pass the plain URL, or ask the user.",
        );
      }
      return deny(typeof raw === "string" ? shown(raw) : "the input", parsed.reason, "default: invalid URL", "Pass a complete https:// URL.");
    }
    const url = parsed.url;

    const denied = denyListDecision(url);
    if (denied !== undefined) return denied;

    const decision = allowFor(url, url.pathAndQuery);
    if (!decision.ok) return decision;
    // An allow rule must allow every reading: a path that is allowed as sent but means another path to the
    // server ("/guide/..%2Fadmin") is refused rather than guessed at.
    for (const reading of url.readings) {
      const other = allowFor(url, reading.pathAndQuery);
      if (other.ok) continue;
      return deny(
        url.href,
        `its path is ambiguous: ${shown(url.pathAndQuery)} (allowed by ${decision.rule}) is ${shown(reading.pathAndQuery)} to ${reading.reader}, because of ${reading.because}, and that path is not allowed (${other.rule})`,
        `${decision.rule}: ambiguous path`,
        `Do not retry with another encoding; pass the plain form of the URL (no encoded "/" or "\\", ";" parameters or double encoding), or ask the user to widen the path patterns in ${CONFIG_FILE}.`,
      );
    }
    return decision;
  }

  /** The deny list wins over any encoding: it is tested against every way a server may read the path. */
  function denyListDecision(url: CanonicalUrl): PolicyDecision | undefined {
    for (const rule of denyRules) {
      if (!hostMatches(rule.pattern, url)) continue;
      const form = url.denyForms.find((f) => rule.path.test(f));
      if (form === undefined) continue;
      const reading = form === url.pathAndQuery ? undefined : url.readings.find((r) => r.pathAndQuery === form);
      const how =
        form === url.pathAndQuery
          ? ""
          : reading !== undefined
            ? ` (its path ${shown(url.pathAndQuery)} is ${shown(form)} to ${reading.reader}, because of ${reading.because})`
            : ` (its path matches in lower case, ${shown(form)}, and some servers ignore case in paths)`;
      return deny(
        url.href,
        `the user's deny list refuses ${describeHost(rule.pattern, "and its subdomains")} for paths matching /${rule.rawPath}/${how}`,
        rule.rule,
        `Do not retry or look for another route to it; only the user can change policy.deny in ${CONFIG_FILE}.`,
      );
    }
    return undefined;
  }

  /** Everything after the deny list (allow entries, read.enabled, top sites, defaults) for one reading of the path. */
  function allowFor(url: CanonicalUrl, pathAndQuery: string): PolicyDecision {
    const suggestedKey = url.port === "" ? url.host : `${url.host}:${url.port}`;
    const askToAllow = `Ask the user to add ${JSON.stringify(suggestedKey)} under policy.read.allow in ${CONFIG_FILE}.`;

    const pathMisses: AllowRule[] = [];
    for (const rule of allowRules) {
      if (!hostMatches(rule.pattern, url)) continue;
      if (rule.paths.some((re) => re.test(pathAndQuery))) return { ok: true, rule: rule.rule };
      pathMisses.push(rule);
    }
    const pathDenial = (): PolicyDecision | undefined => {
      const first = pathMisses[0];
      if (first === undefined) return undefined;
      const patterns = first.paths.map((re) => re.source).join(", ");
      return deny(
        url.href,
        `the path ${shown(pathAndQuery)} matches none of the path patterns of ${first.rule} (${patterns})`,
        `${first.rule}: path not allowed`,
        `Ask the user to add a matching path pattern to ${first.rule} in ${CONFIG_FILE}.`,
      );
    };

    // What https would give; plain http is only ever readable through read.allow (above).
    const top = url.isIp ? undefined : topSiteFor(url.host);
    const topRule = top === undefined ? undefined : `top_sites (${top.domain}, rank ${top.rank})`;
    let httpsRule: string | undefined;
    if (!read.enabled) httpsRule = "read.enabled: false (any https URL)";
    else if (topRule !== undefined && url.port === "") httpsRule = topRule;

    if (httpsRule !== undefined) {
      if (url.protocol === "https:") return { ok: true, rule: httpsRule };
      return (
        pathDenial() ??
        deny(
          url.href,
          `plain http:// is only readable for hosts named in policy.read.allow (over https it would be allowed by ${httpsRule})`,
          "default: https only",
          `Use the https:// address instead, or ask the user to add ${JSON.stringify(suggestedKey)} under policy.read.allow in ${CONFIG_FILE}.`,
        )
      );
    }

    const denial = pathDenial();
    if (denial !== undefined) return denial;
    if (url.isIp) {
      return deny(url.href, "IP addresses are only readable when named in policy.read.allow", "default: IP literal not in allowlist", askToAllow);
    }
    if (topRule !== undefined) {
      return deny(url.href, `${topRule} covers only https on the default port, not port ${url.port}`, "top_sites: default port only", askToAllow);
    }
    return deny(
      url.href,
      read.top_sites > 0
        ? "the host is not in the read allowlist (it is neither among the top sites nor named in policy.read.allow)"
        : "the host is not in the read allowlist (policy.read.allow; the top-sites ranking is disabled)",
      "default: not in allowlist",
      askToAllow,
    );
  }

  const navigation = compileNavigationRules({
    deny: denyRules.map((rule) => ({ pattern: rule.pattern, path: rule.rawPath })),
    allow: allowRules.map((rule) => ({ pattern: rule.pattern })),
    topDomains: read.enabled ? [...topRanks.keys()] : [],
    anyHttps: !read.enabled,
  });

  const lines: string[] = [];
  lines.push("Only http:// and https:// URLs can ever be read.");
  for (const rule of denyRules) {
    lines.push(`${rule.rule}: always refused: ${describeHost(rule.pattern, "and its subdomains")}, paths matching /${rule.rawPath}/`);
  }
  for (const rule of allowRules) {
    const paths = rule.paths.map((re) => `/${re.source}/`).join(", ");
    lines.push(`${rule.rule}: readable over http or https: ${describeHost(rule.pattern, "and its subdomains")}, paths matching ${paths}`);
  }
  if (!read.enabled) {
    lines.push("read.enabled: false: any other https URL is readable (http only for hosts named in read.allow).");
  } else {
    if (topCount > 0) {
      const shortfall = read.top_sites > ranking.length ? ` (top_sites is ${read.top_sites}, the ranking has ${ranking.length})` : "";
      lines.push(
        `top_sites: the ${topCount} most popular domains of the ranking${shortfall} and their subdomains are readable over https on the default port.`,
      );
    } else {
      lines.push("top_sites: 0: no domains from the popularity ranking are readable.");
    }
    lines.push("Everything else is refused; IP addresses and http:// are readable only when named in read.allow.");
  }

  return {
    navigationRules: () => navigation.map((rule) => ({ ...rule, ...(rule.requestDomains ? { requestDomains: [...rule.requestDomains] } : {}) })),
    isDenied(raw: string): boolean {
      try {
        const parsed = canonicalizeUrlDetailed(raw);
        const url = parsed.url;
        if (url === undefined) return false;
        return denyRules.some((rule) => hostMatches(rule.pattern, url) && url.denyForms.some((form) => rule.path.test(form)));
      } catch {
        return true;
      }
    },
    check(url: string): PolicyDecision {
      try {
        return evaluate(url);
      } catch (error) {
        return deny("the URL", `the policy check failed (${errorText(error)})`, "default: policy error", "Report this to the user.");
      }
    },
    describe(): string[] {
      return [...lines];
    },
  };
}

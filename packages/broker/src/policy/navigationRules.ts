/**
 * The read policy compiled for the network layer: rules in declarativeNetRequest's terms that stop a
 * navigation request (top frame or frame, redirect hops included) from an agent tab before it is sent.
 *
 * The rules are exact for origins: a request is blocked when the read policy refuses its scheme, host and
 * port whatever the path. Path rules (a deny rule for some paths, an allow entry for some paths) are decided
 * on the URL the tab commits, as before: at the network layer such an origin counts as allowed (allow entry)
 * or not denied (deny entry), because RE2 cannot be told the path the server will see (percent-encoding).
 *
 *   priority 1  block every navigation request                       (nothing is readable unless allowed)
 *   priority 2  allow https on the top sites (or any https with read.enabled: false)
 *   priority 3  block the top sites on an explicit port             (top sites are default-port only)
 *   priority 4  allow each read.allow host (http or https, its port, subdomains if "*.")
 *   priority 5  block each deny host (and subdomains) denied for every path
 *
 * Pure: the extension installs the list as it is, scoped to the agent's tab ids.
 */

import { compileRegex } from "./text.js";
import type { NavigationRule } from "@tabrelay/protocol";
import type { HostPattern } from "./hostPattern.js";

export interface NavigationPolicyShape {
  deny: { pattern: HostPattern; path: string }[];
  allow: { pattern: HostPattern }[];
  /** Canonical top-site domains that are readable over https (subdomains included). */
  topDomains: string[];
  /** read.enabled: false: any https URL is readable. */
  anyHttps: boolean;
}

/** declarativeNetRequest allows at most 1000 regex rules per extension. */
export const MAX_REGEX_RULES = 900;

/**
 * Whether a deny entry's path regex refuses every path, so the browser can block its host before any request: it
 * is searched (unanchored) in the path and query, which always start with "/". Judged by the pattern itself (RE2,
 * linear time) against paths of every shape, random ones included, so "/*", ".?", "(?:)" or "" count as well as
 * ".*": a pattern that matches all of them refuses every path in practice. A pattern that does not is a path rule,
 * decided when the tab lands (see above).
 */
export function coversEveryPath(path: string): boolean {
  let pattern: { test(text: string): boolean };
  try {
    pattern = compileRegex(path, "policy.deny path");
  } catch {
    return false;
  }
  const random = () => Math.random().toString(36).slice(2, 12);
  const probes = [
    "/",
    "/index.html",
    "/a/b/c?d=e",
    "/%2F%00x",
    "/\u00e9t\u00e9?q=%C3%A9",
    `/${random()}`,
    `/${random()}/${random()}.${random()}?${random()}=${random()}`,
    `/${"x".repeat(300)}`,
  ];
  return probes.every((probe) => pattern.test(probe));
}

function escapeRe2(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, (c) => `\\${c}`);
}

/**
 * The start of a URL on `pattern`'s host and port, anchored, up to the first "/" of the path: Chrome's URLs
 * always carry one, leave the default port out and never hold userinfo for http(s) navigations it sends.
 */
export function originRegex(pattern: HostPattern, schemes: "http" | "https" | "both" = "both"): string {
  const host = `${pattern.subdomains && !pattern.isIp ? String.raw`(?:[^/?#@]*\.)?` : ""}${escapeRe2(pattern.host)}`;
  const scheme = schemes === "both" ? "https?" : schemes;
  if (pattern.port === undefined) return `^${scheme}://${host}(?::[0-9]+)?/`;
  const alternatives: string[] = [];
  const withPort = (s: "http" | "https") =>
    pattern.port === (s === "https" ? "443" : "80") ? `${s}://${host}(?::${pattern.port})?` : `${s}://${host}:${pattern.port}`;
  if (schemes !== "https") alternatives.push(withPort("http"));
  if (schemes !== "http") alternatives.push(withPort("https"));
  return `^(?:${alternatives.join("|")})/`;
}

export function compileNavigationRules(shape: NavigationPolicyShape): NavigationRule[] {
  const rules: NavigationRule[] = [{ priority: 1, action: "block" }];
  if (shape.anyHttps) {
    rules.push({ priority: 2, action: "allow", urlFilter: "|https://" });
  } else if (shape.topDomains.length > 0) {
    rules.push({ priority: 2, action: "allow", urlFilter: "|https://", requestDomains: [...shape.topDomains] });
    rules.push({ priority: 3, action: "block", regexFilter: String.raw`^https://[^/?#]*:[0-9]+/`, requestDomains: [...shape.topDomains] });
  }
  for (const { pattern } of shape.allow) rules.push({ priority: 4, action: "allow", regexFilter: originRegex(pattern) });
  for (const { pattern, path } of shape.deny) {
    if (coversEveryPath(path)) rules.push({ priority: 5, action: "block", regexFilter: originRegex(pattern) });
  }
  const regexCount = rules.filter((r) => r.regexFilter !== undefined).length;
  if (regexCount > MAX_REGEX_RULES) {
    throw new Error(
      `policy: ${regexCount} host entries in policy.read.allow and policy.deny are more than the browser can enforce (${MAX_REGEX_RULES}); use "*." entries to cover subdomains with one key`,
    );
  }
  return rules;
}

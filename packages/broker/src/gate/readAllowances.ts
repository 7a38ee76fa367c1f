// Reads the user allowed once (policy.ask.read, "Allow once"): a site the read policy refuses for want of an allow
// entry, made readable for one tab until the tab closes. Every judge of that tab's documents takes it into account
// (the gate's landing and commit checks, the frames, the network layer of both drivers: the extension gets them as
// navigation rules scoped to the tab, the CDP driver asks here at each request); no other tab, and nothing the deny
// list refuses, is ever allowed by it.
import type { NavigationRule } from "@tabrelay/protocol";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import type { CompiledReadPolicy, PolicyDecision } from "../policy/readPolicy.js";
import { hostOf } from "../policy/writeRules.js";

/** The rule a tab's allowance takes in the extension: above the default block, level with read.allow, below a deny host's. */
const ALLOW_PRIORITY = 4;
/** Hosts one tab may be allowed, at most (each a question the user answered). */
const HOSTS_PER_TAB = 20;

export class ReadAllowances {
  readonly #byTab = new Map<string, Set<string>>();

  /** `host` (host[:port], as hostOf writes it) is readable in this tab until it closes. */
  allow(browserId: string, tabId: number, host: string): void {
    const key = `${browserId}:${tabId}`;
    const hosts = this.#byTab.get(key) ?? new Set<string>();
    if (hosts.size < HOSTS_PER_TAB) hosts.add(host);
    this.#byTab.set(key, hosts);
  }

  /** The tab closed: what it was allowed goes with it. */
  forget(browserId: string, tabId?: number): void {
    if (tabId !== undefined) {
      this.#byTab.delete(`${browserId}:${tabId}`);
      return;
    }
    for (const key of [...this.#byTab.keys()]) if (key.startsWith(`${browserId}:`)) this.#byTab.delete(key);
  }

  /** Whether the user allowed `url`'s site for this tab. */
  allows(browserId: string, tabId: number, url: string): boolean {
    const hosts = this.#byTab.get(`${browserId}:${tabId}`);
    if (!hosts) return false;
    const parsed = canonicalizeUrl(url);
    return parsed.ok && hosts.has(hostOf(parsed.url));
  }

  /** The allowances of a browser's tabs as navigation rules scoped to each tab (the extension's "browser.tabRules"). */
  tabRules(browserId: string): Array<{ tabId: number; rules: NavigationRule[] }> {
    const out: Array<{ tabId: number; rules: NavigationRule[] }> = [];
    for (const [key, hosts] of this.#byTab) {
      if (!key.startsWith(`${browserId}:`)) continue;
      const tabId = Number(key.slice(browserId.length + 1));
      out.push({ tabId, rules: [...hosts].map((host) => ({ priority: ALLOW_PRIORITY, action: "allow" as const, regexFilter: hostRegex(host) })) });
    }
    return out;
  }
}

/**
 * The read policy one tab is held to: the user's, with the sites they allowed once for that tab. What the deny list
 * refuses stays refused; every other verdict is the policy's own.
 */
export function tabReadPolicy(policy: CompiledReadPolicy, allowances: ReadAllowances | undefined, browserId: string, tabId: number): CompiledReadPolicy {
  if (!allowances) return policy;
  return {
    check(url: string): PolicyDecision {
      const decision = policy.check(url);
      if (decision.ok || policy.isDenied(url) || !allowances.allows(browserId, tabId, url)) return decision;
      return { ok: true, rule: "policy.ask.read: allowed once for this tab" };
    },
    isDenied: (url) => policy.isDenied(url),
    navigationRules: () => policy.navigationRules(),
    describe: () => policy.describe(),
  };
}

/** http or https to exactly this host (and port: none written means the scheme's own), any path. */
function hostRegex(host: string): string {
  const port = /:(\d+)$/.exec(host)?.[1];
  const name = port === undefined ? host : host.slice(0, -(port.length + 1));
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return `^https?://${escaped}${port === undefined ? "" : `:${port}`}([/?#]|$)`;
}

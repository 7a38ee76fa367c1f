// The read policy compiled for the network layer (policy/navigationRules.ts), judged the way Chrome's
// declarativeNetRequest judges it: the highest priority that matches decides, allow beats block at equal
// priority, requestDomains covers subdomains, urlFilter "|x" anchors at the start, regexFilter is searched in the
// whole URL. For every origin the network decision must be the policy's own: refused origins blocked, allowed
// ones let through (their paths are judged again on commit).
import type { NavigationRule } from "@tabrelay/protocol";
import { describe, expect, it } from "vitest";
import { compileNavigationRules, MAX_REGEX_RULES, originRegex } from "../../src/policy/navigationRules.js";
import { compileReadPolicy, type ReadPolicyInput } from "../../src/policy/readPolicy.js";
import { loadRanking } from "../../src/config/ranking.js";

const RANKING = loadRanking();

function matches(rule: NavigationRule, url: URL): boolean {
  if (rule.requestDomains && !rule.requestDomains.some((d) => url.hostname === d || url.hostname.endsWith(`.${d}`))) return false;
  if (rule.urlFilter !== undefined) {
    if (!rule.urlFilter.startsWith("|")) throw new Error(`the evaluator only knows anchored url filters, not ${rule.urlFilter}`);
    if (!url.href.startsWith(rule.urlFilter.slice(1))) return false;
  }
  // The rules use only syntax RE2 and JavaScript read alike (escapes, classes, (?:...), anchors).
  if (rule.regexFilter !== undefined && !new RegExp(rule.regexFilter, "i").test(url.href)) return false;
  return true;
}

/** True when a navigation request to `href` would be sent. */
function sent(rules: NavigationRule[], href: string): boolean {
  const url = new URL(href);
  let best: NavigationRule | undefined;
  for (const rule of rules) {
    if (!matches(rule, url)) continue;
    if (!best || rule.priority > best.priority || (rule.priority === best.priority && rule.action === "allow")) best = rule;
  }
  return best?.action === "allow";
}

function policy(read: Partial<ReadPolicyInput["read"]>, deny: ReadPolicyInput["deny"] = []) {
  return compileReadPolicy({ deny, read: { enabled: true, top_sites: 500, allow: {}, ...read } }, RANKING);
}

const HOSTS = [
  "docs.example.test",
  "sub.docs.example.test",
  "docs.example.test.evil.test",
  "evildocs.example.test",
  "intranet.test",
  "a.b.intranet.test",
  "google.com",
  "mail.google.com",
  "google.com.evil.test",
  "notgoogle.com",
  "bank.test",
  "www.bank.test",
  "127.0.0.1",
  "127.0.0.2",
  "[::1]",
  "localhost",
  "evil.test",
];
const ORIGINS = HOSTS.flatMap((host) =>
  ["http", "https"].flatMap((scheme) => ["", ":80", ":443", ":8080", ":9333"].map((port) => `${scheme}://${host}${port}`)),
);

describe("navigation rules", () => {
  it("agree with the read policy on every origin, for allow keys of each kind, top sites and the deny list", () => {
    const compiled = policy(
      { allow: { "docs.example.test": [".*"], "*.intranet.test": [".*"], "127.0.0.1:8080": [".*"], "[::1]:9333": [".*"], "bank.test": [".*"] } },
      [
        { host: "www.bank.test", path: ".*" },
        { host: "mail.google.com", path: "^/" },
        { host: "a.b.intranet.test", path: ".*" },
      ],
    );
    const rules = compiled.navigationRules();
    const disagreements = ORIGINS.flatMap((origin) => {
      for (const path of ["/", "/some/page?q=1"]) {
        const href = `${origin}${path}`;
        const expected = compiled.check(href).ok;
        if (sent(rules, href) !== expected) return [`${href}: policy ${expected ? "allows" : "refuses"}, network ${expected ? "blocks" : "sends"}`];
      }
      return [];
    });
    expect(disagreements).toEqual([]);
  });

  it("read.enabled: false lets any https origin through but not plain http outside the allowlist", () => {
    const compiled = policy({ enabled: false, allow: { "127.0.0.1": [".*"] } }, [{ host: "evil.test", path: ".*" }]);
    const rules = compiled.navigationRules();
    for (const origin of ORIGINS) expect(sent(rules, `${origin}/`), origin).toBe(compiled.check(`${origin}/`).ok);
  });

  it("an origin allowed only for some paths is let through (paths are judged on commit); one denied only for some paths too", () => {
    const compiled = policy({ top_sites: 0, allow: { "docs.example.test": ["^/guide/"] } }, [{ host: "google.com", path: "^/account" }]);
    const rules = compiled.navigationRules();
    expect(compiled.check("https://docs.example.test/other").ok).toBe(false);
    expect(sent(rules, "https://docs.example.test/other")).toBe(true);
    expect(sent(rules, "https://docs.example.test/guide/a")).toBe(true);
    expect(sent(rules, "https://evil.test/guide/a")).toBe(false);
  });

  it("a deny entry whose path regex matches every path blocks its host before any request, however it is written", () => {
    // Found by an audit: "/*" (zero or more slashes, searched) refused every path on commit but let the request go.
    for (const path of [".*", "/*", ".?", "(?:)", "", "^", "/?", "[\\s\\S]*", "^/", "/|x", "(/)"]) {
      const rules = policy({ allow: { "bank.test": [".*"] } }, [{ host: "bank.test", path }]).navigationRules();
      for (const href of ["https://bank.test/", "https://bank.test/account?x=1", "https://www.bank.test/a/b"])
        expect(sent(rules, href), `${path} ${href}`).toBe(false);
    }
    // A path rule is still a path rule: the request goes, the landing is judged.
    for (const path of ["^/account", "/admin", "^/$", "\\.pdf$"]) {
      const rules = policy({ allow: { "bank.test": [".*"] } }, [{ host: "bank.test", path }]).navigationRules();
      expect(sent(rules, "https://bank.test/other/page"), path).toBe(true);
    }
  });

  it("top_sites: 0 and no allowlist blocks every navigation", () => {
    const rules = policy({ top_sites: 0 }).navigationRules();
    for (const origin of ORIGINS) expect(sent(rules, `${origin}/`), origin).toBe(false);
  });

  it("writes host patterns as anchored regexes that a look-alike host cannot satisfy", () => {
    const re = new RegExp(originRegex({ host: "shop.test", port: undefined, subdomains: true, isIp: false }));
    expect(re.test("https://shop.test/")).toBe(true);
    expect(re.test("https://a.shop.test:8443/x")).toBe(true);
    expect(re.test("https://shop.test.evil.test/")).toBe(false);
    expect(re.test("https://evilshop.test/")).toBe(false);
    expect(re.test("https://evil.test/?shop.test/")).toBe(false);
    expect(re.test("https://evil.test/#@shop.test/")).toBe(false);
    const portRe = new RegExp(originRegex({ host: "127.0.0.1", port: "80", subdomains: false, isIp: true }));
    expect(portRe.test("http://127.0.0.1/")).toBe(true);
    expect(portRe.test("https://127.0.0.1:80/")).toBe(true);
    expect(portRe.test("https://127.0.0.1/")).toBe(false);
    expect(portRe.test("http://127.0.0.1:8080/")).toBe(false);
  });

  it("refuses, at start-up, a policy with more host entries than the browser can enforce", () => {
    const allow = Object.fromEntries(Array.from({ length: MAX_REGEX_RULES + 1 }, (_, i) => [`h${i}.example.test`, [".*"]]));
    expect(() => policy({ allow })).toThrow(/more than the browser can enforce/);
    expect(compileNavigationRules({ deny: [], allow: [], topDomains: [], anyHttps: false })).toEqual([{ priority: 1, action: "block" }]);
  });
});

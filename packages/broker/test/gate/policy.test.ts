import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it, expect } from "vitest";
import { canonicalizeHost, canonicalizeUrl } from "../../src/policy/canonicalUrl.js";
import { compileReadPolicy, type CompiledReadPolicy, type PolicyDecision, type ReadPolicyInput } from "../../src/policy/readPolicy.js";
import { loadRanking, shippedRankingPath } from "../../src/config/ranking.js";
import { parseRankingCsv } from "../../src/policy/topSites.js";
import { compileWritePolicy } from "../../src/policy/writePolicy.js";

// The shipped ranking (packages/broker/data/top-sites.csv): google.com is rank 1
// (listed as www.google.com), blogger.com rank 3 (www.blogger.com), whatsapp.com rank 10,
// microsoft.com rank 11, en.wikipedia.org rank 22. example.com is in it too, so the
// explicitly named hosts below use the reserved ".test" / ".example" names instead.
const RANKING = loadRanking();

interface Overrides {
  deny?: ReadPolicyInput["deny"];
  enabled?: boolean;
  top_sites?: number;
  allow?: Record<string, string[]>;
}

function policy(overrides: Overrides = {}): CompiledReadPolicy {
  return compileReadPolicy(
    {
      deny: overrides.deny ?? [],
      read: {
        enabled: overrides.enabled ?? true,
        top_sites: overrides.top_sites ?? 500,
        allow: overrides.allow ?? {},
      },
    },
    RANKING,
  );
}

function deniedRule(decision: PolicyDecision): string | undefined {
  return decision.ok ? undefined : decision.rule;
}

function messageOf(decision: PolicyDecision): string {
  return decision.ok ? "" : decision.message;
}

const defaults = policy();

describe("the shipped top-sites ranking", () => {
  it("lives in packages/broker/data/top-sites.csv", () => {
    const packageRoot = fileURLToPath(new URL("../..", import.meta.url));
    expect(shippedRankingPath()).toBe(join(packageRoot, "data", "top-sites.csv"));
    expect(existsSync(shippedRankingPath())).toBe(true);
  });

  it("loads about 500 canonical domains in rank order, google.com first", () => {
    // 500 rows, minus the upstream entry "marketingplatform.google...." that names no domain.
    expect(RANKING.length).toBeGreaterThanOrEqual(499);
    expect(RANKING[0]).toBe("google.com");
    expect(RANKING[10]).toBe("microsoft.com");
    expect(RANKING.every((d) => canonicalizeHost(d) === d)).toBe(true);
  });

  it('strips a leading "www." so the registrable site is listed', () => {
    expect(RANKING[2]).toBe("blogger.com");
    expect(RANKING.some((d) => d.startsWith("www."))).toBe(false);
  });
});

describe("top sites (default policy)", () => {
  it("allows an https URL of a top site and names the rank", () => {
    expect(defaults.check("https://google.com/search?q=tabrelay")).toEqual({
      ok: true,
      rule: "top_sites (google.com, rank 1)",
    });
  });

  it("allows the www. host of a site listed as www.", () => {
    expect(defaults.check("https://www.google.com/").ok).toBe(true);
  });

  it("allows subdomains of a top site", () => {
    expect(defaults.check("https://mail.google.com/mail/u/0/")).toEqual({
      ok: true,
      rule: "top_sites (google.com, rank 1)",
    });
  });

  it("covers the apex and subdomains of a site listed as www.blogger.com", () => {
    expect(defaults.check("https://blogger.com/").ok).toBe(true);
    expect(defaults.check("https://someone.blogger.com/post").ok).toBe(true);
  });

  it('denies a lookalike that merely starts with a top site ("google.com.evil.net")', () => {
    const decision = defaults.check("https://google.com.evil.net/");
    expect(deniedRule(decision)).toBe("default: not in allowlist");
  });

  it('denies a lookalike that merely ends with a top site ("notgoogle.com")', () => {
    expect(deniedRule(defaults.check("https://notgoogle.com/"))).toBe("default: not in allowlist");
  });

  it('denies a truncated lookalike that is not listed ("google.co")', () => {
    expect(RANKING).not.toContain("google.co");
    expect(RANKING).toContain("google.co.uk");
    expect(deniedRule(defaults.check("https://google.co/"))).toBe("default: not in allowlist");
  });

  it("denies plain http to a top site and says to use https", () => {
    const decision = defaults.check("http://google.com/");
    expect(deniedRule(decision)).toBe("default: https only");
    expect(messageOf(decision)).toContain("https://");
  });

  it("denies a top site on a non-default port", () => {
    expect(deniedRule(defaults.check("https://google.com:8443/"))).toBe("top_sites: default port only");
  });

  it("treats an explicit default port like no port", () => {
    expect(defaults.check("https://google.com:443/").ok).toBe(true);
  });

  it("top_sites: 0 disables the ranking", () => {
    expect(deniedRule(policy({ top_sites: 0 }).check("https://google.com/"))).toBe("default: not in allowlist");
  });

  it("top_sites: 10 covers only the ten highest-ranked domains", () => {
    const top10 = policy({ top_sites: 10 });
    expect(top10.check("https://whatsapp.com/")).toEqual({ ok: true, rule: "top_sites (whatsapp.com, rank 10)" });
    expect(deniedRule(top10.check("https://microsoft.com/"))).toBe("default: not in allowlist");
  });
});

describe("hosts named in read.allow", () => {
  const docs = policy({ allow: { "docs.internal.test": [".*"] } });

  it("allows https to the named host and names the allow entry", () => {
    expect(docs.check("https://docs.internal.test/")).toEqual({ ok: true, rule: 'read.allow["docs.internal.test"]' });
  });

  it("allows plain http to the named host", () => {
    expect(docs.check("http://docs.internal.test/page")).toEqual({ ok: true, rule: 'read.allow["docs.internal.test"]' });
  });

  it("allows any port when the key is a bare host", () => {
    expect(docs.check("http://docs.internal.test:8080/").ok).toBe(true);
  });

  it("does not cover subdomains of the named host", () => {
    expect(deniedRule(docs.check("https://api.docs.internal.test/"))).toBe("default: not in allowlist");
  });

  it("denies a host that is not named, with a message naming the cause and the next step", () => {
    expect(messageOf(docs.check("http://x.example/"))).toBe(
      "policy_denied: http://x.example/ is not readable: the host is not in the read allowlist " +
        "(it is neither among the top sites nor named in policy.read.allow) (rule: default: not in allowlist). " +
        'Ask the user to add "x.example" under policy.read.allow in config.yaml.',
    );
  });

  it("allows only the given port when the key is host:port", () => {
    const local = policy({ allow: { "127.0.0.1:8080": [".*"] } });
    expect(local.check("http://127.0.0.1:8080/")).toEqual({ ok: true, rule: 'read.allow["127.0.0.1:8080"]' });
    expect(local.check("http://127.0.0.1:9090/").ok).toBe(false);
    expect(local.check("http://127.0.0.1/").ok).toBe(false);
  });

  it('covers the apex and its subdomains when the key starts with "*."', () => {
    const wildcard = policy({ allow: { "*.internal.test": [".*"] } });
    expect(wildcard.check("http://internal.test/").ok).toBe(true);
    expect(wildcard.check("http://a.b.internal.test/").ok).toBe(true);
    expect(wildcard.check("http://notinternal.test/").ok).toBe(false);
  });

  it("canonicalises keys (upper case, trailing dot)", () => {
    const p = policy({ allow: { "DOCS.Internal.TEST.": [".*"] } });
    expect(p.check("http://docs.internal.test/").ok).toBe(true);
  });

  it("canonicalises IDN keys to punycode", () => {
    const p = policy({ allow: { "bücher.example": [".*"] } });
    expect(p.check("http://xn--bcher-kva.example/").ok).toBe(true);
    expect(p.check("http://BÜCHER.example/").ok).toBe(true);
  });
});

describe("path patterns in read.allow", () => {
  const guide = policy({ allow: { "docs.internal.test": ["^/guide/"] } });

  it("allows a path matching the pattern, query string included", () => {
    expect(guide.check("http://docs.internal.test/guide/x?y=1").ok).toBe(true);
  });

  it("denies a path matching none of the patterns and names the path", () => {
    const decision = guide.check("http://docs.internal.test/admin");
    expect(deniedRule(decision)).toBe('read.allow["docs.internal.test"]: path not allowed');
    expect(messageOf(decision)).toContain('"/admin"');
  });

  it("matches patterns against the path after dot segments are resolved", () => {
    expect(guide.check("http://docs.internal.test/guide/../admin").ok).toBe(false);
    expect(guide.check("http://docs.internal.test/guide/%2e%2e/admin").ok).toBe(false);
  });

  it("matches patterns against pathname plus query string", () => {
    const search = policy({ allow: { "docs.internal.test": ["^/search\\?q=[a-z]+$"] } });
    expect(search.check("http://docs.internal.test/search?q=abc").ok).toBe(true);
    expect(search.check("http://docs.internal.test/search?q=abc&admin=1").ok).toBe(false);
  });

  it("ignores the fragment", () => {
    expect(guide.check("http://docs.internal.test/admin#/guide/").ok).toBe(false);
  });
});

describe("the deny list", () => {
  it("wins over an explicit allow entry", () => {
    const p = policy({
      deny: [{ host: "evil.example", path: ".*" }],
      allow: { "evil.example": [".*"] },
    });
    expect(deniedRule(p.check("https://evil.example/"))).toBe("deny[0] evil.example .*");
  });

  it("wins over the top sites, for the paths it names", () => {
    const p = policy({ deny: [{ host: "google.com", path: "^/maps" }] });
    expect(deniedRule(p.check("https://google.com/maps/place/x"))).toBe("deny[0] google.com ^/maps");
    expect(p.check("https://google.com/search?q=x").ok).toBe(true);
  });

  it("covers subdomains of the denied host", () => {
    const p = policy({
      deny: [{ host: "evil.example", path: ".*" }],
      allow: { "*.evil.example": [".*"] },
    });
    expect(deniedRule(p.check("https://a.b.evil.example/"))).toBe("deny[0] evil.example .*");
  });

  it("does not cover lookalikes of the denied host", () => {
    const p = policy({ deny: [{ host: "evil.example", path: ".*" }], allow: { "notevil.example": [".*"] } });
    expect(p.check("https://notevil.example/").ok).toBe(true);
  });

  it("still wins when read.enabled is false", () => {
    const p = policy({ enabled: false, deny: [{ host: "evil.example", path: ".*" }] });
    expect(deniedRule(p.check("https://evil.example/"))).toBe("deny[0] evil.example .*");
  });

  it("tells the agent not to retry and who can change it", () => {
    const p = policy({ deny: [{ host: "evil.example", path: ".*" }] });
    const message = messageOf(p.check("https://evil.example/x"));
    expect(message).toMatch(/^policy_denied: https:\/\/evil\.example\/x is not readable: /);
    expect(message).toContain("(rule: deny[0] evil.example .*)");
    expect(message).toContain("policy.deny");
  });
});

describe("host canonicalisation and URL tricks", () => {
  const withDeny = policy({ deny: [{ host: "evil.example", path: ".*" }] });

  it("compares hosts case-insensitively", () => {
    expect(defaults.check("HTTPS://GOOGLE.COM/Search").ok).toBe(true);
  });

  it("ignores a trailing dot on the host", () => {
    expect(defaults.check("https://google.com./").ok).toBe(true);
    expect(deniedRule(withDeny.check("https://evil.example./"))).toBe("deny[0] evil.example .*");
  });

  it("judges https://google.com@evil.example/ as evil.example (userinfo is not the host)", () => {
    const decision = withDeny.check("https://google.com@evil.example/");
    expect(deniedRule(decision)).toBe("deny[0] evil.example .*");
    expect(messageOf(decision)).toContain("https://evil.example/");
  });

  it("strips userinfo from the canonical URL", () => {
    const result = canonicalizeUrl("https://user:secret@google.com/a");
    expect(result).toEqual({
      ok: true,
      url: { href: "https://google.com/a", protocol: "https:", host: "google.com", port: "", pathAndQuery: "/a", readings: [], denyForms: ["/a"], isIp: false },
    });
  });

  it('treats "\\" as "/": https://evil.example\\@google.com/ is evil.example', () => {
    expect(deniedRule(withDeny.check("https://evil.example\\@google.com/"))).toBe("deny[0] evil.example .*");
  });

  it('treats "\\" as "/": https://google.com\\.evil.example is google.com with path "/.evil.example", as the browser loads it', () => {
    const result = canonicalizeUrl("https://google.com\\.evil.example");
    expect(result.ok && result.url.host).toBe("google.com");
    expect(result.ok && result.url.pathAndQuery).toBe("/.evil.example");
    expect(withDeny.check("https://google.com\\.evil.example").ok).toBe(true);
  });

  it("decodes a percent-encoded dot in the host before judging it", () => {
    expect(deniedRule(defaults.check("https://google.com%2eevil.example/"))).toBe("default: not in allowlist");
  });

  it("denies an IDN homograph (Cyrillic o in g\u043e\u043egle.com) by its punycode form", () => {
    const homograph = "https://g\u043e\u043egle.com/";
    const result = canonicalizeUrl(homograph);
    expect(result.ok && result.url.host).toBe("xn--ggle-55da.com");
    expect(deniedRule(defaults.check(homograph))).toBe("default: not in allowlist");
  });

  it("denies host names with characters no DNS name has", () => {
    expect(deniedRule(defaults.check("https://a*b.google.com/"))).toBe("default: invalid URL");
  });
});

describe("paths are judged as the server reads them (percent-encoding, dot segments, parameters)", () => {
  const bank = policy({ deny: [{ host: "bank.example", path: "^/account" }], allow: { "bank.example": [".*"] } });
  const guide = policy({ allow: { "docs.internal.test": ["^/guide/"] } });
  const guideAndDeny = policy({
    deny: [{ host: "docs.internal.test", path: "^/guide/secret" }],
    allow: { "docs.internal.test": ["^/guide/"] },
  });
  const topDeny = policy({ deny: [{ host: "google.com", path: "^/maps" }] });
  const href = (raw: string) => {
    const result = canonicalizeUrl(raw);
    return result.ok ? result.url.href : `invalid: ${result.reason}`;
  };

  describe("canonical form (RFC 3986 section 6.2.2): what the policy judges is what the browser is sent", () => {
    it("decodes percent-encoded unreserved characters (ALPHA, DIGIT, - . _ ~)", () => {
      expect(href("https://bank.example/%61ccount")).toBe("https://bank.example/account");
      expect(href("https://bank.example/%41%7a%30%2D%2E%5F%7E")).toBe("https://bank.example/Az0-._~");
    });

    it("upper-cases the hex digits of the escapes it keeps, in the path and the query", () => {
      expect(href("https://bank.example/a%2fb%3a?q=%2f%3d%61")).toBe("https://bank.example/a%2Fb%3A?q=%2F%3Da");
    });

    it("removes dot segments after decoding (%2e and .%2E are dots)", () => {
      expect(href("https://bank.example/guide/%2e%2e/account")).toBe("https://bank.example/account");
      expect(href("https://bank.example/guide/.%2E/account")).toBe("https://bank.example/account");
      expect(href("https://bank.example/guide/%2E/x")).toBe("https://bank.example/guide/x");
    });

    it('turns "\\" into "/" and resolves what it forms: /guide\\..\\admin is /admin', () => {
      expect(href("https://docs.internal.test/guide\\..\\admin")).toBe("https://docs.internal.test/admin");
    });

    it("leaves reserved escapes, a lone % and the host alone; keeps the fragment", () => {
      expect(href("https://bank.example/a%2Fb/100%/x?y=%26#f%61")).toBe("https://bank.example/a%2Fb/100%/x?y=%26#f%61");
    });

    it("is idempotent: the canonical href canonicalises to itself", () => {
      for (const raw of ["https://bank.example/%61ccount", "https://bank.example/a%2fb;x/..;/c?q=%7e%2F", "https://bank.example/%2561"]) {
        expect(href(href(raw))).toBe(href(raw));
      }
    });
  });

  describe("the deny list wins over every encoding of its path", () => {
    it.each([
      ["an encoded letter", "https://bank.example/%61ccount"],
      ["encoded letters in lower-case hex", "https://bank.example/%61%63count"],
      ["all letters encoded", "https://bank.example/%61%63%63%6F%75%6E%74/x"],
      ["dot segments", "https://bank.example/help/../account"],
      ["encoded dot segments", "https://bank.example/help/%2e%2e/account"],
      ["backslashes", "https://bank.example/help\\..\\account"],
      ['an encoded "/" in a dot segment', "https://bank.example/help/..%2faccount"],
      ['an encoded "/" in upper-case hex', "https://bank.example/help/..%2Faccount"],
      ['an encoded "\\"', "https://bank.example/help/..%5caccount"],
      ["double encoding", "https://bank.example/%2561ccount"],
      ["double-encoded dot segments", "https://bank.example/help/%252e%252e/account"],
      ["triple encoding", "https://bank.example/%252561ccount"],
      ["an overlong UTF-8 dot", "https://bank.example/help/%c0%ae%c0%ae/account"],
      ["an overlong UTF-8 slash", "https://bank.example/help/..%c0%afaccount"],
      ['an IIS "%u" escape', "https://bank.example/%u0061ccount"],
      ['Tomcat ";" parameters on a dot segment', "https://bank.example/help/..;/account"],
      ['a ";" parameter on the first segment', "https://bank.example/;x=1/account"],
      ["a doubled slash", "https://bank.example//account"],
      ["upper case (IIS and Express ignore case)", "https://bank.example/ACCOUNT"],
      ["mixed case and encoding", "https://bank.example/%41CCOUNT"],
      ["fullwidth letters (Unicode folding)", "https://bank.example/\uff41ccount"],
      ["a fullwidth solidus", "https://bank.example/help\uff0f..\uff0faccount"],
      ["a tab and a newline inside the path (the parser drops them)", "https://bank.example/acc\tou\nnt"],
      ["an escape written with escaped hex digits (%%36%31)", "https://bank.example/%%36%31ccount"],
      ["an overlong UTF-8 letter", "https://bank.example/%c1%a1ccount"],
      ["a four-byte overlong slash", "https://bank.example/help/..%f0%80%80%afaccount"],
    ])("%s: %s is refused by deny[0]", (_trick, raw) => {
      const decision = bank.check(raw);
      expect(deniedRule(decision)).toBe("deny[0] bank.example ^/account");
      expect(bank.isDenied(raw)).toBe(true);
    });

    it("names how the server reads the path when the sent form does not match", () => {
      const message = messageOf(bank.check("https://bank.example/help/..%2Faccount"));
      expect(message).toContain('its path "/help/..%2Faccount" is "/account" to a server that decodes the path before resolving it');
      expect(message).toContain('because of an encoded "/" (%2F)');
      expect(messageOf(bank.check("https://bank.example/ACCOUNT"))).toContain("some servers ignore case in paths");
    });

    it("the sent form is judged (and named) as decoded: /%61ccount is refused as https://bank.example/account", () => {
      expect(messageOf(bank.check("https://bank.example/%61ccount"))).toMatch(/^policy_denied: https:\/\/bank\.example\/account is not readable: /);
    });

    it("does not over-reach: other paths of the host stay readable, encoded or not", () => {
      expect(bank.check("https://bank.example/help/%61bout").ok).toBe(true);
      expect(bank.check("https://bank.example/a-count").ok).toBe(true);
      expect(bank.check("https://bank.example/x/account").ok).toBe(true);
      expect(bank.check("https://bank.example/search?q=%2Faccount").ok).toBe(true);
    });

    it("wins over the top sites too (path rule on a ranked host)", () => {
      expect(deniedRule(topDeny.check("https://google.com/%6Daps/place/x"))).toBe("deny[0] google.com ^/maps");
      expect(deniedRule(topDeny.check("https://www.google.com/x/..%2Fmaps"))).toBe("deny[0] google.com ^/maps");
      expect(topDeny.check("https://google.com/search?q=%6Daps").ok).toBe(true);
    });

    it("wins over a path allow entry on the same host", () => {
      expect(deniedRule(guideAndDeny.check("https://docs.internal.test/guide/%73ecret"))).toBe("deny[0] docs.internal.test ^/guide/secret");
      expect(deniedRule(guideAndDeny.check("https://docs.internal.test/guide/x/..;/secret"))).toBe("deny[0] docs.internal.test ^/guide/secret");
      // A compatibility letter (long s, U+017F) folds to "s" on a server that normalises Unicode.
      expect(deniedRule(guideAndDeny.check("https://docs.internal.test/guide/\u017fecret"))).toBe("deny[0] docs.internal.test ^/guide/secret");
      expect(guideAndDeny.check("https://docs.internal.test/guide/public").ok).toBe(true);
    });
  });

  describe("an allow path pattern must allow every reading of the path", () => {
    it("allows an encoded letter that decodes into the allowed prefix (/%67uide/ is /guide/)", () => {
      expect(guide.check("https://docs.internal.test/%67uide/x").ok).toBe(true);
      expect(href("https://docs.internal.test/%67uide/x")).toBe("https://docs.internal.test/guide/x");
    });

    it.each([
      ["dot segments", "https://docs.internal.test/guide/../admin", "path not allowed"],
      ["encoded dot segments", "https://docs.internal.test/guide/%2e%2e/admin", "path not allowed"],
      ["backslashes", "https://docs.internal.test/guide\\..\\admin", "path not allowed"],
      ['an encoded "/" (lower-case hex)', "https://docs.internal.test/guide/..%2fadmin", "ambiguous path"],
      ['an encoded "/" (upper-case hex)', "https://docs.internal.test/guide/..%2Fadmin", "ambiguous path"],
      ['an encoded "\\"', "https://docs.internal.test/guide/..%5Cadmin", "ambiguous path"],
      ["double encoding", "https://docs.internal.test/guide/%252e%252e/admin", "ambiguous path"],
      ["an overlong UTF-8 dot", "https://docs.internal.test/guide/%c0%ae%c0%ae/admin", "ambiguous path"],
      ["an invalid UTF-8 lead byte with an overlong slash", "https://docs.internal.test/guide/..%e0%80%afadmin", "ambiguous path"],
      ['Tomcat ";" parameters', "https://docs.internal.test/guide/..;/admin", "ambiguous path"],
      ['an encoded ";"', "https://docs.internal.test/guide/..%3B/admin", "ambiguous path"],
      ['an IIS "%u" slash', "https://docs.internal.test/guide/..%u002fadmin", "ambiguous path"],
      ["a fullwidth solidus", "https://docs.internal.test/guide/..\uff0fadmin", "ambiguous path"],
      ["a segment of dots and spaces (Windows trims them)", "https://docs.internal.test/guide/..%20/admin", "ambiguous path"],
      ["an encoded prefix that is not the prefix (double-encoded g)", "https://docs.internal.test/%2567uide/x", "path not allowed"],
    ])("%s: %s is refused", (_trick, raw, why) => {
      expect(deniedRule(guide.check(raw))).toBe(`read.allow["docs.internal.test"]: ${why}`);
    });

    it("says why an ambiguous path is refused and what to do", () => {
      const message = messageOf(guide.check("https://docs.internal.test/guide/..%2Fadmin"));
      expect(message).toContain('its path is ambiguous: "/guide/..%2Fadmin" (allowed by read.allow["docs.internal.test"]) is "/admin"');
      expect(message).toContain('because of an encoded "/" (%2F)');
      expect(message).toContain("Do not retry with another encoding");
      expect(messageOf(guide.check("https://docs.internal.test/guide/..;/admin"))).toContain('drops ";" parameters from path segments (Tomcat, Jetty)');
    });

    it("keeps ordinary paths under the prefix readable, ambiguous or not", () => {
      for (const raw of [
        "https://docs.internal.test/guide/a%2Fb",
        "https://docs.internal.test/guide/page;jsessionid=AB12",
        "https://docs.internal.test/guide//x",
        "https://docs.internal.test/guide/100%25",
        "https://docs.internal.test/guide/caf%C3%A9",
        "https://docs.internal.test/guide/x?next=%2F..%2Fadmin",
      ]) {
        expect(guide.check(raw), raw).toEqual({ ok: true, rule: 'read.allow["docs.internal.test"]' });
      }
    });

    it("compares hex digits of kept escapes case-insensitively (%2F vs %2f)", () => {
      const encodedSlash = policy({ allow: { "git.internal.test": ["^/api/projects/group%2Fproject(/|$)", "^/api/projects/group/project(/|$)"] } });
      expect(encodedSlash.check("https://git.internal.test/api/projects/group%2fproject").ok).toBe(true);
      expect(encodedSlash.check("https://git.internal.test/api/projects/group%2Fproject/issues").ok).toBe(true);
    });
  });

  describe("top sites and read.enabled: false allow every path, so no reading can matter", () => {
    it.each(["https://github.com/a%2Fb", "https://google.com/x/..%2f..%2fy", "https://google.com/x;y/..;/z", "https://google.com/%2561"])(
      "%s is readable",
      (raw) => {
        expect(defaults.check(raw).ok).toBe(true);
        expect(policy({ enabled: false, top_sites: 0 }).check(raw.replace("google.com", "anything.example")).ok).toBe(true);
      },
    );
  });

  describe("encoded NUL and control characters", () => {
    it.each([
      "https://google.com/file%00.html",
      "https://google.com/a%2500b",
      "https://google.com/a%0Ab",
      "https://google.com/a%0d%0aSet-Cookie:x",
      "https://google.com/a%7Fb",
      "https://google.com/a%u0000b",
      "https://google.com/a%c0%80b",
    ])("%s is refused on any host, with the reason", (raw) => {
      const decision = defaults.check(raw);
      expect(deniedRule(decision)).toBe("default: ambiguous path");
      expect(messageOf(decision)).toMatch(/holds an encoded (NUL \(%00\)|control character) once decoded/);
    });

    it("the deny rule is named when it also matches", () => {
      expect(deniedRule(bank.check("https://bank.example/account%00.html"))).toBe("deny[0] bank.example ^/account");
      expect(bank.isDenied("https://bank.example/account%00.html")).toBe(true);
    });

    it("is not confused with a control character in the query", () => {
      expect(defaults.check("https://google.com/search?q=a%0Ab%00").ok).toBe(true);
    });
  });

  describe("the write policy judges its deny list on the same readings", () => {
    const writes = compileWritePolicy({
      deny: [{ host: "bank.example", path: "^/account" }],
      write: { click: { "bank.example": { label: ".*" } } },
    });
    const button = (frameUrl: string) => ({
      ref: "e1",
      role: "button",
      name: "Pay",
      visibleText: "Pay",
      tag: "button",
      disabled: false,
      editable: false,
      attributeText: "",
      frameUrl,
      activates: [],
    });

    it.each([
      "https://bank.example/account",
      "https://bank.example/%61ccount",
      "https://bank.example/help/..%2Faccount",
      "https://bank.example/%2561ccount",
      "https://bank.example/help/..;/account",
      "https://bank.example/ACCOUNT",
    ])("refuses a click on %s by deny[0], whatever the grant", (url) => {
      expect(writes.check("click", url, button(url)).rule).toBe("deny[0] bank.example ^/account");
      expect(writes.check("click", "https://bank.example/help", button(url)).rule).toBe("deny[0] bank.example ^/account");
    });

    it("still grants the click elsewhere on the host", () => {
      expect(writes.check("click", "https://bank.example/help/%61bout", button("https://bank.example/help")).ok).toBe(true);
    });

    it("refuses a page whose path holds an encoded NUL as one it cannot judge", () => {
      const url = "https://bank.example/pay%00";
      expect(writes.check("click", url, button(url)).ok).toBe(false);
    });
  });

  describe("IP literals", () => {
    const ip = policy({ deny: [{ host: "10.0.0.5", path: "^/admin" }], allow: { "10.0.0.5:8080": ["^/app/"], "127.0.0.1": [".*"] } });

    it("are judged with the same path readings, the host untouched", () => {
      expect(href("http://0x0a.0.0.5:8080/%61pp/x")).toBe("http://10.0.0.5:8080/app/x");
      expect(ip.check("http://10.0.0.5:8080/%61pp/x").ok).toBe(true);
      expect(deniedRule(ip.check("http://10.0.0.5:8080/app/..%2Fadmin"))).toBe("deny[0] 10.0.0.5 ^/admin");
      expect(deniedRule(ip.check("http://10.0.0.5:8080/app/..;/other"))).toBe('read.allow["10.0.0.5:8080"]: ambiguous path');
      expect(ip.check("http://127.0.0.1:3000/x/..%2Fy").ok).toBe(true);
    });

    it("are still refused by default whatever the path", () => {
      expect(deniedRule(defaults.check("http://8.8.8.8/%61"))).toBe("default: IP literal not in allowlist");
    });
  });
});

describe("IP addresses", () => {
  it("are not readable by default", () => {
    expect(deniedRule(defaults.check("https://8.8.8.8/"))).toBe("default: IP literal not in allowlist");
    expect(deniedRule(defaults.check("http://127.0.0.1/"))).toBe("default: IP literal not in allowlist");
  });

  it.each(["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/"])("%s is canonicalised to 127.0.0.1 and denied by default", (raw) => {
    const result = canonicalizeUrl(raw);
    expect(result.ok && result.url.host).toBe("127.0.0.1");
    expect(result.ok && result.url.isIp).toBe(true);
    expect(deniedRule(defaults.check(raw))).toBe("default: IP literal not in allowlist");
  });

  it.each(["http://2130706433/", "http://0x7f.1/"])("%s is allowed once 127.0.0.1 is named", (raw) => {
    expect(policy({ allow: { "127.0.0.1": [".*"] } }).check(raw)).toEqual({ ok: true, rule: 'read.allow["127.0.0.1"]' });
  });

  it("IPv6 literals are canonicalised in brackets and denied by default", () => {
    const result = canonicalizeUrl("http://[0:0::1]:3000/x");
    expect(result.ok && result.url.host).toBe("[::1]");
    expect(result.ok && result.url.port).toBe("3000");
    expect(deniedRule(defaults.check("https://[::1]/"))).toBe("default: IP literal not in allowlist");
  });

  it("IPv6 literals are readable when named with their port", () => {
    const p = policy({ allow: { "[::1]:3000": [".*"] } });
    expect(p.check("http://[0:0::1]:3000/").ok).toBe(true);
    expect(p.check("http://[::1]:3001/").ok).toBe(false);
  });

  it("an IPv4-mapped IPv6 address is not covered by the IPv4 key", () => {
    expect(policy({ allow: { "127.0.0.1": [".*"] } }).check("http://[::ffff:127.0.0.1]/").ok).toBe(false);
  });
});

describe("schemes", () => {
  it.each([
    "javascript:alert(1)",
    "data:text/html,<h1>x</h1>",
    "file:///etc/passwd",
    "chrome://settings",
    "about:blank",
    "blob:https://google.com/0b3c",
    "ftp://google.com/",
    "view-source:https://google.com/",
    "ws://google.com/",
  ])("%s is never readable", (raw) => {
    const decision = policy({ enabled: false }).check(raw);
    expect(deniedRule(decision)).toBe("default: http and https only");
    expect(messageOf(decision)).toContain("only http: and https: URLs are readable");
  });
});

describe("unparseable input", () => {
  it.each(["", "   ", "not a url", "google.com", "//google.com/", "https://", "http://exa mple.com/", "https://./"])("%j is denied without throwing", (raw) => {
    const decision = defaults.check(raw);
    expect(deniedRule(decision)).toBe("default: invalid URL");
    expect(messageOf(decision)).toMatch(/^policy_denied: /);
  });
});

describe("read.enabled: false", () => {
  const open = policy({ enabled: false, allow: { "docs.internal.test": [".*"] } });

  it("allows any https URL", () => {
    expect(open.check("https://any.example/page")).toEqual({ ok: true, rule: "read.enabled: false (any https URL)" });
  });

  it("still denies plain http to hosts not named in read.allow", () => {
    expect(deniedRule(open.check("http://any.example/"))).toBe("default: https only");
  });

  it("still allows plain http to named hosts", () => {
    expect(open.check("http://docs.internal.test/").ok).toBe(true);
  });
});

describe("compiling a policy", () => {
  it("throws on a bad regex in read.allow, naming the key", () => {
    expect(() => policy({ allow: { "docs.internal.test": ["^/guide/("] } })).toThrow(
      /policy\.read\.allow\["docs\.internal\.test"\]\[0\]: invalid regular expression/,
    );
  });

  it("throws on a bad regex in deny, naming the entry", () => {
    expect(() => policy({ deny: [{ host: "evil.example", path: "[" }] })).toThrow(/policy\.deny\[0\]\.path/);
  });

  it.each(["https://docs.internal.test/", "exa mple.test", "docs.internal.test:99999", "*.127.0.0.1", "user@host.test", ""])(
    "throws on the bad host key %j, naming it",
    (key) => {
      expect(() => policy({ allow: { [key]: [".*"] } })).toThrow(/policy\.read\.allow\[/);
    },
  );

  it("throws on a bad deny host", () => {
    expect(() => policy({ deny: [{ host: "evil.example/path", path: ".*" }] })).toThrow(/policy\.deny\[0\]\.host/);
  });

  it("throws on an empty list of path patterns", () => {
    expect(() => policy({ allow: { "docs.internal.test": [] } })).toThrow(/non-empty list/);
  });

  it("throws on a negative top_sites", () => {
    expect(() => policy({ top_sites: -1 })).toThrow(/policy\.read\.top_sites/);
  });

  it("describes its rules in human-readable lines", () => {
    const lines = policy({
      deny: [{ host: "evil.example", path: ".*" }],
      allow: { "docs.internal.test": ["^/guide/"] },
    }).describe();
    expect(lines.join("\n")).toContain("deny[0] evil.example .*");
    expect(lines.join("\n")).toContain('read.allow["docs.internal.test"]');
    expect(lines.join("\n")).toMatch(/the \d+ most popular domains/);
  });
});

describe("canonicalizeHost (config keys)", () => {
  it.each([
    ["DOCS.Example.com.", "docs.example.com"],
    ["bücher.example", "xn--bcher-kva.example"],
    ["::1", "[::1]"],
    ["[0:0::1]", "[::1]"],
    ["2130706433", "127.0.0.1"],
  ])("%j -> %j", (raw, expected) => {
    expect(canonicalizeHost(raw)).toBe(expected);
  });

  it.each(["", "example.com:8080", "https://example.com", "a b.example", "*.example.com", "user@example.com", "."])("%j is not a host", (raw) => {
    expect(canonicalizeHost(raw)).toBeUndefined();
  });
});

describe("parseRankingCsv", () => {
  it('reads "rank,domain" lines after the header in rank order', () => {
    expect(parseRankingCsv("rank,domain\n1,google.com\n2,youtube.com\n")).toEqual(["google.com", "youtube.com"]);
  });

  it("accepts a file without header and lines that are just a domain", () => {
    expect(parseRankingCsv("1,google.com\nyoutube.com\n")).toEqual(["google.com", "youtube.com"]);
  });

  it("skips blank lines and accepts CRLF line endings", () => {
    expect(parseRankingCsv("rank,domain\r\n\r\n1,google.com\r\n\r\n2,youtube.com\r\n")).toEqual(["google.com", "youtube.com"]);
  });

  it('canonicalises domains, strips a leading "www." and drops duplicates', () => {
    expect(parseRankingCsv("1,WWW.Google.com\n2,google.com\n3,Bücher.example\n")).toEqual(["google.com", "xn--bcher-kva.example"]);
  });

  it('skips an entry truncated for display ("marketingplatform.google....")', () => {
    expect(parseRankingCsv("1,google.com\n2,marketingplatform.google....\n3,youtube.com\n")).toEqual(["google.com", "youtube.com"]);
  });

  it("rejects a line holding a URL, naming the line", () => {
    expect(() => parseRankingCsv("rank,domain\n1,google.com\n2,https://youtube.com/\n")).toThrow(/line 3/);
  });

  it("rejects a line with spaces, naming the line", () => {
    expect(() => parseRankingCsv("1,google.com\n2, youtube.com\n")).toThrow(/line 2: the line contains spaces/);
  });

  it("rejects a non-numeric rank and an IP address", () => {
    expect(() => parseRankingCsv("first,google.com\n")).toThrow(/line 1/);
    expect(() => parseRankingCsv("1,127.0.0.1\n")).toThrow(/line 1: .*IP address/);
  });
});

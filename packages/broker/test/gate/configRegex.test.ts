// Issue 10: one label cannot freeze the broker. Every regex from config (read and write deny paths, read allow
// paths, write grants' labels, keys grants' keys) is matched in linear time (RE2 syntax, re2js); syntax that
// needs backtracking is refused at start-up with the key and what to write instead. Each hostile case below
// hangs JavaScript's RegExp for minutes (exponential or O(n^12) backtracking): these tests would time out.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ElementFacts } from "@tabrelay/protocol";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { compileReadPolicy } from "../../src/policy/readPolicy.js";
import { compileRegex } from "../../src/policy/text.js";
import { compileWritePolicy, type WriteDecision } from "../../src/policy/writePolicy.js";

const SHOP = "https://shop.example/cart";
const A_RUN = `${"a".repeat(3999)}!`;
const CART = `Add to cart${" cart".repeat(797)}!`;

/** The classic catastrophic patterns, each with a 4,000-character text it does not match. */
const CATASTROPHIC: readonly [string, string][] = [
  ["^([A-Za-z]+ ?)+$", CART],
  ["^(a+)+$", A_RUN],
  ["^(a|aa)+$", A_RUN],
  ["^(.*a){12}$", A_RUN],
  ["(x+x+)+y", "x".repeat(4000)],
];

function button(label: string, overrides: Partial<ElementFacts> = {}): ElementFacts {
  return {
    ref: "e1",
    role: "button",
    name: label,
    visibleText: label,
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: SHOP,
    activates: [],
    ...overrides,
  };
}

function clickGrant(label: string) {
  return compileWritePolicy({ deny: [], write: { click: { "shop.example": { label } } } });
}

function ruleOf(decision: WriteDecision): string {
  return decision.rule;
}

function readPolicy(deny: { host: string; path: string }[], allow: Record<string, string[]>) {
  return compileReadPolicy({ deny, read: { enabled: true, top_sites: 0, allow } }, []);
}

function load(yaml: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-regex-"));
  writeFileSync(join(dataDir, "config.yaml"), yaml);
  return loadConfig({
    dataDir,
    port: 0,
    env: { TABRELAY_MCP_TOKEN: "test-mcp-token-0123456789abcdef", TABRELAY_PAIRING_TOKEN: "test-pairing-token-0123456789abcdef" },
  });
}

describe("catastrophic patterns answer promptly on 4,000-character hostile text", () => {
  it.each(CATASTROPHIC)("a write.click label %j refuses a label it does not match", (label, text) => {
    // At the label cap (4,000 characters): a longer label is refused as too long before any regex runs.
    expect(text.length).toBeGreaterThan(3990);
    expect(text.length).toBeLessThanOrEqual(4000);
    expect(ruleOf(clickGrant(label).check("click", SHOP, button(text)))).toBe('write.click["shop.example"].label');
  });

  it("the issue's label grant still allows the label it was written for", () => {
    expect(clickGrant("^([A-Za-z]+ ?)+$").check("click", SHOP, button("Add to cart"))).toEqual({ ok: true, rule: 'write.click["shop.example"]' });
  });

  it.each(CATASTROPHIC)("a write.keys keys regex %j refuses a key it does not match", (keys, text) => {
    const rules = compileWritePolicy({ deny: [], write: { keys: { "shop.example": { keys, label: ".*" } } } });
    expect(ruleOf(rules.check("press", SHOP, button("Message body", { key: text })))).toBe('write.keys["shop.example"].keys');
  });

  // Paths start with "/", so the anchored patterns are given it; a path pattern is a search, not a full match.
  const PATHS: readonly [string, string][] = [
    ["^/([A-Za-z]+-?)+$", `/Add-to-cart${"-cart".repeat(797)}!`],
    ["^/(a+)+$", `/${A_RUN}`],
    ["^/(a|aa)+$", `/${A_RUN}`],
    ["^(.*a){12}$", `/${A_RUN}`],
    ["(x+x+)+y", `/${"x".repeat(4000)}`],
  ];

  it.each(PATHS)("a read.allow path %j refuses a path it does not match", (path, hostile) => {
    const decision = readPolicy([], { "docs.example": [path] }).check(`https://docs.example${hostile}`);
    expect(decision.ok ? "" : decision.rule).toBe('read.allow["docs.example"]: path not allowed');
  });

  it.each(PATHS)("a policy.deny path %j lets through a path it does not match (read and write)", (path, hostile) => {
    const url = `https://docs.example${hostile}`;
    expect(readPolicy([{ host: "docs.example", path }], { "docs.example": [".*"] }).check(url)).toEqual({ ok: true, rule: 'read.allow["docs.example"]' });
    const write = compileWritePolicy({ deny: [{ host: "docs.example", path }], write: { click: { "docs.example": { label: ".*" } } } });
    expect(write.check("click", url, button("Add to cart", { frameUrl: url }))).toEqual({ ok: true, rule: 'write.click["docs.example"]' });
  });
});

describe("config patterns keep their meaning", () => {
  it("a label grant must match the whole label", () => {
    const rules = clickGrant("Add to cart|Remove");
    expect(rules.check("click", SHOP, button("Add to cart")).ok).toBe(true);
    expect(rules.check("click", SHOP, button("Remove")).ok).toBe(true);
    expect(ruleOf(rules.check("click", SHOP, button("Add to cart now")))).toBe('write.click["shop.example"].label');
    expect(ruleOf(rules.check("click", SHOP, button("Do not Remove")))).toBe('write.click["shop.example"].label');
  });

  it("labels are case-sensitive unless the pattern says (?i)", () => {
    expect(ruleOf(clickGrant("^add to cart$").check("click", SHOP, button("Add to cart")))).toBe('write.click["shop.example"].label');
    expect(clickGrant("(?i)^add to cart$").check("click", SHOP, button("Add to cart")).ok).toBe(true);
  });

  it("\\p{L} matches letters of any script", () => {
    const rules = clickGrant("^\\p{L}+( \\p{L}+)*$");
    expect(rules.check("click", SHOP, button("Ajouter au panier élégant")).ok).toBe(true);
    expect(rules.check("click", SHOP, button("Купить")).ok).toBe(true);
    expect(ruleOf(rules.check("click", SHOP, button("Buy 2")))).toBe('write.click["shop.example"].label');
  });

  it("a path pattern is a search anywhere in the path", () => {
    const policy = readPolicy([{ host: "docs.example", path: "/admin" }], { "docs.example": ["^/guide/"] });
    expect(policy.check("https://docs.example/guide/intro").ok).toBe(true);
    expect(policy.check("https://docs.example/api/guide/").ok).toBe(false);
    expect(policy.isDenied("https://docs.example/guide/admin/users")).toBe(true);
  });

  it("messages show a pattern as before, / escaped as in /…/", () => {
    const decision = readPolicy([], { "docs.example": ["^/guide/", "[/]x"] }).check("https://docs.example/api");
    expect(decision.ok ? "" : decision.message).toContain("(^\\/guide\\/, [/]x)");
    expect(compileRegex("", "k").source).toBe("(?:)");
  });
});

describe("syntax RE2 lacks is refused at start-up, naming the key and what to write instead", () => {
  const click = (label: string) => `policy:\n  write:\n    click:\n      "shop.example": { label: ${JSON.stringify(label)} }\n`;

  it("lookahead in a label", () => {
    expect(() => load(click("^(?!Delete).*$"))).toThrow(ConfigError);
    expect(() => load(click("^(?!Delete).*$"))).toThrow(
      /policy\.write\.click\.shop\.example\.label: not a valid regular expression: lookahead is not supported: tabrelay matches config patterns in linear time \(RE2 syntax\); match the text itself/,
    );
  });

  it("lookbehind in a read.allow path", () => {
    expect(() => load(`policy:\n  read:\n    allow:\n      "docs.example": ["(?<!admin)/page"]\n`)).toThrow(
      /policy\.read\.allow\.docs\.example\.0: not a valid regular expression: lookbehind is not supported: tabrelay matches config patterns in linear time \(RE2 syntax\)/,
    );
  });

  it("a backreference in a deny path", () => {
    expect(() => load(`policy:\n  deny:\n    - { host: "evil.example", path: "/(\\\\w+)/\\\\1" }\n`)).toThrow(
      /policy\.deny\.0\.path: not a valid regular expression: backreferences are not supported: tabrelay matches config patterns in linear time \(RE2 syntax\); spell the repeated text out/,
    );
  });

  it("a named backreference in a keys grant", () => {
    expect(() => load(`policy:\n  write:\n    keys:\n      "mail.example": { keys: "(?<k>Enter)\\\\k<k>", label: ".*" }\n`)).toThrow(
      /policy\.write\.keys\.mail\.example\.keys: not a valid regular expression: backreferences are not supported/,
    );
  });

  it("a \\u escape, with its RE2 spelling", () => {
    expect(() => load(click("^Caf\\u00e9$"))).toThrow(
      /policy\.write\.click\.shop\.example\.label: not a valid regular expression: \\u escapes are not supported: .*write \\x\{00E9\} for U\+00E9/,
    );
    expect(load(click("^Caf\\x{00e9}$")).writePolicy.check("click", SHOP, button("Café")).ok).toBe(true);
  });

  it("compiling the policy directly refuses the same, naming the key", () => {
    expect(() => clickGrant("^(?=Add).*$")).toThrow(
      /policy\.write\.click\["shop\.example"\]\.label: invalid regular expression "\^\(\?=Add\)\.\*\$": lookahead is not supported: tabrelay matches config patterns in linear time \(RE2 syntax\)/,
    );
    expect(() => readPolicy([{ host: "evil.example", path: "(a)\\1" }], {})).toThrow(
      /policy\.deny\[0\]\.path: invalid regular expression "\(a\)\\\\1": backreferences are not supported/,
    );
  });

  it("a lookahead-looking literal inside a class or escaped is accepted", () => {
    expect(clickGrant("^[(?=]+$").check("click", SHOP, button("(?=")).ok).toBe(true);
    expect(clickGrant("^\\(\\?=$").check("click", SHOP, button("(?=")).ok).toBe(true);
  });
});

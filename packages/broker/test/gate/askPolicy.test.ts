// Which write refusals the user may be asked about (policy.ask): exactly those the narrowest grant (the page's exact
// host, the element's literal label) would lift with every other check passing, and the ask list's hosts.
import { describe, expect, it } from "vitest";
import type { ElementFacts, ReachedElement } from "@tabrelay/protocol";
import { compileAskPolicy } from "../../src/policy/askPolicy.js";
import { compileReadPolicy } from "../../src/policy/readPolicy.js";
import { ReadAllowances, tabReadPolicy } from "../../src/gate/readAllowances.js";
import { parse } from "yaml";
import { addWriteGrant } from "../../src/config/edit.js";
import { compileWritePolicy, type WriteDecision, type WritePolicyInput } from "../../src/policy/writePolicy.js";
import type { AskGrant } from "../../src/policy/writeRules.js";

const SHOP = "https://www.shop.example:8443/cart";

function facts(overrides: Partial<ElementFacts> = {}): ElementFacts {
  const label = overrides.visibleText ?? "Add to cart";
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

function ask(decision: WriteDecision): unknown {
  return decision.ok ? "allowed" : (decision.ask ?? "not askable");
}

describe("the narrow grant a refusal offers to ask for", () => {
  const none = compileWritePolicy({ deny: [], write: {} });

  it("offers the exact host (with its port) and the literal label, for a write no grant allows", () => {
    expect(ask(none.check("click", SHOP, facts()))).toEqual({ kind: "click", host: "www.shop.example:8443", label: "^Add to cart$" });
    expect(ask(none.check("fill", SHOP, facts({ role: "textbox", visibleText: "Search", editable: true })))).toEqual({
      kind: "type",
      host: "www.shop.example:8443",
      label: "^Search$",
    });
  });

  it("escapes a label that looks like a pattern: `.*` and `Buy|Delete` grant only themselves", () => {
    const wild = none.check("click", SHOP, facts({ visibleText: ".*" }));
    expect(ask(wild)).toMatchObject({ label: "^\\.\\*$" });
    const either = none.check("click", SHOP, facts({ visibleText: "Buy|Delete" }));
    const grant = (either as { ask: { label: string } }).ask;
    const lifted = compileWritePolicy({ deny: [], write: { click: { "www.shop.example:8443": { label: grant.label } } } });
    expect(lifted.check("click", SHOP, facts({ visibleText: "Buy|Delete" })).ok).toBe(true);
    expect(lifted.check("click", SHOP, facts({ visibleText: "Buy" })).ok).toBe(false);
    expect(lifted.check("click", SHOP, facts({ visibleText: "Delete" })).ok).toBe(false);
  });

  it("matches both the visible text and the accessible name when they differ", () => {
    const d = none.check("click", SHOP, facts({ visibleText: "X", name: "Close dialog" }));
    expect(ask(d)).toMatchObject({ label: "^(?:X|Close dialog)$" });
  });

  it("offers to join the grant that decides for the page, so nothing it allows is shadowed by a narrower key", () => {
    const some = compileWritePolicy({ deny: [], write: { click: { "*.shop.example": { label: "^Remove$" } } } });
    const grant = (some.check("click", SHOP, facts()) as { ask: AskGrant }).ask;
    expect(grant).toEqual({ kind: "click", host: "*.shop.example", label: "^Add to cart$" });
    // What "Always" writes (config/edit.ts addWriteGrant): the label joins that grant, and Remove stays allowed.
    const written = addWriteGrant('policy:\n  write:\n    click:\n      "*.shop.example": { label: "^Remove$" }\n', "click", grant.host, {
      regex: grant.label,
    });
    const file = parse(written.text) as { policy: { write: WritePolicyInput["write"] } };
    const after = compileWritePolicy({ deny: [], write: file.policy.write });
    expect(after.check("click", SHOP, facts()).ok).toBe(true);
    expect(after.check("click", SHOP, facts({ visibleText: "Remove" })).ok).toBe(true);
    expect(after.check("click", SHOP, facts({ visibleText: "Delete" })).ok).toBe(false);
  });

  it("offers none where the grant would not be enough: disabled, a deny entry, another site's frame, a reached element, a key combo", () => {
    expect(ask(none.check("click", SHOP, facts({ disabled: true })))).toBe("not askable");
    const denied = compileWritePolicy({ deny: [{ host: "shop.example", path: ".*" }], write: {} });
    expect(ask(denied.check("click", SHOP, facts()))).toBe("not askable");
    expect(ask(none.check("click", SHOP, facts({ frameUrl: "https://pay.example/frame" })))).toBe("not askable");
    const submits: ReachedElement = {
      via: "the form's default button",
      role: "button",
      name: "Delete account",
      visibleText: "Delete account",
      tag: "button",
      disabled: false,
      attributeText: "",
    };
    expect(ask(none.check("click", SHOP, facts({ activates: [submits] })))).toBe("not askable");
    expect(ask(none.check("press", SHOP, facts({ role: "textbox", editable: true, visibleText: "Message" })))).not.toMatchObject({ kind: "keys" });
  });

  it("offers none for an empty label (nothing narrow to grant)", () => {
    expect(ask(none.check("click", SHOP, facts({ visibleText: "", name: "" })))).toBe("not askable");
  });
});

describe("policy.ask's list", () => {
  it("asks on the hosts named (a port when given, subdomains with *.), nowhere else", () => {
    const policy = compileAskPolicy({ write: ["shop.example", "*.intra.example", "127.0.0.1:3000"] });
    expect(policy.timeoutMs).toBe(60_000);
    expect(policy.asksWrite("https://shop.example/cart")).toBe(true);
    expect(policy.asksWrite("https://www.shop.example/cart")).toBe(false);
    expect(policy.asksWrite("https://a.intra.example/x")).toBe(true);
    expect(policy.asksWrite("http://127.0.0.1:3000/")).toBe(true);
    expect(policy.asksWrite("http://127.0.0.1:3001/")).toBe(false);
    expect(policy.asksWrite("not a url")).toBe(false);
    expect(compileAskPolicy({ timeout_s: 5 }).asksWrite("https://shop.example/")).toBe(false);
  });

  it("refuses a bad host with its key", () => {
    expect(() => compileAskPolicy({ write: ["https://shop.example/"] })).toThrow(/policy\.ask\.write\[0\]/);
  });
});

describe("policy.ask.read and a tab's allowances", () => {
  it("asks about reads on the hosts named, apart from writes", () => {
    const policy = compileAskPolicy({ read: ["news.example"], write: ["shop.example"] });
    expect(policy.asksRead("https://news.example/a")).toBe(true);
    expect(policy.asksWrite("https://news.example/a")).toBe(false);
    expect(policy.asksRead("https://shop.example/")).toBe(false);
    expect(policy.describe()).toHaveLength(2);
  });

  it("allows a site for one tab, never past the deny list, never another tab, and forgets it with the tab", () => {
    const read = compileReadPolicy(
      { deny: [{ host: "news.example", path: "^/admin" }], read: { enabled: true, top_sites: 0, allow: {} }, configName: "config.yaml" },
      [],
    );
    const allowances = new ReadAllowances();
    allowances.allow("b1", 7, "news.example");
    const tab7 = tabReadPolicy(read, allowances, "b1", 7);
    expect(read.check("https://news.example/story").ok).toBe(false);
    expect(tab7.check("https://news.example/story").ok).toBe(true);
    expect(tab7.check("http://news.example/story").ok).toBe(true);
    expect(tab7.check("https://news.example:8443/story").ok).toBe(false);
    expect(tab7.check("https://www.news.example/story").ok).toBe(false);
    expect(tab7.check("https://news.example/admin/users").ok).toBe(false);
    expect(tabReadPolicy(read, allowances, "b1", 8).check("https://news.example/story").ok).toBe(false);
    expect(tabReadPolicy(read, allowances, "b2", 7).check("https://news.example/story").ok).toBe(false);
    expect(allowances.tabRules("b1")).toEqual([{ tabId: 7, rules: [{ priority: 4, action: "allow", regexFilter: "^https?://news\\.example([/?#]|$)" }] }]);
    allowances.forget("b1", 7);
    expect(tab7.check("https://news.example/story").ok).toBe(false);
    expect(allowances.tabRules("b1")).toEqual([]);
  });
});

// The grant the dashboard offers under a refused call, as a spec: the narrowest grant that would have allowed the call
// (the exact host, the exact label, the one page tool), or why there is none; and a page that words its label to widen
// the offer gets a grant for that literal label and no other.
import { describe, expect, it } from "vitest";
import { addWriteGrant, allowPageTools, allowRead, type Pattern } from "../../src/config/edit.js";
import { suggestGrant, type GrantSuggestion, type PolicyNow, type RefusedCall } from "../../src/config/grantSuggestion.js";
import { compileSettings, parseConfigText } from "../../src/config/build.js";
import type { ElementFacts } from "@tabrelay/protocol";

/** A policy that allows nothing now: no host readable, no grant at all. */
const nothingReadable: PolicyNow = { readable: () => false, refusal: () => "default: no write grants" };
const readableOnly = (allowed: string): PolicyNow => ({ ...nothingReadable, readable: (url) => url === allowed });
const refused = (call: Omit<RefusedCall, "decision">): RefusedCall => ({ decision: "refused", ...call });
const offer = (s: GrantSuggestion | undefined) => (s !== undefined && "offer" in s ? s : undefined);
const none = (s: GrantSuggestion | undefined) => (s !== undefined && "none" in s ? s.none : undefined);
const click = (target: string, rule = "default: no write.click grant", origin = "https://shop.example") =>
  suggestGrant(refused({ tool: "click", code: "write_denied", rule, origin, target }), nothingReadable);

/** What a suggestion's fields write, applied to `text` as the dashboard's route applies them. */
function apply(text: string, fields: Record<string, string>): string {
  const pattern: Pattern = { exact: fields["exact"] ?? "" };
  if (fields["action"] === "allow-read") return allowRead(text, fields["target"] ?? "").text;
  if (fields["action"] === "page-tool") return allowPageTools(text, fields["origin"] ?? "", pattern).text;
  const kind = fields["kind"];
  if (kind !== "click" && kind !== "type" && kind !== "upload" && kind !== "keys") throw new Error(`kind ${kind}`);
  return addWriteGrant(text, kind, fields["host"] ?? "", pattern).text;
}

/** A visible, enabled button on `url` with this label, as the page reports it. */
function button(label: string, url: string): ElementFacts {
  return {
    ref: "e1",
    role: "button",
    name: label,
    visibleText: label,
    attributeText: "",
    tag: "button",
    disabled: false,
    editable: false,
    frameUrl: url,
    activates: [],
  };
}

describe("a read refused by the read policy", () => {
  it("offers reading the refused host itself, with its port when not the default", () => {
    const plain = suggestGrant(
      refused({ tool: "read_url", code: "policy_denied", rule: "default: not in allowlist", origin: "http://127.0.0.1:8080" }),
      nothingReadable,
    );
    expect(plain).toEqual({
      offer: "Allow reading 127.0.0.1:8080",
      key: 'policy.read.allow["127.0.0.1:8080"]',
      fields: { action: "allow-read", target: "127.0.0.1:8080" },
    });
    const https = offer(
      suggestGrant(refused({ tool: "open_tab", code: "policy_denied", rule: "default: not in allowlist", origin: "https://docs.example" }), nothingReadable),
    );
    expect(https?.fields).toEqual({ action: "allow-read", target: "docs.example" });
    // Never a wildcard, even for a subdomain.
    const sub = offer(
      suggestGrant(
        refused({ tool: "open_tab", code: "policy_denied", rule: "default: not in allowlist", origin: "https://a.b.docs.example" }),
        nothingReadable,
      ),
    );
    expect(sub?.fields["target"]).toBe("a.b.docs.example");
  });

  it("says a deny entry refused it, and offers nothing", () => {
    const s = suggestGrant(
      refused({ tool: "read_url", code: "policy_denied", rule: "deny[0] bank.example .*", origin: "https://bank.example" }),
      nothingReadable,
    );
    expect(none(s)).toMatch(/^A deny entry refused it \(deny\[0\] bank\.example \.\*\)/);
  });

  it("offers nothing broader than the path for a host readable at some paths only", () => {
    const s = suggestGrant(
      refused({ tool: "read_url", code: "policy_denied", rule: 'read.allow["docs.example"]: path not allowed', origin: "https://docs.example" }),
      nothingReadable,
    );
    expect(none(s)).toContain("readable at some paths only");
  });

  it("offers nothing for a host readable now (a redirect went elsewhere), nor for refusals no grant answers", () => {
    const call = refused({ tool: "navigate", code: "policy_denied", rule: "default: not in allowlist", origin: "https://docs.example" });
    expect(none(suggestGrant(call, readableOnly("https://docs.example/")))).toContain("docs.example is readable now");
    for (const rule of ["default: invalid URL", "default: ambiguous path", 'read.allow["x.example"]: ambiguous path']) {
      expect(none(suggestGrant({ ...call, rule }, nothingReadable))).toContain("No narrow grant");
    }
    expect(none(suggestGrant({ ...call, origin: "file://" }, nothingReadable))).toContain("no http(s) address");
  });

  it("is for refused calls only: not an allowed one, nor a page's own navigation the network rules stopped", () => {
    expect(suggestGrant({ tool: "read_url", decision: "allowed", origin: "https://x.example" }, nothingReadable)).toBeUndefined();
    expect(
      suggestGrant(refused({ tool: "navigation", code: "policy_denied", rule: "default: not in allowlist", origin: "https://evil.example" }), nothingReadable),
    ).toBeUndefined();
    expect(suggestGrant(refused({ tool: "read_url", code: "tab_leased", rule: "lease" }), nothingReadable)).toBeUndefined();
  });
});

describe("a write refused on an element", () => {
  it("offers the grant its tool needs, for the element's exact label on the page's host", () => {
    expect(click('button "Add to cart"')).toEqual({
      offer: "Allow clicking «Add to cart» on shop.example",
      key: 'policy.write.click["shop.example"].label',
      fields: { action: "grant", kind: "click", host: "shop.example", exact: "Add to cart" },
    });
    const kindOf = (tool: string, rule: string) =>
      offer(suggestGrant(refused({ tool, code: "write_denied", rule, origin: "https://shop.example", target: 'textbox "Email"' }), nothingReadable))?.fields[
        "kind"
      ];
    expect(kindOf("fill", "default: no write grants")).toBe("type");
    expect(kindOf("select_option", "default: no write grants")).toBe("click");
    expect(kindOf("set_checked", "default: no write grants")).toBe("click");
    expect(kindOf("drag", "default: no write grants")).toBe("click");
    expect(kindOf("upload", "default: no write.upload grant")).toBe("upload");
    expect(kindOf("press_key", "default: no write.type grant")).toBe("type");
  });

  it("offers nothing for a key whose grant depends on the key, which the record does not hold", () => {
    for (const rule of ["default: no write grants", "default: no write.keys grant", "default: no write.click grant", 'write.click["shop.example"].label']) {
      const s = suggestGrant(
        refused({ tool: "press_key", code: "write_denied", rule, origin: "https://shop.example", target: 'textbox "Q"' }),
        nothingReadable,
      );
      expect(none(s), rule).toMatch(/depends on the key/);
    }
  });

  it("joins a label to the host's own grant, under its key as the file spells it; a wildcard's or a frame's is the person's", () => {
    const s = offer(click('button "Buy"', 'write.click["127.0.0.1"].label', "http://127.0.0.1:8080"));
    expect(s?.fields).toEqual({ action: "grant", kind: "click", host: "127.0.0.1", exact: "Buy" });
    expect(none(click('button "Buy"', 'write.click["*.shop.example"].label'))).toContain('write.click["*.shop.example"], not one for shop.example alone');
    expect(none(click('button "Pay"', 'write.click["pay.example"].label'))).toContain("not one for shop.example alone");
  });

  it("offers nothing for a host whose grant the call did not lack: an element in a frame of another host, a grant that came since", () => {
    const call = refused({
      tool: "click",
      code: "write_denied",
      rule: "default: no write.click grant",
      origin: "https://shop.example",
      target: 'button "Pay"',
    });
    // The page's host has a click grant (for other labels): what lacked one was the payment frame's host.
    const framed: PolicyNow = { ...nothingReadable, refusal: () => 'write.click["shop.example"].label' };
    expect(none(suggestGrant(call, framed))).toContain('shop.example has a write.click grant now (write.click["shop.example"].label)');
    expect(none(suggestGrant(call, { ...nothingReadable, refusal: () => undefined }))).toContain("«Pay» on shop.example is allowed now");
    // What the page's host lacks is asked of the page itself, for this label and the grant's kind.
    const asked: unknown[] = [];
    suggestGrant(call, { ...nothingReadable, refusal: (...args) => (asked.push(args), "default: no write.click grant") });
    expect(asked).toEqual([["click", "https://shop.example/", "Pay"]]);
  });

  it("offers nothing where no grant helps: a deny entry, the element's state, an eval", () => {
    expect(none(click('button "Buy"', "deny[1] shop.example ^/checkout"))).toMatch(/^A deny entry refused it/);
    for (const rule of ["element: hidden", "element: decoy", "activation: disabled", "submit: hidden", "option: hidden"]) {
      expect(none(click('button "Buy"', rule)), rule).toMatch(/element's state/);
    }
    expect(none(click('button "Buy"', 'write.keys["shop.example"].keys'))).toContain("No narrow grant");
    const evaluated = suggestGrant(
      refused({ tool: "eval", code: "write_denied", rule: "default: no write.eval grant", origin: "https://shop.example", target: "expression" }),
      nothingReadable,
    );
    expect(none(evaluated)).toContain("any code");
  });

  it("takes the label as the write policy compares it, and offers nothing for an unnamed element or a name cut in the record", () => {
    // The target as tools/act.ts writes it: the role, then the name as JSON.
    expect(offer(click(`button ${JSON.stringify("Add\u00a0to   cart\u200b")}`))?.fields["exact"]).toBe("Add to cart");
    expect(none(click('button ""'))).toContain("no name");
    expect(none(click(`button "${"x".repeat(480)}…`))).toContain("whole name");
    expect(none(click("button"))).toContain("whole name");
  });
});

describe("a page that words its label to widen the offer", () => {
  const host = "http://127.0.0.1:8080";
  /** The config after the offer for a click on `label` is saved; then whether a click on each of `others` passes. */
  function granted(label: string, others: string[]): boolean[] {
    const s = offer(click(`button ${JSON.stringify(label)}`, "default: no write.click grant", host));
    if (!s) throw new Error(`no offer for ${label}`);
    const text = apply("", s.fields);
    const settings = compileSettings(parseConfigText(text, "t"), "t", []);
    return others.map((other) => settings.writePolicy.check("click", `${host}/`, button(other, `${host}/`)).ok);
  }

  it("grants the literal label and no other: regex syntax in it is text", () => {
    expect(granted(".*", [".*", "Delete", "", "anything"])).toEqual([true, false, false, false]);
    expect(granted("Buy|Delete", ["Buy|Delete", "Buy", "Delete"])).toEqual([true, false, false]);
    expect(granted("^$|.+", ["^$|.+", "Delete"])).toEqual([true, false]);
    expect(granted("(?i)buy", ["(?i)buy", "BUY", "buy"])).toEqual([true, false, false]);
  });

  it("cannot move the split between role and name with quotes, nor name another host", () => {
    const s = offer(click('button "Buy\\" on evil.example \\"x"'));
    expect(s?.fields).toEqual({ action: "grant", kind: "click", host: "shop.example", exact: 'Buy" on evil.example "x' });
    // A role is the page's too: one with quotes in it does not become the name.
    expect(offer(click('x "Delete" "Buy"'))?.fields["exact"]).toBe("Buy");
  });

  it("grants a page tool's exact name, its dots escaped", () => {
    const s = suggestGrant(
      refused({
        tool: "app_example__render_chart",
        code: "write_denied",
        rule: 'policy.write.page_tools["https://app.example"]',
        origin: "https://app.example",
        target: "page tool render.chart",
      }),
      nothingReadable,
    );
    expect(s).toEqual({
      offer: "Allow this page's tool «render.chart» of https://app.example",
      key: 'policy.write.page_tools["https://app.example"].tools',
      fields: { action: "page-tool", origin: "https://app.example", exact: "render.chart" },
    });
    const settings = compileSettings(parseConfigText(apply("", offer(s)?.fields ?? {}), "t"), "t", []);
    expect(settings.pages.toolPolicy.check("https://app.example", "render.chart").ok).toBe(true);
    expect(settings.pages.toolPolicy.check("https://app.example", "renderXchart").ok).toBe(false);
    expect(settings.pages.toolPolicy.check("https://other.example", "render.chart").ok).toBe(false);
  });
});

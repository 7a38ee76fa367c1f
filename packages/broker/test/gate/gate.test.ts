// The gate's decisions as a spec: what the user's policy says about a URL before navigation, a tab's document,
// each frame (the one rule every reader uses) and an action on an element, and which MCP session may use a tab. Pure functions, real compiled policies.
import type { ElementFacts } from "@tabrelay/protocol";
import { describe, expect, it } from "vitest";
import {
  gateNewTab,
  BLANK,
  gateFrame,
  gateFrames,
  gateLease,
  gateNavigation,
  gateStopped,
  gateTab,
  gateWrite,
  leaseHolds,
  type LeaseFacts,
} from "../../src/gate/decisions.js";
import { compileReadPolicy } from "../../src/policy/readPolicy.js";
import { loadRanking } from "../../src/config/ranking.js";
import { compileWritePolicy } from "../../src/policy/writePolicy.js";

// Reserved names only: .example / .test hosts are in no ranking.
const read = compileReadPolicy(
  {
    deny: [{ host: "shop.example", path: "^/account" }],
    read: { enabled: true, top_sites: 0, allow: { "shop.example": [".*"], "docs.example": ["^/public/"] } },
  },
  loadRanking(),
);
const write = compileWritePolicy({ deny: [], write: { click: { "shop.example": { label: "^Add to cart$" } } } });

function facts(overrides: Partial<ElementFacts> = {}): ElementFacts {
  return {
    ref: "e1",
    role: "button",
    name: "Add to cart",
    visibleText: "Add to cart",
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: "https://shop.example/cart",
    activates: [],
    ...overrides,
  };
}

describe("gateNavigation: before the browser goes anywhere", () => {
  it("allows a URL the policy allows and hands back the canonical form the browser is sent to", () => {
    expect(gateNavigation(read, "https://SHOP.example/%7Ecart/./x")).toEqual({ ok: true, url: "https://shop.example/~cart/x" });
  });

  it("refuses a host outside the allowlist, and a denied path in any encoding, with policy_denied and the rule", () => {
    const outside = gateNavigation(read, "https://evil.test/");
    expect(outside).toMatchObject({ ok: false, code: "policy_denied" });
    const encoded = gateNavigation(read, "https://shop.example/%61ccount");
    expect(encoded).toMatchObject({ ok: false, code: "policy_denied" });
    expect(encoded.ok ? "" : encoded.rule).toMatch(/shop\.example/);
  });

  it("refuses what is not an http(s) URL", () => {
    for (const url of ["javascript:alert(1)", "file:///etc/passwd", "not a url"]) expect(gateNavigation(read, url).ok, url).toBe(false);
  });
});

describe("gateTab: the document a tab shows", () => {
  it("judges a document by its URL", () => {
    expect(gateTab(read, "https://shop.example/cart", undefined).ok).toBe(true);
    expect(gateTab(read, "https://docs.example/private/x", undefined).ok).toBe(false);
  });

  it("refuses a blank tab the broker reset after catching it off-policy, for what it was caught doing", () => {
    const caught = { url: "https://evil.test/?q=secret", rule: "default: not in read.allow", message: "evil.test is not allowed", blocked: true };
    expect(gateTab(read, BLANK, caught)).toEqual({ ok: false, code: "policy_denied", rule: caught.rule, message: caught.message });
    expect(gateTab(read, BLANK, undefined).ok).toBe(false); // about:blank is not a readable site either
  });
});

describe("gateFrame: one rule for every frame, whoever reads it", () => {
  const top = "https://shop.example/cart";

  it("judges a frame with a URL of its own by that URL", () => {
    expect(gateFrame(read, { url: "https://docs.example/public/a", origin: "https://docs.example" }, top)).toEqual({
      ok: true,
      url: "https://docs.example/public/a",
    });
    expect(gateFrame(read, { url: "https://evil.test/", origin: "https://evil.test" }, top)).toMatchObject({ ok: false, why: "outside the read policy" });
  });

  it("judges about:srcdoc, about:blank and data: frames by the document holding them, only when they report its origin", () => {
    expect(gateFrame(read, { url: "about:srcdoc", origin: "https://shop.example" }, top)).toEqual({ ok: true, url: top });
    expect(gateFrame(read, { url: "about:blank", origin: "https://shop.example" }, top)).toEqual({ ok: true, url: top });
    // A sandboxed srcdoc or a data: document has an opaque origin: it is not the holder's document.
    expect(gateFrame(read, { url: "about:srcdoc", origin: "null" }, top)).toMatchObject({ ok: false, why: "not what it seems" });
    expect(gateFrame(read, { url: "data:text/html,<p>hi", origin: "null" }, top)).toMatchObject({ ok: false, why: "not what it seems" });
    // A driver that cannot say the frame's origin gets no benefit of the doubt.
    expect(gateFrame(read, { url: "about:srcdoc" }, top)).toMatchObject({ ok: false, why: "not what it seems" });
    // Held by a refused document: refused with it.
    expect(gateFrame(read, { url: "about:srcdoc", origin: "https://evil.test" }, "https://evil.test/")).toMatchObject({
      ok: false,
      why: "outside the read policy",
    });
  });

  it("holds nothing from a browser error page", () => {
    expect(gateFrame(read, { url: "chrome-error://chromewebdata/", origin: "null" }, top)).toMatchObject({ ok: false, why: "error page" });
  });

  it("judges a tree parents first: a srcdoc frame inside a refused frame is refused, inside an allowed one allowed", () => {
    const verdicts = gateFrames(read, top, [
      { url: "https://evil.test/ad", origin: "https://evil.test", parent: -1 },
      { url: "about:srcdoc", origin: "https://evil.test", parent: 0 },
      { url: "https://docs.example/public/doc", origin: "https://docs.example", parent: -1 },
      { url: "about:srcdoc", origin: "https://docs.example", parent: 2 },
      { url: "chrome-error://chromewebdata/", origin: "null", parent: -1 },
      { url: "about:blank", origin: "null", parent: 4 },
    ]);
    expect(verdicts.map((v) => v.ok)).toEqual([false, false, true, true, false, false]);
    expect(verdicts[3]).toEqual({ ok: true, url: "https://docs.example/public/doc" });
  });
});

describe("gateWrite: an action on an element", () => {
  it("allows a granted label on the granted host", () => {
    expect(gateWrite(read, write, "click", "https://shop.example/cart", facts()).ok).toBe(true);
  });

  it("refuses with write_denied what the grant does not cover", () => {
    expect(gateWrite(read, write, "click", "https://shop.example/cart", facts({ name: "Delete account", visibleText: "Delete account" }))).toMatchObject({
      ok: false,
      code: "write_denied",
    });
    expect(gateWrite(read, write, "fill", "https://shop.example/cart", facts({ role: "textbox", tag: "input", editable: true }))).toMatchObject({
      ok: false,
      code: "write_denied",
    });
  });

  it("refuses with policy_denied an element whose frame may not be read, whatever the grant, naming the frame", () => {
    const verdict = gateWrite(read, write, "click", "https://shop.example/cart", facts({ frameUrl: "https://evil.test/widget" }));
    expect(verdict).toMatchObject({ ok: false, code: "policy_denied" });
    expect(verdict.ok ? "" : verdict.message).toContain("inside a frame at https://evil.test/widget");
  });
});

describe("gateStopped: a request the network rules stopped", () => {
  it("is tabrelay's refusal only when the read policy refuses the URL", () => {
    expect(gateStopped(read, "https://evil.test/?q=1")).toMatchObject({ ok: false, code: "policy_denied" });
    // Stopped by something else (another extension's rules): not tabrelay's to report.
    expect(gateStopped(read, "https://shop.example/cart")).toBeUndefined();
  });
});

describe("gateLease: which MCP session may use a tab", () => {
  const IDLE = 30 * 60_000;
  const since = Date.parse("2026-01-02T03:04:05.000Z");
  const alice = { session: "s-alice", client: "alice-agent" };
  const bob = { session: "s-bob", client: "bob-agent" };
  const held = (overrides: Partial<LeaseFacts> = {}): LeaseFacts => ({ ...alice, since, lastUsed: since, ...overrides });

  it("lets the session that holds the tab use it, without taking it again", () => {
    expect(gateLease(held(), alice, 7, since + 1000, IDLE)).toEqual({ ok: true, claim: false });
  });

  it("refuses another session with tab_leased, naming the holding client, since when, and what to do", () => {
    const verdict = gateLease(held(), bob, 7, since + 1000, IDLE);
    expect(verdict).toMatchObject({ ok: false, code: "tab_leased", rule: "lease" });
    const message = verdict.ok ? "" : verdict.message;
    expect(message).toContain('"alice-agent"');
    expect(message).toContain("2026-01-02T03:04:05.000Z");
    expect(message).toMatch(/list_tabs/);
    expect(message).toMatch(/open_tab/);
    expect(message).toContain("30 minutes");
  });

  it("refuses another session of the same client too: a lease is per session, not per client name", () => {
    const twin = { session: "s-alice-2", client: "alice-agent" };
    const verdict = gateLease(held(), twin, 7, since + 1000, IDLE);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? "" : verdict.message).toContain("another session of the same client");
  });

  it("gives a free tab (never leased) to the first session that uses it", () => {
    expect(gateLease(undefined, bob, 7, since, IDLE)).toEqual({ ok: true, claim: true });
  });

  it("frees a tab its session left unused for the idle time, and the next session takes it", () => {
    expect(gateLease(held(), bob, 7, since + IDLE - 1, IDLE).ok).toBe(false);
    expect(gateLease(held(), bob, 7, since + IDLE, IDLE)).toEqual({ ok: true, claim: true });
    expect(leaseHolds(held(), since + IDLE, IDLE)).toBe(false);
  });

  it("counts idle time from the last use, not from when the lease began", () => {
    expect(gateLease(held({ lastUsed: since + IDLE }), bob, 7, since + IDLE + 1000, IDLE).ok).toBe(false);
  });

  it("has nobody to refuse for a caller that is no MCP session", () => {
    expect(gateLease(held(), undefined, 7, since, IDLE)).toEqual({ ok: true, claim: false });
  });
});

describe("gateNewTab: whose a tab that appeared is", () => {
  const facts = { openedByAgent: false, openerIsAgent: false, agentBrowser: false };
  it("is the user's unless the agent, one of its tabs or the browser itself makes it the agent's", () => {
    expect(gateNewTab(facts)).toBe(false);
    expect(gateNewTab({ ...facts, openedByAgent: true })).toBe(true);
    expect(gateNewTab({ ...facts, openerIsAgent: true })).toBe(true);
    expect(gateNewTab({ ...facts, agentBrowser: true })).toBe(true);
  });
});

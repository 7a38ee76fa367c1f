// The words a ::before / ::after draws, as the write gate reads them (src/rendered.ts contentStrings): from Chrome's
// computed values (attr() already resolved) and Firefox's (attr() as written), including values a page builds to
// make the gate read less than a person sees.
import { describe, expect, it } from "vitest";
import { contentStrings } from "../src/rendered.js";

/** An element as attr() reads it: its attributes only. */
const el = (attributes: Record<string, string>) => ({ getAttribute: (name: string) => attributes[name] ?? null }) as unknown as Element;
const UNREADABLE = "[generated text that could not be read]";

describe("generated content's words", () => {
  it("reads strings, escapes and Chrome's resolved attr(); skips counters' numbers, images and the alt text", () => {
    expect(contentStrings('"Add " "to cart"')).toBe("Add to cart");
    expect(contentStrings('"\\2605  Buy"')).toBe("★ Buy");
    expect(contentStrings('counter(c) ". " url("x.png") "Pay" / "alt words"')).toBe(". Pay");
    expect(contentStrings("none")).toBe("");
  });

  it("resolves Firefox's attr() against the element: plain, typed, escaped names, and the fallback", () => {
    expect(contentStrings('" " attr(data-more)', el({ "data-more": "and delete account" }))).toBe(" and delete account");
    expect(contentStrings("attr(data-x string)", el({ "data-x": "Delete" }))).toBe("Delete");
    expect(contentStrings("attr(data-a\\.b)", el({ "data-a.b": "Delete account" }))).toBe("Delete account");
    expect(contentStrings("attr(\\31 x)", el({ "1x": "Delete account" }))).toBe("Delete account");
    expect(contentStrings('attr(data-gone, "Delete account")', el({}))).toBe("Delete account");
    expect(contentStrings("attr(data-gone, attr(data-other))", el({ "data-other": "Delete account" }))).toBe("Delete account");
  });

  it("a bracket inside a quoted argument hides nothing after it", () => {
    expect(contentStrings('url("x(.png") "Delete account"')).toBe("Delete account");
    expect(contentStrings('counter(c, "(") "Delete account"')).toBe("Delete account");
  });

  it("says what it cannot read instead of reading less: an unbalanced function, a namespaced attribute, attr() with no element", () => {
    expect(contentStrings('"Add to cart" counter(c "Delete account"')).toContain(UNREADABLE);
    expect(contentStrings("attr(ns|title)", el({ title: "Add to cart" }))).toContain(UNREADABLE);
    expect(contentStrings("attr(*|title)", el({ title: "Add to cart" }))).toContain(UNREADABLE);
    expect(contentStrings("attr(data-x)")).toContain(UNREADABLE);
  });

  it("reads the separator counters() draws between the numbers", () => {
    expect(contentStrings('counters(c, " Delete account ")')).toBe(" Delete account ");
  });
});

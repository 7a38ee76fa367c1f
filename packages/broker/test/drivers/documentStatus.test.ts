// The HTTP status of a tab's document, matched once for both drivers from their events (drivers/documentStatus.ts).
import type { BridgeEvent } from "@tabrelay/protocol";
import { describe, expect, it, vi } from "vitest";
import { DocumentStatus } from "../../src/drivers/documentStatus.js";

const response = (url: string, status: number): BridgeEvent => ({ type: "event", event: "tab.response", params: { tabId: 1, url, status } });
const committed = (url: string): BridgeEvent => ({ type: "event", event: "tab.committed", params: { tabId: 1, url } });

describe("document status", () => {
  it("is the status of the response that brought the document, fragments aside", () => {
    const book = new DocumentStatus();
    book.observe(response("http://x.test/missing", 404));
    expect(book.of(1, "http://x.test/missing")).toBeUndefined(); // not committed yet
    book.observe(committed("http://x.test/missing#top"));
    expect(book.of(1, "http://x.test/missing")).toBe(404);
    expect(book.of(1, "http://x.test/missing#other")).toBe(404);
    expect(book.of(1, "http://x.test/elsewhere")).toBeUndefined();
    expect(book.of(2, "http://x.test/missing")).toBeUndefined();
  });

  it("is dropped when a document commits without a response of its own (the back/forward cache, a service worker)", () => {
    const book = new DocumentStatus();
    book.observe(response("http://x.test/a", 500));
    book.observe(committed("http://x.test/a"));
    book.observe(committed("http://x.test/b"));
    expect(book.of(1, "http://x.test/a")).toBeUndefined();
    expect(book.of(1, "http://x.test/b")).toBeUndefined();
    book.observe(response("http://x.test/c", 404));
    book.observe(committed("http://x.test/d")); // a response for another document than the one that committed
    expect(book.of(1, "http://x.test/d")).toBeUndefined();
  });

  it("takes a response told just after its document committed (Firefox's order), and none for another URL or long after", () => {
    const book = new DocumentStatus();
    book.observe(committed("http://x.test/missing"));
    book.observe(response("http://x.test/missing", 404));
    expect(book.of(1, "http://x.test/missing")).toBe(404);
    book.observe(committed("http://x.test/other"));
    book.observe(response("http://x.test/third", 500));
    expect(book.of(1, "http://x.test/other")).toBeUndefined();
    // The same response told before the next commit of that URL (a reload) is that document's, as before.
    book.observe(committed("http://x.test/third"));
    expect(book.of(1, "http://x.test/third")).toBe(500);
    // A reload of a page whose status came late: its own response counts, not the one before.
    book.observe(committed("http://x.test/reloaded"));
    book.observe(response("http://x.test/reloaded", 503));
    expect(book.of(1, "http://x.test/reloaded")).toBe(503);
    book.observe(response("http://x.test/reloaded", 200));
    book.observe(committed("http://x.test/reloaded"));
    expect(book.of(1, "http://x.test/reloaded")).toBe(200);
    // ... and one from the back/forward cache, with no response, has none.
    book.observe(committed("http://x.test/reloaded"));
    expect(book.of(1, "http://x.test/reloaded")).toBeUndefined();
    vi.useFakeTimers();
    try {
      book.observe(committed("http://x.test/late"));
      vi.advanceTimersByTime(5000);
      book.observe(response("http://x.test/late", 404));
      expect(book.of(1, "http://x.test/late")).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps the next page's response across a blank document committing in between, and forgets a closed tab", () => {
    const book = new DocumentStatus();
    book.observe(response("http://x.test/next", 410));
    book.observe(committed("about:blank"));
    book.observe(committed("http://x.test/next"));
    expect(book.of(1, "http://x.test/next")).toBe(410);
    book.observe({ type: "event", event: "tab.removed", params: { tabId: 1 } });
    expect(book.of(1, "http://x.test/next")).toBeUndefined();
  });
});

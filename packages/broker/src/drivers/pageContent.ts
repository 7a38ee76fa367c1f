// page.content as the broker composes it, once for both drivers, from the drivers' own reads of one document:
// - a page that keeps replacing its document (a refresh loop, a script reloading) is read again from the new one,
//   20 rounds at most, 250 ms apart at most (~4 s): a driver answers stale_ref when the document it read went away,
//   and a document the parser has not reached the body of yet (the new one, just committed) is read again too;
// - its HTTP status, from the driver's events (documentStatus.ts).
import type { PageContent, ParamsOf, Result } from "@tabrelay/protocol";
import type { Composer, RawCall } from "./composed.js";
import type { CallOptions } from "./driver.js";

/** Reads of a document that keeps going away, at most. */
const READ_ROUNDS = 20;
/** Reads of a document without a body yet, at most: after that it is taken as it is (an SVG or XML document). */
const BODY_ROUNDS = 10;

export async function readPage(params: ParamsOf<"page.content">, options: CallOptions, raw: RawCall, driver: Composer): Promise<Result<PageContent>> {
  const signal = options.signal ? { signal: options.signal } : {};
  for (let attempt = 1; ; attempt++) {
    const read = await raw("page.content", params, signal);
    if (read.ok && (read.value.html.includes("<body") || attempt >= BODY_ROUNDS)) {
      const { status: _driverSaid, ...page } = read.value;
      const status = driver.status.of(params.tabId, page.url);
      return { ok: true, value: { ...page, ...(status !== undefined ? { status } : {}) } };
    }
    if (!read.ok && read.error.code !== "stale_ref") return read;
    if (attempt >= READ_ROUNDS) {
      return { ok: false, error: { code: "navigation_failed", message: "the page kept replacing its document while it was read (it reloads or redirects itself); try again, or use snapshot" } };
    }
    // A busy machine can lose several rounds to a page that reloads at once.
    await new Promise((resolve) => setTimeout(resolve, Math.min(250, 50 * attempt)));
  }
}

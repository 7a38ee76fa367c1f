// page.content as the broker composes it, once for both drivers, from the drivers' own reads of one document:
// - a page that keeps replacing its document (a refresh loop, a script reloading) is read again from the new one, for
//   READ_WINDOW_MS at most: a driver answers stale_ref when the document it read went away. A command that reaches
//   the browser while the tab navigates runs in the next document as it commits, before it is parsed, so in a refresh
//   loop most rounds miss: short, jittered rounds over a window of time, not a count, hold up on a busy machine. A
//   document the parser is still on is read again until it is done, or has not changed for a round (a response that
//   stalls: read as it stands), or has been read with a body for LOADING_SETTLE_MS (a page that streams for long);
// - its frames: the driver lists them with the top document (subframes); the shallowest 2 x MAX_CONTENT_FRAMES are
//   read at once, each within FRAME_READ_MS (a frame that went away, cannot be scripted or never answers is left
//   out without costing the others), then kept parents first, shallow before deep, at most MAX_CONTENT_FRAMES and
//   FRAME_HTML_BUDGET characters in all; a frame whose parent was left out is left out too (its origin could not
//   be told);
// - its HTTP status, from the driver's events (documentStatus.ts).
import { FRAME_HTML_BUDGET, type FrameContent, MAX_CONTENT_FRAMES, type PageContent, type ParamsOf, type Result } from "@tabrelay/protocol";
import type { Composer, RawCall } from "./composer.js";
import type { CallOptions } from "./driver.js";

/** How long a document that keeps going away (or is not parsed yet) is read again; then it is taken as it stands. */
const READ_WINDOW_MS = 8000;
/** How long a document still being parsed, with a body already, is read again before it is taken as it stands. */
const LOADING_SETTLE_MS = 1000;
/** How long one frame's document may take to be read. */
const FRAME_READ_MS = 3000;

export async function readPage(params: ParamsOf<"page.content">, options: CallOptions, raw: RawCall, driver: Composer): Promise<Result<PageContent>> {
  const signal = options.signal ? { signal: options.signal } : {};
  const { tabId } = params;
  const top = await readTop(tabId, signal, raw);
  if (!top.ok) return top;
  const { status: _driverSaid, subframes = [], frames: sent = [], origin: _origin, loading: _loading, ...page } = top.value;
  const listed = byDepth(subframes.map((f) => ({ key: f.frameId, parent: f.parentFrameId === 0 ? undefined : f.parentFrameId }))).slice(
    0,
    MAX_CONTENT_FRAMES * 2,
  );
  const read = await Promise.all(
    listed.map(async (f) => {
      const doc = await raw("page.content", { tabId, frameId: f.key }, { ...signal, timeoutMs: FRAME_READ_MS });
      return { ...f, doc: doc.ok ? { ...doc.value, origin: doc.value.origin ?? "null" } : undefined };
    }),
  );
  // Frames a driver read itself name their parent by index.
  const frames = fit(sent.length ? byDepth(sent.map((doc, i) => ({ key: i, parent: doc.parent === -1 ? undefined : doc.parent, doc }))) : read);
  const status = driver.status.of(tabId, page.url);
  return { ok: true, value: { ...page, ...(status !== undefined ? { status } : {}), ...(frames.length ? { frames } : {}) } };
}

async function readTop(tabId: number, signal: CallOptions, raw: RawCall): Promise<Result<PageContent>> {
  const start = Date.now();
  /** The last read with a body while the parser was still on it, and when the first such read came. */
  let partial: { read: Result<PageContent> & { ok: true }; since: number } | undefined;
  /** The last read with no body yet. */
  let bodiless: Result<PageContent> | undefined;
  for (let attempt = 1; ; attempt++) {
    const read = await raw("page.content", { tabId }, signal);
    if (!read.ok && read.error.code !== "stale_ref") return read;
    if (read.ok) {
      const { html, loading } = read.value;
      const body = html.includes("<body");
      if (!loading && (body || html !== "")) return read;
      if (body) {
        if (partial?.read.value.html === html || (partial && Date.now() - partial.since >= LOADING_SETTLE_MS)) return read;
        partial = { read, since: partial?.since ?? Date.now() };
      } else bodiless = read;
    }
    if (Date.now() - start >= READ_WINDOW_MS || signal.signal?.aborted) {
      return (
        partial?.read ??
        bodiless ?? {
          ok: false,
          error: {
            code: "navigation_failed",
            message: "the page kept replacing its document while it was read (it reloads or redirects itself); try again, or use snapshot",
          },
        }
      );
    }
    // Jittered: a page that reloads on a beat is not missed on the same beat every round.
    await new Promise((resolve) => setTimeout(resolve, Math.min(200, 10 * attempt) * (0.5 + Math.random())));
  }
}

interface Listed {
  key: number;
  /** The parent frame's key; undefined for a frame of the top document. */
  parent: number | undefined;
}

/** Shallow frames before deep ones (a stable sort: the driver's order within one depth). */
function byDepth<F extends Listed>(frames: F[]): F[] {
  const parentOf = new Map(frames.map((f) => [f.key, f.parent]));
  const depth = (f: Listed): number => {
    let d = 1;
    for (let p = f.parent; p !== undefined && d < 64; p = parentOf.get(p)) d++;
    return d;
  };
  return frames
    .map((f) => ({ f, d: depth(f) }))
    .sort((a, b) => a.d - b.d)
    .map(({ f }) => f);
}

type Read = Listed & { doc: Omit<FrameContent, "parent"> | undefined };

/** The frames kept, in order, each naming its parent by index (see PageContent.frames). */
function fit(candidates: Read[]): FrameContent[] {
  const frames: FrameContent[] = [];
  const indexOf = new Map<number, number>();
  let left = FRAME_HTML_BUDGET;
  for (const { key, parent, doc } of candidates) {
    if (frames.length >= MAX_CONTENT_FRAMES) break;
    const parentIndex = parent === undefined ? -1 : indexOf.get(parent);
    if (!doc || parentIndex === undefined || doc.html.length > left) continue;
    left -= doc.html.length;
    indexOf.set(key, frames.length);
    frames.push({ url: doc.url, origin: doc.origin, title: doc.title, html: doc.html, parent: parentIndex, ...(doc.capped ? { capped: doc.capped } : {}) });
  }
  return frames;
}

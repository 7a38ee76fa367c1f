// Bridge methods the broker composes from a driver's own calls, once for both drivers: what a method does beyond
// the browser's mechanics lives here, and a driver only answers the primitive calls (driver.ts).
// - tabs.open: a tab whose open failed is closed again (the agent never learns its id).
// - page.wait: `urlIncludes` is watched here (tabs.get); the browser waits in the page for text, its absence or a
//   selector, and the wait starts again in the new document when a navigation destroys the old one (stale_ref).
// - page.snapshot and page.query are taken once more when the page navigated under them (stale_ref).
// - refs: the agent's refs name their frame ("f12e3": e3 of frame 12, "e3": of the top document); a browser mints
//   and takes refs of one document, with the frame beside them (page.snapshot, page.query, page.inspect, page.act,
//   page.rect).
// - tabs.list: from the broker's view of the tabs (tabView.ts) when the browser keeps it current.
// - page.content: pageContent.ts, with the document's HTTP status from documentStatus.ts (tabs.close forgets it).
import type { BridgeMethod, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import type { Composer, RawCall } from "./composer.js";
import type { CallOptions } from "./driver.js";
import { readPage } from "./pageContent.js";

type Composed = { [M in BridgeMethod]?: (params: ParamsOf<M>, options: CallOptions, raw: RawCall, driver: Composer) => Promise<Result<ResultOf<M>>> };

const COMPOSED: Composed = {
  "tabs.open": async (params, options, raw, driver) => {
    const opened = await raw("tabs.open", params, options);
    if (opened.ok || opened.error.tabId === undefined) return opened;
    const { tabId, ...error } = opened.error;
    await raw("tabs.close", { tabId });
    driver.status.forget(tabId);
    return { ok: false, error };
  },

  "page.snapshot": async (params, options, raw) => {
    let snap = await raw("page.snapshot", params, options);
    // The page navigated between the browser finding its frames and running the script: once more, on the new one.
    if (!snap.ok && snap.error.code === "stale_ref") snap = await raw("page.snapshot", params, options);
    if (!snap.ok) return snap;
    // The first field of each line is the ref (FrameSnapshot.nodes).
    const frames = snap.value.frames.map((f) => (f.frameId === 0 ? f : { ...f, nodes: f.nodes.replace(/^(e\d+)\t/gm, `f${f.frameId}$1\t`) }));
    return { ok: true, value: { frames } };
  },

  "page.query": async (params, options, raw) => {
    let found = await raw("page.query", params, options);
    // As page.snapshot: the page navigated between the browser finding its frames and running the script.
    if (!found.ok && found.error.code === "stale_ref") found = await raw("page.query", params, options);
    if (!found.ok) return found;
    const frames = found.value.frames.map((f) =>
      f.frameId === 0 ? f : { ...f, matches: f.matches.map((m) => (m.ref === undefined ? m : { ...m, ref: `f${f.frameId}${m.ref}` })) },
    );
    return { ok: true, value: { frames } };
  },

  "page.inspect": async (params, options, raw) => {
    const facts = await raw("page.inspect", { ...params, ...splitRef(params.ref) }, options);
    return facts.ok ? { ok: true, value: { ...facts.value, ref: params.ref } } : facts;
  },

  "page.act": async (params, options, raw) => {
    const acted = await raw("page.act", { ...params, ...splitRef(params.ref) }, options);
    return acted.ok && acted.value.facts ? { ok: true, value: { ...acted.value, facts: { ...acted.value.facts, ref: params.ref } } } : acted;
  },

  "page.rect": (params, options, raw) => raw("page.rect", { ...params, ...splitRef(params.ref) }, options),

  // A tab the broker closes is not announced by tab.removed: its document's status is dropped here.
  "tabs.close": async (params, options, raw, driver) => {
    const closed = await raw("tabs.close", params, options);
    if (closed.ok) driver.status.forget(params.tabId);
    return closed;
  },

  "page.content": readPage,

  // Answered from the broker's view of the tabs when the browser keeps it current (tabView.ts): no round trip.
  "tabs.list": async (params, options, raw, driver) => {
    const view = driver.tabView.now();
    return view ? { ok: true, value: view } : raw("tabs.list", params, options);
  },

  "page.wait": async ({ urlIncludes, ...params }, { signal }, raw) => {
    const started = Date.now();
    const deadline = started + params.timeoutMs;
    const options = signal ? { signal } : {};
    if (urlIncludes !== undefined) {
      for (;;) {
        const got = await raw("tabs.get", { tabId: params.tabId }, options);
        if (!got.ok) return got;
        const url = got.value.tab.url;
        if (url.includes(urlIncludes)) return { ok: true, value: { matched: `URL is ${url}`, elapsedMs: Date.now() - started } };
        const left = deadline - Date.now();
        if (left <= 0)
          return {
            ok: false,
            error: {
              code: "wait_timeout",
              message: `the URL did not come to include ${JSON.stringify(urlIncludes)} within ${params.timeoutMs} ms (it is ${url})`,
            },
          };
        await sleep(Math.min(left, URL_POLL_MS));
      }
    }
    for (;;) {
      const timeoutMs = Math.max(0, deadline - Date.now());
      const waited = await raw("page.wait", { ...params, timeoutMs }, { ...options, timeoutMs: timeoutMs + WAIT_ANSWER_MS });
      if (waited.ok) return { ok: true, value: { matched: waited.value.matched, elapsedMs: Date.now() - started } };
      if (waited.error.code !== "stale_ref" || Date.now() > deadline) return waited;
      await sleep(100);
    }
  },
};

/** An agent's ref as a browser takes it: the page's own ref, and its frame unless it is the top document's. */
function splitRef(ref: string): { ref: string; frameId?: number } {
  const match = /^f(\d+)(e\d+)$/.exec(ref);
  return match?.[2] ? { ref: match[2], frameId: Number(match[1]) } : { ref };
}

/** Calls whose answers tell the broker's view of the tabs something (tabView.ts note). */
const TAB_CALLS = new Set<BridgeMethod>(["tabs.open", "tabs.get", "tabs.navigate", "tabs.history", "tabs.activate", "tabs.close"]);

/** How often page.wait reads the tab's URL for `urlIncludes`. */
const URL_POLL_MS = 50;
/** How long past its own timeout an in-page wait may take to answer (a busy page, a slow link). */
const WAIT_ANSWER_MS = 10_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A driver's call(): a composed method runs here, as one call in flight of its own (its timeout and signal cover
 * every call it makes), over the driver's `raw` calls; any other method is the driver's raw call.
 */
export function serve<M extends BridgeMethod>(
  driver: Composer,
  method: M,
  params: ParamsOf<M>,
  options: CallOptions & { timeoutMs: number },
  raw: RawCall,
): Promise<Result<ResultOf<M>>> {
  const composed: Composed[M] = COMPOSED[method];
  // A tab being closed is gone from the view as the close is sent (a read's tab closes behind its answer).
  if (method === "tabs.close") driver.tabView.closing(params);
  const answered = composed ? driver.calls.run(method, options, () => composed(params, options, raw, driver)) : raw(method, params, options);
  if (!TAB_CALLS.has(method)) return answered;
  return answered.then((result) => {
    driver.tabView.note(method, params, result);
    return result;
  });
}

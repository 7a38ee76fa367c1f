// Page reading in the CDP driver: the frames of a tab and their sessions (out-of-process iframes
// included), snapshots across frames with frame-qualified refs, where a ref lives, frame offsets, and
// page.content's reads of one document (the top one, or a frame's).
import { CONTENT_MAX_CHARS, FRAME_HTML_BUDGET, type FrameQuery, type FrameSnapshot, type PageContent, type QueryParams } from "@tabrelay/protocol";
import { type CdpCore, DriverError, type FrameRoute, GONE_CONTEXT, stableId, type Tab } from "./cdpCore.js";
import { inpageQuery, inpageSnapshot } from "../answers.js";
import { callInpage, checkScriptable, documentValue, isolatedWorld, parseAnswer, pointValue, readDocument, remoteValue, revealClosedRoots } from "./inpage.js";

export const OWNER_OFFSET = `function () {
  const r = this.getBoundingClientRect();
  const s = getComputedStyle(this);
  return { x: r.left + this.clientLeft + (parseFloat(s.paddingLeft) || 0), y: r.top + this.clientTop + (parseFloat(s.paddingTop) || 0) };
}`;

/** A stateless host's frame keys: up to 8 digits in a ref (f12345678e3), ample against collisions among a tab's frames. */
const FRAME_KEY_MAX = 0xffffff;

/**
 * The key a frame's refs carry (0: the top document). Counted up per tab; for a stateless host derived from the
 * frame's id, so a snapshot's frame refs name the same frame from the next connection (routeOf).
 */
export function frameKey(core: CdpCore, tab: Tab, frameId: string): number {
  if (frameId === tab.mainFrameId) return 0;
  let key = tab.frameKeys.get(frameId);
  if (key === undefined) {
    if (core.options.stateless) {
      const taken = new Set(tab.frameKeys.values());
      key = stableId(frameId, FRAME_KEY_MAX);
      while (taken.has(key)) key = (key % FRAME_KEY_MAX) + 1;
    } else {
      key = tab.nextFrameKey++;
    }
    tab.frameKeys.set(frameId, key);
  }
  return key;
}

export async function snapshot(
  core: CdpCore,
  tab: Tab & { sessionId: string },
  args: { revision: string; interactiveOnly: boolean; viewportOnly: boolean },
): Promise<FrameSnapshot[]> {
  const read = await inEveryFrame(core, tab, async (route) =>
    parseAnswer(inpageSnapshot, await callInpage(core, route.sessionId, route.frameId, "snapshot", args, true), "snapshot"),
  );
  return read.map(({ value, frameId, parentFrameId }) => ({
    frameId,
    parentFrameId,
    url: value.url,
    ...(value.origin !== undefined ? { origin: value.origin } : {}),
    title: value.title,
    nodes: value.nodes,
    ...(value.elapsedMs !== undefined ? { elapsedMs: value.elapsedMs } : {}),
    ...(value.capped ? { capped: true } : {}),
  }));
}

/** A query in every frame, as a snapshot runs: its refs are acted on like a snapshot's. An invalid selector fails in the top document first. */
export async function query(core: CdpCore, tab: Tab & { sessionId: string }, args: Omit<QueryParams, "tabId">): Promise<FrameQuery[]> {
  const read = await inEveryFrame(core, tab, async (route) =>
    parseAnswer(inpageQuery, await callInpage(core, route.sessionId, route.frameId, "query", args, true), "query"),
  );
  return read.map(({ value, frameId, parentFrameId }) => ({ ...value, frameId, parentFrameId }));
}

/**
 * One in-page call in every frame of the tab at once, closed roots revealed first (best effort: a page whose hosts
 * cannot be described is still read, without their roots). The top document's failure is the call's; a subframe
 * that went away or cannot be scripted is left out, as the extension does. The frames' routes are recorded for the
 * refs the answers carry (routeOf).
 */
async function inEveryFrame<T>(
  core: CdpCore,
  tab: Tab & { sessionId: string },
  ask: (route: FrameRoute) => Promise<T>,
): Promise<{ value: T; frameId: number; parentFrameId: number }[]> {
  const frames = await core.frames(tab);
  const results = await Promise.all(
    frames.map(async (route) => {
      try {
        await revealClosedRoots(core, route.sessionId, route.frameId).catch(() => undefined);
        return { route, value: await ask(route) };
      } catch (error) {
        if (route.frameId === tab.mainFrameId) throw error;
        return undefined;
      }
    }),
  );
  tab.routes.clear();
  tab.routesByFrame.clear();
  return results.flatMap((result) => {
    if (!result) return [];
    const { route, value } = result;
    tab.routes.set(frameKey(core, tab, route.frameId), route);
    tab.routesByFrame.set(route.frameId, route);
    return [{ value, frameId: frameKey(core, tab, route.frameId), parentFrameId: route.parentId === undefined ? -1 : frameKey(core, tab, route.parentId) }];
  });
}

/** Where a ref lives: frame `key` of the last snapshot (0: the top document). */
export async function routeOf(core: CdpCore, tab: Tab & { sessionId: string }, key: number, ref: string): Promise<FrameRoute> {
  if (key === 0) return { frameId: tab.mainFrameId, parentId: undefined, sessionId: tab.sessionId };
  // A stateless host's ref may come from a snapshot another connection took: its frame is found by its key.
  if (!tab.routes.has(key) && core.options.stateless) {
    for (const route of await core.frames(tab)) {
      tab.routes.set(frameKey(core, tab, route.frameId), route);
      tab.routesByFrame.set(route.frameId, route);
    }
  }
  const route = tab.routes.get(key);
  if (!route) throw new DriverError("stale_ref", `ref f${key}${ref} belongs to a frame that navigated or went away since the snapshot; call snapshot again`);
  return { ...route, sessionId: sessionFor(core, tab, route) };
}

/** A frame's current session: an iframe that moved to another process since the snapshot has a new one. */
export function sessionFor(core: CdpCore, tab: Tab & { sessionId: string }, route: FrameRoute): string {
  const oopif = tab.oopifs.get(route.frameId);
  if (oopif) return oopif;
  if (route.sessionId === tab.sessionId || core.children.has(route.sessionId)) return route.sessionId;
  return tab.sessionId;
}

/** Offset of a subframe's viewport within the top frame's, summed over its ancestor frames. */
export async function frameOffset(core: CdpCore, tab: Tab & { sessionId: string }, route: FrameRoute): Promise<{ x: number; y: number }> {
  let x = 0;
  let y = 0;
  let current = route;
  for (let depth = 0; current.frameId !== tab.mainFrameId && depth < 32; depth++) {
    const parentId = current.parentId;
    const parent = parentId === undefined ? undefined : tab.routesByFrame.get(parentId);
    if (!parentId || !parent) throw new DriverError("stale_ref", "the frame's place in the page changed since the snapshot; call snapshot again");
    const parentSession = sessionFor(core, tab, parent);
    const owner = await core.must("DOM.getFrameOwner", { frameId: current.frameId }, parentSession, { gone: "stale_ref" });
    const backendNodeId = owner.backendNodeId;
    const contextId = await isolatedWorld(core, parentSession, parentId, "stale_ref");
    const resolved = await core.must("DOM.resolveNode", { backendNodeId, executionContextId: contextId }, parentSession, { gone: "stale_ref" });
    const objectId = resolved.object.objectId;
    if (!objectId) throw new DriverError("stale_ref", "the frame's element is gone; call snapshot again");
    try {
      const answer = await core.must("Runtime.callFunctionOn", { objectId, functionDeclaration: OWNER_OFFSET, returnByValue: true }, parentSession, {
        gone: "stale_ref",
      });
      const point = parseAnswer(pointValue, remoteValue(answer), "rect");
      x += point.x;
      y += point.y;
    } finally {
      void core.client.send("Runtime.releaseObject", { objectId }, parentSession);
    }
    current = parent;
  }
  return { x, y };
}

/**
 * One read of the top document, with the tab's frames (PageContent.subframes), or with `key` one of those frames'
 * documents.
 */
export async function readContent(core: CdpCore, tab: Tab & { sessionId: string }, key?: number): Promise<PageContent> {
  checkScriptable(tab);
  if (key !== undefined) return readFrame(core, tab, key);
  const generation = tab.generation;
  // A page that replaces its document (a refresh loop, a script reloading) can take the context away between
  // finding it and reading from it: stale_ref, and the broker reads again (drivers/pageContent.ts).
  const contextId = await isolatedWorld(core, tab.sessionId, tab.mainFrameId, "stale_ref");
  const result = await readDocument(core, tab.sessionId, contextId, CONTENT_MAX_CHARS);
  if (!result.ok) {
    if (tab.gone || core.closed || !(result.error.kind === "protocol" && GONE_CONTEXT.test(result.error.message))) throw core.failure(result.error);
    throw new DriverError("stale_ref", "the document went away while it was read");
  }
  const value = documentValue.safeParse(remoteValue(result.value));
  if (!value.success) throw new DriverError("internal", "the page returned no content");
  const { origin: _origin, capped, ...page } = value.data.value;
  if (core.options.stateless && tab.generation === 0) await seedStatus(core, tab, contextId, page.url);
  // Listed after the read (one round trip less while a page replaces its document): they are its frames only if the
  // tab is still on it.
  const routes = await core.frames(tab).catch(() => []);
  const subframes = tab.generation === generation ? routes.filter((r) => r.frameId !== tab.mainFrameId) : [];
  tab.readRoutes = new Map(subframes.map((route) => [frameKey(core, tab, route.frameId), route]));
  const listed = subframes.map((r) => ({
    frameId: frameKey(core, tab, r.frameId),
    parentFrameId: r.parentId === undefined || r.parentId === tab.mainFrameId ? 0 : frameKey(core, tab, r.parentId),
  }));
  return { ...page, ...(capped ? { capped } : {}), ...(listed.length ? { subframes: listed } : {}) };
}

/** The page's own account of its document's response (Navigation Timing), read in the isolated world. */
const RESPONSE_STATUS = `(() => { const entry = performance.getEntriesByType("navigation")[0]; return entry ? entry.responseStatus : 0; })()`;

/**
 * A stateless host connects to tabs whose documents committed before it did, so it saw no response for them: the
 * status the page reports stands in (page.content shows it; drivers/documentStatus.ts). Best effort: none is shown
 * when the page cannot say.
 */
async function seedStatus(core: CdpCore, tab: Tab & { sessionId: string }, contextId: number, url: string): Promise<void> {
  if (core.status.of(tab.tabId, url) !== undefined) return;
  const answer = await core.send("Runtime.evaluate", { expression: RESPONSE_STATUS, contextId, returnByValue: true }, tab.sessionId);
  const status: unknown = answer.ok && !answer.value.exceptionDetails ? answer.value.result.value : undefined;
  if (typeof status === "number" && Number.isInteger(status) && status > 0) core.status.seed(tab.tabId, url, status);
}

/** One frame's document (out-of-process ones too), from the frames listed with the last read of the top document. */
async function readFrame(core: CdpCore, tab: Tab & { sessionId: string }, key: number): Promise<PageContent> {
  const route = tab.readRoutes.get(key);
  if (!route) throw new DriverError("stale_ref", "the frame went away since the page was read");
  const sessionId = sessionFor(core, tab, route);
  const contextId = await isolatedWorld(core, sessionId, route.frameId, "stale_ref");
  const answer = await readDocument(core, sessionId, contextId, FRAME_HTML_BUDGET);
  if (!answer.ok) throw core.failure(answer.error, "stale_ref");
  const value = documentValue.safeParse(remoteValue(answer.value));
  if (!value.success) throw new DriverError("internal", "the frame returned no content");
  return value.data.value;
}

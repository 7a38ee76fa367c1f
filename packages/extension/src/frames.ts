// Reading documents (the top frame's and its frames') through the in-page script.
import { CONTENT_MAX_ELEMENTS, FRAME_HTML_BUDGET, INPAGE_GLOBAL, INPAGE_NOT_INSTALLED, MAX_CONTENT_FRAMES, type ContentCapped, type FrameContent, type InpageResult } from "@tabrelay/protocol";
import { isVisibleToAgent, tabsLoaded } from "./state.js";

export type DocumentRead = { url: string; origin: string; title: string; html: string; capped?: ContentCapped } | "none";

/**
 * One frame's document through the in-page script (installed first where missing): its HTML with what a person
 * cannot see marked, at most `maxChars` characters. Scripting errors are thrown as Chrome gives them.
 */
export async function readDocument(tabId: number, frameId: number, maxChars: number): Promise<DocumentRead> {
  const run = () =>
    chrome.scripting.executeScript({
      target: { tabId, frameIds: [frameId] },
      injectImmediately: true,
      // Serialised into the page: it sees only its arguments, so the global's name and the sentinel travel as them.
      func: (global: string, notInstalled: string, args: unknown) => {
        const api = (globalThis as unknown as Record<string, { content?: (a: unknown) => unknown } | undefined>)[global];
        return api && typeof api.content === "function" ? api.content(args) : notInstalled;
      },
      args: [INPAGE_GLOBAL, INPAGE_NOT_INSTALLED, { maxChars, maxElements: CONTENT_MAX_ELEMENTS }],
    });
  let result = (await run())[0]?.result;
  if (result === INPAGE_NOT_INSTALLED) {
    await chrome.scripting.executeScript({ target: { tabId, frameIds: [frameId] }, files: ["inpage.js"], injectImmediately: true });
    result = (await run())[0]?.result;
  }
  const outcome = result as InpageResult<Exclude<DocumentRead, "none">> | undefined;
  if (!outcome || typeof outcome !== "object" || !outcome.ok || typeof outcome.value?.html !== "string") return "none";
  return outcome.value;
}

// Every document of an agent tab gets the in-page script as it commits, so that reading it is one call: a page
// that keeps replacing its document (a refresh loop) leaves no time for an install and a read in one document.
chrome.webNavigation.onCommitted.addListener((details) => {
  void tabsLoaded.then(() => {
    if (!isVisibleToAgent(details.tabId) || !/^(?:https?:|file:|about:(?:blank|srcdoc))/.test(details.url)) return;
    chrome.scripting.executeScript({ target: { tabId: details.tabId, frameIds: [details.frameId] }, files: ["inpage.js"], injectImmediately: true }).catch(() => undefined);
  });
});

/** The documents of the tab's frames, parents first, within FRAME_HTML_BUDGET characters (see PageContent). */
export async function frameContents(tabId: number, topUrl: string): Promise<FrameContent[]> {
  const all = (await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null)) ?? [];
  const subframes = all.filter((f) => f.frameId !== 0);
  if (subframes.length === 0) return [];
  // One call per frame, each with a deadline: a frame that went away, cannot be scripted or never answers
  // (a busy loop in an ad) is left out without costing the others.
  const read = (frameId: number) =>
    Promise.race([
      readDocument(tabId, frameId, FRAME_HTML_BUDGET).then((doc) => (doc === "none" ? undefined : doc)),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), FRAME_READ_MS)),
    ]).catch(() => undefined);
  const docs = await Promise.all(subframes.slice(0, MAX_CONTENT_FRAMES * 2).map(async (f) => [f.frameId, await read(f.frameId)] as const));
  // The frames belong to the document read just before them only if the tab is still on it.
  const top = await chrome.webNavigation.getFrame({ tabId, frameId: 0 }).catch(() => null);
  if (!top || top.url !== topUrl) return [];
  const byFrame = new Map(docs);
  // Parents before children: order by depth below the top document.
  const parentOf = new Map(all.map((f) => [f.frameId, f.parentFrameId]));
  const depth = (frameId: number): number => {
    let d = 0;
    for (let id = frameId; id > 0 && d < 64; id = parentOf.get(id) ?? 0) d++;
    return d;
  };
  const ordered = subframes.map((f) => ({ f, depth: depth(f.frameId) })).sort((a, b) => a.depth - b.depth).map((x) => x.f);
  const frames: FrameContent[] = [];
  const indexOf = new Map<number, number>();
  let left = FRAME_HTML_BUDGET;
  for (const f of ordered) {
    if (frames.length >= MAX_CONTENT_FRAMES) break;
    const doc = byFrame.get(f.frameId);
    // A frame whose parent was left out is left out too: its origin could not be told.
    if (!doc || typeof doc.html !== "string" || doc.html.length > left || (f.parentFrameId !== 0 && !indexOf.has(f.parentFrameId))) continue;
    left -= doc.html.length;
    indexOf.set(f.frameId, frames.length);
    frames.push({ url: String(doc.url), origin: String(doc.origin), title: String(doc.title), html: doc.html, parent: f.parentFrameId === 0 ? -1 : indexOf.get(f.parentFrameId)!, ...(doc.capped ? { capped: doc.capped } : {}) });
  }
  return frames;
}

/** How long one frame's document may take to be read. */
const FRAME_READ_MS = 3000;

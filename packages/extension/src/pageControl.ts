// What code mode asks of a tab beyond the in-page script: its viewport size (the tab's window, resized by the frame
// measured around the page) and an expression evaluated in the top document's main world.
import { EVAL_MAX_CHARS } from "@tabrelay/protocol";
import { CommandError } from "./commandError.js";
import { scriptingError } from "./inpageScript.js";

async function innerSize(tabId: number): Promise<{ width: number; height: number }> {
  const [frame] = await chrome.scripting
    .executeScript({ target: { tabId, frameIds: [0] }, func: () => ({ width: innerWidth, height: innerHeight }) })
    .catch((error: unknown) => {
      throw scriptingError(error);
    });
  const size = frame?.result as { width?: unknown; height?: unknown } | undefined;
  if (typeof size?.width !== "number" || typeof size.height !== "number") throw new CommandError("internal", "the page did not report its viewport size");
  return { width: size.width, height: size.height };
}

/**
 * There is no viewport of a tab apart from its window's: the tab is brought to the front (a background tab keeps its
 * old size until shown) and the window resized so that the page's innerWidth x
 * innerHeight comes to the size asked (the frame around the page, measured, is added), in up to three rounds (a
 * window manager or a minimum window size may round it). Answers the size the page then reports.
 */
export async function setViewport(tab: chrome.tabs.Tab, width: number, height: number): Promise<{ width: number; height: number }> {
  const tabId = tab.id ?? -1;
  // A background tab keeps its old size until it is shown: the tab comes to the front of its window first.
  if (!tab.active) await chrome.tabs.update(tabId, { active: true });
  let inner = await innerSize(tabId);
  for (let round = 0; round < 3 && (inner.width !== width || inner.height !== height); round++) {
    const win = await chrome.windows.get(tab.windowId);
    if (win.state === "fullscreen" || win.state === "maximized" || win.state === "minimized") await chrome.windows.update(tab.windowId, { state: "normal" });
    const outerWidth = (win.width ?? inner.width) + (width - inner.width);
    const outerHeight = (win.height ?? inner.height) + (height - inner.height);
    await chrome.windows.update(tab.windowId, { width: Math.round(outerWidth), height: Math.round(outerHeight) }).catch((error: unknown) => {
      throw new CommandError("not_actionable", `the browser did not resize the tab's window: ${String(error)}`);
    });
    // The page learns its new size after a layout: poll it briefly.
    const before = inner;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      inner = await innerSize(tabId);
      if (inner.width !== before.width || inner.height !== before.height) break;
    }
  }
  return inner;
}

/** Runs in the page's main world (serialised by chrome.scripting): the page's code can see and change what it answers. */
async function evaluateInPage(expression: string, max: number, timeoutMs: number): Promise<{ json?: string; unserializable?: string; threw?: string }> {
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the expression did not settle within ${timeoutMs} ms`)), timeoutMs);
    });
    const value: unknown = await Promise.race([Promise.resolve((0, eval)(expression)), late]).finally(() => clearTimeout(timer));
    const kind = typeof value;
    if (value === undefined || kind === "function" || kind === "symbol" || kind === "bigint")
      return { unserializable: value === undefined ? "undefined" : kind };
    let json: unknown;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      return { unserializable: `a value JSON cannot hold (${String(error instanceof Error ? error.message : error).slice(0, 200)})` };
    }
    if (typeof json !== "string") return { unserializable: "a value JSON cannot hold" };
    if (json.length > max) return { unserializable: `JSON of ${json.length} characters, over the ${max} the answer may hold` };
    return { json };
  } catch (error) {
    return { threw: String(error instanceof Error ? `${error.name}: ${error.message}` : error).slice(0, 500) };
  }
}

export async function evaluate(tabId: number, expression: string, timeoutMs: number): Promise<{ json?: string; unserializable?: string }> {
  const [frame] = await chrome.scripting
    .executeScript({
      target: { tabId, frameIds: [0] },
      world: "MAIN",
      injectImmediately: true,
      func: evaluateInPage,
      args: [expression, EVAL_MAX_CHARS, timeoutMs],
    })
    .catch((error: unknown) => {
      throw scriptingError(error);
    });
  const answer = frame?.result as { json?: unknown; unserializable?: unknown; threw?: unknown } | undefined;
  if (!answer || typeof answer !== "object") throw new CommandError("internal", "the page's answer to eval was not understood");
  if (typeof answer.threw === "string") throw new CommandError("not_actionable", `the expression threw in the page: ${answer.threw}`);
  if (typeof answer.json === "string") return { json: answer.json.slice(0, EVAL_MAX_CHARS + 1) };
  return { unserializable: typeof answer.unserializable === "string" ? answer.unserializable.slice(0, 300) : "a value JSON cannot hold" };
}

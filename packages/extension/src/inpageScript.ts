// Calls into the in-page script (packages/inpage, bundled as inpage.js) in a tab's frames.
import { INPAGE_GLOBAL, type InpageResult } from "@tabrelay/protocol";
import { CommandError } from "./commandError.js";

export type { InpageResult } from "@tabrelay/protocol";

export function scriptingError(error: unknown): CommandError {
  const message = error instanceof Error ? error.message : String(error);
  if (/cannot be scripted|Cannot access|chrome:\/\/|extensions gallery|Missing host permission/i.test(message)) {
    return new CommandError("restricted_page", `the browser does not let extensions read or act on this page (${message})`);
  }
  if (/No frame with id|Frame with ID .* was removed|document.*unloaded/i.test(message)) {
    return new CommandError("stale_ref", "the frame navigated or went away since the snapshot; call snapshot again");
  }
  return new CommandError("internal", message);
}

/** Installs the in-page script (idempotent) into the given frames' isolated world. */
export async function injectInpage(tabId: number, frameIds?: number[]): Promise<void> {
  const target = frameIds ? { tabId, frameIds } : { tabId, allFrames: true };
  await chrome.scripting.executeScript({ target, files: ["inpage.js"], injectImmediately: true }).catch((error: unknown) => {
    throw scriptingError(error);
  });
}

export async function runInFrame<T>(tabId: number, frameId: number, method: "inspect" | "act" | "wait" | "rect", params: unknown): Promise<T> {
  let results: chrome.scripting.InjectionResult<unknown>[];
  try {
    results = await chrome.scripting.executeScript({
      target: { tabId, frameIds: [frameId] },
      injectImmediately: true,
      // Serialised into the page: it sees only its arguments, so the global's name travels as one.
      func: (global: string, name: string, args: unknown) => {
        const api = (globalThis as unknown as Record<string, Record<string, (a: unknown) => unknown> | undefined>)[global];
        return api ? api[name]!(args) : { ok: false, error: { code: "stale_ref", message: "the page navigated or reloaded since the snapshot; call snapshot again" } };
      },
      args: [INPAGE_GLOBAL, method, params],
    });
  } catch (error) {
    throw scriptingError(error);
  }
  const outcome = results[0]?.result as InpageResult<T> | undefined;
  if (!outcome) throw new CommandError("internal", "the page returned nothing");
  if (!outcome.ok) throw new CommandError(outcome.error.code, outcome.error.message);
  return outcome.value;
}

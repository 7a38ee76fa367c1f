// Calls into the in-page script (packages/inpage, bundled as inpage.js) in a tab's frames.
import { INPAGE_GLOBAL, INPAGE_NOT_INSTALLED, type InpageResult } from "@tabrelay/protocol";
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

/**
 * Calls api[method](args) in the isolated world of the given frames (all of them without `frameIds`) and answers each
 * frame's value: INPAGE_NOT_INSTALLED where the script is missing, unless `install` puts it there and calls again.
 * Chrome's errors are thrown as it gives them.
 */
export async function callInpage(
  tabId: number,
  frameIds: number[] | undefined,
  method: string,
  args: unknown,
  install: boolean,
): Promise<{ frameId: number; result?: unknown }[]> {
  const run = (ids: number[] | undefined) =>
    chrome.scripting.executeScript({
      target: ids ? { tabId, frameIds: ids } : { tabId, allFrames: true },
      injectImmediately: true,
      // Serialised into the page: it sees only its arguments, so the global's name and the sentinel travel as them.
      func: (global: string, notInstalled: string, name: string, a: unknown) => {
        const api = Reflect.get(globalThis, global) as Record<string, (x: unknown) => unknown> | undefined;
        return api ? api[name]!(a) : notInstalled;
      },
      args: [INPAGE_GLOBAL, INPAGE_NOT_INSTALLED, method, args],
    });
  const results = await run(frameIds);
  const missing = results.filter((r) => r.result === INPAGE_NOT_INSTALLED).map((r) => r.frameId);
  if (!install || missing.length === 0) return results;
  await chrome.scripting.executeScript({ target: { tabId, frameIds: missing }, files: ["inpage.js"], injectImmediately: true });
  return [...results.filter((r) => r.result !== INPAGE_NOT_INSTALLED), ...(await run(missing))];
}

export async function runInFrame<T>(tabId: number, frameId: number, method: "inspect" | "act" | "wait" | "rect", params: unknown): Promise<T> {
  const results = await callInpage(tabId, [frameId], method, params, false).catch((error: unknown) => {
    throw scriptingError(error);
  });
  const outcome = results[0]?.result as InpageResult<T> | typeof INPAGE_NOT_INSTALLED | undefined;
  if (outcome === INPAGE_NOT_INSTALLED) throw new CommandError("stale_ref", "the page navigated or reloaded since the snapshot; call snapshot again");
  if (!outcome) throw new CommandError("internal", "the page returned nothing");
  if (!outcome.ok) throw new CommandError(outcome.error.code, outcome.error.message);
  return outcome.value;
}

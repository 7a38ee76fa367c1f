// Reading one frame's document (the top one's or a subframe's) through the in-page script.
import { CONTENT_MAX_ELEMENTS, type ContentCapped, type InpageResult } from "@tabrelay/protocol";
import { callInpage } from "./inpageScript.js";
import { isVisibleToAgent, tabsLoaded } from "./state.js";

export type DocumentRead = { url: string; origin: string; title: string; html: string; capped?: ContentCapped; loading?: true } | "none";

/**
 * One frame's document through the in-page script (installed first where missing): its HTML with what a person
 * cannot see marked, at most `maxChars` characters. Scripting errors are thrown as Chrome gives them.
 */
export async function readDocument(tabId: number, frameId: number, maxChars: number): Promise<DocumentRead> {
  const [read] = await callInpage(tabId, [frameId], "content", { maxChars, maxElements: CONTENT_MAX_ELEMENTS }, true);
  const outcome = read?.result as InpageResult<Exclude<DocumentRead, "none">> | undefined;
  if (!outcome || typeof outcome !== "object" || !outcome.ok || typeof outcome.value?.html !== "string") return "none";
  return outcome.value;
}

// Every document of an agent tab gets the in-page script as it commits, so that reading it is one call: a page
// that keeps replacing its document (a refresh loop) leaves no time for an install and a read in one document.
chrome.webNavigation.onCommitted.addListener((details) => {
  void tabsLoaded.then(() => {
    if (!isVisibleToAgent(details.tabId) || !/^(?:https?:|file:|about:(?:blank|srcdoc))/.test(details.url)) return;
    chrome.scripting
      .executeScript({ target: { tabId: details.tabId, frameIds: [details.frameId] }, files: ["inpage.js"], injectImmediately: true })
      .catch(() => undefined);
  });
});

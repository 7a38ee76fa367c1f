import { CommandError } from "./commandError.js";
import { DOWNLOAD_NOTE } from "./downloads.js";
import { loadError } from "./platform.js";

/** Each tab's last top-frame load error, by URL: Firefox may commit its error page before (or instead of) saying so. */
const loadErrors = new Map<number, { url: string; error: string }>();
chrome.webNavigation.onErrorOccurred.addListener((d) => {
  if (d.frameId === 0) loadErrors.set(d.tabId, { url: d.url.split("#")[0] ?? d.url, error: loadError(d.error) });
});
chrome.tabs.onRemoved.addListener((tabId) => loadErrors.delete(tabId));

/** The load error of the tab's document at `url`, waiting up to `ms` for it to be told; undefined when there is none. */
export async function loadErrorOf(tabId: number, url: string, ms: number): Promise<string | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = loadErrors.get(tabId);
    if (found && found.url === (url.split("#")[0] ?? url) && found.error !== "net::ERR_ABORTED") return found.error;
    if (Date.now() >= deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Collects top-frame navigation events from before an action starts, so a fast load that finishes before
 * tabs.create resolves is not missed. (Right after tabs.update, tabs.get still reports "complete" for the
 * previous page, so tab status alone cannot be trusted.)
 */
export function watchNavigation() {
  type Outcome =
    | { kind: "completed"; url: string; at: number }
    | { kind: "committed"; at: number }
    | { kind: "error"; error: string; at: number }
    | { kind: "removed"; at: number };
  const seen = new Map<number, Outcome[]>();
  let wake: (() => void) | undefined;
  const record = (tabId: number, outcome: Outcome) => {
    const list = seen.get(tabId) ?? [];
    list.push(outcome);
    seen.set(tabId, list);
    wake?.();
  };
  const frameCommits: { tabId: number; frameId: number }[] = [];
  const onCommitted = (d: { tabId: number; frameId: number; url: string }) => {
    frameCommits.push({ tabId: d.tabId, frameId: d.frameId });
    if (d.frameId === 0) record(d.tabId, { kind: "committed", at: Date.now() });
    else wake?.();
  };
  // Same-document navigations (#fragment, pushState) have no load: they are complete when they happen.
  const onCompleted = (d: { tabId: number; frameId: number; url: string }) => {
    if (d.frameId === 0) record(d.tabId, { kind: "completed", url: d.url, at: Date.now() });
  };
  const onError = (d: chrome.webNavigation.WebNavigationFramedErrorCallbackDetails) => {
    if (d.frameId === 0) record(d.tabId, { kind: "error", error: loadError(d.error), at: Date.now() });
  };
  // Chrome closes a tab that was opened only to download a file.
  const onRemoved = (tabId: number) => record(tabId, { kind: "removed", at: Date.now() });
  chrome.tabs.onRemoved.addListener(onRemoved);
  chrome.webNavigation.onCommitted.addListener(onCommitted);
  chrome.webNavigation.onCompleted.addListener(onCompleted);
  chrome.webNavigation.onReferenceFragmentUpdated.addListener(onCompleted);
  chrome.webNavigation.onHistoryStateUpdated.addListener(onCompleted);
  chrome.webNavigation.onErrorOccurred.addListener(onError);
  let disposed = false;
  return {
    dispose() {
      disposed = true;
      chrome.webNavigation.onCommitted.removeListener(onCommitted);
      chrome.webNavigation.onCompleted.removeListener(onCompleted);
      chrome.webNavigation.onReferenceFragmentUpdated.removeListener(onCompleted);
      chrome.webNavigation.onHistoryStateUpdated.removeListener(onCompleted);
      chrome.webNavigation.onErrorOccurred.removeListener(onError);
      chrome.tabs.onRemoved.removeListener(onRemoved);
    },
    /** Resolves when a document commits in that frame (or the whole tab navigates). Never rejects. */
    async committedIn(tabId: number, frameId: number): Promise<void> {
      const hit = () => frameCommits.some((c) => c.tabId === tabId && (c.frameId === frameId || c.frameId === 0));
      while (!hit()) {
        // After dispose nothing will ever be recorded: stay pending (the caller has moved on), stop polling.
        if (disposed) return new Promise<void>(() => undefined);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 1000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    },
    /** Whether a document committed in the tab's top frame since the watch began. */
    committed(tabId: number): boolean {
      return (seen.get(tabId) ?? []).some((o) => o.kind === "committed");
    },
    moved(tabId: number): boolean {
      return (seen.get(tabId) ?? []).length > 0;
    },
    /** Resolves on load (or commit); a load still running at the deadline resolves too, with the tab loading. */
    async wait(tabId: number, until: "load" | "commit", timeoutMs: number): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const outcomes = seen.get(tabId) ?? [];
        const last = outcomes[outcomes.length - 1];
        if (last?.kind === "completed") {
          // Firefox completes a navigation that became a download (nothing replaced the page) in a tab that stays
          // on about:blank; Chrome closes such a tab or aborts the navigation (below).
          if (
            /^https?:/.test(last.url) &&
            !outcomes.some((o) => o.kind === "committed") &&
            (await chrome.tabs.get(tabId).catch(() => undefined))?.url === "about:blank"
          )
            throw new CommandError("navigation_failed", `no page loaded: the URL is most likely a file download (${DOWNLOAD_NOTE})`);
          return;
        }
        if (last?.kind === "removed")
          throw new CommandError("navigation_failed", `the tab closed while loading: the URL is most likely a file download (${DOWNLOAD_NOTE})`);
        if (until === "commit" && outcomes.length > 0 && last?.kind !== "error") return;
        // ERR_ABORTED means another navigation (a redirect, a script) replaced this one: keep waiting, unless
        // a second later nothing is loading (a download in an existing tab, or the page stopped it).
        if (last?.kind === "error" && last.error === "net::ERR_ABORTED" && Date.now() - last.at > 1000) {
          const current = await chrome.tabs.get(tabId).catch(() => undefined);
          if (current?.status !== "loading")
            throw new CommandError(
              "navigation_failed",
              `the navigation was aborted and no page loaded: the URL is most likely a file download (${DOWNLOAD_NOTE}), or the page stopped it`,
            );
        }
        // Stopped by the navigation rules (or another extension's): the tab shows an error page for where the
        // page tried to go. The broker judges that URL; it is not a load failure to report here.
        if (last?.kind === "error" && last.error === "net::ERR_BLOCKED_BY_CLIENT") return;
        if (last?.kind === "error" && last.error !== "net::ERR_ABORTED") {
          throw new CommandError("navigation_failed", `the page failed to load: ${last.error}`);
        }
        const left = deadline - Date.now();
        if (left <= 0) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 1000));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    },
  };
}

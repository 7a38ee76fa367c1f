// Navigation and landing in the CDP driver: describing a tab (URL, title, visibility), opening a tab,
// navigating and waiting through redirects to the final load, history moves, and page.wait.
import type { ParamsOf, ResultOf, TabInfo, WaitUntil } from "@tabrelay/protocol";
import { type CdpCore, DriverError, GONE_CONTEXT, sleep, type Tab } from "./cdpCore.js";
import { waitValue } from "../answers.js";
import { callInpage, checkScriptable, parseAnswer, WORLD_NAME } from "./inpage.js";

/** How long tabs.list and tabs.get wait for a page to say whether it is visible before using its last answer. */
export const VISIBILITY_WAIT_MS = 200;

export async function tabInfo(core: CdpCore, tab: Tab): Promise<TabInfo> {
  if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} no longer exists; call list_tabs`);
  const [target, visible] = await Promise.all([core.send("Target.getTargetInfo", { targetId: tab.targetId }), isVisible(core, tab, { quick: true })]);
  if (target.ok) {
    const info = target.value.targetInfo;
    tab.title = info.title;
    tab.url = info.url || tab.url;
  }
  return { ...core.quickInfo(tab), active: visible };
}

/**
 * Whether the tab is the visible one of its window (the page's own view, read in the isolated world). A renderer
 * busy with a heavy page answers late: with `quick` (describing tabs), past VISIBILITY_WAIT_MS the last answer
 * stands, so listing tabs stays quick; a capture waits for the page's answer.
 */
export async function isVisible(core: CdpCore, tab: Tab, options: { quick?: boolean } = {}): Promise<boolean> {
  if (!tab.sessionId) return false;
  const sessionId = tab.sessionId;
  const ask = (async () => {
    const world = await core.client.send(
      "Page.createIsolatedWorld",
      { frameId: tab.mainFrameId, worldName: WORLD_NAME, grantUniveralAccess: false },
      sessionId,
      { timeoutMs: 1000 },
    );
    const contextId = world.ok ? world.value.executionContextId : undefined;
    if (contextId === undefined) return false;
    const state = await core.client.send("Runtime.evaluate", { expression: "document.visibilityState", contextId, returnByValue: true }, sessionId, {
      timeoutMs: 1000,
    });
    tab.lastVisible = state.ok && state.value.result.value === "visible";
    return tab.lastVisible;
  })();
  return options.quick ? Promise.race([ask, sleep(VISIBILITY_WAIT_MS).then(() => tab.lastVisible ?? false)]) : ask;
}

export async function createTab(core: CdpCore, active: boolean): Promise<Tab> {
  const creation = core.client
    .send("Target.createTarget", {
      url: "about:blank",
      background: !active,
      // In a browser of our own every agent tab gets its own window: it is then always the visible tab
      // of that window, so it renders, runs animation frames and can be captured (Chrome stalls captures
      // of background tabs).
      ...(core.allPagesAgents ? { newWindow: true } : {}),
    })
    .then((result) => {
      const targetId = result.ok ? result.value.targetId : undefined;
      if (targetId) core.created.add(targetId);
      return result;
    });
  core.creating.add(creation);
  const result = await creation.finally(() => core.creating.delete(creation));
  if (!result.ok)
    throw result.error.kind === "protocol" ? new DriverError("navigation_failed", `could not open a tab: ${result.error.message}`) : core.failure(result.error);
  const targetId = result.value.targetId;
  const tab = await core.whenTab(targetId, 10_000);
  if (!tab) throw new DriverError("internal", "the browser created a tab but never attached it");
  await tab.ready;
  // Let the initial about:blank settle so its commit is not mistaken for the navigation that follows.
  const until = Date.now() + 2000;
  while (!tab.loaded && !tab.gone && Date.now() < until) await core.changed(tab, until - Date.now());
  return tab;
}

/** Navigates and waits like the extension: through redirects and replacing navigations to the final load. */
export async function navigate(core: CdpCore, tab: Tab & { sessionId: string }, url: string, until: WaitUntil, timeoutMs: number): Promise<TabInfo> {
  const deadline = Date.now() + timeoutMs;
  const start = tab.generation;
  tab.blockedDownload = undefined;
  const sent = Date.now();
  const result = await core.send("Page.navigate", { url }, tab.sessionId, Math.max(1, timeoutMs));
  if (!result.ok) {
    if (result.error.kind === "timeout") {
      // The server never answered: no document of this navigation committed. The target's URL is the pending one;
      // say "" as the extension does (TabInfo.url), so the broker reports a timeout rather than judging a landing.
      const info = await tabInfo(core, tab);
      return tab.generation === start ? { ...info, url: "" } : info;
    }
    if (result.error.kind === "protocol" && !GONE_CONTEXT.test(result.error.message))
      throw new DriverError("navigation_failed", `could not navigate to ${url}: ${result.error.message}`);
    throw core.failure(result.error);
  }
  const { errorText, loaderId } = result.value;
  const blocked = tab.blockedDownload;
  tab.blockedDownload = undefined;
  if (result.value.isDownload === true || (errorText === "net::ERR_BLOCKED_BY_CLIENT" && blocked !== undefined)) {
    throw new DriverError("navigation_failed", `${url} is a file download, not a page (tabrelay saves no files)`);
  }
  // Stopped by the request policy (the URL or a redirect hop): the error page that commits is where the page
  // tried to go, which the broker judges; not a load failure.
  if (errorText === "net::ERR_BLOCKED_BY_CLIENT" && tab.blockedNavigation !== undefined && tab.blockedNavigation.at >= sent) {
    await waitNavigation(core, tab, start, "commit", Math.min(deadline, Date.now() + 2000));
    return tabInfo(core, tab);
  }
  // ERR_ABORTED means another navigation (a redirect, a script) replaced this one: keep waiting.
  if (errorText && errorText !== "net::ERR_ABORTED") throw new DriverError("navigation_failed", `the page failed to load: ${errorText}`);
  if (!loaderId && !errorText) {
    // Same-document navigation (#fragment): complete as soon as it is seen.
    await waitNavigation(core, tab, start, "commit", Math.min(deadline, Date.now() + 2000));
  } else {
    await waitNavigation(core, tab, start, until, deadline, errorText ? undefined : loaderId);
  }
  return tabInfo(core, tab);
}

/**
 * Waits until the tab committed a new document (the one with `loaderId`, or any later one) and, for
 * "load", until that document loaded. A load still running at the deadline resolves, with the tab loading.
 */
export async function waitNavigation(core: CdpCore, tab: Tab, start: number, until: WaitUntil, deadline: number, loaderId?: string): Promise<void> {
  for (;;) {
    if (core.closed) throw new DriverError("browser_disconnected", core.disconnected().error.message);
    if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} was closed while loading`);
    const committed = loaderId ? tab.commits.includes(loaderId) : tab.generation > start;
    if (committed) {
      if (tab.errorPage !== undefined && tab.errorPage !== tab.blockedNavigation?.url)
        throw new DriverError("navigation_failed", `the page failed to load: Chrome could not reach ${tab.errorPage}`);
      if (until === "commit" || tab.loaded) return;
    }
    const left = deadline - Date.now();
    if (left <= 0) return;
    await core.changed(tab, Math.min(left, 1000));
  }
}

export async function history(core: CdpCore, tab: Tab & { sessionId: string }, action: "back" | "forward" | "reload", timeoutMs: number): Promise<TabInfo> {
  const deadline = Date.now() + timeoutMs;
  const start = tab.generation;
  if (action === "reload") {
    const reload = await core.send("Page.reload", {}, tab.sessionId);
    if (!reload.ok)
      throw reload.error.kind === "protocol" ? new DriverError("navigation_failed", `cannot reload: ${reload.error.message}`) : core.failure(reload.error);
  } else {
    const history = await core.must("Page.getNavigationHistory", {}, tab.sessionId);
    const entryId = history.entries[history.currentIndex + (action === "back" ? -1 : 1)]?.id;
    if (entryId === undefined) {
      throw new DriverError(
        "navigation_failed",
        `cannot go ${action}: there is no page ${action === "back" ? "before" : "after"} this one in the tab's history`,
      );
    }
    // Unlike the browser's back button, this is not subject to the history manipulation intervention.
    const moved = await core.send("Page.navigateToHistoryEntry", { entryId }, tab.sessionId);
    if (!moved.ok)
      throw moved.error.kind === "protocol" ? new DriverError("navigation_failed", `cannot go ${action}: ${moved.error.message}`) : core.failure(moved.error);
  }
  await waitNavigation(core, tab, start, "load", deadline);
  return tabInfo(core, tab);
}

/** One wait in the top document; the broker watches the URL and starts again after a navigation (composed.ts). */
export async function waitFor(
  core: CdpCore,
  tab: Tab & { sessionId: string },
  { text, textGone, selector, timeoutMs }: ParamsOf<"page.wait">,
): Promise<ResultOf<"page.wait">> {
  checkScriptable(tab);
  const started = Date.now();
  const value = await callInpage(
    core,
    tab.sessionId,
    tab.mainFrameId,
    "wait",
    { text, textGone, selector, timeoutMs },
    true,
    timeoutMs + core.options.callTimeoutMs,
  );
  return { matched: parseAnswer(waitValue, value, "wait").matched, elapsedMs: Date.now() - started };
}

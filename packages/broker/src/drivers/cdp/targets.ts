// Target bookkeeping of the CDP driver: start-up (auto-attach), which attached pages are the agent's,
// each page's set-up before it runs (events, Fetch, dialogs, child sessions), and the tab state kept up to
// date from commits, same-document navigations, lifecycle events and target changes.
import { followTopDocument, installWebMcp } from "./webmcp.js";
import type { Protocol } from "devtools-protocol";
import type { CdpResult } from "./cdpClient.js";
import { type CdpCore, sleep, type Tab } from "./cdpCore.js";
import { onDownload, onRequestPaused, PAGE_FETCH_PATTERNS } from "./network.js";

export async function startUp(core: CdpCore): Promise<CdpResult<void>> {
  const client = core.client;
  client.onClose((reason) => core.markClosed(`the browser's DevTools connection closed (${reason})`));
  client.on("Target.attachedToTarget", (params) => void onPageAttached(core, params));
  client.on("Target.targetInfoChanged", (params) => onTargetInfo(core, params.targetInfo));
  client.on("Target.targetDestroyed", (params) => onTargetGone(core, params.targetId));
  client.on("Target.detachedFromTarget", ({ sessionId }) => {
    for (const tab of core.tabs.values()) if (tab.sessionId === sessionId) tab.sessionId = undefined;
  });
  client.on("Browser.downloadWillBegin", (params) => void onDownload(core, params));
  // A dialog whose text is past the socket's cap (alert('x'.repeat(2e8))) arrives as a skipped message: dismissed all
  // the same, or the page would wait for an answer nobody gives.
  client.onOversize((method, sessionId) => {
    if (method === "Page.javascriptDialogOpening" && sessionId !== undefined) void core.send("Page.handleJavaScriptDialog", { accept: false }, sessionId);
  });
  const discover = await client.send("Target.setDiscoverTargets", { discover: true, filter: [{ type: "page" }] });
  if (!discover.ok) return discover;
  // Browser-level auto-attach pauses every new page until we resume it, so Fetch interception and the
  // event listeners are in place before its first request. Existing pages are attached too.
  const attach = await client.send("Target.setAutoAttach", { autoAttach: true, flatten: true, waitForDebuggerOnStart: true, filter: [{ type: "page" }] });
  if (!attach.ok) return attach;
  // Existing pages were attached during setAutoAttach; let their set-up finish so tabs.list is complete.
  await sleep(50);
  await Promise.race([Promise.all([...core.tabs.values()].map((t) => t.ready)), sleep(5000)]);
  core.connecting = false;
  return { ok: true, value: undefined };
}

/** Whose a new page is: the driver gathers the facts, the broker's rule (options.agentTab) decides. */
export async function isAgentTarget(core: CdpCore, targetId: string, openerId: string | undefined): Promise<boolean> {
  const agentBrowser = core.allPagesAgents;
  const openerIsAgent = openerId !== undefined && core.tabOf(openerId) !== undefined;
  // A target we are creating may be attached before Target.createTarget answers.
  if (!agentBrowser && !openerIsAgent) while (core.creating.size > 0 && !core.created.has(targetId)) await Promise.allSettled([...core.creating]);
  return core.options.agentTab({ agentBrowser, openerIsAgent, openedByAgent: core.created.has(targetId) });
}

export async function onPageAttached(
  core: CdpCore,
  { sessionId, targetInfo, waitingForDebugger: waiting }: Protocol.Target.AttachedToTargetEvent,
): Promise<void> {
  const { targetId, openerId } = targetInfo;
  if (!sessionId || !targetId) return;
  const agent = targetInfo.type === "page" && !core.tabs.has(targetId) && (await isAgentTarget(core, targetId, openerId));
  if (!agent || core.closed) {
    // Not the agent's (a user's tab in an attached browser): let it run and let go of it.
    if (waiting) await core.client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
    await core.client.send("Target.detachFromTarget", { sessionId });
    return;
  }
  const opener = openerId === undefined ? undefined : core.tabOf(openerId);
  const tab = newTab(core, targetId, sessionId, opener?.tabId, targetInfo);
  // Pages opened by other means than tabs.open (a page's window.open, a link with target=_blank, or a
  // person in a launched browser) are announced before they run, so the broker polices them like the
  // extension's tabs.
  const announce = !core.created.has(targetId) && !core.connecting;
  tab.ready = setUpPage(core, tab, sessionId, waiting, () => {
    if (announce && !tab.gone) {
      core.emit({
        type: "event",
        event: "tab.created",
        params: { tab: core.quickInfo(tab), ...(tab.openerTabId !== undefined ? { openerTabId: tab.openerTabId } : {}) },
      });
    }
  });
  // Indexed in the same tick as its set-up starts: whoever finds the tab also finds its `ready`.
  indexTab(core, tab);
  await tab.ready;
}

export function newTab(core: CdpCore, targetId: string, sessionId: string, openerTabId: number | undefined, targetInfo: Protocol.Target.TargetInfo): Tab {
  return {
    targetId,
    tabId: core.newTabId(targetId),
    openerTabId,
    sessionId,
    ready: Promise.resolve(),
    mainFrameId: targetId,
    windowId: -1,
    url: targetInfo.url,
    docUrl: targetInfo.url,
    title: targetInfo.title,
    loaderId: "",
    commits: [],
    loaded: false,
    errorPage: undefined,
    generation: 0,
    gone: false,
    closedByUs: false,
    frameKeys: new Map(),
    nextFrameKey: 1,
    routes: new Map(),
    routesByFrame: new Map(),
    readRoutes: new Map(),
    oopifs: new Map(),
    waiters: new Set(),
  };
}

export function indexTab(core: CdpCore, tab: Tab): void {
  core.tabs.set(tab.targetId, tab);
  core.byTabId.set(tab.tabId, tab);
  const listeners = core.tabListeners.get(tab.targetId);
  core.tabListeners.delete(tab.targetId);
  for (const listener of listeners ?? []) listener(tab);
}

/** Subscribes to the page's events, enables what is needed, then lets the page run. */
export async function setUpPage(core: CdpCore, tab: Tab, sessionId: string, waiting: boolean, beforeResume: () => void): Promise<void> {
  const client = core.client;
  client.on("Page.frameNavigated", (p) => onFrameNavigated(core, tab, p), sessionId);
  client.on("Page.navigatedWithinDocument", (p) => onSameDocument(core, tab, p), sessionId);
  client.on("Page.lifecycleEvent", (p) => onLifecycle(core, tab, p), sessionId);
  client.on(
    "Page.frameStoppedLoading",
    (p) => {
      if (p.frameId === tab.mainFrameId) core.touch(tab, () => (tab.loaded = true));
    },
    sessionId,
  );
  // alert(), confirm() and prompt() stop the page's scripts, and ours with them, until answered: nobody is
  // at an agent tab to answer, so they are dismissed at once (confirm and prompt as "Cancel"); a
  // beforeunload prompt lets the agent leave the page.
  client.on(
    "Page.javascriptDialogOpening",
    (p) => {
      const accept = p.type === "alert" || p.type === "beforeunload";
      void core.send("Page.handleJavaScriptDialog", { accept }, sessionId);
    },
    sessionId,
  );
  watchChildren(core, tab, sessionId);
  try {
    await Promise.all([
      core.send("Page.enable", {}, sessionId),
      core.options.requestPolicy ? core.send("Fetch.enable", { patterns: PAGE_FETCH_PATTERNS }, sessionId) : undefined,
      autoAttachChildren(core, sessionId),
      core.options.webmcpOrigins?.length ? installWebMcp(core, tab, sessionId, core.options.webmcpOrigins) : undefined,
    ]);
    const tree = await core.send("Page.getFrameTree", {}, sessionId);
    if (tree.ok) {
      const frame = tree.value.frameTree.frame;
      tab.mainFrameId = frame.id;
      if (tab.generation === 0 && !tab.loaderId) tab.loaderId = frame.loaderId;
    }
    // Enabled after the frame tree is known: Chrome replays the current document's lifecycle, so an
    // already loaded page is seen as loaded.
    await core.send("Page.setLifecycleEventsEnabled", { enabled: true }, sessionId);
    const window = await core.send("Browser.getWindowForTarget", { targetId: tab.targetId });
    if (window.ok) tab.windowId = window.value.windowId;
  } finally {
    beforeResume();
    if (waiting) await client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
  }
}

/** Out-of-process iframes (and, under a request policy, workers) attach to the page's session. */
export function autoAttachChildren(core: CdpCore, sessionId: string): Promise<CdpResult<void>> {
  const policy = core.options.requestPolicy !== undefined;
  // With a request policy, children wait for us so Fetch is on before their first request.
  return core.send(
    "Target.setAutoAttach",
    { autoAttach: true, flatten: true, waitForDebuggerOnStart: policy, filter: policy ? [{ type: "iframe" }, { type: "worker" }] : [{ type: "iframe" }] },
    sessionId,
  );
}

export function watchChildren(core: CdpCore, tab: Tab, parentSessionId: string): void {
  const client = core.client;
  const policy = core.options.requestPolicy;
  if (policy) client.on("Fetch.requestPaused", (p) => onRequestPaused(core, p, parentSessionId, tab), parentSessionId);
  client.on("Target.attachedToTarget", (p) => void onChildAttached(core, tab, p), parentSessionId);
  client.on(
    "Target.detachedFromTarget",
    ({ sessionId, targetId }) => {
      if (!sessionId) return;
      core.children.delete(sessionId);
      if (targetId && tab.oopifs.get(targetId) === sessionId) tab.oopifs.delete(targetId);
    },
    parentSessionId,
  );
}

export async function onChildAttached(
  core: CdpCore,
  tab: Tab,
  { sessionId, targetInfo, waitingForDebugger: waiting }: Protocol.Target.AttachedToTargetEvent,
): Promise<void> {
  const targetId = targetInfo.targetId;
  if (!sessionId || !targetId) return;
  core.children.set(sessionId, tab);
  try {
    if (targetInfo.type === "iframe") {
      tab.oopifs.set(targetId, sessionId);
      watchChildren(core, tab, sessionId);
      await Promise.all([
        core.options.requestPolicy ? core.send("Fetch.enable", { patterns: PAGE_FETCH_PATTERNS }, sessionId) : undefined,
        autoAttachChildren(core, sessionId),
      ]);
    } else if (core.options.requestPolicy) {
      core.client.on("Fetch.requestPaused", (p) => onRequestPaused(core, p, sessionId), sessionId);
      await core.send("Fetch.enable", { patterns: [{ urlPattern: "*" }] }, sessionId);
    }
  } finally {
    if (waiting) await core.client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
  }
}

export function onFrameNavigated(core: CdpCore, tab: Tab, params: Protocol.Page.FrameNavigatedEvent): void {
  const frame = params.frame;
  if (frame.parentId !== undefined) return;
  const { url, loaderId, unreachableUrl: unreachable } = frame;
  const first = tab.generation === 0;
  core.touch(tab, () => {
    tab.mainFrameId = frame.id;
    tab.generation++;
    tab.loaderId = loaderId;
    tab.commits.push(loaderId);
    if (tab.commits.length > 20) tab.commits.shift();
    tab.docUrl = url;
    tab.url = unreachable ?? url;
    tab.errorPage = unreachable;
    // A page restored from the back/forward cache is already loaded: no load event follows.
    tab.loaded = params.type === "BackForwardCacheRestore";
    // A new document has new subframes. Keys keep counting up, so an old ref never names a new frame.
    tab.frameKeys.clear();
    tab.routes.clear();
    tab.routesByFrame.clear();
    tab.readRoutes.clear();
  });
  if (tab.webmcp) void followTopDocument(core, tab, url);
  core.emit({
    type: "event",
    event: "tab.committed",
    params: { tabId: tab.tabId, url, ...(first && tab.openerTabId !== undefined ? { openerTabId: tab.openerTabId } : {}) },
  });
}

export function onSameDocument(core: CdpCore, tab: Tab, { frameId, url }: Protocol.Page.NavigatedWithinDocumentEvent): void {
  if (frameId !== tab.mainFrameId) return;
  core.touch(tab, () => {
    tab.generation++;
    if (url) {
      tab.url = url;
      tab.docUrl = url;
    }
  });
}

export function onLifecycle(core: CdpCore, tab: Tab, { frameId, loaderId, name }: Protocol.Page.LifecycleEventEvent): void {
  if (frameId !== tab.mainFrameId) return;
  if (!tab.loaderId) tab.loaderId = loaderId;
  if (name === "load" && loaderId === tab.loaderId) core.touch(tab, () => (tab.loaded = true));
}

export function onTargetInfo(core: CdpCore, { targetId, title, url }: Protocol.Target.TargetInfo): void {
  const tab = core.tabs.get(targetId);
  if (!tab) return;
  core.touch(tab, () => {
    if (title !== undefined) tab.title = title;
    if (url) tab.url = url;
  });
}

export function onTargetGone(core: CdpCore, targetId: string): void {
  const tab = core.tabs.get(targetId);
  if (!tab) return;
  core.retire(tab);
  if (!tab.closedByUs) core.emit({ type: "event", event: "tab.removed", params: { tabId: tab.tabId } });
}

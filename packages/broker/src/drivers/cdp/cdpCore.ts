// The CDP driver's shared state and plumbing: the agent's tabs (Tab) and what is known of each, the
// connection, the options, and the calls every part makes: send/must (with the "Not attached" retry),
// failure -> error-code mapping, event emission, waiting for a tab to change, tab lookup and retirement.
// The other modules of the driver are functions over one CdpCore; its members are public to them (the
// package exports only CdpBrowser).
import { type BridgeEvent, type ErrorCode, type TabInfo, type WireError } from "@tabrelay/protocol";
import type { Protocol } from "devtools-protocol";
import type { BrowserInfo, NewTabFacts } from "../driver.js";
import { DocumentStatus } from "../documentStatus.js";
import { TabView } from "../tabView.js";
import { disconnected, PendingCalls } from "../pendingCalls.js";
import { readUint32, utf8Bytes } from "../../util/bytes.js";
import { sha256 } from "../../util/sha256.js";
import type { CdpClient, CdpFailure, CdpMethod, CdpParams, CdpResult, CdpReturn, CdpSocketFactory } from "./cdpClient.js";

/**
 * The built in-page scripts the driver injects (packages/extension/dist/inpage.js and webmcp.js), each read once
 * per process by the host that provides them: from disk on Node (nodeScripts.ts), bundled strings in a Workers
 * build. A rejection's message becomes the call's internal error (say, the script is not built).
 */
export interface CdpScripts {
  inpage(): Promise<string>;
  webmcp(): Promise<string>;
}

export interface CdpBrowserOptions {
  label: string;
  /**
   * The browser's id as agents name it; default a fresh cdp-<uuid>. A stateless host passes one derived from its
   * handle (cdp:default), so the id list_browsers gives on one request names the browser on the next.
   */
  browserId?: string;
  /** True for a browser tabrelay launched: all its tabs are the agent's, and close() shuts it down. */
  ownsBrowser: boolean;
  /** The user who attached the browser (BrowserInfo.owner); absent: the implicit user. */
  owner?: string;
  /** Its name: whose policy the browser is held to (BrowserInfo.ownerName). */
  ownerName?: string;
  /**
   * A stateless host (the Workers entry: one connection per request, any instance serving the next): every page of
   * the browser is the agent's, tab ids are derived from the targets' ids so the next connection finds the same
   * tabs (and frames) under the same ids, and close() closes the socket only (the browser outlives the request).
   */
  stateless?: true;
  /** How the DevTools socket is opened; default: the runtime's global WebSocket (Node 20 has none: nodeSocket.ts). */
  socket?: CdpSocketFactory;
  scripts: CdpScripts;
  onEvent: (frame: BridgeEvent) => void;
  /** Whose a new page is (gate/decisions.ts gateNewTab, handed down): the agent's are attached and policed, the user's let go. */
  agentTab: (facts: NewTabFacts) => boolean;
  /** Network-layer policy: requests whose URL this refuses fail with BlockedByClient (subresources too). */
  requestPolicy?: (url: string, kind: "navigation" | "subresource", tabId: number | undefined) => boolean;
  /** WebMCP (pages.webmcp): agent tabs' pages of these origins get document.modelContext; their tools are reported (page.webmcp). */
  webmcpOrigins?: readonly string[];
  callTimeoutMs: number;
  /** Called once when the driver closes, whether the browser went away or close() was called. */
  onClose?: (reason: string) => void;
}

/** An action whose document unloaded while the page ran it: it happened, and it navigated. */
export class ActInterrupted extends Error {}

export class DriverError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** tabs.open: the tab it created before it failed (WireError.tabId). */
    readonly tabId?: number,
  ) {
    super(message);
  }

  /** The error as a DriverError naming the tab its tabs.open created. */
  static of(error: unknown, tabId: number): DriverError {
    return error instanceof DriverError
      ? new DriverError(error.code, error.message, tabId)
      : new DriverError("internal", error instanceof Error ? error.message : String(error), tabId);
  }
}

export interface FrameRoute {
  frameId: string;
  parentId: string | undefined;
  sessionId: string;
}

/** A tab's WebMCP state over CDP (webmcp.ts). */
export interface WebMcpState {
  readonly origins: readonly string[];
  /** Runtime is on in the tab's session (its top document is of an allowed origin). */
  runtime: boolean;
  /** The main world of the top document of an allowed origin, where the binding is; undefined between documents. */
  contextId: number | undefined;
}

export interface Tab {
  readonly targetId: string;
  readonly tabId: number;
  readonly openerTabId: number | undefined;
  sessionId: string | undefined;
  ready: Promise<void>;
  mainFrameId: string;
  windowId: number;
  /** What Chrome shows as the tab's URL (for an error page: the URL that failed). */
  url: string;
  /** URL of the committed document (chrome-error://chromewebdata/ for an error page). */
  docUrl: string;
  title: string;
  loaderId: string;
  /** Loader ids of the last commits, oldest first. */
  commits: string[];
  loaded: boolean;
  /** Set while the committed document is Chrome's error page for this URL. */
  errorPage: string | undefined;
  /** Bumped on every top-level commit or same-document navigation. */
  generation: number;
  gone: boolean;
  closedByUs: boolean;
  frameKeys: Map<string, number>;
  nextFrameKey: number;
  /** From the last snapshot: frame key -> route, and frame id -> route. */
  routes: Map<number, FrameRoute>;
  routesByFrame: Map<string, FrameRoute>;
  /** From the last read of the top document: frame key -> route, for page.content of one frame. */
  readRoutes: Map<number, FrameRoute>;
  /** Out-of-process iframes: frame id -> session id. */
  oopifs: Map<string, string>;
  waiters: Set<() => void>;
  /** The URL of a document response stopped because the browser would have saved it as a file. */
  blockedDownload?: string | undefined;
  /** The tab's visibility as last read from the page (isVisible). */
  lastVisible?: boolean | undefined;
  /** The last top-frame navigation request the request policy stopped: its error page is a landing, not a load failure. */
  blockedNavigation?: { url: string; at: number } | undefined;
  /** WebMCP (pages.webmcp): whether Runtime is on and which context may report tools (webmcp.ts). */
  webmcp?: WebMcpState | undefined;
}

/** Protocol errors meaning the frame's document (or the frame) is gone. */
export const GONE_CONTEXT =
  /Cannot find context|Execution context was destroyed|No frame for given id|Frame .*not found|Inspected target navigated or closed|Target closed|Session with given id not found|No frame with given id/i;

export const NOT_ATTACHED = /Not attached to an active page/i;

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A stateless host's tab ids: positive 31-bit integers. */
export const TAB_ID_MAX = 0x7fffffff;

/** An id in 1..max from a CDP id (a target's, a frame's): the same from every connection to the browser. */
export function stableId(text: string, max: number): number {
  return (readUint32(sha256(utf8Bytes(text)), 0) % max) + 1;
}

export class CdpCore {
  readonly tabs = new Map<string, Tab>();
  readonly byTabId = new Map<number, Tab>();
  /** Tab ids that existed and are gone: calls on them fail with no_such_tab, not not_agent_tab. */
  readonly retired = new Set<number>();
  /** Targets created through tabs.open (attached browsers: these and their descendants are the agent's). */
  readonly created = new Set<string>();
  readonly creating = new Set<Promise<unknown>>();
  /** Every iframe / worker session -> its tab. */
  readonly children = new Map<string, Tab>();
  readonly tabListeners = new Map<string, Set<(tab: Tab) => void>>();
  nextTabId = 1;
  closed = false;
  connecting = true;

  /** Calls in flight (the driver's own, and those a broker call is composed of). */
  readonly calls: PendingCalls;
  readonly status = new DocumentStatus();
  readonly tabView = new TabView();

  constructor(
    readonly client: CdpClient,
    readonly info: BrowserInfo,
    readonly options: CdpBrowserOptions,
  ) {
    this.calls = new PendingCalls(info);
  }

  /** Every page of the browser is the agent's: a browser tabrelay launched, or a stateless host's. */
  get allPagesAgents(): boolean {
    return this.options.ownsBrowser || this.options.stateless === true;
  }

  /**
   * A new tab's id: counted up from 1, or for a stateless host derived from the target's id, so that the next
   * connection (another request, another instance) gives the tab the same id. A collision with another tab of this
   * connection moves to the next free id.
   */
  newTabId(targetId: string): number {
    if (!this.options.stateless) return this.nextTabId++;
    let id = stableId(targetId, TAB_ID_MAX);
    while (this.byTabId.has(id) || this.retired.has(id)) id = (id % TAB_ID_MAX) + 1;
    return id;
  }

  /** The agent tab a target belongs to: a page, or an out-of-process iframe in it (popups name either). */
  tabOf(targetId: string): Tab | undefined {
    const tab = this.tabs.get(targetId);
    if (tab) return tab;
    for (const candidate of this.tabs.values()) if (candidate.oopifs.has(targetId)) return candidate;
    return undefined;
  }

  retire(tab: Tab): void {
    this.touch(tab, () => (tab.gone = true));
    this.tabs.delete(tab.targetId);
    this.byTabId.delete(tab.tabId);
    this.retired.add(tab.tabId);
    for (const [sessionId, owner] of this.children) if (owner === tab) this.children.delete(sessionId);
  }

  /** Applies a change to a tab and wakes whoever waits on it. */
  touch(tab: Tab, change: () => void): void {
    change();
    const waiters = [...tab.waiters];
    tab.waiters.clear();
    for (const wake of waiters) wake();
  }

  changed(tab: Tab, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        tab.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      tab.waiters.add(wake);
    });
  }

  /** Resolves with the tab once the target is indexed (it may attach before createTarget answers). */
  whenTab(targetId: string, timeoutMs: number): Promise<Tab | undefined> {
    const known = this.tabs.get(targetId);
    if (known) return Promise.resolve(known);
    return new Promise((resolve) => {
      const listeners = this.tabListeners.get(targetId) ?? new Set<(tab: Tab) => void>();
      const done = (tab: Tab | undefined) => {
        clearTimeout(timer);
        listeners.delete(done);
        resolve(tab);
      };
      const timer = setTimeout(() => {
        done(undefined);
        if (listeners.size === 0) this.tabListeners.delete(targetId);
      }, timeoutMs);
      listeners.add(done);
      this.tabListeners.set(targetId, listeners);
    });
  }

  emit(frame: BridgeEvent): void {
    if (this.closed) return;
    this.status.observe(frame);
    this.tabView.observe(frame);
    try {
      this.options.onEvent(frame);
    } catch {
      // the broker's listener owns its errors
    }
  }

  markClosed(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.calls.close();
    for (const tab of this.tabs.values()) this.touch(tab, () => undefined);
    try {
      this.options.onClose?.(reason);
    } catch {
      // the caller's listener owns its errors
    }
  }

  disconnected(): { ok: false; error: WireError } {
    return disconnected(this.info);
  }

  wireError(error: unknown): WireError {
    if (this.closed) return this.disconnected().error;
    if (error instanceof DriverError) return { code: error.code, message: error.message, ...(error.tabId !== undefined ? { tabId: error.tabId } : {}) };
    return { code: "internal", message: error instanceof Error ? error.message : String(error) };
  }

  failure(error: CdpFailure, gone: ErrorCode = "no_such_tab"): DriverError {
    switch (error.kind) {
      case "disconnected":
        return new DriverError("browser_disconnected", this.disconnected().error.message);
      case "timeout":
        return new DriverError("timeout", error.message);
      case "too_large":
        return new DriverError("frame_too_large", `${error.message}; this page's answer is too large to carry`);
      case "detached":
        return new DriverError(
          gone,
          gone === "stale_ref"
            ? "the frame navigated or went away since the snapshot; call snapshot again"
            : "the tab went away during the call; call list_tabs",
        );
      case "protocol":
        if (GONE_CONTEXT.test(error.message)) {
          return new DriverError(
            gone,
            gone === "stale_ref"
              ? "the frame navigated or went away since the snapshot; call snapshot again"
              : `the tab went away during the call (${error.message})`,
          );
        }
        return new DriverError("internal", error.message);
    }
  }

  /**
   * A CDP call on a session. During a cross-process navigation the page's session briefly answers "Not
   * attached to an active page"; such calls are retried for up to a second.
   */
  async send<M extends CdpMethod>(method: M, params: CdpParams<M>, sessionId?: string, timeoutMs?: number): Promise<CdpResult<CdpReturn<M>>> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.client.send(method, params, sessionId, timeoutMs !== undefined ? { timeoutMs } : {});
      if (result.ok || result.error.kind !== "protocol" || !NOT_ATTACHED.test(result.error.message) || attempt >= 10) return result;
      await sleep(100);
    }
  }

  async must<M extends CdpMethod>(
    method: M,
    params: CdpParams<M>,
    sessionId?: string,
    options: { timeoutMs?: number; gone?: ErrorCode } = {},
  ): Promise<CdpReturn<M>> {
    const result = await this.send(method, params, sessionId, options.timeoutMs);
    if (!result.ok) throw this.failure(result.error, options.gone);
    return result.value;
  }

  async agentTab(tabId: number): Promise<Tab & { sessionId: string }> {
    const tab = this.byTabId.get(tabId);
    if (!tab) {
      // Every page is a stateless host's: an id it does not know is a tab closed since (maybe by another connection).
      if (this.retired.has(tabId) || this.options.stateless) throw new DriverError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
      throw new DriverError("not_agent_tab", `tab ${tabId} is not one of the agent's tabs; list_tabs shows the tabs the agent may use`);
    }
    await tab.ready;
    const sessionId = tab.sessionId;
    if (tab.gone || sessionId === undefined) throw new DriverError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
    return Object.assign(tab, { sessionId });
  }

  quickInfo(tab: Tab): TabInfo {
    return {
      tabId: tab.tabId,
      windowId: tab.windowId,
      url: tab.url,
      title: tab.title,
      active: false,
      status: tab.loaded ? "complete" : "loading",
      shared: false,
    };
  }

  /** Every frame of the tab with the session that can reach it: the page's, or an out-of-process iframe's. */
  async frames(tab: Tab & { sessionId: string }): Promise<FrameRoute[]> {
    const routes = new Map<string, FrameRoute>();
    const walk = (node: Protocol.Page.FrameTree, sessionId: string) => {
      const { id: frameId, parentId } = node.frame;
      routes.set(frameId, { frameId, parentId, sessionId });
      for (const child of node.childFrames ?? []) walk(child, sessionId);
    };
    walk((await this.must("Page.getFrameTree", {}, tab.sessionId)).frameTree, tab.sessionId);
    const remote = await Promise.all(
      [...tab.oopifs.values()].map(async (sessionId) => ({ sessionId, tree: await this.send("Page.getFrameTree", {}, sessionId) })),
    );
    for (const { sessionId, tree } of remote) if (tree.ok) walk(tree.value.frameTree, sessionId);
    return [...routes.values()];
  }
}

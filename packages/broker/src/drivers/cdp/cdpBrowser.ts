// The CDP driver: serves every BridgeMethod by speaking Chromium's DevTools protocol directly, and behaves
// like the extension from the broker's point of view (same results, error codes, events, agent-tabs rule).
//
// - Agent tabs: in a browser we launched (ownsBrowser) every page target is the agent's; in a browser we
//   attached to, only tabs created through this driver and the tabs those opened (transitively).
// - Page access goes through the same in-page script as the extension (packages/extension/dist/inpage.js),
//   installed in an isolated world named "tabrelay" per frame, so page scripts cannot see or tamper with it.
//   Over CDP there is no chrome.dom.openOrClosedShadowRoot: before a snapshot the driver asks the script for
//   the custom elements whose root it cannot see, reads their closed roots with DOM.describeNode, resolves
//   them into the isolated world and hands them to the script, which then walks (and acts in) them.
// - Network policy (requestPolicy): Fetch interception on every page, iframe and worker session fails the
//   requests the callback refuses with BlockedByClient, before they are sent. Navigation requests (documents
//   of the top frame and of frames, every redirect hop) are asked as "navigation", everything else as
//   "subresource"; a stopped navigation of an agent tab is reported as a tab.blocked event. Not covered:
//   service workers' own fetches and responses a service worker serves from its cache.
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import {
  CONTENT_MAX_CHARS,
  CONTENT_MAX_ELEMENTS,
  ERROR_CODES,
  FRAME_HTML_BUDGET,
  MAX_CONTENT_FRAMES,
  MAX_FRAME_BYTES,
  type BridgeEvent,
  type BridgeMethod,
  type CaptureParams,
  type CaptureResult,
  type ElementFacts,
  type ErrorCode,
  type FrameContent,
  type FrameSnapshot,
  type HiddenReason,
  type PageContent,
  type ParamsOf,
  type Result,
  type ResultOf,
  type TabInfo,
  type WaitUntil,
  type WireError,
} from "@tabrelay/protocol";
import type { Protocol } from "devtools-protocol";
import { z } from "zod";
import { assetPaths } from "../../assets.js";
import type { BrowserDriver, BrowserInfo, CallOptions } from "../../bridge/registry.js";
import { TabrelayError } from "../../util/errors.js";
import { CdpClient, type CdpFailure, type CdpMethod, type CdpParams, type CdpResult, type CdpReturn } from "./cdpClient.js";
import { reachFactsShape } from "../elementFactsSchema.js";

export interface CdpBrowserOptions {
  label: string;
  /** True for a browser tabrelay launched: all its tabs are the agent's, and close() shuts it down. */
  ownsBrowser: boolean;
  onEvent: (frame: BridgeEvent) => void;
  /** Network-layer policy: requests whose URL this refuses fail with BlockedByClient (subresources too). */
  requestPolicy?: (url: string, kind: "navigation" | "subresource") => boolean;
  callTimeoutMs: number;
  /** Called once when the driver closes, whether the browser went away or close() was called. */
  onClose?: (reason: string) => void;
}

/** What Runtime.evaluate and Runtime.callFunctionOn answer. */
type RemoteAnswer = Protocol.Runtime.EvaluateResponse;

/** An action whose document unloaded while the page ran it: it happened, and it navigated. */
class ActInterrupted extends Error {}

class DriverError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

type Handlers = { [M in BridgeMethod]: (params: ParamsOf<M>) => Promise<ResultOf<M>> };

interface FrameRoute {
  frameId: string;
  parentId: string | undefined;
  sessionId: string;
}

interface Tab {
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
  /** Out-of-process iframes: frame id -> session id. */
  oopifs: Map<string, string>;
  waiters: Set<() => void>;
  /** The URL of a document response stopped because the browser would have saved it as a file. */
  blockedDownload?: string | undefined;
  /** The tab's visibility as last read from the page (#visible). */
  lastVisible?: boolean | undefined;
  /** The last top-frame navigation request the request policy stopped: its error page is a landing, not a load failure. */
  blockedNavigation?: { url: string; at: number } | undefined;
  /** The last top-document response seen (Fetch's response stage). */
  documentStatus?: { loaderId: string; status: number } | undefined;
  /** A top-document response whose document has not committed yet. */
  pendingStatus?: { url: string; status: number } | undefined;
}

/** Every request passes the request policy; top documents are paused again at their response (downloads). */
const PAGE_FETCH_PATTERNS: Protocol.Fetch.RequestPattern[] = [{ urlPattern: "*" }, { urlPattern: "*", resourceType: "Document", requestStage: "Response" }];

/** MIME types a browser shows rather than saves (beyond text/*, image/*, audio/*, video/*). */
const SHOWN_TYPES = /^(application\/(json|xml|xhtml\+xml|pdf|javascript|x-javascript|ecmascript|[\w.+-]+\+(xml|json))|message\/rfc822|multipart\/(x-mixed-replace|related))$/;

/** Whether a document response would be saved as a file: `Content-Disposition: attachment`, or a type no tab shows. */
function isDownloadResponse(headers: Protocol.Fetch.HeaderEntry[] = []): boolean {
  const header = (name: string) => headers.find((h) => h.name.toLowerCase() === name)?.value;
  if (/^\s*attachment\b/i.test(header("content-disposition") ?? "")) return true;
  const type = (header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "") return false; // sniffed: usually shown
  return !(/^(text|image|audio|video)\//.test(type) || SHOWN_TYPES.test(type));
}

const WORLD_NAME = "tabrelay";
const MAX_SCREENSHOT_HEIGHT = 16_384;
const NOT_INSTALLED = "not-installed";
const INPAGE_PATH = assetPaths.inpageScript;

const CALL_INPAGE = `function (name, args) {
  const api = globalThis.__tabrelayInpage;
  return api ? api[name](args) : ${JSON.stringify(NOT_INSTALLED)};
}`;
const CLOSED_ROOT_CANDIDATES = `function () {
  const api = globalThis.__tabrelayInpage;
  return api && typeof api.closedRootCandidates === "function" ? api.closedRootCandidates() : ${JSON.stringify(NOT_INSTALLED)};
}`;
const ADOPT_SHADOW_ROOTS = `function (hosts, ...roots) {
  return globalThis.__tabrelayInpage.adoptShadowRoots(hosts, roots);
}`;
/**
 * Rounds of closed-root discovery per snapshot: each offers up to the script's candidate cap (200) and reaches
 * one more level of nested closed roots. A time budget bounds a snapshot's share: what is left waits for the
 * next snapshot, which the script resumes where this one stopped.
 */
const MAX_SHADOW_ROUNDS = 8;
const SHADOW_BUDGET_MS = 1_000;
/** DOM.describeNode calls in flight at once. */
const SHADOW_BATCH = 50;
/** A document's HTML with what a person cannot see marked, through the in-page script (inpage content()). */
const READ_DOCUMENT = `function (limits) {
  const api = globalThis.__tabrelayInpage;
  return api && typeof api.content === "function" ? api.content(limits) : ${JSON.stringify(NOT_INSTALLED)};
}`;
const OWNER_OFFSET = `function () {
  const r = this.getBoundingClientRect();
  const s = getComputedStyle(this);
  return { x: r.left + this.clientLeft + (parseFloat(s.paddingLeft) || 0), y: r.top + this.clientTop + (parseFloat(s.paddingTop) || 0) };
}`;

/** How long tabs.list and tabs.get wait for a page to say whether it is visible before using its last answer. */
const VISIBILITY_WAIT_MS = 200;

/** Schemes Chrome does not let extensions script; the extension fails on them, so this driver does too. */
const RESTRICTED = /^(chrome|chrome-extension|chrome-untrusted|chrome-search|chrome-error|devtools|view-source|edge):/i;
const WEB_STORE = /^https:\/\/(chromewebstore\.google\.com|chrome\.google\.com\/webstore)(\/|$)/i;
/** Protocol errors meaning the frame's document (or the frame) is gone. */
const GONE_CONTEXT = /Cannot find context|Execution context was destroyed|No frame for given id|Frame .*not found|Inspected target navigated or closed|Target closed|Session with given id not found|No frame with given id/i;
const NOT_ATTACHED = /Not attached to an active page/i;

const HIDDEN_REASONS = ["display", "visibility", "opacity", "size", "offscreen", "clipped", "inert", "aria-hidden", "detached"] as const satisfies readonly HiddenReason[];

// ---- parsing boundary: what the in-page script and the browser answer ---------------------------

const inpageEnvelope = z.union([
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
]);
const snapshotNode = z.object({
  ref: z.string().optional(),
  role: z.string(),
  name: z.string(),
  depth: z.number(),
  value: z.string().optional(),
  states: z.array(z.string()).optional(),
  level: z.number().optional(),
  offscreen: z.boolean().optional(),
  hidden: z.boolean().optional(),
});
const snapshotValue = z.object({ url: z.string(), title: z.string(), nodes: z.string(), elapsedMs: z.number().optional(), capped: z.boolean().optional() });
const elementFacts = z.object({
  ref: z.string(),
  role: z.string(),
  name: z.string(),
  visibleText: z.string(),
  tag: z.string(),
  inputType: z.string().optional(),
  disabled: z.boolean(),
  editable: z.boolean(),
  hidden: z.enum(HIDDEN_REASONS).optional(),
  coveredBy: z.string().optional(),
  attributeText: z.string(),
  frameUrl: z.string(),
  ...reachFactsShape,
});
const actValue = z.object({ facts: elementFacts, effects: z.array(z.string()) });
const waitValue = z.object({ matched: z.string(), elapsedMs: z.number() });
const rectValue = z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() });
const pointValue = z.object({ x: z.number(), y: z.number() });
const documentValue = z.object({
  ok: z.literal(true),
  value: z.object({
    url: z.string(),
    origin: z.string(),
    title: z.string(),
    html: z.string(),
    capped: z.object({ elements: z.number().optional(), chars: z.number().optional() }).optional(),
  }),
});

/** A response's URL and the document's URL compare without the fragment (responses never carry one). */
function withoutFragment(url: string): string {
  return url.split("#")[0] ?? url;
}

function errorCode(code: string): ErrorCode {
  return ERROR_CODES.find((c) => c === code) ?? "internal";
}

/** Width and height from a PNG's IHDR chunk (signature, length, "IHDR", width, height). */
function pngSize(base64: string): { width: number; height: number } | undefined {
  const head = Buffer.from(base64.slice(0, 44), "base64");
  if (head.length < 24 || head.readUInt32BE(0) !== 0x89504e47 || head.toString("latin1", 12, 16) !== "IHDR") return undefined;
  return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
}

let inpageSource: Promise<string | undefined> | undefined;

/** The bundled in-page script, read once. */
function loadInpage(): Promise<string | undefined> {
  inpageSource ??= readFile(INPAGE_PATH, "utf8").catch(() => {
    inpageSource = undefined;
    return undefined;
  });
  return inpageSource;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---- the driver -------------------------------------------------------------------------------

export class CdpBrowser implements BrowserDriver {
  readonly info: BrowserInfo;
  readonly #client: CdpClient;
  readonly #options: CdpBrowserOptions;
  readonly #tabs = new Map<string, Tab>();
  readonly #byTabId = new Map<number, Tab>();
  /** Tab ids that existed and are gone: calls on them fail with no_such_tab, not not_agent_tab. */
  readonly #retired = new Set<number>();
  /** Targets created through tabs.open (attached browsers: these and their descendants are the agent's). */
  readonly #created = new Set<string>();
  readonly #creating = new Set<Promise<unknown>>();
  /** Every iframe / worker session -> its tab. */
  readonly #children = new Map<string, Tab>();
  readonly #tabListeners = new Map<string, Set<(tab: Tab) => void>>();
  readonly #pendingCalls = new Set<() => void>();
  #nextTabId = 1;
  #closed = false;
  #connecting = true;

  private constructor(client: CdpClient, info: BrowserInfo, options: CdpBrowserOptions) {
    this.#client = client;
    this.info = info;
    this.#options = options;
  }

  /**
   * Connects to a browser's DevTools endpoint (ws://.../devtools/browser/...). Throws a TabrelayError
   * (not_connected) when it cannot; the message never contains the endpoint.
   */
  static async connect(endpoint: string, opts: CdpBrowserOptions): Promise<CdpBrowser> {
    const connected = await CdpClient.connect(endpoint, { timeoutMs: opts.callTimeoutMs });
    if (!connected.ok) throw new TabrelayError("not_connected", connected.error.message);
    const client = connected.value;
    const version = await client.send("Browser.getVersion", {});
    if (!version.ok) {
      client.close();
      throw new TabrelayError("not_connected", `the DevTools endpoint did not answer Browser.getVersion: ${version.error.message}`);
    }
    const info: BrowserInfo = {
      browserId: `cdp-${randomUUID()}`,
      label: opts.label,
      userAgent: version.value.userAgent,
      extensionVersion: `cdp ${version.value.product}`,
      connectedAt: Date.now(),
      kind: "cdp",
    };
    // Read-only means nothing lands on disk either. A browser of tabrelay's own refuses every download (the
    // navigation reports "started a download"); in an attached browser, the user's, downloads keep their
    // usual handling and only those started in the agent's tabs are cancelled (see #start).
    await client.send("Browser.setDownloadBehavior", opts.ownsBrowser ? { behavior: "deny" } : { behavior: "default", eventsEnabled: true });
    const browser = new CdpBrowser(client, info, opts);
    const started = await browser.#start();
    if (!started.ok) {
      browser.close("start-up failed");
      throw new TabrelayError("not_connected", started.error.message);
    }
    return browser;
  }

  get closed(): boolean {
    return this.#closed;
  }

  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options: CallOptions = {}): Promise<Result<ResultOf<M>>> {
    if (this.#closed) return Promise.resolve(this.#disconnected());
    const timeoutMs = options.timeoutMs ?? this.#options.callTimeoutMs;
    return new Promise<Result<ResultOf<M>>>((resolve) => {
      let done = false;
      const settle = (result: Result<ResultOf<M>>) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.#pendingCalls.delete(onDisconnect);
        options.signal?.removeEventListener("abort", onAbort);
        resolve(result);
      };
      const onDisconnect = () => settle(this.#disconnected());
      const onAbort = () => settle({ ok: false, error: { code: "timeout", message: `${method} was cancelled by the client` } });
      const timer = setTimeout(() => settle({ ok: false, error: { code: "timeout", message: `the browser did not answer ${method} within ${timeoutMs} ms` } }), timeoutMs);
      if (options.signal?.aborted) {
        onAbort();
        return;
      }
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pendingCalls.add(onDisconnect);
      this.#dispatch(method, params).then(
        (value) => settle(this.#sized(method, value)),
        (error: unknown) => settle({ ok: false, error: this.#wireError(error) }),
      );
    });
  }

  /** Ends the connection: a browser we launched is shut down (Browser.close); an attached one keeps running. */
  close(reason: string): void {
    if (this.#closed) return;
    this.#markClosed(reason);
    if (this.#options.ownsBrowser) {
      void this.#client.send("Browser.close", {}, undefined, { timeoutMs: 3000 }).then(() => this.#client.close(reason));
    } else {
      // Closing the socket detaches every session; the browser and its tabs stay as they are.
      this.#client.close(reason);
    }
  }

  // ---- start-up and target bookkeeping ------------------------------------------------------------

  async #start(): Promise<CdpResult<void>> {
    const client = this.#client;
    client.onClose((reason) => this.#markClosed(`the browser's DevTools connection closed (${reason})`));
    client.on("Target.attachedToTarget", (params) => void this.#onPageAttached(params));
    client.on("Target.targetInfoChanged", (params) => this.#onTargetInfo(params.targetInfo));
    client.on("Target.targetDestroyed", (params) => this.#onTargetGone(params.targetId));
    client.on("Target.detachedFromTarget", ({ sessionId }) => {
      for (const tab of this.#tabs.values()) if (tab.sessionId === sessionId) tab.sessionId = undefined;
    });
    client.on("Browser.downloadWillBegin", (params) => void this.#onDownload(params));
    const discover = await client.send("Target.setDiscoverTargets", { discover: true, filter: [{ type: "page" }] });
    if (!discover.ok) return discover;
    // Browser-level auto-attach pauses every new page until we resume it, so Fetch interception and the
    // event listeners are in place before its first request. Existing pages are attached too.
    const attach = await client.send("Target.setAutoAttach", { autoAttach: true, flatten: true, waitForDebuggerOnStart: true, filter: [{ type: "page" }] });
    if (!attach.ok) return attach;
    // Existing pages were attached during setAutoAttach; let their set-up finish so tabs.list is complete.
    await sleep(50);
    await Promise.race([Promise.all([...this.#tabs.values()].map((t) => t.ready)), sleep(5000)]);
    this.#connecting = false;
    return { ok: true, value: undefined };
  }

  /** A download started in any frame of an agent tab is cancelled (in a browser of our own it is refused anyway). */
  async #onDownload({ frameId, guid }: Protocol.Browser.DownloadWillBeginEvent): Promise<void> {
    if (!frameId || !guid) return;
    for (const tab of this.#tabs.values()) {
      let ours = tab.targetId === frameId || tab.mainFrameId === frameId;
      if (!ours && tab.sessionId !== undefined) {
        const routes = await this.#frames(Object.assign(tab, { sessionId: tab.sessionId })).catch(() => []);
        ours = routes.some((route) => route.frameId === frameId);
      }
      if (ours) {
        await this.#send("Browser.cancelDownload", { guid });
        return;
      }
    }
  }

  async #isAgentTarget(targetId: string, openerId: string | undefined): Promise<boolean> {
    if (this.#options.ownsBrowser) return true;
    if (openerId !== undefined && this.#tabOf(openerId)) return true;
    // A target we are creating may be attached before Target.createTarget answers.
    while (this.#creating.size > 0 && !this.#created.has(targetId)) await Promise.allSettled([...this.#creating]);
    return this.#created.has(targetId);
  }

  async #onPageAttached({ sessionId, targetInfo, waitingForDebugger: waiting }: Protocol.Target.AttachedToTargetEvent): Promise<void> {
    const { targetId, openerId } = targetInfo;
    if (!sessionId || !targetId) return;
    const agent = targetInfo.type === "page" && !this.#tabs.has(targetId) && (await this.#isAgentTarget(targetId, openerId));
    if (!agent || this.#closed) {
      // Not the agent's (a user's tab in an attached browser): let it run and let go of it.
      if (waiting) await this.#client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
      await this.#client.send("Target.detachFromTarget", { sessionId });
      return;
    }
    const opener = openerId === undefined ? undefined : this.#tabOf(openerId);
    const tab = this.#newTab(targetId, sessionId, opener?.tabId, targetInfo);
    // Pages opened by other means than tabs.open (a page's window.open, a link with target=_blank, or a
    // person in a launched browser) are announced before they run, so the broker polices them like the
    // extension's tabs.
    const announce = !this.#created.has(targetId) && !this.#connecting;
    tab.ready = this.#setUpPage(tab, sessionId, waiting, () => {
      if (announce && !tab.gone) {
        this.#emit({ type: "event", event: "tab.created", params: { tab: this.#quickInfo(tab), ...(tab.openerTabId !== undefined ? { openerTabId: tab.openerTabId } : {}) } });
      }
    });
    // Indexed in the same tick as its set-up starts: whoever finds the tab also finds its `ready`.
    this.#index(tab);
    await tab.ready;
  }

  /** The agent tab a target belongs to: a page, or an out-of-process iframe in it (popups name either). */
  #tabOf(targetId: string): Tab | undefined {
    const tab = this.#tabs.get(targetId);
    if (tab) return tab;
    for (const candidate of this.#tabs.values()) if (candidate.oopifs.has(targetId)) return candidate;
    return undefined;
  }

  #newTab(targetId: string, sessionId: string, openerTabId: number | undefined, targetInfo: Protocol.Target.TargetInfo): Tab {
    return {
      targetId,
      tabId: this.#nextTabId++,
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
      oopifs: new Map(),
      waiters: new Set(),
    };
  }

  #index(tab: Tab): void {
    this.#tabs.set(tab.targetId, tab);
    this.#byTabId.set(tab.tabId, tab);
    const listeners = this.#tabListeners.get(tab.targetId);
    this.#tabListeners.delete(tab.targetId);
    for (const listener of listeners ?? []) listener(tab);
  }

  /** Subscribes to the page's events, enables what is needed, then lets the page run. */
  async #setUpPage(tab: Tab, sessionId: string, waiting: boolean, beforeResume: () => void): Promise<void> {
    const client = this.#client;
    client.on("Page.frameNavigated", (p) => this.#onFrameNavigated(tab, p), sessionId);
    client.on("Page.navigatedWithinDocument", (p) => this.#onSameDocument(tab, p), sessionId);
    client.on("Page.lifecycleEvent", (p) => this.#onLifecycle(tab, p), sessionId);
    client.on("Page.frameStoppedLoading", (p) => {
      if (p.frameId === tab.mainFrameId) this.#touch(tab, () => (tab.loaded = true));
    }, sessionId);
    // alert(), confirm() and prompt() stop the page's scripts, and ours with them, until answered: nobody is
    // at an agent tab to answer, so they are dismissed at once (confirm and prompt as "Cancel"); a
    // beforeunload prompt lets the agent leave the page.
    client.on("Page.javascriptDialogOpening", (p) => {
      const accept = p.type === "alert" || p.type === "beforeunload";
      void this.#send("Page.handleJavaScriptDialog", { accept }, sessionId);
    }, sessionId);
    this.#watchChildren(tab, sessionId);
    try {
      await Promise.all([
        this.#send("Page.enable", {}, sessionId),
        this.#options.requestPolicy ? this.#send("Fetch.enable", { patterns: PAGE_FETCH_PATTERNS }, sessionId) : undefined,
        this.#autoAttachChildren(sessionId),
      ]);
      const tree = await this.#send("Page.getFrameTree", {}, sessionId);
      if (tree.ok) {
        const frame = tree.value.frameTree.frame;
        tab.mainFrameId = frame.id;
        if (tab.generation === 0 && !tab.loaderId) tab.loaderId = frame.loaderId;
      }
      // Enabled after the frame tree is known: Chrome replays the current document's lifecycle, so an
      // already loaded page is seen as loaded.
      await this.#send("Page.setLifecycleEventsEnabled", { enabled: true }, sessionId);
      const window = await this.#send("Browser.getWindowForTarget", { targetId: tab.targetId });
      if (window.ok) tab.windowId = window.value.windowId;
    } finally {
      beforeResume();
      if (waiting) await client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
    }
  }

  /** Out-of-process iframes (and, under a request policy, workers) attach to the page's session. */
  #autoAttachChildren(sessionId: string): Promise<CdpResult<void>> {
    const policy = this.#options.requestPolicy !== undefined;
    // With a request policy, children wait for us so Fetch is on before their first request.
    return this.#send(
      "Target.setAutoAttach",
      { autoAttach: true, flatten: true, waitForDebuggerOnStart: policy, filter: policy ? [{ type: "iframe" }, { type: "worker" }] : [{ type: "iframe" }] },
      sessionId,
    );
  }

  #watchChildren(tab: Tab, parentSessionId: string): void {
    const client = this.#client;
    const policy = this.#options.requestPolicy;
    if (policy) client.on("Fetch.requestPaused", (p) => this.#onRequestPaused(p, parentSessionId, tab), parentSessionId);
    client.on("Target.attachedToTarget", (p) => void this.#onChildAttached(tab, p), parentSessionId);
    client.on("Target.detachedFromTarget", ({ sessionId, targetId }) => {
      if (!sessionId) return;
      this.#children.delete(sessionId);
      if (targetId && tab.oopifs.get(targetId) === sessionId) tab.oopifs.delete(targetId);
    }, parentSessionId);
  }

  async #onChildAttached(tab: Tab, { sessionId, targetInfo, waitingForDebugger: waiting }: Protocol.Target.AttachedToTargetEvent): Promise<void> {
    const targetId = targetInfo.targetId;
    if (!sessionId || !targetId) return;
    this.#children.set(sessionId, tab);
    try {
      if (targetInfo.type === "iframe") {
        tab.oopifs.set(targetId, sessionId);
        this.#watchChildren(tab, sessionId);
        await Promise.all([
          this.#options.requestPolicy ? this.#send("Fetch.enable", { patterns: PAGE_FETCH_PATTERNS }, sessionId) : undefined,
          this.#autoAttachChildren(sessionId),
        ]);
      } else if (this.#options.requestPolicy) {
        this.#client.on("Fetch.requestPaused", (p) => this.#onRequestPaused(p, sessionId), sessionId);
        await this.#send("Fetch.enable", { patterns: [{ urlPattern: "*" }] }, sessionId);
      }
    } finally {
      if (waiting) await this.#client.send("Runtime.runIfWaitingForDebugger", {}, sessionId);
    }
  }

  #onRequestPaused(params: Protocol.Fetch.RequestPausedEvent, sessionId: string, tab?: Tab): void {
    const { requestId, frameId } = params;
    const url = params.request.url;
    if (!requestId) return;
    if (params.responseStatusCode !== undefined || params.responseErrorReason !== undefined) {
      // A document's response, before the browser acts on it: one the browser would save as a file is
      // stopped here, so nothing lands on the user's disk, in an attached browser too.
      const status = params.responseStatusCode ?? 0;
      // Held until its document commits (#onFrameNavigated), so it is only ever shown for that document.
      if (tab && frameId === tab.mainFrameId && status > 0) tab.pendingStatus = { url: withoutFragment(url), status };
      if (tab && status >= 200 && status < 300 && isDownloadResponse(params.responseHeaders)) {
        if (frameId === tab.mainFrameId) tab.blockedDownload = url;
        void this.#client.send("Fetch.failRequest", { requestId, errorReason: "BlockedByClient" }, sessionId);
      } else {
        void this.#client.send("Fetch.continueRequest", { requestId }, sessionId);
      }
      return;
    }
    const navigation = params.resourceType === "Document";
    let allowed = false;
    try {
      allowed = this.#options.requestPolicy?.(url, navigation ? "navigation" : "subresource") === true;
    } catch {
      // A policy that fails denies.
    }
    if (allowed) {
      void this.#client.send("Fetch.continueRequest", { requestId }, sessionId);
      return;
    }
    void this.#client.send("Fetch.failRequest", { requestId, errorReason: "BlockedByClient" }, sessionId);
    const owner = tab ?? this.#children.get(sessionId);
    if (navigation && owner) {
      const frame = frameId !== owner.mainFrameId;
      if (!frame) owner.blockedNavigation = { url, at: Date.now() };
      this.#emit({ type: "event", event: "tab.blocked", params: { tabId: owner.tabId, url, frame } });
    }
  }

  #onFrameNavigated(tab: Tab, params: Protocol.Page.FrameNavigatedEvent): void {
    const frame = params.frame;
    if (frame.parentId !== undefined) return;
    const { url, loaderId, unreachableUrl: unreachable } = frame;
    const first = tab.generation === 0;
    // A document that committed without a response seen for it (bfcache, a service worker) has no status.
    const pending = tab.pendingStatus;
    tab.pendingStatus = undefined;
    tab.documentStatus = pending && pending.url === withoutFragment(url) ? { loaderId, status: pending.status } : undefined;
    this.#touch(tab, () => {
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
    });
    this.#emit({ type: "event", event: "tab.committed", params: { tabId: tab.tabId, url, ...(first && tab.openerTabId !== undefined ? { openerTabId: tab.openerTabId } : {}) } });
  }

  #onSameDocument(tab: Tab, { frameId, url }: Protocol.Page.NavigatedWithinDocumentEvent): void {
    if (frameId !== tab.mainFrameId) return;
    this.#touch(tab, () => {
      tab.generation++;
      if (url) {
        tab.url = url;
        tab.docUrl = url;
      }
    });
  }

  #onLifecycle(tab: Tab, { frameId, loaderId, name }: Protocol.Page.LifecycleEventEvent): void {
    if (frameId !== tab.mainFrameId) return;
    if (!tab.loaderId) tab.loaderId = loaderId;
    if (name === "load" && loaderId === tab.loaderId) this.#touch(tab, () => (tab.loaded = true));
  }

  #onTargetInfo({ targetId, title, url }: Protocol.Target.TargetInfo): void {
    const tab = this.#tabs.get(targetId);
    if (!tab) return;
    this.#touch(tab, () => {
      if (title !== undefined) tab.title = title;
      if (url) tab.url = url;
    });
  }

  #onTargetGone(targetId: string): void {
    const tab = this.#tabs.get(targetId);
    if (!tab) return;
    this.#retire(tab);
    if (!tab.closedByUs) this.#emit({ type: "event", event: "tab.removed", params: { tabId: tab.tabId } });
  }

  #retire(tab: Tab): void {
    this.#touch(tab, () => (tab.gone = true));
    this.#tabs.delete(tab.targetId);
    this.#byTabId.delete(tab.tabId);
    this.#retired.add(tab.tabId);
    for (const [sessionId, owner] of this.#children) if (owner === tab) this.#children.delete(sessionId);
  }

  /** Applies a change to a tab and wakes whoever waits on it. */
  #touch(tab: Tab, change: () => void): void {
    change();
    const waiters = [...tab.waiters];
    tab.waiters.clear();
    for (const wake of waiters) wake();
  }

  #changed(tab: Tab, ms: number): Promise<void> {
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
  #whenTab(targetId: string, timeoutMs: number): Promise<Tab | undefined> {
    const known = this.#tabs.get(targetId);
    if (known) return Promise.resolve(known);
    return new Promise((resolve) => {
      const listeners = this.#tabListeners.get(targetId) ?? new Set<(tab: Tab) => void>();
      const done = (tab: Tab | undefined) => {
        clearTimeout(timer);
        listeners.delete(done);
        resolve(tab);
      };
      const timer = setTimeout(() => {
        done(undefined);
        if (listeners.size === 0) this.#tabListeners.delete(targetId);
      }, timeoutMs);
      listeners.add(done);
      this.#tabListeners.set(targetId, listeners);
    });
  }

  #emit(frame: BridgeEvent): void {
    if (this.#closed) return;
    try {
      this.#options.onEvent(frame);
    } catch {
      // the broker's listener owns its errors
    }
  }

  #markClosed(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fail of [...this.#pendingCalls]) fail();
    this.#pendingCalls.clear();
    for (const tab of this.#tabs.values()) this.#touch(tab, () => undefined);
    try {
      this.#options.onClose?.(reason);
    } catch {
      // the caller's listener owns its errors
    }
  }

  // ---- errors ----------------------------------------------------------------------------------

  #disconnected(): { ok: false; error: WireError } {
    return {
      ok: false,
      error: {
        code: "browser_disconnected",
        message: `browser "${this.info.label}" (${this.info.browserId}) disconnected before answering; check that it is running, then call list_browsers and retry`,
      },
    };
  }

  #wireError(error: unknown): WireError {
    if (this.#closed) return this.#disconnected().error;
    if (error instanceof DriverError) return { code: error.code, message: error.message };
    return { code: "internal", message: error instanceof Error ? error.message : String(error) };
  }

  #failure(error: CdpFailure, gone: ErrorCode = "no_such_tab"): DriverError {
    switch (error.kind) {
      case "disconnected":
        return new DriverError("browser_disconnected", this.#disconnected().error.message);
      case "timeout":
        return new DriverError("timeout", error.message);
      case "detached":
        return new DriverError(gone, gone === "stale_ref" ? "the frame navigated or went away since the snapshot; call snapshot again" : "the tab went away during the call; call list_tabs");
      case "protocol":
        if (GONE_CONTEXT.test(error.message)) {
          return new DriverError(gone, gone === "stale_ref" ? "the frame navigated or went away since the snapshot; call snapshot again" : `the tab went away during the call (${error.message})`);
        }
        return new DriverError("internal", error.message);
    }
  }

  #sized<M extends BridgeMethod>(method: M, value: ResultOf<M>): Result<ResultOf<M>> {
    const text = JSON.stringify(value);
    const bytes = text.length * 3 > MAX_FRAME_BYTES ? Buffer.byteLength(text) : text.length;
    if (bytes > MAX_FRAME_BYTES) {
      return {
        ok: false,
        error: { code: "frame_too_large", message: `the answer to ${method} is ${Math.round(bytes / 1048576)} MiB, more than the ${MAX_FRAME_BYTES / 1048576} MiB the bridge carries; this page is too large to read whole` },
      };
    }
    return { ok: true, value };
  }

  /**
   * A CDP call on a session. During a cross-process navigation the page's session briefly answers "Not
   * attached to an active page"; such calls are retried for up to a second.
   */
  async #send<M extends CdpMethod>(method: M, params: CdpParams<M>, sessionId?: string, timeoutMs?: number): Promise<CdpResult<CdpReturn<M>>> {
    for (let attempt = 0; ; attempt++) {
      const result = await this.#client.send(method, params, sessionId, timeoutMs !== undefined ? { timeoutMs } : {});
      if (result.ok || result.error.kind !== "protocol" || !NOT_ATTACHED.test(result.error.message) || attempt >= 10) return result;
      await sleep(100);
    }
  }

  async #must<M extends CdpMethod>(method: M, params: CdpParams<M>, sessionId?: string, options: { timeoutMs?: number; gone?: ErrorCode } = {}): Promise<CdpReturn<M>> {
    const result = await this.#send(method, params, sessionId, options.timeoutMs);
    if (!result.ok) throw this.#failure(result.error, options.gone);
    return result.value;
  }

  // ---- tabs --------------------------------------------------------------------------------------

  async #agentTab(tabId: number): Promise<Tab & { sessionId: string }> {
    const tab = this.#byTabId.get(tabId);
    if (!tab) {
      if (this.#retired.has(tabId)) throw new DriverError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
      throw new DriverError("not_agent_tab", `tab ${tabId} is not one of the agent's tabs; list_tabs shows the tabs the agent may use`);
    }
    await tab.ready;
    const sessionId = tab.sessionId;
    if (tab.gone || sessionId === undefined) throw new DriverError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
    return Object.assign(tab, { sessionId });
  }

  #quickInfo(tab: Tab): TabInfo {
    return { tabId: tab.tabId, windowId: tab.windowId, url: tab.url, title: tab.title, active: false, status: tab.loaded ? "complete" : "loading", shared: false };
  }

  async #info(tab: Tab): Promise<TabInfo> {
    if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} no longer exists; call list_tabs`);
    const [target, visible] = await Promise.all([this.#send("Target.getTargetInfo", { targetId: tab.targetId }), this.#visible(tab, { quick: true })]);
    if (target.ok) {
      const info = target.value.targetInfo;
      tab.title = info.title;
      tab.url = info.url || tab.url;
    }
    return { ...this.#quickInfo(tab), active: visible };
  }

  /**
   * Whether the tab is the visible one of its window (the page's own view, read in the isolated world). A renderer
   * busy with a heavy page answers late: with `quick` (describing tabs), past VISIBILITY_WAIT_MS the last answer
   * stands, so listing tabs stays quick; a capture waits for the page's answer.
   */
  async #visible(tab: Tab, options: { quick?: boolean } = {}): Promise<boolean> {
    if (!tab.sessionId) return false;
    const sessionId = tab.sessionId;
    const ask = (async () => {
      const world = await this.#client.send("Page.createIsolatedWorld", { frameId: tab.mainFrameId, worldName: WORLD_NAME, grantUniveralAccess: false }, sessionId, { timeoutMs: 1000 });
      const contextId = world.ok ? world.value.executionContextId : undefined;
      if (contextId === undefined) return false;
      const state = await this.#client.send("Runtime.evaluate", { expression: "document.visibilityState", contextId, returnByValue: true }, sessionId, { timeoutMs: 1000 });
      tab.lastVisible = state.ok && state.value.result.value === "visible";
      return tab.lastVisible;
    })();
    return options.quick ? Promise.race([ask, sleep(VISIBILITY_WAIT_MS).then(() => tab.lastVisible ?? false)]) : ask;
  }

  async #createTab(active: boolean): Promise<Tab> {
    const creation = this.#client
      .send("Target.createTarget", {
        url: "about:blank",
        background: !active,
        // In a browser of our own every agent tab gets its own window: it is then always the visible tab
        // of that window, so it renders, runs animation frames and can be captured (Chrome stalls captures
        // of background tabs).
        ...(this.#options.ownsBrowser ? { newWindow: true } : {}),
      })
      .then((result) => {
        const targetId = result.ok ? result.value.targetId : undefined;
        if (targetId) this.#created.add(targetId);
        return result;
      });
    this.#creating.add(creation);
    const result = await creation.finally(() => this.#creating.delete(creation));
    if (!result.ok) throw result.error.kind === "protocol" ? new DriverError("navigation_failed", `could not open a tab: ${result.error.message}`) : this.#failure(result.error);
    const targetId = result.value.targetId;
    const tab = await this.#whenTab(targetId, 10_000);
    if (!tab) throw new DriverError("internal", "the browser created a tab but never attached it");
    await tab.ready;
    // Let the initial about:blank settle so its commit is not mistaken for the navigation that follows.
    const until = Date.now() + 2000;
    while (!tab.loaded && !tab.gone && Date.now() < until) await this.#changed(tab, until - Date.now());
    return tab;
  }

  /** Navigates and waits like the extension: through redirects and replacing navigations to the final load. */
  async #navigate(tab: Tab & { sessionId: string }, url: string, until: WaitUntil, timeoutMs: number): Promise<TabInfo> {
    const deadline = Date.now() + timeoutMs;
    const start = tab.generation;
    tab.blockedDownload = undefined;
    const sent = Date.now();
    const result = await this.#send("Page.navigate", { url }, tab.sessionId, Math.max(1, timeoutMs));
    if (!result.ok) {
      if (result.error.kind === "timeout") return this.#info(tab);
      if (result.error.kind === "protocol" && !GONE_CONTEXT.test(result.error.message)) throw new DriverError("navigation_failed", `could not navigate to ${url}: ${result.error.message}`);
      throw this.#failure(result.error);
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
      await this.#waitNavigation(tab, start, "commit", Math.min(deadline, Date.now() + 2000));
      return this.#info(tab);
    }
    // ERR_ABORTED means another navigation (a redirect, a script) replaced this one: keep waiting.
    if (errorText && errorText !== "net::ERR_ABORTED") throw new DriverError("navigation_failed", `the page failed to load: ${errorText}`);
    if (!loaderId && !errorText) {
      // Same-document navigation (#fragment): complete as soon as it is seen.
      await this.#waitNavigation(tab, start, "commit", Math.min(deadline, Date.now() + 2000));
    } else {
      await this.#waitNavigation(tab, start, until, deadline, errorText ? undefined : loaderId);
    }
    return this.#info(tab);
  }

  /**
   * Waits until the tab committed a new document (the one with `loaderId`, or any later one) and, for
   * "load", until that document loaded. A load still running at the deadline resolves, with the tab loading.
   */
  async #waitNavigation(tab: Tab, start: number, until: WaitUntil, deadline: number, loaderId?: string): Promise<void> {
    for (;;) {
      if (this.#closed) throw new DriverError("browser_disconnected", this.#disconnected().error.message);
      if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} was closed while loading`);
      const committed = loaderId ? tab.commits.includes(loaderId) : tab.generation > start;
      if (committed) {
        if (tab.errorPage !== undefined && tab.errorPage !== tab.blockedNavigation?.url) throw new DriverError("navigation_failed", `the page failed to load: Chrome could not reach ${tab.errorPage}`);
        if (until === "commit" || tab.loaded) return;
      }
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#changed(tab, Math.min(left, 1000));
    }
  }

  async #history(tab: Tab & { sessionId: string }, action: "back" | "forward" | "reload", timeoutMs: number): Promise<TabInfo> {
    const deadline = Date.now() + timeoutMs;
    const start = tab.generation;
    if (action === "reload") {
      const reload = await this.#send("Page.reload", {}, tab.sessionId);
      if (!reload.ok) throw reload.error.kind === "protocol" ? new DriverError("navigation_failed", `cannot reload: ${reload.error.message}`) : this.#failure(reload.error);
    } else {
      const history = await this.#must("Page.getNavigationHistory", {}, tab.sessionId);
      const entryId = history.entries[history.currentIndex + (action === "back" ? -1 : 1)]?.id;
      if (entryId === undefined) {
        throw new DriverError("navigation_failed", `cannot go ${action}: there is no page ${action === "back" ? "before" : "after"} this one in the tab's history`);
      }
      // Unlike the browser's back button, this is not subject to the history manipulation intervention.
      const moved = await this.#send("Page.navigateToHistoryEntry", { entryId }, tab.sessionId);
      if (!moved.ok) throw moved.error.kind === "protocol" ? new DriverError("navigation_failed", `cannot go ${action}: ${moved.error.message}`) : this.#failure(moved.error);
    }
    await this.#waitNavigation(tab, start, "load", deadline);
    return this.#info(tab);
  }

  // ---- the in-page script --------------------------------------------------------------------------

  #checkScriptable(tab: Tab): void {
    const url = tab.docUrl || tab.url;
    if (RESTRICTED.test(url) || WEB_STORE.test(url)) {
      throw new DriverError("restricted_page", `the browser does not let extensions read or act on this page (${url}); tabrelay treats it the same over CDP`);
    }
  }

  async #world(sessionId: string, frameId: string, gone: ErrorCode): Promise<number> {
    const world = await this.#must("Page.createIsolatedWorld", { frameId, worldName: WORLD_NAME, grantUniveralAccess: false }, sessionId, { gone });
    return world.executionContextId;
  }

  /** Runtime answers: the value, or the page's exception as an internal error. */
  #remoteValue(answer: RemoteAnswer): unknown {
    const exception = answer.exceptionDetails;
    if (exception) {
      const description = exception.exception?.description ?? exception.text;
      throw new DriverError("internal", `the in-page script threw: ${description.split("\n")[0]}`);
    }
    const value: unknown = answer.result.value;
    return value;
  }

  /**
   * Calls __tabrelayInpage.<method>(args) in the frame's isolated world. With `install`, a frame without
   * the script gets it first; without, a missing script means the document changed since the snapshot.
   */
  async #inpage(sessionId: string, frameId: string, method: "snapshot" | "inspect" | "act" | "wait" | "rect", args: unknown, install: boolean, timeoutMs?: number): Promise<unknown> {
    const gone: ErrorCode = "stale_ref";
    const contextId = await this.#world(sessionId, frameId, gone);
    const run = async () =>
      this.#remoteValue(
        await this.#must(
          "Runtime.callFunctionOn",
          { functionDeclaration: CALL_INPAGE, executionContextId: contextId, arguments: [{ value: method }, { value: args }], awaitPromise: true, returnByValue: true },
          sessionId,
          { gone, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
        ),
      );
    let outcome: unknown;
    try {
      outcome = await run();
    } catch (error) {
      // The call reached the page and the document went away before it answered: for an action, that is
      // the action navigating (a link, a submit), not a stale ref.
      if (method === "act" && error instanceof DriverError && error.code === "stale_ref") throw new ActInterrupted();
      throw error;
    }
    if (outcome === NOT_INSTALLED) {
      if (!install) throw new DriverError("stale_ref", "the page navigated or reloaded since the snapshot; call snapshot again");
      await this.#install(sessionId, contextId);
      outcome = await run();
    }
    const envelope = inpageEnvelope.safeParse(outcome);
    if (!envelope.success) throw new DriverError("internal", `the in-page script answered ${method} with an unexpected value`);
    if (!envelope.data.ok) throw new DriverError(errorCode(envelope.data.error.code), envelope.data.error.message);
    return envelope.data.value;
  }

  async #install(sessionId: string, contextId: number): Promise<void> {
    const source = await loadInpage();
    if (source === undefined) throw new DriverError("internal", `the in-page script is missing at ${INPAGE_PATH}; run \`npm run build\``);
    this.#remoteValue(await this.#must("Runtime.evaluate", { expression: source, contextId, returnByValue: true }, sessionId, { gone: "stale_ref" }));
  }

  /**
   * What chrome.dom.openOrClosedShadowRoot gives the extension: the frame's closed shadow roots, read with
   * DOM.describeNode (which sees every root type), resolved into the isolated world and handed to the
   * script so its snapshot walks them and its refs reach into them. Installs the script if it is missing.
   */
  async #revealClosedRoots(sessionId: string, frameId: string): Promise<void> {
    const gone: ErrorCode = "stale_ref";
    const contextId = await this.#world(sessionId, frameId, gone);
    const objectGroup = `tabrelay-shadow-${randomUUID()}`;
    const deadline = Date.now() + SHADOW_BUDGET_MS;
    try {
      for (let round = 0, installed = false; round < MAX_SHADOW_ROUNDS; round++) {
        const answer = await this.#must("Runtime.callFunctionOn", { functionDeclaration: CLOSED_ROOT_CANDIDATES, executionContextId: contextId, objectGroup }, sessionId, { gone });
        this.#remoteValue(answer);
        const result = answer.result;
        if (result.value === NOT_INSTALLED) {
          if (installed) throw new DriverError("internal", "the in-page script did not install");
          await this.#install(sessionId, contextId);
          installed = true;
          continue;
        }
        const listId = result.objectId;
        if (listId === undefined) return;
        const properties = await this.#must("Runtime.getProperties", { objectId: listId, ownProperties: true }, sessionId, { gone });
        const hosts = properties.result
          .filter((p) => /^\d+$/.test(p.name))
          .map((p) => p.value?.objectId)
          .filter((id): id is string => id !== undefined);
        const closed: number[] = [];
        // In small batches: a page's thousands of custom elements never put thousands of calls in flight.
        for (let i = 0; i < hosts.length; i += SHADOW_BATCH) {
          const described = await Promise.all(hosts.slice(i, i + SHADOW_BATCH).map((objectId) => this.#send("DOM.describeNode", { objectId, depth: 0 }, sessionId)));
          for (const node of described) {
            for (const root of (node.ok ? node.value.node.shadowRoots : undefined) ?? []) {
              if (root.shadowRootType === "closed") closed.push(root.backendNodeId);
            }
          }
        }
        const resolved = await Promise.all(closed.map((backendNodeId) => this.#send("DOM.resolveNode", { backendNodeId, executionContextId: contextId, objectGroup }, sessionId)));
        const roots = resolved.map((r) => (r.ok ? r.value.object.objectId : undefined)).filter((id): id is string => id !== undefined);
        // Also with no roots found: the script marks the hosts described, so the next round offers others.
        await this.#must(
          "Runtime.callFunctionOn",
          { functionDeclaration: ADOPT_SHADOW_ROOTS, executionContextId: contextId, arguments: [{ objectId: listId }, ...roots.map((objectId) => ({ objectId }))], returnByValue: true },
          sessionId,
          { gone },
        );
        if (Date.now() > deadline) return; // the rest on the next snapshot
      }
    } finally {
      void this.#client.send("Runtime.releaseObjectGroup", { objectGroup }, sessionId);
    }
  }

  #parse<T>(schema: z.ZodType<T>, value: unknown, method: string): T {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new DriverError("internal", `the in-page script answered ${method} with an unexpected shape`);
    return parsed.data;
  }

  /** Every frame of the tab with the session that can reach it: the page's, or an out-of-process iframe's. */
  async #frames(tab: Tab & { sessionId: string }): Promise<FrameRoute[]> {
    const routes = new Map<string, FrameRoute>();
    const walk = (node: Protocol.Page.FrameTree, sessionId: string) => {
      const { id: frameId, parentId } = node.frame;
      routes.set(frameId, { frameId, parentId, sessionId });
      for (const child of node.childFrames ?? []) walk(child, sessionId);
    };
    walk((await this.#must("Page.getFrameTree", {}, tab.sessionId)).frameTree, tab.sessionId);
    const remote = await Promise.all([...tab.oopifs.values()].map(async (sessionId) => ({ sessionId, tree: await this.#send("Page.getFrameTree", {}, sessionId) })));
    for (const { sessionId, tree } of remote) if (tree.ok) walk(tree.value.frameTree, sessionId);
    return [...routes.values()];
  }

  #frameKey(tab: Tab, frameId: string): number {
    if (frameId === tab.mainFrameId) return 0;
    let key = tab.frameKeys.get(frameId);
    if (key === undefined) {
      key = tab.nextFrameKey++;
      tab.frameKeys.set(frameId, key);
    }
    return key;
  }

  async #snapshot(tab: Tab & { sessionId: string }, args: { revision: string; interactiveOnly: boolean; viewportOnly: boolean }): Promise<FrameSnapshot[]> {
    const frames = await this.#frames(tab);
    const results = await Promise.all(
      frames.map(async (route) => {
        try {
          // Best effort: a page whose hosts cannot be described still gets its snapshot, without their roots.
          await this.#revealClosedRoots(route.sessionId, route.frameId).catch(() => undefined);
          return { route, value: this.#parse(snapshotValue, await this.#inpage(route.sessionId, route.frameId, "snapshot", args, true), "snapshot") };
        } catch (error) {
          if (route.frameId === tab.mainFrameId) throw error;
          // A subframe that went away or cannot be scripted is left out, as the extension does.
          return undefined;
        }
      }),
    );
    tab.routes.clear();
    tab.routesByFrame.clear();
    const snapshots: FrameSnapshot[] = [];
    for (const result of results) {
      if (!result) continue;
      const { route, value } = result;
      const key = this.#frameKey(tab, route.frameId);
      tab.routes.set(key, route);
      tab.routesByFrame.set(route.frameId, route);
      // Refs of subframes carry their frame (the first field of each line, see FrameSnapshot.nodes).
      const nodes = key === 0 ? value.nodes : value.nodes.replace(/^(e\d+)\t/gm, `f${key}$1\t`);
      snapshots.push({
        frameId: key,
        parentFrameId: route.parentId === undefined ? -1 : this.#frameKey(tab, route.parentId),
        url: value.url,
        title: value.title,
        nodes,
        ...(value.elapsedMs !== undefined ? { elapsedMs: value.elapsedMs } : {}),
        ...(value.capped ? { capped: true } : {}),
      });
    }
    return snapshots;
  }

  /** Where a ref lives: "e3" in the top frame, "f12e3" in frame 12 of the last snapshot. */
  #route(tab: Tab & { sessionId: string }, ref: string): { route: FrameRoute; local: string; key: number } {
    const match = /^f(\d+)(e\d+)$/.exec(ref);
    if (!match?.[2]) return { route: { frameId: tab.mainFrameId, parentId: undefined, sessionId: tab.sessionId }, local: ref, key: 0 };
    const key = Number(match[1]);
    const route = tab.routes.get(key);
    if (!route) throw new DriverError("stale_ref", `ref ${ref} belongs to a frame that navigated or went away since the snapshot; call snapshot again`);
    return { route: { ...route, sessionId: this.#sessionFor(tab, route) }, local: match[2], key };
  }

  /** A frame's current session: an iframe that moved to another process since the snapshot has a new one. */
  #sessionFor(tab: Tab & { sessionId: string }, route: FrameRoute): string {
    const oopif = tab.oopifs.get(route.frameId);
    if (oopif) return oopif;
    if (route.sessionId === tab.sessionId || this.#children.has(route.sessionId)) return route.sessionId;
    return tab.sessionId;
  }

  /** Offset of a subframe's viewport within the top frame's, summed over its ancestor frames. */
  async #frameOffset(tab: Tab & { sessionId: string }, route: FrameRoute): Promise<{ x: number; y: number }> {
    let x = 0;
    let y = 0;
    let current = route;
    for (let depth = 0; current.frameId !== tab.mainFrameId && depth < 32; depth++) {
      const parentId = current.parentId;
      const parent = parentId === undefined ? undefined : tab.routesByFrame.get(parentId);
      if (!parentId || !parent) throw new DriverError("stale_ref", "the frame's place in the page changed since the snapshot; call snapshot again");
      const parentSession = this.#sessionFor(tab, parent);
      const owner = await this.#must("DOM.getFrameOwner", { frameId: current.frameId }, parentSession, { gone: "stale_ref" });
      const backendNodeId = owner.backendNodeId;
      const contextId = await this.#world(parentSession, parentId, "stale_ref");
      const resolved = await this.#must("DOM.resolveNode", { backendNodeId, executionContextId: contextId }, parentSession, { gone: "stale_ref" });
      const objectId = resolved.object.objectId;
      if (!objectId) throw new DriverError("stale_ref", "the frame's element is gone; call snapshot again");
      try {
        const answer = await this.#must("Runtime.callFunctionOn", { objectId, functionDeclaration: OWNER_OFFSET, returnByValue: true }, parentSession, { gone: "stale_ref" });
        const point = this.#parse(pointValue, this.#remoteValue(answer), "rect");
        x += point.x;
        y += point.y;
      } finally {
        void this.#client.send("Runtime.releaseObject", { objectId }, parentSession);
      }
      current = parent;
    }
    return { x, y };
  }

  async #content(tab: Tab & { sessionId: string }): Promise<PageContent> {
    this.#checkScriptable(tab);
    // A page that replaces its document (a refresh loop, a script reloading) can take the context away between
    // finding it and reading from it: read again from the new document, a few times.
    let answer: RemoteAnswer | undefined;
    for (let attempt = 1; answer === undefined; attempt++) {
      const contextId = await this.#world(tab.sessionId, tab.mainFrameId, "internal");
      const result = await this.#readDocument(tab.sessionId, contextId, CONTENT_MAX_CHARS);
      if (result.ok) answer = result.value;
      else if (tab.gone || this.#closed || !(result.error.kind === "protocol" && GONE_CONTEXT.test(result.error.message))) throw this.#failure(result.error);
      else if (attempt >= 10) throw new DriverError("navigation_failed", "the page kept replacing its document while it was read (it reloads or redirects itself); try again, or use snapshot");
      else await sleep(50 * attempt);
    }
    const value = documentValue.safeParse(this.#remoteValue(answer));
    if (!value.success) throw new DriverError("internal", "the page returned no content");
    const { origin: _origin, capped, ...page } = value.data.value;
    const generation = tab.generation;
    const loaderAtRead = tab.loaderId;
    const frames = await this.#frameContents(tab, FRAME_HTML_BUDGET);
    // The frames belong to the document read just before them only if the tab is still on it.
    const response = tab.documentStatus;
    return {
      ...page,
      ...(capped ? { capped } : {}),
      ...(response && response.loaderId === loaderAtRead ? { status: response.status } : {}),
      ...(frames.length && tab.generation === generation ? { frames } : {}),
    };
  }

  /** The documents of the tab's frames (out-of-process ones too), parents first, within `budget` characters. */
  async #frameContents(tab: Tab & { sessionId: string }, budget: number): Promise<FrameContent[]> {
    const routes = (await this.#frames(tab)).filter((r) => r.frameId !== tab.mainFrameId).slice(0, MAX_CONTENT_FRAMES);
    const read = await Promise.all(
      routes.map(async (route) => {
        try {
          const contextId = await this.#world(route.sessionId, route.frameId, "internal");
          const answer = await this.#readDocument(route.sessionId, contextId, budget, 3000);
          const value = answer.ok ? documentValue.safeParse(answer.value.result.value) : undefined;
          return value?.success ? value.data.value : undefined;
        } catch {
          return undefined; // a frame that went away or cannot be scripted is left out
        }
      }),
    );
    const frames: FrameContent[] = [];
    const indexOf = new Map<string, number>();
    let left = budget;
    routes.forEach((route, i) => {
      const doc = read[i];
      // A frame whose parent was left out is left out too: its origin could not be told.
      const orphan = route.parentId !== undefined && route.parentId !== tab.mainFrameId && !indexOf.has(route.parentId);
      if (!doc || orphan || doc.html.length > left) return;
      left -= doc.html.length;
      indexOf.set(route.frameId, frames.length);
      frames.push({ url: doc.url, origin: doc.origin, title: doc.title, html: doc.html, parent: route.parentId === undefined || route.parentId === tab.mainFrameId ? -1 : (indexOf.get(route.parentId) ?? -1), ...(doc.capped ? { capped: doc.capped } : {}) });
    });
    return frames;
  }

  /**
   * READ_DOCUMENT in the given isolated world, in one round trip with the in-page script (its install is
   * idempotent): a page that keeps replacing its document (a refresh loop) leaves no time for two.
   */
  async #readDocument(sessionId: string, contextId: number, maxChars: number, timeoutMs?: number): Promise<CdpResult<RemoteAnswer>> {
    const source = await loadInpage();
    if (source === undefined) throw new DriverError("internal", `the in-page script is missing at ${INPAGE_PATH}; run \`npm run build\``);
    const expression = `${source}\n;(${READ_DOCUMENT})(${JSON.stringify({ maxChars, maxElements: CONTENT_MAX_ELEMENTS })})`;
    return this.#send("Runtime.evaluate", { expression, contextId, returnByValue: true }, sessionId, timeoutMs);
  }

  async #capture(tab: Tab & { sessionId: string }, params: CaptureParams): Promise<CaptureResult> {
    let visible = await this.#visible(tab);
    // Chrome stalls captures of a background tab. In a browser of our own (or when asked to) the tab is
    // brought to the front; otherwise the capture is retried (it does complete, irregularly).
    if (!visible && (params.activate || this.#options.ownsBrowser)) {
      await this.#must("Target.activateTarget", { targetId: tab.targetId });
      visible = true;
    }
    const metrics = await this.#must("Page.getLayoutMetrics", {}, tab.sessionId);
    const { cssVisualViewport: viewport, cssContentSize: content } = metrics;
    const { pageX, pageY } = viewport;
    let shot: Protocol.Page.CaptureScreenshotRequest = { format: "png" };
    if (params.clip) {
      // The protocol's clip is viewport-relative; CDP's is in document coordinates.
      shot = { format: "png", clip: { x: params.clip.x + pageX, y: params.clip.y + pageY, width: Math.max(1, params.clip.width), height: Math.max(1, params.clip.height), scale: 1 } };
    } else if (params.fullPage) {
      const width = content.width;
      const height = Math.min(content.height, MAX_SCREENSHOT_HEIGHT);
      shot = { format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width: Math.ceil(width), height: Math.ceil(height), scale: 1 } };
    }
    let data: string | undefined;
    for (let attempt = 0; attempt < (visible ? 1 : 4) && data === undefined; attempt++) {
      const result = await this.#send("Page.captureScreenshot", shot, tab.sessionId, visible ? undefined : 3000);
      if (result.ok) data = result.value.data;
      else if (result.error.kind !== "timeout" || visible) throw this.#failure(result.error);
    }
    if (data === undefined) throw new DriverError("timeout", `tab ${tab.tabId} is in the background and did not render a frame to capture; activate it (activate_tab) and retry`);
    const size = pngSize(data);
    if (!size) throw new DriverError("internal", "the browser returned something other than a PNG");
    const info = await this.#info(tab);
    return { png: data, width: size.width, height: size.height, url: info.url, capturedAt: Date.now() };
  }

  async #wait(tab: Tab & { sessionId: string }, params: ParamsOf<"page.wait">): Promise<ResultOf<"page.wait">> {
    const started = Date.now();
    const deadline = started + params.timeoutMs;
    if (params.urlIncludes !== undefined) {
      const wanted = params.urlIncludes;
      for (;;) {
        if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} was closed while waiting`);
        if (tab.url.includes(wanted)) return { matched: `URL is ${tab.url}`, elapsedMs: Date.now() - started };
        const left = deadline - Date.now();
        if (left <= 0) throw new DriverError("wait_timeout", `the URL did not come to include ${JSON.stringify(wanted)} within ${params.timeoutMs} ms (it is ${tab.url})`);
        await this.#changed(tab, Math.min(left, 250));
      }
    }
    // A navigation during the wait destroys the page's script; start again in the new document.
    for (;;) {
      this.#checkScriptable(tab);
      const left = Math.max(0, deadline - Date.now());
      try {
        const value = await this.#inpage(
          tab.sessionId,
          tab.mainFrameId,
          "wait",
          { text: params.text, textGone: params.textGone, selector: params.selector, timeoutMs: left },
          true,
          left + this.#options.callTimeoutMs,
        );
        return { matched: this.#parse(waitValue, value, "wait").matched, elapsedMs: Date.now() - started };
      } catch (error) {
        if (!(error instanceof DriverError) || error.code !== "stale_ref" || Date.now() > deadline) throw error;
        await sleep(100);
      }
    }
  }

  // ---- dispatch ----------------------------------------------------------------------------------

  readonly #handlers: Handlers = {
    "browser.ping": async () => ({ now: Date.now() }),

    "tabs.list": async () => {
      const tabs = [...this.#byTabId.values()].sort((a, b) => a.tabId - b.tabId);
      await Promise.all(tabs.map((t) => t.ready));
      const infos = await Promise.all(tabs.filter((t) => !t.gone).map((t) => this.#info(t).catch(() => undefined)));
      return { tabs: infos.filter((t): t is TabInfo => t !== undefined) };
    },

    "tabs.get": async ({ tabId }) => ({ tab: await this.#info(await this.#agentTab(tabId)) }),

    "tabs.open": async ({ url, active = false, waitUntil = "load", timeoutMs = 20_000 }) => {
      const tab = await this.#createTab(active);
      const sessionId = tab.sessionId;
      if (sessionId === undefined) throw new DriverError("no_such_tab", "the new tab closed at once");
      if (url === "about:blank") return { tab: await this.#info(tab) };
      let info: TabInfo;
      try {
        info = await this.#navigate(Object.assign(tab, { sessionId }), url, waitUntil, timeoutMs);
      } catch (error) {
        // The agent never learns this tab's id: close it rather than leave it behind (as the extension does).
        tab.closedByUs = true;
        await this.#send("Target.closeTarget", { targetId: tab.targetId });
        this.#retire(tab);
        throw error;
      }
      // chrome.tabs.create starts a tab's history at its URL: drop the about:blank it was created on.
      await this.#send("Page.resetNavigationHistory", {}, sessionId);
      return { tab: info };
    },

    "tabs.close": async ({ tabId }) => {
      const tab = await this.#agentTab(tabId);
      tab.closedByUs = true;
      const result = await this.#send("Target.closeTarget", { targetId: tab.targetId });
      if (!result.ok && !tab.gone) throw this.#failure(result.error);
      this.#retire(tab);
      return { closed: true };
    },

    "tabs.activate": async ({ tabId }) => {
      const tab = await this.#agentTab(tabId);
      await this.#must("Target.activateTarget", { targetId: tab.targetId });
      return { tab: await this.#info(tab) };
    },

    "tabs.navigate": async ({ tabId, url, waitUntil = "load", timeoutMs = 20_000 }) => ({ tab: await this.#navigate(await this.#agentTab(tabId), url, waitUntil, timeoutMs) }),

    "tabs.history": async ({ tabId, action, timeoutMs = 20_000 }) => ({ tab: await this.#history(await this.#agentTab(tabId), action, timeoutMs) }),

    "page.content": async ({ tabId }) => this.#content(await this.#agentTab(tabId)),

    "page.snapshot": async ({ tabId, revision, interactiveOnly, viewportOnly }) => {
      const tab = await this.#agentTab(tabId);
      this.#checkScriptable(tab);
      const args = { revision, interactiveOnly, viewportOnly };
      try {
        return { frames: await this.#snapshot(tab, args) };
      } catch (error) {
        // The page navigated between reading its frames and running the script: once more, on the new one.
        if (!(error instanceof DriverError) || error.code !== "stale_ref") throw error;
        return { frames: await this.#snapshot(tab, args) };
      }
    },

    "page.inspect": async ({ tabId, ref, revision, action, value }) => {
      const tab = await this.#agentTab(tabId);
      this.#checkScriptable(tab);
      const { route, local } = this.#route(tab, ref);
      // The page itself needs no snapshot, so the in-page script may not be there yet: install it for that ref.
      const facts: ElementFacts = this.#parse(elementFacts, await this.#inpage(route.sessionId, route.frameId, "inspect", { ref: local, revision, action, value }, local === "page"), "inspect");
      return { ...facts, ref };
    },

    "page.act": async ({ tabId, ref, revision, action, value, expect }) => {
      const tab = await this.#agentTab(tabId);
      this.#checkScriptable(tab);
      const { route, local } = this.#route(tab, ref);
      let raw: unknown;
      try {
        raw = await this.#inpage(route.sessionId, route.frameId, "act", { ref: local, revision, action, value, expect }, local === "page");
      } catch (error) {
        // The action ran and the document it ran in went away (a link, a submit): that is its effect.
        if (error instanceof ActInterrupted) return { effects: ["the page navigated away as a result of the action"] };
        throw error;
      }
      const outcome = this.#parse(actValue, raw, "act");
      return { facts: { ...outcome.facts, ref }, effects: outcome.effects };
    },

    "page.wait": async (params) => this.#wait(await this.#agentTab(params.tabId), params),

    "page.rect": async ({ tabId, ref, revision }) => {
      const tab = await this.#agentTab(tabId);
      this.#checkScriptable(tab);
      const { route, local, key } = this.#route(tab, ref);
      const box = this.#parse(rectValue, await this.#inpage(route.sessionId, route.frameId, "rect", { ref: local, revision }, false), "rect");
      if (key === 0) return box;
      const offset = await this.#frameOffset(tab, route);
      return { ...box, x: box.x + offset.x, y: box.y + offset.y };
    },

    "page.capture": async (params) => this.#capture(await this.#agentTab(params.tabId), params),
  };

  #dispatch<M extends BridgeMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    if (!Object.hasOwn(this.#handlers, method)) return Promise.reject(new DriverError("unknown_method", `unknown method ${String(method)}`));
    const handler: Handlers[M] = this.#handlers[method];
    return handler(params);
  }
}

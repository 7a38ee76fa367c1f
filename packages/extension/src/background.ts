import {
  CONTENT_MAX_CHARS,
  CONTENT_MAX_ELEMENTS,
  FRAME_HTML_BUDGET,
  MAX_CONTENT_FRAMES,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  type BridgeCall,
  type BridgeEvent,
  type BridgeEvents,
  type BridgeMethod,
  type BridgeMethods,
  type BrokerToBrowser,
  type ContentCapped,
  type ElementFacts,
  type ErrorCode,
  type FrameContent,
  type TabInfo,
  type WireError,
} from "@tabrelay/protocol";
import { navigationRulesError, setNavigationRules, syncNavigationRules, watchAgentTabs } from "./navigationRules.js";
import { loadSeedConfig } from "./seed.js";

const EXTENSION_VERSION = chrome.runtime.getManifest().version;
const PING_MS = 20_000;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 30_000;
const KEEPALIVE_ALARM = "tabrelay-keepalive";
const GROUP_TITLE = "tabrelay";

type ConnState = "unpaired" | "connecting" | "connected" | "disconnected" | "rejected";

interface Settings {
  brokerUrl?: string;
  pairingToken?: string;
  browserId: string;
  label: string;
}

class CommandError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

// ---- state -------------------------------------------------------------------------------------

let socket: WebSocket | undefined;
// Set synchronously before any await so two wake-ups (alarm + startup) never open two sockets.
let connecting = false;
let attempt = 0;
let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
let pingTimer: ReturnType<typeof setInterval> | undefined;
let state: ConnState = "disconnected";
let lastError = "";

/** Tabs the agent opened (or that its pages opened) and tabs the user shared. Survive worker restarts. */
const agentTabs = new Set<number>();
const sharedTabs = new Set<number>();
const tabsLoaded = (async () => {
  const stored = await chrome.storage.session.get(["agentTabs", "sharedTabs"]);
  for (const id of numberArray(stored["agentTabs"])) agentTabs.add(id);
  for (const id of numberArray(stored["sharedTabs"])) sharedTabs.add(id);
})();

function numberArray(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => typeof v === "number") : [];
}

/** Persists the agent's tabs and rebuilds the navigation rules for them; resolves once the rules are in place. */
async function saveTabs(): Promise<void> {
  await Promise.all([syncNavigationRules(), chrome.storage.session.set({ agentTabs: [...agentTabs], sharedTabs: [...sharedTabs] })]);
}
const scopesWatched = tabsLoaded.then(() => watchAgentTabs(isVisibleToAgent, () => [...agentTabs, ...sharedTabs]));

/** Settles once the broker's navigation rules from its welcome frame are installed: no call is served before. */
let rulesReady: Promise<void> = new Promise(() => undefined);

function isVisibleToAgent(tabId: number): boolean {
  return agentTabs.has(tabId) || sharedTabs.has(tabId);
}

// ---- settings ----------------------------------------------------------------------------------

async function loadSettings(): Promise<Settings> {
  const stored = await chrome.storage.local.get(["brokerUrl", "pairingToken", "browserId", "label"]);
  const seed = loadSeedConfig();
  let browserId = typeof stored["browserId"] === "string" ? stored["browserId"] : "";
  if (!browserId) {
    browserId = crypto.randomUUID();
    await chrome.storage.local.set({ browserId });
  }
  // A launcher-written config.js wins: `tabrelay launch` pairs the profile it starts.
  if (seed && (seed.url !== stored["brokerUrl"] || seed.token !== stored["pairingToken"])) {
    await chrome.storage.local.set({ brokerUrl: seed.url, pairingToken: seed.token, ...(seed.label ? { label: seed.label } : {}) });
    return { brokerUrl: seed.url, pairingToken: seed.token, browserId, label: seed.label ?? defaultLabel(stored["label"]) };
  }
  return {
    brokerUrl: typeof stored["brokerUrl"] === "string" ? stored["brokerUrl"] : undefined,
    pairingToken: typeof stored["pairingToken"] === "string" ? stored["pairingToken"] : undefined,
    browserId,
    label: defaultLabel(stored["label"]),
  };
}

function defaultLabel(stored: unknown): string {
  if (typeof stored === "string" && stored) return stored;
  const ua = navigator.userAgent;
  const platform = /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "unknown OS";
  return `Chrome on ${platform}`;
}

// ---- connection --------------------------------------------------------------------------------

function setState(next: ConnState, error = ""): void {
  state = next;
  lastError = error;
  const badge: Record<ConnState, [string, string]> = {
    connected: ["ON", "#1a7f37"],
    connecting: ["…", "#9a6700"],
    disconnected: ["OFF", "#6e7781"],
    unpaired: ["SET", "#6e7781"],
    rejected: ["ERR", "#cf222e"],
  };
  const [text, color] = badge[next];
  void chrome.action.setBadgeText({ text });
  void chrome.action.setBadgeBackgroundColor({ color });
  void chrome.action.setTitle({ title: `tabrelay: ${next}${error ? ` (${error})` : ""}` });
}

async function connect(): Promise<void> {
  if (connecting || (socket && socket.readyState <= WebSocket.OPEN)) return;
  connecting = true;
  try {
    const settings = await loadSettings();
    if (!settings.brokerUrl || !settings.pairingToken) {
      setState("unpaired", "open the tabrelay popup and pair with your broker");
      return;
    }
    setState("connecting");
    const ws = new WebSocket(settings.brokerUrl);
    socket = ws;
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          token: settings.pairingToken,
          browserId: settings.browserId,
          label: settings.label,
          extensionVersion: EXTENSION_VERSION,
          userAgent: navigator.userAgent,
        }),
      );
    };
    ws.onmessage = (event) => {
      if (typeof event.data === "string") void onFrame(ws, event.data);
    };
    ws.onclose = () => {
      if (socket === ws) socket = undefined;
      stopPing();
      if (state !== "rejected") setState("disconnected");
      scheduleReconnect();
    };
  } catch (error) {
    setState("disconnected", error instanceof Error ? error.message : String(error));
    scheduleReconnect();
  } finally {
    connecting = false;
  }
}

function scheduleReconnect(): void {
  if (reconnectTimer) return;
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  const delay = ceiling / 2 + Math.random() * (ceiling / 2);
  attempt = Math.min(attempt + 1, 20);
  reconnectTimer = setTimeout(() => {
    reconnectTimer = undefined;
    void connect();
  }, delay);
}

function reconnectNow(): void {
  if (reconnectTimer) clearTimeout(reconnectTimer);
  reconnectTimer = undefined;
  attempt = 0;
  socket?.close();
  socket = undefined;
  void connect();
}

function startPing(ws: WebSocket): void {
  stopPing();
  // A message every 20 s keeps an MV3 service worker alive (Chrome 116+); without it Chrome kills the
  // worker after 30 s idle and the socket dies with it.
  pingTimer = setInterval(() => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "ping", at: Date.now() }));
  }, PING_MS);
}

function stopPing(): void {
  if (pingTimer) clearInterval(pingTimer);
  pingTimer = undefined;
}

function send(frame: unknown): void {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
}

async function onFrame(ws: WebSocket, data: string): Promise<void> {
  let frame: BrokerToBrowser;
  try {
    frame = JSON.parse(data) as BrokerToBrowser;
  } catch {
    return;
  }
  switch (frame.type) {
    case "welcome":
      rulesReady = scopesWatched.then(() => setNavigationRules(frame.navigationRules));
      await rulesReady;
      attempt = 0;
      setState("connected");
      startPing(ws);
      return;
    case "reject":
      setState("rejected", `${frame.error.code}: ${frame.error.message}`);
      return;
    case "ping":
      ws.send(JSON.stringify({ type: "pong", at: frame.at }));
      return;
    case "pong":
      return;
    case "call":
      await runCall(ws, frame);
      return;
  }
}

async function runCall(ws: WebSocket, call: BridgeCall): Promise<void> {
  await tabsLoaded;
  await rulesReady;
  try {
    const handler = handlers[call.method];
    if (!handler) throw new CommandError("unknown_method", `unknown method ${String(call.method)}`);
    const result = await handler(call.params as never);
    const frame = JSON.stringify({ type: "result", id: call.id, ok: true, result });
    // The broker closes a socket that sends an oversized frame; answer with an error instead of losing the link.
    const bytes = frame.length * 3 > MAX_FRAME_BYTES ? new TextEncoder().encode(frame).length : frame.length;
    if (bytes > MAX_FRAME_BYTES) {
      throw new CommandError("frame_too_large", `the answer is ${Math.round(bytes / 1048576)} MiB, more than the ${MAX_FRAME_BYTES / 1048576} MiB the bridge carries; this page is too large to read whole`);
    }
    if (ws.readyState === WebSocket.OPEN) ws.send(frame);
  } catch (error) {
    const wire: WireError =
      error instanceof CommandError
        ? { code: error.code, message: error.message }
        : { code: "internal", message: error instanceof Error ? error.message : String(error) };
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "result", id: call.id, ok: false, error: wire }));
  }
}

function emit(event: BridgeEvent): void {
  send(event);
}

// ---- commands ----------------------------------------------------------------------------------

type Handlers = { [M in BridgeMethod]: (params: BridgeMethods[M]["params"]) => Promise<BridgeMethods[M]["result"]> };

function toTabInfo(tab: chrome.tabs.Tab): TabInfo {
  return {
    tabId: tab.id ?? -1,
    windowId: tab.windowId,
    url: tab.url ?? tab.pendingUrl ?? "",
    title: tab.title ?? "",
    active: tab.active,
    status: tab.status === "complete" ? "complete" : tab.status === "unloaded" ? "unloaded" : "loading",
    shared: tab.id !== undefined && sharedTabs.has(tab.id) && !agentTabs.has(tab.id),
  };
}

async function agentTab(tabId: number): Promise<chrome.tabs.Tab> {
  if (!isVisibleToAgent(tabId)) {
    throw new CommandError("not_agent_tab", `tab ${tabId} is not one of the agent's tabs; list_tabs shows the tabs the agent may use`);
  }
  try {
    return await chrome.tabs.get(tabId);
  } catch {
    agentTabs.delete(tabId);
    sharedTabs.delete(tabId);
    await saveTabs();
    throw new CommandError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
  }
}

/**
 * Collects top-frame navigation events from before an action starts, so a fast load that finishes before
 * tabs.create resolves is not missed. (Right after tabs.update, tabs.get still reports "complete" for the
 * previous page, so tab status alone cannot be trusted.)
 */
function watchNavigation() {
  type Outcome = { kind: "completed"; at: number } | { kind: "committed"; at: number } | { kind: "error"; error: string; at: number } | { kind: "removed"; at: number };
  const seen = new Map<number, Outcome[]>();
  let wake: (() => void) | undefined;
  const record = (tabId: number, outcome: Outcome) => {
    const list = seen.get(tabId) ?? [];
    list.push(outcome);
    seen.set(tabId, list);
    wake?.();
  };
  const frameCommits: { tabId: number; frameId: number }[] = [];
  /** Tabs opened blank before being sent somewhere: the blank page's own events are not that navigation's. */
  const leavingBlank = new Set<number>();
  const ours = (d: { tabId: number; url: string }) => !(leavingBlank.has(d.tabId) && d.url === "about:blank");
  const onCommitted = (d: { tabId: number; frameId: number; url: string }) => {
    frameCommits.push({ tabId: d.tabId, frameId: d.frameId });
    if (d.frameId === 0 && ours(d)) record(d.tabId, { kind: "committed", at: Date.now() });
    else wake?.();
  };
  // Same-document navigations (#fragment, pushState) have no load: they are complete when they happen.
  const onCompleted = (d: { tabId: number; frameId: number; url: string }) => {
    if (d.frameId === 0 && ours(d)) record(d.tabId, { kind: "completed", at: Date.now() });
  };
  const onError = (d: chrome.webNavigation.WebNavigationFramedErrorCallbackDetails) => {
    if (d.frameId === 0 && ours(d)) record(d.tabId, { kind: "error", error: d.error, at: Date.now() });
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
    /** The tab was opened blank and is about to be sent to its URL: what the blank page did does not count. */
    forget(tabId: number): void {
      seen.delete(tabId);
      leavingBlank.add(tabId);
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
        if (last?.kind === "completed") return;
        if (last?.kind === "removed") throw new CommandError("navigation_failed", `the tab closed while loading: the URL is most likely a file download (${DOWNLOAD_NOTE})`);
        if (until === "commit" && outcomes.length > 0 && last?.kind !== "error") return;
        // ERR_ABORTED means another navigation (a redirect, a script) replaced this one: keep waiting, unless
        // a second later nothing is loading (a download in an existing tab, or the page stopped it).
        if (last?.kind === "error" && last.error === "net::ERR_ABORTED" && Date.now() - last.at > 1000) {
          const current = await chrome.tabs.get(tabId).catch(() => undefined);
          if (current?.status !== "loading") throw new CommandError("navigation_failed", `the navigation was aborted and no page loaded: the URL is most likely a file download (${DOWNLOAD_NOTE}), or the page stopped it`);
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

async function groupAgentTab(tab: chrome.tabs.Tab): Promise<void> {
  if (tab.id === undefined || !chrome.tabGroups) return;
  try {
    const groups = await chrome.tabGroups.query({ title: GROUP_TITLE, windowId: tab.windowId });
    const existing = groups[0];
    if (existing) {
      await chrome.tabs.group({ tabIds: [tab.id], groupId: existing.id });
    } else {
      const groupId = await chrome.tabs.group({ tabIds: [tab.id], createProperties: { windowId: tab.windowId } });
      await chrome.tabGroups.update(groupId, { title: GROUP_TITLE, color: "purple" });
    }
  } catch {
    // Tab groups are a visual aid only; some windows (popups, app windows) cannot hold them.
  }
}

async function fresh(tabId: number): Promise<TabInfo> {
  return toTabInfo(await chrome.tabs.get(tabId));
}

// ---- in-page script ----------------------------------------------------------------------------

type InpageResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** Refs from subframes carry their frame: "e3" is in the top frame, "f12e3" in frame 12. */
function splitRef(ref: string): { frameId: number; local: string } {
  const match = /^f(\d+)(e\d+)$/.exec(ref);
  return match ? { frameId: Number(match[1]), local: match[2]! } : { frameId: 0, local: ref };
}

function scriptingError(error: unknown): CommandError {
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
async function injectInpage(tabId: number, frameIds?: number[]): Promise<void> {
  const target = frameIds ? { tabId, frameIds } : { tabId, allFrames: true };
  await chrome.scripting.executeScript({ target, files: ["inpage.js"], injectImmediately: true }).catch((error: unknown) => {
    throw scriptingError(error);
  });
}

async function runInFrame<T>(tabId: number, frameId: number, method: "inspect" | "act" | "wait" | "rect", params: unknown): Promise<T> {
  let results: chrome.scripting.InjectionResult<unknown>[];
  try {
    results = await chrome.scripting.executeScript({
      target: { tabId, frameIds: [frameId] },
      injectImmediately: true,
      func: (name: string, args: unknown) => {
        const api = (globalThis as unknown as { __tabrelayInpage?: Record<string, (a: unknown) => unknown> }).__tabrelayInpage;
        return api ? api[name]!(args) : { ok: false, error: { code: "stale_ref", message: "the page navigated or reloaded since the snapshot; call snapshot again" } };
      },
      args: [method, params],
    });
  } catch (error) {
    throw scriptingError(error);
  }
  const outcome = results[0]?.result as InpageResult<T> | undefined;
  if (!outcome) throw new CommandError("internal", "the page returned nothing");
  if (!outcome.ok) throw new CommandError(outcome.error.code, outcome.error.message);
  return outcome.value;
}

// ---- capture -----------------------------------------------------------------------------------

interface PageMetrics {
  innerWidth: number;
  innerHeight: number;
  scrollHeight: number;
  scrollY: number;
  dpr: number;
}

let lastCaptureAt = 0;

async function pageMetrics(tabId: number): Promise<PageMetrics> {
  const [frame] = await chrome.scripting
    .executeScript({
      target: { tabId, frameIds: [0] },
      func: () => ({
        innerWidth,
        innerHeight,
        scrollHeight: Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0),
        scrollY,
        dpr: devicePixelRatio,
      }),
    })
    .catch((error: unknown) => {
      throw scriptingError(error);
    });
  return frame?.result as PageMetrics;
}

async function scrollTo(tabId: number, y: number): Promise<void> {
  await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, func: (top: number) => window.scrollTo(0, top), args: [y] });
}

/**
 * captureVisibleTab right after a DOM change can return the previous frame: wait for two animation frames
 * in the page first. Chrome allows at most two captures per second, so captures are spaced 510 ms apart.
 */
async function captureFresh(tabId: number, windowId: number): Promise<string> {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: [0] },
    func: () => new Promise<boolean>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))),
  });
  const wait = lastCaptureAt + 510 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  lastCaptureAt = Date.now();
  const dataUrl = await chrome.tabs.captureVisibleTab(windowId, { format: "png" });
  return dataUrl.slice(dataUrl.indexOf(",") + 1);
}

async function decode(png: string): Promise<ImageBitmap> {
  const blob = await (await fetch(`data:image/png;base64,${png}`)).blob();
  return createImageBitmap(blob);
}

async function encode(canvas: OffscreenCanvas): Promise<string> {
  const blob = await canvas.convertToBlob({ type: "image/png" });
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Crops (clip) or stitches (full page) the captures; a plain viewport capture passes through untouched. */
async function compose(
  shots: { png: string; y: number }[],
  metrics: PageMetrics,
  clip: { x: number; y: number; width: number; height: number } | undefined,
  fullPage: boolean,
): Promise<{ png: string; width: number; height: number }> {
  const first = await decode(shots[0]!.png);
  const scale = first.width / metrics.innerWidth;
  if (!clip && !fullPage) return { png: shots[0]!.png, width: first.width, height: first.height };
  if (clip) {
    const sx = Math.max(0, Math.round(clip.x * scale));
    const sy = Math.max(0, Math.round(clip.y * scale));
    const w = Math.max(1, Math.min(first.width - sx, Math.round(clip.width * scale)));
    const h = Math.max(1, Math.min(first.height - sy, Math.round(clip.height * scale)));
    const canvas = new OffscreenCanvas(w, h);
    canvas.getContext("2d")?.drawImage(first, sx, sy, w, h, 0, 0, w, h);
    return { png: await encode(canvas), width: w, height: h };
  }
  const last = shots[shots.length - 1]!;
  const height = Math.round((last.y + metrics.innerHeight) * scale);
  const canvas = new OffscreenCanvas(first.width, Math.min(height, 16_384));
  const ctx = canvas.getContext("2d");
  for (const shot of shots) ctx?.drawImage(await decode(shot.png), 0, Math.round(shot.y * scale));
  return { png: await encode(canvas), width: canvas.width, height: canvas.height };
}

const handlers: Handlers = {
  "browser.ping": async () => ({ now: Date.now() }),

  "tabs.list": async () => {
    const tabs = await chrome.tabs.query({});
    const visible = tabs.filter((t) => t.id !== undefined && isVisibleToAgent(t.id));
    return { tabs: visible.map(toTabInfo) };
  },

  "tabs.get": async ({ tabId }) => {
    await agentTab(tabId);
    return { tab: await fresh(tabId) };
  },

  "tabs.open": async ({ url, active = false, waitUntil = "load", timeoutMs = 20_000 }) => {
    const settled = noteAgentRequest(url);
    const nav = watchNavigation();
    try {
      // Opened blank and sent to the URL only once the navigation rules cover the new tab: a redirect from
      // the first response is then stopped like any other.
      const tab = await chrome.tabs.create({ url: "about:blank", active }).catch((error: unknown) => {
        throw new CommandError("navigation_failed", `could not open a tab for ${url}: ${String(error)}`);
      });
      if (tab.id === undefined) throw new CommandError("internal", "the browser created a tab without an id");
      agentTabs.add(tab.id);
      await saveTabs();
      void groupAgentTab(tab);
      try {
        nav.forget(tab.id);
        await chrome.tabs.update(tab.id, { url }).catch((error: unknown) => {
          throw new CommandError("navigation_failed", `could not open ${url}: ${String(error)}`);
        });
        await nav.wait(tab.id, waitUntil, timeoutMs);
        return { tab: await fresh(tab.id) };
      } catch (error) {
        // The agent never learns this tab's id: close it rather than leave it behind.
        await chrome.tabs.remove(tab.id).catch(() => undefined);
        throw error;
      }
    } finally {
      nav.dispose();
      settled();
    }
  },

  "tabs.close": async ({ tabId }) => {
    await agentTab(tabId);
    await chrome.tabs.remove(tabId);
    agentTabs.delete(tabId);
    sharedTabs.delete(tabId);
    await saveTabs();
    return { closed: true };
  },

  "tabs.activate": async ({ tabId }) => {
    const tab = await agentTab(tabId);
    await chrome.tabs.update(tabId, { active: true });
    await chrome.windows.update(tab.windowId, { focused: true }).catch(() => undefined);
    return { tab: await fresh(tabId) };
  },

  "tabs.navigate": async ({ tabId, url, waitUntil = "load", timeoutMs = 20_000 }) => {
    await agentTab(tabId);
    const settled = noteAgentRequest(url);
    const nav = watchNavigation();
    try {
      await chrome.tabs.update(tabId, { url }).catch((error: unknown) => {
        throw new CommandError("navigation_failed", `could not navigate to ${url}: ${String(error)}`);
      });
      await nav.wait(tabId, waitUntil, timeoutMs);
      return { tab: await fresh(tabId) };
    } finally {
      nav.dispose();
      settled();
    }
  },

  "tabs.history": async ({ tabId, action, timeoutMs = 20_000 }) => {
    await agentTab(tabId);
    const nav = watchNavigation();
    const none = () => new CommandError("navigation_failed", `cannot go ${action}: there is no page ${action === "back" ? "before" : "after"} this one in the tab's history`);
    try {
      try {
        if (action === "back") await chrome.tabs.goBack(tabId);
        else if (action === "forward") await chrome.tabs.goForward(tabId);
        else await chrome.tabs.reload(tabId);
      } catch (error) {
        if (action === "reload") throw new CommandError("navigation_failed", `cannot reload: ${String(error)}`);
        // Chrome's back/forward skips entries reached without a user gesture (the history manipulation
        // intervention), and nothing an agent does carries one. The page's own history.go() is not
        // subject to it; if nothing moves shortly, there truly is no entry.
        await chrome.scripting
          .executeScript({ target: { tabId }, func: (delta: number) => history.go(delta), args: [action === "back" ? -1 : 1] })
          .catch(() => {
            throw none();
          });
        await nav.wait(tabId, "commit", 3000);
        if (!nav.moved(tabId)) throw none();
      }
      await nav.wait(tabId, "load", timeoutMs);
      return { tab: await fresh(tabId) };
    } finally {
      nav.dispose();
    }
  },

  "page.snapshot": async ({ tabId, revision, interactiveOnly, viewportOnly }) => {
    await agentTab(tabId);
    const run = async (frameIds?: number[]) => {
      try {
        return await chrome.scripting.executeScript({
          target: frameIds ? { tabId, frameIds } : { tabId, allFrames: true },
          injectImmediately: true,
          func: (args: unknown) => {
            const api = (globalThis as unknown as { __tabrelayInpage?: { snapshot(a: unknown): unknown } }).__tabrelayInpage;
            return api ? api.snapshot(args) : "not-installed";
          },
          args: [{ revision, interactiveOnly, viewportOnly }],
        });
      } catch (error) {
        throw scriptingError(error);
      }
    };
    // The in-page script usually is there already (one round trip); frames that lack it get it, then run.
    let results = await run();
    const missing = results.filter((r) => r.result === "not-installed").map((r) => r.frameId);
    if (missing.length) {
      await injectInpage(tabId, missing);
      const again = await run(missing);
      results = [...results.filter((r) => r.result !== "not-installed"), ...again];
    }
    const tree = (await chrome.webNavigation.getAllFrames({ tabId })) ?? [];
    const frames = results.flatMap((r) => {
      const outcome = r.result as InpageResult<{ url: string; title: string; nodes: string; elapsedMs?: number; capped?: boolean }> | undefined;
      if (!outcome?.ok) return [];
      const info = tree.find((f) => f.frameId === r.frameId);
      // Refs of subframes carry their frame (the first field of each line).
      const nodes = r.frameId === 0 ? outcome.value.nodes : outcome.value.nodes.replace(/^(e\d+)\t/gm, `f${r.frameId}$1\t`);
      return [{ frameId: r.frameId, parentFrameId: info?.parentFrameId ?? -1, url: outcome.value.url, title: outcome.value.title, nodes, ...(outcome.value.elapsedMs !== undefined ? { elapsedMs: outcome.value.elapsedMs } : {}), ...(outcome.value.capped ? { capped: true } : {}) }];
    });
    return { frames };
  },

  "page.inspect": async ({ tabId, ref, revision, action, value }) => {
    await agentTab(tabId);
    const { frameId, local } = splitRef(ref);
    // The page itself needs no snapshot, so the in-page script may not be there yet.
    if (local === "page") await injectInpage(tabId, [frameId]);
    const facts = await runInFrame<ElementFacts>(tabId, frameId, "inspect", { ref: local, revision, action, value });
    return { ...facts, ref };
  },

  "page.act": async ({ tabId, ref, revision, action, value, expect }) => {
    await agentTab(tabId);
    const { frameId, local } = splitRef(ref);
    // An action that navigates (a link, a submit) can unload the document before it answers; Chrome then
    // never settles the injection. The commit of the next document is the answer in that case.
    const nav = watchNavigation();
    try {
      const acted = runInFrame<{ facts: ElementFacts; effects: string[] }>(tabId, frameId, "act", { ref: local, revision, action, value, expect }).then((outcome) => ({
        facts: { ...outcome.facts, ref },
        effects: outcome.effects,
      }));
      const navigated = nav.committedIn(tabId, frameId).then(async () => {
        // Give a fast answer that was already on its way the chance to win.
        await new Promise((r) => setTimeout(r, 50));
        return { effects: ["the page navigated away as a result of the action"] };
      });
      return await Promise.race([acted, navigated]);
    } finally {
      nav.dispose();
    }
  },

  "page.wait": async ({ tabId, text, textGone, selector, urlIncludes, timeoutMs }) => {
    await agentTab(tabId);
    const started = Date.now();
    if (urlIncludes !== undefined) {
      for (;;) {
        const tab = await chrome.tabs.get(tabId);
        if ((tab.url ?? "").includes(urlIncludes)) return { matched: `URL is ${tab.url}`, elapsedMs: Date.now() - started };
        if (Date.now() - started > timeoutMs) throw new CommandError("wait_timeout", `the URL did not come to include ${JSON.stringify(urlIncludes)} within ${timeoutMs} ms (it is ${tab.url})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    // A navigation during the wait destroys the page's script; start again in the new document.
    for (;;) {
      const left = timeoutMs - (Date.now() - started);
      await injectInpage(tabId, [0]);
      try {
        const outcome = await runInFrame<{ matched: string }>(tabId, 0, "wait", { text, textGone, selector, timeoutMs: Math.max(0, left) });
        return { matched: outcome.matched, elapsedMs: Date.now() - started };
      } catch (error) {
        if (!(error instanceof CommandError) || error.code !== "stale_ref" || Date.now() - started > timeoutMs) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  },

  "page.rect": async ({ tabId, ref, revision }) => {
    await agentTab(tabId);
    const { frameId, local } = splitRef(ref);
    if (frameId !== 0) throw new CommandError("not_actionable", "element screenshots of elements inside frames are not supported; capture the viewport instead");
    return runInFrame<{ x: number; y: number; width: number; height: number }>(tabId, 0, "rect", { ref: local, revision });
  },

  "page.capture": async ({ tabId, activate, clip, fullPage }) => {
    let tab = await agentTab(tabId);
    if (!tab.active) {
      if (!activate) throw new CommandError("tab_not_visible", `tab ${tabId} is not the visible tab of its window; pass activate to bring it to the front, or use activate_tab`);
      await chrome.tabs.update(tabId, { active: true });
      tab = await chrome.tabs.get(tabId);
    }
    const shots: { png: string; y: number }[] = [];
    const metrics = await pageMetrics(tabId);
    if (!fullPage) {
      shots.push({ png: await captureFresh(tabId, tab.windowId), y: 0 });
    } else {
      // Scroll and stitch, at most 10 viewports; Chrome allows two captures a second.
      const steps = Math.min(10, Math.ceil(metrics.scrollHeight / metrics.innerHeight));
      for (let i = 0; i < steps; i++) {
        const y = Math.min(i * metrics.innerHeight, Math.max(0, metrics.scrollHeight - metrics.innerHeight));
        await scrollTo(tabId, y);
        shots.push({ png: await captureFresh(tabId, tab.windowId), y });
      }
      await scrollTo(tabId, metrics.scrollY);
    }
    const after = await chrome.tabs.get(tabId);
    if (!after.active) throw new CommandError("tab_not_visible", `tab ${tabId} stopped being the visible tab during the capture; try again`);
    const composed = await compose(shots, metrics, clip, fullPage === true);
    return { ...composed, url: after.url ?? "", capturedAt: Date.now() };
  },

  "page.content": async ({ tabId }) => {
    await agentTab(tabId);
    try {
      // injectImmediately: a page that never finishes loading (a stalled ad, a long poll) is read as it stands,
      // instead of the script waiting for document_idle until the call times out.
      // A page that replaces its document (a refresh loop, a script reloading) can remove the frame under the
      // script: read again from the new document, a few times.
      let read: DocumentRead | undefined;
      for (let attempt = 1; read === undefined; attempt++) {
        try {
          read = await readDocument(tabId, 0, CONTENT_MAX_CHARS);
        } catch (error) {
          if (!/was removed|document.*unloaded|No frame with id/i.test(String(error))) throw error;
          if (attempt >= 10) throw new CommandError("navigation_failed", "the page kept replacing its document while it was read (it reloads or redirects itself); try again, or use snapshot");
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
        }
      }
      if (read === "none") throw new CommandError("internal", "the page returned no content");
      const { origin: _origin, ...page } = read;
      const frames = await frameContents(tabId, page.url);
      const response = documentStatus.get(tabId);
      return { ...page, ...(response && response.url === withoutFragment(page.url) ? { status: response.status } : {}), ...(frames.length ? { frames } : {}) };
    } catch (error) {
      if (error instanceof CommandError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      if (/cannot be scripted|Cannot access|chrome:\/\/|extensions gallery|Missing host permission/i.test(message)) {
        throw new CommandError("restricted_page", `the browser does not let extensions read this page (${message})`);
      }
      throw new CommandError("internal", message);
    }
  },
};

type DocumentRead = { url: string; origin: string; title: string; html: string; capped?: ContentCapped } | "none";

/**
 * One frame's document through the in-page script (installed first where missing): its HTML with what a person
 * cannot see marked, at most `maxChars` characters. Scripting errors are thrown as Chrome gives them.
 */
async function readDocument(tabId: number, frameId: number, maxChars: number): Promise<DocumentRead> {
  const run = () =>
    chrome.scripting.executeScript({
      target: { tabId, frameIds: [frameId] },
      injectImmediately: true,
      func: (args: unknown) => {
        const api = (globalThis as unknown as { __tabrelayInpage?: { content?: (a: unknown) => unknown } }).__tabrelayInpage;
        return api && typeof api.content === "function" ? api.content(args) : "not-installed";
      },
      args: [{ maxChars, maxElements: CONTENT_MAX_ELEMENTS }],
    });
  let result = (await run())[0]?.result;
  if (result === "not-installed") {
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
async function frameContents(tabId: number, topUrl: string): Promise<FrameContent[]> {
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

// ---- HTTP status of tabs' documents ------------------------------------------------------------------

/**
 * The HTTP status of each tab's current top document (observed only: webRequest without blocking). A response
 * is held until its document commits, and dropped when a document commits without one (bfcache, a service
 * worker's answer): a status is never shown for another document than the one that brought it.
 */
const pendingStatus = new Map<number, { url: string; status: number }>();
const documentStatus = new Map<number, { url: string; status: number }>();
const withoutFragment = (url: string) => url.split("#")[0] ?? url;

chrome.webRequest.onResponseStarted.addListener(
  (details) => {
    if (details.tabId >= 0) pendingStatus.set(details.tabId, { url: withoutFragment(details.url), status: details.statusCode });
  },
  { urls: ["<all_urls>"], types: ["main_frame"] },
);
chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  const pending = pendingStatus.get(details.tabId);
  pendingStatus.delete(details.tabId);
  if (pending && pending.url === withoutFragment(details.url)) documentStatus.set(details.tabId, pending);
  else documentStatus.delete(details.tabId);
});
chrome.tabs.onRemoved.addListener((tabId) => {
  pendingStatus.delete(tabId);
  documentStatus.delete(tabId);
});

// ---- downloads ---------------------------------------------------------------------------------
// Read-only means nothing lands on the user's disk either: a download started by the agent's navigation, or
// by a page in one of the agent's tabs, is cancelled and erased from the download list as soon as it starts.

const DOWNLOAD_NOTE = "tabrelay cancels downloads that agent tabs start: nothing was saved";
/** URLs the agent is sending a tab to: until when a download of one of them (before redirects) is the agent's. */
const agentRequests = new Map<string, number>();
/** After the agent's navigation settles, how long a download of its URL still counts as the agent's. */
const AGENT_REQUEST_GRACE_MS = 10_000;

/** Marks `url` as the agent's while its navigation runs; the returned function starts the grace period. */
function noteAgentRequest(url: string): () => void {
  agentRequests.set(url, Number.POSITIVE_INFINITY);
  return () => {
    agentRequests.set(url, Date.now() + AGENT_REQUEST_GRACE_MS);
    setTimeout(() => {
      if ((agentRequests.get(url) ?? 0) <= Date.now()) agentRequests.delete(url);
    }, AGENT_REQUEST_GRACE_MS + 100);
  };
}

/**
 * "certain": the download is of a URL the agent is navigating to. "page": it was started by a page that only
 * an agent tab shows (its referrer), not by any of the user's tabs. undefined: the user's.
 */
async function agentDownload(item: chrome.downloads.DownloadItem): Promise<"certain" | "page" | undefined> {
  const until = agentRequests.get(item.url) ?? agentRequests.get(item.finalUrl);
  if (until !== undefined && Date.now() <= until) return "certain";
  if (!item.referrer) return undefined;
  const tabs = await chrome.tabs.query({});
  const showing = tabs.filter((tab) => tab.url === item.referrer && tab.id !== undefined);
  return showing.length > 0 && showing.every((tab) => agentTabs.has(tab.id!)) ? "page" : undefined;
}

chrome.downloads.onCreated.addListener((item) => {
  void tabsLoaded.then(async () => {
    const whose = await agentDownload(item);
    if (!whose) return;
    await chrome.downloads.cancel(item.id).catch(() => undefined);
    // A small file may have finished before the cancel arrived: when the download is surely the agent's,
    // its file is deleted too.
    const [now] = await chrome.downloads.search({ id: item.id }).catch(() => []);
    if (whose === "certain" && now?.state === "complete") await chrome.downloads.removeFile(item.id).catch(() => undefined);
    if (whose === "certain" || now?.state !== "complete") await chrome.downloads.erase({ id: item.id }).catch(() => undefined);
  });
});

// ---- events ------------------------------------------------------------------------------------

// A navigation request of an agent tab stopped before it was sent (the navigation rules, or another
// extension's): the broker decides whether it was its policy, records it and tells the agent.
// A popup's first request is stopped before the tab is claimed as the agent's: it is reported once it is.
const stoppedBeforeClaim = new Map<number, BridgeEvents["tab.blocked"]>();
chrome.webRequest.onErrorOccurred.addListener(
  (details) => {
    if (details.error !== "net::ERR_BLOCKED_BY_CLIENT" || details.tabId < 0) return;
    const params = { tabId: details.tabId, url: details.url, frame: details.type !== "main_frame" };
    void tabsLoaded.then(() => {
      if (isVisibleToAgent(details.tabId)) {
        emit({ type: "event", event: "tab.blocked", params });
      } else if (!params.frame) {
        stoppedBeforeClaim.set(details.tabId, params);
        setTimeout(() => stoppedBeforeClaim.delete(details.tabId), 5000);
      }
    });
  },
  { urls: ["<all_urls>"], types: ["main_frame", "sub_frame"] },
);

function reportStoppedBeforeClaim(tabId: number): void {
  const params = stoppedBeforeClaim.get(tabId);
  stoppedBeforeClaim.delete(tabId);
  if (params) emit({ type: "event", event: "tab.blocked", params });
}

chrome.webNavigation.onCommitted.addListener((details) => {
  if (details.frameId !== 0) return;
  void tabsLoaded.then(() => {
    if (isVisibleToAgent(details.tabId)) emit({ type: "event", event: "tab.committed", params: { tabId: details.tabId, url: details.url } });
  });
});

chrome.tabs.onCreated.addListener((tab) => {
  void tabsLoaded.then(async () => {
    if (tab.id === undefined || tab.openerTabId === undefined || !agentTabs.has(tab.openerTabId)) return;
    // A page the agent opened opened another tab: it is the agent's too, and the broker polices it.
    agentTabs.add(tab.id);
    await saveTabs();
    void groupAgentTab(tab);
    emit({ type: "event", event: "tab.created", params: { tab: toTabInfo(tab), openerTabId: tab.openerTabId } });
    reportStoppedBeforeClaim(tab.id);
  });
});

chrome.webNavigation.onCreatedNavigationTarget.addListener((details) => {
  void tabsLoaded.then(async () => {
    if (!agentTabs.has(details.sourceTabId) || agentTabs.has(details.tabId)) return;
    agentTabs.add(details.tabId);
    await saveTabs();
    reportStoppedBeforeClaim(details.tabId);
    emit({ type: "event", event: "tab.committed", params: { tabId: details.tabId, url: details.url, openerTabId: details.sourceTabId } });
  });
});

chrome.tabs.onRemoved.addListener((tabId) => {
  void tabsLoaded.then(async () => {
    if (!isVisibleToAgent(tabId)) return;
    agentTabs.delete(tabId);
    sharedTabs.delete(tabId);
    await saveTabs();
    emit({ type: "event", event: "tab.removed", params: { tabId } });
  });
});

// ---- popup -------------------------------------------------------------------------------------

type PopupMessage =
  | { type: "status" }
  | { type: "pair"; url: string; token: string }
  | { type: "share"; tabId: number }
  | { type: "unshare"; tabId: number };

chrome.runtime.onMessage.addListener((message: PopupMessage, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  void (async () => {
    await tabsLoaded;
    const settings = await loadSettings();
    if (message.type === "pair") {
      await chrome.storage.local.set({ brokerUrl: message.url, pairingToken: message.token });
      reconnectNow();
    } else if (message.type === "share") {
      sharedTabs.add(message.tabId);
      await saveTabs();
    } else if (message.type === "unshare") {
      sharedTabs.delete(message.tabId);
      await saveTabs();
    }
    const rulesError = navigationRulesError();
    sendResponse({ state, lastError: [lastError, rulesError].filter(Boolean).join("; "), brokerUrl: settings.brokerUrl ?? "", browserId: settings.browserId, label: settings.label, sharedTabs: [...sharedTabs] });
  })();
  // Keep the message channel open for the async sendResponse above.
  return true;
});

// ---- lifetime ----------------------------------------------------------------------------------

// The alarm is the backstop: if Chrome killed the worker anyway, the next alarm wakes it and it redials.
void chrome.alarms.create(KEEPALIVE_ALARM, { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === KEEPALIVE_ALARM) void connect();
});
chrome.runtime.onStartup.addListener(() => void connect());
chrome.runtime.onInstalled.addListener(() => void connect());

void connect();

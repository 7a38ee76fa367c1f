// The CDP driver: serves every BridgeMethod by speaking Chromium's DevTools protocol directly, and behaves
// like the extension from the broker's point of view (same results, error codes, events, agent-tabs rule).
//
// - Agent tabs: in a browser we launched (ownsBrowser) every page target is the agent's; in a browser we
//   attached to, only tabs created through this driver and the tabs those opened (transitively). A stateless
//   host's browser (stateless: one connection per request) is wholly the agent's, and its tab ids (and frame keys)
//   are derived from the DevTools ids, so they are the same from the next connection; the in-page script's refs
//   survive too, its isolated world being found again by name.
// - Page access goes through the same in-page script as the extension (packages/extension/dist/inpage.js),
//   installed in an isolated world named "tabrelay" per frame, so page scripts cannot see or tamper with it.
//   Over CDP there is no chrome.dom.openOrClosedShadowRoot: before a snapshot the driver asks the script what to
//   describe (custom elements whose root it cannot see, and the parts of the page not swept yet, so closed roots
//   on every host attachShadow accepts are found), reads their closed roots with DOM.describeNode (pierce),
//   resolves them into the isolated world and hands them to the script, which then walks (and acts in) them.
// - Network policy (requestPolicy): Fetch interception on every page, iframe and worker session fails the
//   requests the callback refuses with BlockedByClient, before they are sent. Navigation requests (documents
//   of the top frame and of frames, every redirect hop) are asked as "navigation", everything else as
//   "subresource"; a stopped navigation of an agent tab is reported as a tab.blocked event. Not covered:
//   service workers' own fetches and responses a service worker serves from its cache.
//
// The driver's parts, a module each: cdpCore.ts (shared state and plumbing), targets.ts (attaching pages and
// tracking them), network.ts (request policy, file downloads), navigation.ts (opening, navigating, waiting),
// inpage.ts (the in-page script), reading.ts (frames, snapshots, content), capture.ts (screenshots); this
// file is the entry the broker imports lazily (its own chunk of the CLI bundle) and dispatches BridgeMethods.
import type { BridgeMethod, ParamsOf, Result, ResultOf, TabInfo } from "@tabrelay/protocol";
import { serve } from "../composed.js";
import type { BrowserDriver, BrowserInfo, CallOptions } from "../driver.js";
import { TabrelayError } from "../../util/errors.js";
import { capture } from "./capture.js";
import { CdpClient } from "./cdpClient.js";
import { ActInterrupted, type CdpBrowserOptions, CdpCore, DriverError } from "./cdpCore.js";
import { elementFacts, inpageAct, rectValue } from "../answers.js";
import { callInpage, checkScriptable, parseAnswer } from "./inpage.js";
import { createTab, history, navigate, tabInfo, waitFor } from "./navigation.js";
import { evaluate, setViewport } from "./pageControl.js";
import { callWebMcp } from "./webmcp.js";
import { frameOffset, query, readContent, routeOf, snapshot } from "./reading.js";
import { startUp } from "./targets.js";

/**
 * How long an action waits for the tab of a window the page said it was opening to attach (a window the popup
 * blocker stops is announced too, and never attaches: the wait is that case's cost).
 */
const WINDOW_OPEN_WAIT_MS = 500;

export type { CdpBrowserOptions } from "./cdpCore.js";

type Handlers = { [M in BridgeMethod]: (params: ParamsOf<M>) => Promise<ResultOf<M>> };

export class CdpBrowser implements BrowserDriver {
  readonly info: BrowserInfo;
  readonly #core: CdpCore;

  private constructor(core: CdpCore) {
    this.#core = core;
    this.info = core.info;
  }

  /**
   * Connects to a browser's DevTools endpoint (ws://.../devtools/browser/...). Throws a TabrelayError
   * (not_connected) when it cannot; the message never contains the endpoint.
   */
  static async connect(endpoint: string, opts: CdpBrowserOptions): Promise<CdpBrowser> {
    const connected = await CdpClient.connect(endpoint, { timeoutMs: opts.callTimeoutMs, ...(opts.socket ? { socket: opts.socket } : {}) });
    if (!connected.ok) throw new TabrelayError("not_connected", connected.error.message);
    const client = connected.value;
    const version = await client.send("Browser.getVersion", {});
    if (!version.ok) {
      client.close();
      throw new TabrelayError("not_connected", `the DevTools endpoint did not answer Browser.getVersion: ${version.error.message}`);
    }
    const info: BrowserInfo = {
      browserId: opts.browserId ?? `cdp-${crypto.randomUUID()}`,
      label: opts.label,
      userAgent: version.value.userAgent,
      extensionVersion: `cdp ${version.value.product}`,
      connectedAt: Date.now(),
      kind: "cdp",
      ...(opts.owner !== undefined ? { owner: opts.owner, ...(opts.ownerName !== undefined ? { ownerName: opts.ownerName } : {}) } : {}),
    };
    // Read-only means nothing lands on disk either. A browser of tabrelay's own refuses every download (the
    // navigation reports "started a download"); in an attached browser, the user's, downloads keep their
    // usual handling and only those started in the agent's tabs are cancelled (onDownload, network.ts).
    await client.send("Browser.setDownloadBehavior", opts.ownsBrowser || opts.stateless ? { behavior: "deny" } : { behavior: "default", eventsEnabled: true });
    const core = new CdpCore(client, info, opts);
    const browser = new CdpBrowser(core);
    const started = await startUp(core);
    if (!started.ok) {
      browser.close("start-up failed");
      throw new TabrelayError("not_connected", started.error.message);
    }
    return browser;
  }

  get closed(): boolean {
    return this.#core.closed;
  }

  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options: CallOptions = {}): Promise<Result<ResultOf<M>>> {
    const timeoutMs = this.#core.options.callTimeoutMs;
    return serve(this.#core, method, params, { ...options, timeoutMs: options.timeoutMs ?? timeoutMs }, (m, p, o = {}) =>
      this.#core.calls.run(m, { ...o, timeoutMs: o.timeoutMs ?? timeoutMs }, () =>
        // No size check: MAX_FRAME_BYTES is what the /bridge socket carries, and over CDP there is no bridge.
        this.#dispatch(m, p).then(
          (value) => ({ ok: true, value }),
          (error: unknown) => ({ ok: false, error: this.#core.wireError(error) }),
        ),
      ),
    );
  }

  /**
   * Ends the connection: a browser we launched is shut down (Browser.close); an attached one keeps running, and so
   * does a stateless host's (it outlives the request).
   */
  close(reason: string): void {
    if (this.#core.closed) return;
    this.#core.markClosed(reason);
    if (this.#core.options.ownsBrowser && !this.#core.options.stateless) {
      void this.#core.client.send("Browser.close", {}, undefined, { timeoutMs: 3000 }).then(() => this.#core.client.close(reason));
    } else {
      // Closing the socket detaches every session; the browser and its tabs stay as they are.
      this.#core.client.close(reason);
    }
  }

  readonly #handlers: Handlers = {
    "browser.ping": async () => ({ now: Date.now() }),
    // Over CDP the read policy is asked at each request (requestPolicy reads the broker's config as it is now).
    "browser.rules": async ({ navigationRules }) => ({ installed: navigationRules.length }),

    "tabs.list": async () => {
      const tabs = [...this.#core.byTabId.values()].sort((a, b) => a.tabId - b.tabId);
      await Promise.all(tabs.map((t) => t.ready));
      const infos = await Promise.all(tabs.filter((t) => !t.gone).map((t) => tabInfo(this.#core, t).catch(() => undefined)));
      return { tabs: infos.filter((t): t is TabInfo => t !== undefined) };
    },

    "tabs.get": async ({ tabId }) => ({ tab: await tabInfo(this.#core, await this.#core.agentTab(tabId)) }),

    "tabs.open": async ({ url, active = false, waitUntil = "load", timeoutMs = 20_000 }) => {
      const tab = await createTab(this.#core, active);
      const sessionId = tab.sessionId;
      if (sessionId === undefined) throw new DriverError("no_such_tab", "the new tab closed at once");
      if (url === "about:blank") return { tab: await tabInfo(this.#core, tab) };
      let info: TabInfo;
      try {
        info = await navigate(this.#core, Object.assign(tab, { sessionId }), url, waitUntil, timeoutMs);
      } catch (error) {
        throw DriverError.of(error, tab.tabId); // the broker closes it (drivers/composed.ts)
      }
      // chrome.tabs.create starts a tab's history at its URL: drop the about:blank it was created on.
      await this.#core.send("Page.resetNavigationHistory", {}, sessionId);
      return { tab: info };
    },

    "tabs.close": async ({ tabId }) => {
      const tab = await this.#core.agentTab(tabId);
      tab.closedByUs = true;
      const result = await this.#core.send("Target.closeTarget", { targetId: tab.targetId });
      if (!result.ok && !tab.gone) throw this.#core.failure(result.error);
      this.#core.retire(tab);
      return { closed: true };
    },

    "tabs.activate": async ({ tabId }) => {
      const tab = await this.#core.agentTab(tabId);
      await this.#core.must("Target.activateTarget", { targetId: tab.targetId });
      return { tab: await tabInfo(this.#core, tab) };
    },

    "tabs.navigate": async ({ tabId, url, waitUntil = "load", timeoutMs = 20_000 }) => ({
      tab: await navigate(this.#core, await this.#core.agentTab(tabId), url, waitUntil, timeoutMs),
    }),

    "tabs.history": async ({ tabId, action, timeoutMs = 20_000 }) => ({ tab: await history(this.#core, await this.#core.agentTab(tabId), action, timeoutMs) }),

    "page.content": async ({ tabId, frameId }) => readContent(this.#core, await this.#core.agentTab(tabId), frameId),

    "page.snapshot": async ({ tabId, revision, interactiveOnly, viewportOnly }) => {
      const tab = await this.#core.agentTab(tabId);
      checkScriptable(tab);
      return { frames: await snapshot(this.#core, tab, { revision, interactiveOnly, viewportOnly }) };
    },

    "page.query": async ({ tabId, ...args }) => {
      const tab = await this.#core.agentTab(tabId);
      checkScriptable(tab);
      return { frames: await query(this.#core, tab, args) };
    },

    "page.inspect": async ({ tabId, ref, frameId = 0, revision, action, value }) => {
      const tab = await this.#core.agentTab(tabId);
      checkScriptable(tab);
      const route = await routeOf(this.#core, tab, frameId, ref);
      // The page itself needs no snapshot, so the in-page script may not be there yet: install it for that ref.
      return parseAnswer(
        elementFacts,
        await callInpage(this.#core, route.sessionId, route.frameId, "inspect", { ref, revision, action, value }, ref === "page"),
        "inspect",
      );
    },

    "page.act": async ({ tabId, ref, frameId = 0, revision, action, value, expect }) => {
      const tab = await this.#core.agentTab(tabId);
      checkScriptable(tab);
      const route = await routeOf(this.#core, tab, frameId, ref);
      // Tabs the page opens during the action are indexed (targets.ts) before the script's answer arrives.
      const before = new Set(this.#core.tabs.keys());
      const opened = (): { newTabs?: number[] } => {
        const ids = [...this.#core.tabs.entries()].filter(([key, t]) => !before.has(key) && t.openerTabId === tab.tabId).map(([, t]) => t.tabId);
        return ids.length ? { newTabs: ids } : {};
      };
      // The page says a window is opening (Page.windowOpen) before the script's answer; its target may attach
      // just after: wait for that many new tabs, briefly, only then.
      let windowOpens = 0;
      const stopWatching = tab.sessionId ? this.#core.client.on("Page.windowOpen", () => void windowOpens++, tab.sessionId) : () => undefined;
      const settledTabs = async (): Promise<{ newTabs?: number[] }> => {
        for (const deadline = Date.now() + WINDOW_OPEN_WAIT_MS; (opened().newTabs?.length ?? 0) < windowOpens && Date.now() < deadline;) {
          await new Promise((r) => setTimeout(r, 10));
        }
        return opened();
      };
      let raw: unknown;
      try {
        try {
          raw = await callInpage(this.#core, route.sessionId, route.frameId, "act", { ref, revision, action, value, expect }, ref === "page");
        } catch (error) {
          // The action ran and the document it ran in went away (a link, a submit): that is its effect.
          if (error instanceof ActInterrupted)
            return { effects: { done: "the page navigated away as a result of the action", navigated: true, ...(await settledTabs()) } };
          throw error;
        }
        const outcome = parseAnswer(inpageAct, raw, "act");
        return { facts: outcome.facts, effects: { ...outcome.effects, ...(await settledTabs()) } };
      } finally {
        stopWatching();
      }
    },

    "page.wait": async (params) => waitFor(this.#core, await this.#core.agentTab(params.tabId), params),

    "page.rect": async ({ tabId, ref, frameId = 0, revision }) => {
      const tab = await this.#core.agentTab(tabId);
      checkScriptable(tab);
      const route = await routeOf(this.#core, tab, frameId, ref);
      const box = parseAnswer(rectValue, await callInpage(this.#core, route.sessionId, route.frameId, "rect", { ref, revision }, false), "rect");
      if (frameId === 0) return box;
      const offset = await frameOffset(this.#core, tab, route);
      return { ...box, x: box.x + offset.x, y: box.y + offset.y };
    },

    "page.capture": async (params) => capture(this.#core, await this.#core.agentTab(params.tabId), params),

    "tabs.viewport": async ({ tabId, width, height }) => setViewport(this.#core, await this.#core.agentTab(tabId), width, height),

    "page.eval": async ({ tabId, expression, timeoutMs }) => evaluate(this.#core, await this.#core.agentTab(tabId), expression, timeoutMs),
    "page.webmcpCall": async ({ tabId, name, input, timeoutMs }) => callWebMcp(this.#core, await this.#core.agentTab(tabId), name, input, timeoutMs),
    // Over CDP the driver's own option says it (CdpBrowserOptions.webmcp), set when the browser is attached.
    "page.webmcpWatch": async () => ({}),
    // A CDP browser has no popup and no notifications: its user answers in the dashboard or with tabrelay ask.
    "browser.asks": async () => ({ shown: 0 }),
    "browser.tabState": async () => ({}),
    // A tab's allowances are asked at each request (requestPolicy, with the tab): nothing to install.
    "browser.tabRules": async ({ tabs }) => ({ installed: tabs.length }),
  };

  #dispatch<M extends BridgeMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    if (!Object.hasOwn(this.#handlers, method)) return Promise.reject(new DriverError("unknown_method", `unknown method ${String(method)}`));
    const handler: Handlers[M] = this.#handlers[method];
    return handler(params);
  }
}

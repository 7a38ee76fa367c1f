// The commands the broker may call: a typed dispatch over BridgeMethods, nothing else is served.
import {
  CONTENT_MAX_CHARS,
  FRAME_HTML_BUDGET,
  type ActEffects,
  type BridgeMethod,
  type BridgeMethods,
  type ElementFacts,
  type InpageQuery,
} from "@tabrelay/protocol";
import { setTabState, showQuestions } from "./askState.js";
import { captureFresh, compose, pageMetrics, pngSize, scrollTo } from "./capture.js";
import { CommandError } from "./commandError.js";
import { noteAgentRequest, noteAgentRequestTab } from "./downloads.js";
import { readDocument } from "./frames.js";
import { callInpage, injectInpage, runInFrame, scriptingError, type InpageResult } from "./inpageScript.js";
import { loadErrorOf, watchNavigation } from "./navigation.js";
import { scopeNewTabs, setNavigationRules, setTabRules } from "./navigationRules.js";
import { evaluate, setViewport } from "./pageControl.js";
import { replacedWhileScripting } from "./platform.js";
import { callWebMcp, watchWebMcp } from "./webmcp.js";
import { agentTabs, isVisibleToAgent, saveTabs, sharedTabs } from "./state.js";
import { agentTab, fresh, groupAgentTab, toTabInfo } from "./tabs.js";

/** The tab's URL after a capture, which it must still be in front for (captureVisibleTab pictures the window's front tab). */
async function stillInFront(tabId: number): Promise<string> {
  const after = await chrome.tabs.get(tabId);
  if (!after.active) throw new CommandError("tab_not_visible", `tab ${tabId} stopped being the visible tab during the capture; try again`);
  return after.url ?? "";
}

const gone = () => new CommandError("stale_ref", "the document went away while it was read");

/** Whether the tab's top document is being replaced: it is loading, or another document is there 150 ms later. */
async function documentMoving(tabId: number): Promise<boolean> {
  const documentOf = async () => ((await chrome.webNavigation.getFrame({ tabId, frameId: 0 }).catch(() => null)) as { documentId?: string } | null)?.documentId;
  const before = await documentOf();
  if ((await chrome.tabs.get(tabId).catch(() => undefined))?.status === "loading") return true;
  await new Promise((resolve) => setTimeout(resolve, 150));
  return (await documentOf()) !== before || (await chrome.tabs.get(tabId).catch(() => undefined))?.status === "loading";
}

type Handlers = { [M in BridgeMethod]: (params: BridgeMethods[M]["params"]) => Promise<BridgeMethods[M]["result"]> };

export const handlers: Handlers = {
  "browser.ping": async () => ({ now: Date.now() }),

  // config.yaml changed while connected: the same rules a welcome brings, installed before the answer.
  "browser.rules": async ({ navigationRules }) => {
    await setNavigationRules(navigationRules);
    return { installed: Array.isArray(navigationRules) ? navigationRules.length : 0 };
  },

  // The questions the broker puts to this browser's user (policy.ask), and the popup's view of a tab.
  "browser.asks": async ({ questions }) => ({ shown: await showQuestions(Array.isArray(questions) ? questions : []) }),
  // Sites the user allowed once for a tab (policy.ask.read): rules scoped to the tab, installed before the answer.
  "browser.tabRules": async ({ tabs }) => ({ installed: await setTabRules(Array.isArray(tabs) ? tabs : []) }),
  "browser.tabState": async (view) => {
    setTabState(view);
    return {};
  },

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
      // Created with its URL under a scope that covers every tab not known yet (navigationRules.ts), then scoped
      // by its own id: a redirect from the first response is stopped like any other.
      const endScope = await scopeNewTabs(url);
      let tab: chrome.tabs.Tab;
      try {
        tab = await chrome.tabs.create({ url, active }).catch((error: unknown) => {
          throw new CommandError("navigation_failed", `could not open a tab for ${url}: ${String(error)}`);
        });
        if (tab.id !== undefined) {
          agentTabs.add(tab.id);
          noteAgentRequestTab(url, tab.id);
        }
      } finally {
        endScope();
        await saveTabs();
      }
      if (tab.id === undefined) throw new CommandError("internal", "the browser created a tab without an id");
      void groupAgentTab(tab);
      try {
        await nav.wait(tab.id, waitUntil, timeoutMs);
        const opened = await fresh(tab.id);
        // Nothing committed yet (the server has not answered): Chrome says so with an empty URL, Firefox with the
        // about:blank the tab was created on, which is no page of the agent's.
        if (opened.url === "about:blank" && !nav.committed(tab.id) && url !== "about:blank") return { tab: { ...opened, url: "" } };
        return { tab: opened };
      } catch (error) {
        // Named in the error, so the broker closes it (drivers/composed.ts): the agent never learns its id.
        throw new CommandError(error instanceof CommandError ? error.code : "internal", error instanceof Error ? error.message : String(error), tab.id);
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
    await saveTabs("later");
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
    const settled = noteAgentRequest(url, tabId);
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
    const none = () =>
      new CommandError("navigation_failed", `cannot go ${action}: there is no page ${action === "back" ? "before" : "after"} this one in the tab's history`);
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
    // The in-page script usually is there already (one round trip); frames that lack it get it, then run.
    const results = await callInpage(tabId, undefined, "snapshot", { revision, interactiveOnly, viewportOnly }, true).catch((error: unknown) => {
      throw scriptingError(error);
    });
    const tree = (await chrome.webNavigation.getAllFrames({ tabId })) ?? [];
    const frames = results.flatMap((r) => {
      const outcome = r.result as
        InpageResult<{ url: string; origin?: string; title: string; nodes: string; elapsedMs?: number; capped?: boolean }> | undefined;
      if (!outcome?.ok) return [];
      const info = tree.find((f) => f.frameId === r.frameId);
      const origin = typeof outcome.value.origin === "string" ? { origin: outcome.value.origin } : {};
      return [
        {
          frameId: r.frameId,
          parentFrameId: info?.parentFrameId ?? -1,
          url: outcome.value.url,
          ...origin,
          title: outcome.value.title,
          nodes: outcome.value.nodes,
          ...(outcome.value.elapsedMs !== undefined ? { elapsedMs: outcome.value.elapsedMs } : {}),
          ...(outcome.value.capped ? { capped: true } : {}),
        },
      ];
    });
    return { frames };
  },

  "page.query": async ({ tabId, ...args }) => {
    await agentTab(tabId);
    const results = await callInpage(tabId, undefined, "query", args, true).catch((error: unknown) => {
      throw scriptingError(error);
    });
    const tree = (await chrome.webNavigation.getAllFrames({ tabId })) ?? [];
    // Every document judges the selector alike: the top one's refusal (an invalid selector) is the answer.
    const top = results.find((r) => r.frameId === 0)?.result as InpageResult<InpageQuery> | undefined;
    if (top && typeof top === "object" && !top.ok) throw new CommandError(top.error.code, top.error.message);
    const frames = results.flatMap((r) => {
      const outcome = r.result as InpageResult<InpageQuery> | undefined;
      if (!outcome?.ok) return [];
      return [{ ...outcome.value, frameId: r.frameId, parentFrameId: tree.find((f) => f.frameId === r.frameId)?.parentFrameId ?? -1 }];
    });
    return { frames };
  },

  "page.inspect": async ({ tabId, ref, frameId = 0, revision, action, value }) => {
    await agentTab(tabId);
    // The page itself needs no snapshot, so the in-page script may not be there yet.
    if (ref === "page") await injectInpage(tabId, [frameId]);
    return runInFrame<ElementFacts>(tabId, frameId, "inspect", { ref, revision, action, value });
  },

  "page.act": async ({ tabId, ref, frameId = 0, revision, action, value, expect }) => {
    await agentTab(tabId);
    // An action that navigates (a link, a submit) can unload the document before it answers; Chrome then
    // never settles the injection. The commit of the next document is the answer in that case.
    const nav = watchNavigation();
    // Tabs the page opens during the action (window.open, target=_blank): the browser announces them before the
    // script's answer comes back, so they are part of the answer rather than a race with the tab events.
    const newTabs = new Set<number>();
    const onCreated = (tab: chrome.tabs.Tab) => {
      if (tab.id !== undefined && tab.openerTabId === tabId) newTabs.add(tab.id);
    };
    const onTarget = (details: { sourceTabId: number; tabId: number }) => {
      if (details.sourceTabId === tabId) newTabs.add(details.tabId);
    };
    chrome.tabs.onCreated.addListener(onCreated);
    chrome.webNavigation.onCreatedNavigationTarget.addListener(onTarget);
    try {
      const acted = runInFrame<{ facts: ElementFacts; effects: ActEffects }>(tabId, frameId, "act", { ref, revision, action, value, expect });
      const navigated = nav.committedIn(tabId, frameId).then(async () => {
        // Give a fast answer that was already on its way the chance to win.
        await new Promise((r) => setTimeout(r, 50));
        const effects: ActEffects = { done: "the page navigated away as a result of the action", navigated: true };
        return { effects };
      });
      const outcome: { facts?: ElementFacts; effects: ActEffects } = await Promise.race([acted, navigated]);
      await new Promise((r) => setTimeout(r, 0)); // a creation event already queued is delivered first
      return newTabs.size ? { ...outcome, effects: { ...outcome.effects, newTabs: [...newTabs] } } : outcome;
    } finally {
      chrome.tabs.onCreated.removeListener(onCreated);
      chrome.webNavigation.onCreatedNavigationTarget.removeListener(onTarget);
      nav.dispose();
    }
  },

  // One wait in the top document; the broker watches the URL and starts again after a navigation (composed.ts).
  "page.wait": async ({ tabId, text, textGone, selector, timeoutMs }) => {
    await agentTab(tabId);
    const started = Date.now();
    await injectInpage(tabId, [0]);
    const outcome = await runInFrame<{ matched: string }>(tabId, 0, "wait", { text, textGone, selector, timeoutMs });
    return { matched: outcome.matched, elapsedMs: Date.now() - started };
  },

  "page.rect": async ({ tabId, ref, frameId = 0, revision }) => {
    await agentTab(tabId);
    if (frameId !== 0)
      throw new CommandError("not_actionable", "element screenshots of elements inside frames are not supported; capture the viewport instead");
    return runInFrame<{ x: number; y: number; width: number; height: number }>(tabId, 0, "rect", { ref, revision });
  },

  "page.capture": async ({ tabId, activate, clip, fullPage }) => {
    let tab = await agentTab(tabId);
    if (!tab.active) {
      if (!activate)
        throw new CommandError(
          "tab_not_visible",
          `tab ${tabId} is not the visible tab of its window; pass activate to bring it to the front, or use activate_tab`,
        );
      await chrome.tabs.update(tabId, { active: true });
      tab = await chrome.tabs.get(tabId);
    }
    if (!clip && !fullPage) {
      // The viewport as captured: nothing to measure, crop or re-encode.
      const png = await captureFresh(tabId, tab.windowId);
      const url = await stillInFront(tabId);
      return { png, ...pngSize(png), url, capturedAt: Date.now() };
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
    const url = await stillInFront(tabId);
    const composed = await compose(shots, metrics, clip);
    return { ...composed, url, capturedAt: Date.now() };
  },

  "tabs.viewport": async ({ tabId, width, height }) => setViewport(await agentTab(tabId), width, height),

  "page.webmcpWatch": (params) => watchWebMcp(params),

  "page.webmcpCall": async (params) => {
    await agentTab(params.tabId);
    return callWebMcp(params);
  },

  "page.eval": async ({ tabId, expression, timeoutMs }) => {
    await agentTab(tabId);
    return evaluate(tabId, expression, timeoutMs);
  },

  "page.content": async ({ tabId, frameId }) => {
    await agentTab(tabId);
    try {
      // Listed before the top document is read: a frame listed here either belongs to the document read or is gone.
      const subframes =
        frameId === undefined ? ((await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null)) ?? []).filter((f) => f.frameId !== 0) : [];
      // injectImmediately: a page that never finishes loading (a stalled ad, a long poll) is read as it stands,
      // instead of the script waiting for document_idle until the call times out.
      // No result at all ("none"), or the frame removed under the script: the document went away before it answered
      // (a refresh loop, a script reloading); the broker reads again (drivers/pageContent.ts).
      const read = await readDocument(tabId, frameId ?? 0, frameId === undefined ? CONTENT_MAX_CHARS : FRAME_HTML_BUDGET).catch(async (error: unknown) => {
        if (/was removed|document.*unloaded|No frame with id/i.test(String(error))) throw gone();
        // Between documents if the tab is loading or its document changes within a moment: a page of a domain the
        // browser keeps from extensions (its add-on store) is refused the same way, stays, and is restricted_page below.
        if (replacedWhileScripting(String(error))) {
          if (await documentMoving(tabId)) throw gone();
          // Firefox's own error page for a load that failed (scripts are refused there as on its add-on store).
          const failed = await loadErrorOf(tabId, (await chrome.tabs.get(tabId).catch(() => undefined))?.url ?? "", 1000);
          if (failed) throw new CommandError("navigation_failed", `the page failed to load: ${failed}`);
        }
        throw error;
      });
      if (read === "none") throw gone();
      if (frameId !== undefined) return read;
      const { origin: _origin, ...page } = read;
      return { ...page, ...(subframes.length ? { subframes: subframes.map((f) => ({ frameId: f.frameId, parentFrameId: f.parentFrameId })) } : {}) };
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

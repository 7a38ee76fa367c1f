// The broker's own view of a browser's agent tabs, once for both drivers: the browser's last tabs.now (its whole list,
// sent when it starts serving and at each change of a tab or of the set), amended by what the broker's own tab calls
// answered since (their answers are at least as fresh as the list before them on the same connection). list_tabs is
// answered from it without a round trip to the browser (composed.ts). A driver that never sends tabs.now has no view:
// tabs.list goes to the browser, as before.
import type { BridgeEvent, BridgeMethod, Result, TabInfo } from "@tabrelay/protocol";
import { parseBridgeAnswer } from "./answers.js";

/** A close that failed with these found the tab gone already. */
const GONE = new Set(["no_such_tab", "not_agent_tab", "browser_disconnected", "not_connected"]);

function tabIdOf(params: unknown): number | undefined {
  const tabId: unknown = params !== null && typeof params === "object" ? Reflect.get(params, "tabId") : undefined;
  return typeof tabId === "number" ? tabId : undefined;
}

/** Methods whose answer is one tab as it is now. */
const ONE_TAB = new Set<BridgeMethod>(["tabs.open", "tabs.get", "tabs.navigate", "tabs.history", "tabs.activate"]);

export class TabView {
  /** By tab id, in the browser's order; undefined until the browser sent its first list. */
  #tabs: Map<number, TabInfo> | undefined;
  /** When the browser's last list came (epoch ms). */
  #asOf = 0;
  /** Tabs whose close was sent and not yet answered: put back if it fails while they still exist. */
  readonly #closing = new Map<number, TabInfo>();

  /** The agent's tabs as the browser last said, and when it said so; or undefined: no view, ask the browser. */
  now(): { tabs: TabInfo[]; asOf: number } | undefined {
    return this.#tabs ? { tabs: [...this.#tabs.values()], asOf: this.#asOf } : undefined;
  }

  /** An event from the browser, before the broker's listeners get it. */
  observe(frame: BridgeEvent): void {
    switch (frame.event) {
      case "tabs.now": {
        const parsed = parseBridgeAnswer("tabs.list", frame.params);
        // A list the broker cannot read is no view: list_tabs asks the browser, which says what is wrong.
        this.#tabs = parsed.ok ? new Map(parsed.value.tabs.map((tab) => [tab.tabId, tab])) : undefined;
        this.#asOf = Date.now();
        return;
      }
      case "tab.removed":
      case "tab.stop":
        this.#tabs?.delete(frame.params.tabId);
        return;
      default:
        return;
    }
  }

  /**
   * A call's answer: a tab it returned is that tab now (a new one for tabs.open; any other call only updates a tab the
   * view still has: one taken back or closed meanwhile stays out); a tab whose close failed while it still exists is
   * put back.
   */
  note(method: BridgeMethod, params: unknown, result: Result<unknown>): void {
    if (method === "tabs.close") {
      const tabId = tabIdOf(params);
      const was = tabId === undefined ? undefined : this.#closing.get(tabId);
      if (tabId !== undefined) this.#closing.delete(tabId);
      if (was && !result.ok && !GONE.has(result.error.code)) this.#tabs?.set(was.tabId, was);
      return;
    }
    if (!this.#tabs || !result.ok || !ONE_TAB.has(method)) return;
    const one = parseBridgeAnswer("tabs.get", result.value);
    if (one.ok && (method === "tabs.open" || this.#tabs.has(one.value.tab.tabId))) this.#put(one.value.tab);
  }

  /** A tab the broker is closing (tabs.close's params): gone from the view now, not once the browser answered. */
  closing(params: unknown): void {
    const tabId = tabIdOf(params);
    const tab = tabId === undefined ? undefined : this.#tabs?.get(tabId);
    if (tabId === undefined || !tab) return;
    this.#tabs?.delete(tabId);
    this.#closing.set(tabId, tab);
  }

  #put(tab: TabInfo): void {
    if (!this.#tabs) return;
    // Another tab of its window is no longer in front.
    if (tab.active) {
      for (const [id, other] of this.#tabs)
        if (id !== tab.tabId && other.windowId === tab.windowId && other.active) this.#tabs.set(id, { ...other, active: false });
    }
    this.#tabs.set(tab.tabId, tab);
  }
}

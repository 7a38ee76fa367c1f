// The broker's own view of a browser's agent tabs, once for both drivers: the browser's last tabs.now (its whole list,
// sent when it starts serving and at each change of a tab or of the set), amended by what the broker's own tab calls
// answered since (their answers are at least as fresh as the list before them on the same connection). list_tabs is
// answered from it without a round trip to the browser (composed.ts). A driver that never sends tabs.now has no view:
// tabs.list goes to the browser, as before.
import type { BridgeEvent, BridgeMethod, Result, TabInfo } from "@tabrelay/protocol";
import { parseBridgeAnswer } from "./answers.js";

/** Methods whose answer is one tab as it is now. */
const ONE_TAB = new Set<BridgeMethod>(["tabs.open", "tabs.get", "tabs.navigate", "tabs.history", "tabs.activate"]);

export class TabView {
  /** By tab id, in the browser's order; undefined until the browser sent its first list. */
  #tabs: Map<number, TabInfo> | undefined;

  /** The agent's tabs as the browser last said, or undefined: no view, ask the browser. */
  now(): TabInfo[] | undefined {
    return this.#tabs ? [...this.#tabs.values()] : undefined;
  }

  /** An event from the browser, before the broker's listeners get it. */
  observe(frame: BridgeEvent): void {
    switch (frame.event) {
      case "tabs.now": {
        const parsed = parseBridgeAnswer("tabs.list", frame.params);
        // A list the broker cannot read is no view: list_tabs asks the browser, which says what is wrong.
        this.#tabs = parsed.ok ? new Map(parsed.value.tabs.map((tab) => [tab.tabId, tab])) : undefined;
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

  /** A call's answer: a tab it returned is that tab now; a tab it closed is gone. */
  note(method: BridgeMethod, params: unknown, result: Result<unknown>): void {
    if (!this.#tabs || !result.ok) return;
    if (ONE_TAB.has(method)) {
      const one = parseBridgeAnswer("tabs.get", result.value);
      if (one.ok) this.#put(one.value.tab);
    } else if (method === "tabs.close") {
      this.closing(params);
    }
  }

  /** A tab the broker is closing (tabs.close's params): gone from the view now, not once the browser answered. */
  closing(params: unknown): void {
    const tabId: unknown = params !== null && typeof params === "object" ? Reflect.get(params, "tabId") : undefined;
    if (typeof tabId === "number") this.#tabs?.delete(tabId);
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

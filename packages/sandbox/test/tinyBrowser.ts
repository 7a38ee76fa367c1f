// The host side of the sandbox's contract for these tests: a tiny in-memory browser that answers commands
// the way the broker's tool layer does ({ ok, value } | { ok: false, error }), with tabs, a snapshot whose
// refs belong to a revision, and clicks that fail with stale_ref once the page has changed.
import type { HostAnswer, HostCall } from "../src/types.js";

interface Tab {
  id: number;
  url: string;
  revision: number;
  clicks: string[];
}

export class TinyBrowser {
  readonly calls: HostCall[] = [];
  readonly #tabs: Tab[] = [{ id: 1, url: "https://example.test/", revision: 1, clicks: [] }];
  /** Commands answered only after this many ms (a slow page). */
  slowMs = 200;

  readonly call = async (call: HostCall): Promise<HostAnswer> => {
    this.calls.push(call);
    const [first] = call.args;
    const tab = this.#tabs[0];
    if (!tab) return { ok: false, error: { code: "no_tab", message: "no tab is open" } };
    switch (call.command) {
      case "tabs.list":
        return { ok: true, value: this.#tabs.map(({ id, url }) => ({ id, url })) };
      case "open":
        if (typeof first !== "string") return { ok: false, error: { code: "invalid_arguments", message: "open(url): url must be a string" } };
        tab.url = first;
        tab.revision++;
        return { ok: true, value: { tabId: tab.id, url: first } };
      case "snapshot":
        return { ok: true, value: { revision: tab.revision, refs: [`r${tab.revision}:e1`, `r${tab.revision}:e2`] } };
      case "click": {
        if (typeof first !== "string" || !first.startsWith(`r${tab.revision}:`)) {
          return { ok: false, error: { code: "stale_ref", message: `stale_ref: ${String(first)} is from an older snapshot; the page is at r${tab.revision}` } };
        }
        tab.clicks.push(first);
        return { ok: true, value: { clicked: first } };
      }
      case "page.change":
        tab.revision++;
        return { ok: true, value: { revision: tab.revision } };
      case "slow":
        await new Promise((resolve) => setTimeout(resolve, this.slowMs));
        return { ok: true, value: "slow done" };
      case "read":
        return { ok: true, value: { url: tab.url, text: "Example Domain" } };
      default:
        return { ok: false, error: { code: "unknown_command", message: `no command ${call.command}` } };
    }
  };

  get clicks(): string[] {
    return this.#tabs[0]?.clicks ?? [];
  }
}

export const COMMANDS = ["tabs.list", "open", "snapshot", "click", "page.change", "slow", "read"];

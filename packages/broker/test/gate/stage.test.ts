// The gate's stage, held by the type system (issue 26 §1): a handler reaches a page only through a CheckedTab, which
// only the stage makes, each judged as it is handed over. `npm run typecheck` compiles this file: each line marked
// as an expected error below must stay an error, or the typecheck fails.
import { describe, expect, it } from "vitest";
import * as stage from "../../src/gate/stage.js";
import type { CheckedTab } from "../../src/gate/stage.js";
import type { CallContext } from "../../src/tools/tool.js";

/** What a handler may write, and what it may not (never run: the compiler is the test). */
export function handler(ctx: CallContext, tab: CheckedTab): void {
  // @ts-expect-error the call's browser has no page method: a page is read through a CheckedTab
  void ctx.browser().call("page.content", { tabId: 1 });
  // @ts-expect-error nor an action on one
  void ctx.browser().call("page.act", { tabId: 1, ref: "e1", revision: "r", action: "click" });
  // @ts-expect-error nor a navigation: it goes through ctx.gate.navigate, judged before and after
  void ctx.browser().call("tabs.navigate", { tabId: 1, url: "https://example.com/", waitUntil: "load", timeoutMs: 1 });
  // @ts-expect-error nor a tab's document unjudged: ctx.gate.tab hands it over judged
  void ctx.browser().call("tabs.get", { tabId: 1 });
  // @ts-expect-error the browsers' registry is the gate's, not the handler's
  void ctx.registry;
  // @ts-expect-error and so is the record of caught navigations
  void ctx.denials;
  // @ts-expect-error a CheckedTab cannot be filled in by hand
  const forged: CheckedTab = { tab: { tabId: 1, url: "https://example.com/" }, tabId: 1, url: "https://example.com/" };
  void forged;
  // What a handler does: the page through the tab the gate handed over (its id is the tab's own).
  void tab.call("page.content", {});
  void ctx.browser().call("tabs.list", {});
}

describe("the gate's stage", () => {
  it("gives out no way to make a CheckedTab: its module exports the stage and the person's capture, no class", () => {
    expect(Object.keys(stage).sort()).toEqual(["callGate", "captureForPerson"]);
    expect(typeof handler).toBe("function");
  });
});

import type { TabInfo } from "@tabrelay/protocol";
import type { BrowserDriver } from "../bridge/registry.js";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import type { ToolContext } from "./tool.js";

interface Denial {
  url: string;
  rule: string;
  message: string;
  at: number;
}

/**
 * Off-policy landings the broker caught from the browser's commit events (redirects, scripts, pages
 * opening tabs) and reset to about:blank. A tool that then finds the tab blank reports why.
 */
export class Denials {
  readonly #byTab = new Map<string, Denial>();

  record(browserId: string, tabId: number, denial: Omit<Denial, "at">): void {
    this.#byTab.set(`${browserId}:${tabId}`, { ...denial, at: Date.now() });
  }

  take(browserId: string, tabId: number): Denial | undefined {
    const key = `${browserId}:${tabId}`;
    const denial = this.#byTab.get(key);
    this.#byTab.delete(key);
    return denial;
  }

  forget(browserId: string, tabId: number): void {
    this.#byTab.delete(`${browserId}:${tabId}`);
  }
}

export function pickBrowser(ctx: ToolContext, selector: string | undefined): BrowserDriver {
  return unwrap(ctx.registry.pick(selector));
}

/**
 * Refuses a URL before the browser is told to go anywhere, and returns the canonical form to load, so the
 * URL that was checked is exactly the URL the browser goes to.
 */
export function checkBeforeNavigation(ctx: ToolContext, url: string): string {
  const decision = ctx.config.policy.check(url);
  if (!decision.ok) throw new TabrelayError("policy_denied", decision.message, decision.rule);
  const canonical = canonicalizeUrl(url);
  if (!canonical.ok) throw new TabrelayError("policy_denied", canonical.reason, "default: invalid URL");
  return canonical.url.href;
}

export const BLANK = "about:blank";

/**
 * Checks the URL a tab actually committed (after redirects, meta refresh, script navigation). An
 * off-policy landing is reset to about:blank (or closed, for a tab opened just for this call) and refused.
 */
export async function checkLanding(
  ctx: ToolContext,
  browser: BrowserDriver,
  tab: TabInfo,
  options: { requestedUrl?: string; closeOnDeny?: boolean },
): Promise<TabInfo> {
  const caught = ctx.denials.take(browser.info.browserId, tab.tabId);
  const decision = tab.url === BLANK && caught ? { ok: false as const, rule: caught.rule, message: caught.message } : ctx.config.policy.check(tab.url);
  if (decision.ok) return tab;
  if (options.closeOnDeny) await browser.call("tabs.close", { tabId: tab.tabId });
  else if (tab.url !== BLANK) await browser.call("tabs.navigate", { tabId: tab.tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
  const via = options.requestedUrl && caught?.url !== options.requestedUrl ? ` (the page at ${options.requestedUrl} sent the tab there)` : "";
  const landed = pageText(caught?.url ?? tab.url, PAGE_TEXT_MAX.url);
  throw new TabrelayError(
    "policy_denied",
    `the tab landed on ${landed}${via}, which the read policy does not allow; the tab was ${options.closeOnDeny ? "closed" : "reset to about:blank"}. ${decision.message}`,
    decision.rule,
  );
}

/** Wires the browser's commit events to the policy: every committed top-level URL of an agent tab is checked. */
export function enforceOnCommit(ctx: ToolContext): void {
  ctx.registry.on("event", (browser, frame) => {
    if (frame.event !== "tab.committed") return;
    const { tabId, url } = frame.params;
    if (url === BLANK || url.startsWith("chrome-error://")) return;
    const decision = ctx.config.policy.check(url);
    if (decision.ok) return;
    ctx.denials.record(browser.info.browserId, tabId, { url, rule: decision.rule, message: decision.message });
    ctx.log.warn(`policy: tab ${tabId} committed ${url}; reset to about:blank (${decision.rule})`);
    void browser.call("tabs.navigate", { tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
  });
}

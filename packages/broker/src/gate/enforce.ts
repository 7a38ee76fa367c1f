// What the gate's decisions do to tabs: a tab found off-policy is reset to about:blank (or closed, when it was
// opened for this call) and the call refused; a failure caused by the page going off-policy mid-call is reported as
// that; the browser's commit and stopped-request events are judged as they arrive, recorded (tabRecord.ts) and
// audited. The decisions themselves are decisions.ts; nothing here decides on its own.
import type { AskDesk } from "./asks.js";
import { tabReadPolicy, type ReadAllowances } from "./readAllowances.js";
import type { CompiledReadPolicy } from "../policy/readPolicy.js";
import type { TabInfo } from "@tabrelay/protocol";
import type { BrowserDriver } from "../drivers/driver.js";
import type { AuditSink } from "../audit/auditLog.js";
import type { BrokerConfig } from "../config/config.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import type { Logger } from "../util/log.js";
import type { Denials } from "./tabRecord.js";
import { TabrelayError } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import { BLANK, gateNavigation, gateStopped, gateTab } from "./decisions.js";
import { tabLeases } from "./leases.js";
import { configFor } from "../config/userPolicies.js";

/** What the gate works with: the browsers, the (call's) config, its record of caught navigations, the audit log. */
export interface GateContext {
  registry: BrowserRegistry;
  config: BrokerConfig;
  denials: Denials;
  audit: AuditSink;
  log: Logger;
  /** The questions put to the user (policy.ask); absent where no person can answer (the stateless Worker). */
  asks?: AskDesk;
  /** The sites the user allowed once for a tab (policy.ask.read); absent where nobody is asked. */
  readAllowances?: ReadAllowances;
}

/** The read policy a tab's documents are judged by: the policy, with what the user allowed for that tab. */
export function policyOfTab(ctx: Pick<GateContext, "readAllowances">, policy: CompiledReadPolicy, browserId: string, tabId: number): CompiledReadPolicy {
  return tabReadPolicy(policy, ctx.readAllowances, browserId, tabId);
}

/**
 * Refuses a URL before the browser is told to go anywhere, and returns the canonical form to load, so the
 * URL that was checked is exactly the URL the browser goes to.
 */
export function checkBeforeNavigation(ctx: GateContext, url: string): string {
  const verdict = gateNavigation(ctx.config.policy, url);
  if (!verdict.ok) throw new TabrelayError(verdict.code, verdict.message, verdict.rule);
  return verdict.url;
}

/**
 * Checks the URL a tab actually committed (after redirects, meta refresh, script navigation). An
 * off-policy landing is reset to about:blank (or closed, for a tab opened just for this call) and refused.
 */
export async function checkLanding(
  ctx: GateContext,
  browser: BrowserDriver,
  tab: TabInfo,
  options: { requestedUrl?: string; closeOnDeny?: boolean },
): Promise<TabInfo> {
  const caught = ctx.denials.peek(browser.info.browserId, tab.tabId);
  const decision = gateTab(policyOfTab(ctx, ctx.config.policy, browser.info.browserId, tab.tabId), tab.url, caught);
  // A landing the policy allows, with a stop recorded since (the page tried to leave after the load the call waited
  // for): the stop stays for the next call on the tab to report, as it would had it come a moment later.
  if (decision.ok) return tab;
  ctx.denials.take(browser.info.browserId, tab.tabId);
  if (options.closeOnDeny) await browser.call("tabs.close", { tabId: tab.tabId });
  else if (tab.url !== BLANK) await browser.call("tabs.navigate", { tabId: tab.tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
  const via = options.requestedUrl && caught?.url !== options.requestedUrl ? ` (the page at ${options.requestedUrl} sent the tab there)` : "";
  const landed = pageText(caught?.url ?? tab.url, PAGE_TEXT_MAX.url);
  const what = caught?.blocked
    ? `the page tried to go to ${landed}${via}, which the read policy does not allow; tabrelay stopped the request before it left the browser`
    : `the tab landed on ${landed}${via}, which the read policy does not allow`;
  throw new TabrelayError(
    "policy_denied",
    `${what}; the tab was ${options.closeOnDeny ? "closed" : "reset to about:blank"}. ${decision.message}`,
    decision.rule,
  );
}

/**
 * After a navigation the call waited for: nothing committed (TabInfo.url is "") means the server never answered within
 * read.load_timeout_ms, which is a timeout to report, not a landing to judge (checkLanding). `close`: the tab was
 * opened for this call alone and goes.
 */
export async function checkCommitted(ctx: GateContext, browser: BrowserDriver, tab: TabInfo, requestedUrl: string, close: boolean): Promise<void> {
  if (tab.url !== "" || ctx.denials.peek(browser.info.browserId, tab.tabId) !== undefined) return;
  if (close) await browser.call("tabs.close", { tabId: tab.tabId });
  throw new TabrelayError(
    "timeout",
    `${pageText(requestedUrl, PAGE_TEXT_MAX.url)} did not start to load within ${ctx.config.loadTimeoutMs} ms: its server did not answer (read.load_timeout_ms in ${ctx.config.configName}). ${close ? "Nothing was read; the tab was closed." : `Tab ${tab.tabId} is still waiting for it.`} Check that the site is up, then try again.`,
  );
}

/** Failures a tab gives when its document went away under the call: a caught off-policy navigation explains them. */
const WENT_AWAY = new Set(["restricted_page", "navigation_failed", "no_such_tab", "stale_ref", "internal"]);

/**
 * The policy_denied a failed call on `tabId` really was, when the tab's page was caught going off-policy (its
 * navigation stopped, or its landing reset) while the call ran; undefined otherwise.
 */
export function explainByDenial(ctx: GateContext, browser: BrowserDriver, tabId: number | undefined, error: TabrelayError): TabrelayError | undefined {
  if (tabId === undefined || !WENT_AWAY.has(error.code)) return undefined;
  const caught = ctx.denials.take(browser.info.browserId, tabId);
  if (!caught) return undefined;
  if (!browser.closed) void browser.call("tabs.navigate", { tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
  // Where the page tried to go is page text: quoted as any (util/pageText.ts), as checkLanding says it.
  const where = pageText(caught.url, PAGE_TEXT_MAX.url);
  const what = caught.blocked
    ? `while tabrelay worked on tab ${tabId}, its page tried to go to ${where}, which the read policy does not allow; tabrelay stopped the request before it left the browser`
    : `while tabrelay worked on tab ${tabId}, its page went to ${where}, which the read policy does not allow`;
  return new TabrelayError("policy_denied", `${what}; nothing from that page was read and the tab no longer shows it. ${caught.message}`, caught.rule);
}

/** What became of a download an agent tab started, as its audit record says it. */
const DOWNLOAD_OUTCOMES: Record<string, string> = {
  stopped: "download stopped before it began: nothing saved",
  cancelled: "download cancelled as it began: nothing saved",
  deleted: "download finished before the cancel: its file was deleted",
  left: "download finished before the cancel and was not surely the agent's: left in the user's downloads",
};

/** At most this many stopped navigations of one tab are audited per window; a page looping on them is summarised. */
const AUDIT_BLOCKED_MAX = 10;
const AUDIT_BLOCKED_WINDOW_MS = 10_000;

/**
 * Wires the browser's navigation events to the policy: every committed top-level URL of an agent tab is checked,
 * and every navigation request the network rules stopped is recorded (for the tool that caused it) and audited.
 */
export function enforceOnCommit(ctx: GateContext): void {
  // The leases follow the same events from the start (a popup of a leased tab is leased too).
  tabLeases(ctx.registry, ctx.config);
  const audited = new Map<string, { since: number; count: number }>();
  /** How many records of this kind, for this tab, the current window holds, this one counted. */
  const countAudited = (key: string, now: number): { count: number } => {
    const seen = audited.get(key);
    const span = seen && now - seen.since < AUDIT_BLOCKED_WINDOW_MS ? seen : { since: now, count: 0 };
    span.count++;
    audited.set(key, span);
    if (audited.size > 1000) audited.clear();
    return span;
  };
  ctx.registry.on("event", (browser, frame) => {
    if (frame.event === "tab.blocked") {
      const { tabId, url, frame: inFrame } = frame.params;
      // Judged by the browser's user's policy: the one its network rules came from.
      const decision = gateStopped(policyOfTab(ctx, configFor(ctx.config, browser.info.ownerName).policy, browser.info.browserId, tabId), url);
      // Stopped by something else (another extension's rules): not tabrelay's refusal to report.
      if (!decision) return;
      if (inFrame) ctx.denials.recordFrame(browser.info.browserId, tabId, url);
      if (!inFrame) {
        ctx.denials.record(browser.info.browserId, tabId, { url, rule: decision.rule, message: decision.message, blocked: true });
        // The tab shows the browser's error page for where its page tried to go: it is left blank instead.
        void browser.call("tabs.navigate", { tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
      }
      const key = `${browser.info.browserId}:${tabId}`;
      const now = Date.now();
      const span = countAudited(key, now);
      if (span.count > AUDIT_BLOCKED_MAX) return;
      ctx.audit.record({
        time: now,
        tool: "navigation",
        browser: `${browser.info.label} (${browser.info.browserId})`,
        tab: tabId,
        origin: originOf(url),
        target:
          span.count === AUDIT_BLOCKED_MAX
            ? `${inFrame ? "frame" : "top frame"} (further stopped requests of this tab in the next ${AUDIT_BLOCKED_WINDOW_MS / 1000} s are not recorded)`
            : inFrame
              ? "frame"
              : "top frame",
        decision: "refused",
        rule: decision.rule,
        code: "policy_denied",
        durationMs: 0,
      });
      ctx.log.warn(
        `policy: stopped a navigation request of tab ${tabId}${inFrame ? " (a frame)" : ""} to ${originOf(url)} before it was sent (${decision.rule})`,
      );
      return;
    }
    if (frame.event === "tab.download") {
      const { tabId, url, outcome } = frame.params;
      const key = `download:${browser.info.browserId}:${tabId ?? "?"}`;
      const now = Date.now();
      const span = countAudited(key, now);
      if (span.count > AUDIT_BLOCKED_MAX) return;
      // Read-only saves nothing: a file an agent tab would have saved is recorded, with what became of it.
      const what = DOWNLOAD_OUTCOMES[outcome] ?? outcome;
      ctx.audit.record({
        time: now,
        tool: "download",
        browser: `${browser.info.label} (${browser.info.browserId})`,
        ...(tabId !== undefined ? { tab: tabId } : {}),
        origin: originOf(url),
        target:
          span.count === AUDIT_BLOCKED_MAX ? `${what} (further downloads of this tab in the next ${AUDIT_BLOCKED_WINDOW_MS / 1000} s are not recorded)` : what,
        decision: outcome === "left" ? "failed" : "refused",
        rule: "downloads",
        durationMs: 0,
      });
      if (outcome === "left")
        ctx.log.warn(
          `downloads: a download an agent tab started finished before it could be cancelled and was left in the user's downloads (${originOf(url)})`,
        );
      return;
    }
    if (frame.event !== "tab.committed") return;
    const { tabId, url } = frame.params;
    ctx.denials.newDocument(browser.info.browserId, tabId);
    if (url === BLANK || url.startsWith("chrome-error://")) return;
    const decision = gateTab(policyOfTab(ctx, configFor(ctx.config, browser.info.ownerName).policy, browser.info.browserId, tabId), url, undefined);
    if (decision.ok) return;
    ctx.denials.record(browser.info.browserId, tabId, { url, rule: decision.rule, message: decision.message });
    ctx.log.warn(`policy: tab ${tabId} committed ${url}; reset to about:blank (${decision.rule})`);
    void browser.call("tabs.navigate", { tabId, url: BLANK, waitUntil: "commit", timeoutMs: 5000 });
  });
}

/**
 * An MCP session ended: its leases end, and the tabs it opened that it still held (not idle, not kept) are closed.
 * Never throws; a browser that is gone has nothing to close.
 */
export function endSessionLeases(ctx: GateContext, session: string): void {
  for (const { browserId, tabId } of tabLeases(ctx.registry, ctx.config).endSession(session, Date.now())) {
    const browser = ctx.registry.list().find((b) => b.info.browserId === browserId);
    ctx.denials.forget(browserId, tabId);
    if (!browser || browser.closed) continue;
    void browser.call("tabs.close", { tabId }).then((r) => {
      if (!r.ok && r.error.code !== "no_such_tab" && r.error.code !== "not_agent_tab")
        ctx.log.warn(`leases: could not close tab ${tabId} of an ended session: ${r.error.code}: ${r.error.message}`);
    });
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url.slice(0, 100);
  }
}

// The gate's stage: everything a tool call reaches of its browser, each step through the gate. The runner makes one
// per call (tools/runner.ts) and hands it to the handler as ctx.gate; nothing else gives a handler a tab.
//
// A handler gets a tab only as a CheckedTab: leased to its session (taken or checked as it is handed over), the document
// it shows judged by the read policy when it was handed over (gate.tab, or gate.open / navigate / history, which judge
// the URL before the browser goes and the landing after). The page methods (page.*, tabs.viewport) are reached only
// through a CheckedTab; the browser handle a handler holds has no page method. The write, eval and frame verdicts
// are the CheckedTab's too, on the facts the handler supplies. Every verdict is a function of gate/decisions.ts;
// what one does to a tab (reset, close, record) is gate/enforce.ts.
import type {
  ActionKind,
  BridgeEvent,
  BridgeMethod,
  CaptureResult,
  ElementFacts,
  FrameSnapshot,
  ParamsOf,
  Result,
  ResultOf,
  TabInfo,
} from "@tabrelay/protocol";
import type { BrowserDriver, BrowserInfo, CallOptions } from "../drivers/driver.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import { BLANK, gateEval, gateFrames, gatePageTool, gateStopped, gateTab, gateWrite, judgeFrames, type FrameFacts, type FrameVerdict } from "./decisions.js";
import { checkBeforeNavigation, checkCommitted, checkLanding, policyOfTab, type GateContext } from "./enforce.js";
import type { CaughtNavigation, CompiledReadPolicy } from "./decisions.js";
import { askRead, askWrite, READ_ASKABLE, type Asking } from "./askWrite.js";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import { hostOf } from "../policy/writeRules.js";

/** What reads or acts on a page: only through a CheckedTab, whose document the gate judged. */
export type PageMethod =
  "page.content" | "page.snapshot" | "page.inspect" | "page.act" | "page.wait" | "page.query" | "page.rect" | "page.capture" | "page.eval" | "tabs.viewport";

/** What concerns the browser and its tabs but shows nothing of a page beyond titles and URLs, and goes nowhere. */
export type BrowserMethod = "tabs.list" | "tabs.activate";

/** The call's browser as a handler holds it: its identity, and the calls that need no verdict. */
export interface BrowserHandle {
  readonly info: BrowserInfo;
  readonly closed: boolean;
  call<M extends BrowserMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<Result<ResultOf<M>>>;
}

/** What the stage records of the call for its audit record (the runner's): the tab and the URL it showed. */
export type AuditFactsSink = (facts: { tab?: number; url?: string }) => void;

/** A tab opened for one call alone (read_url): a refused landing closes it rather than leaving it blank. */
export interface OpenOptions {
  active: boolean;
  /** The tab is the call's alone: closed when it is refused or nothing committed. */
  forThisCall?: boolean;
}

export interface CallGate {
  /** The call's browser (throws not_connected / unknown_browser when the call has none). */
  browser(): BrowserHandle;
  /**
   * A tab this call may use, as it is now: its session's lease taken or checked (tab_leased), its document allowed by
   * the read policy (an off-policy one is reset and refused).
   */
  tab(tabId: number): Promise<CheckedTab>;
  /**
   * Judges a URL the call would load, without loading it (what a cached read of it may be served under): throws the
   * refusal, returns the canonical form.
   */
  judgeUrl(url: string): Promise<string>;
  /** Opens `url` in a new tab: judged before the browser goes, and where it landed after (redirects included). */
  open(url: string, options: OpenOptions): Promise<CheckedTab>;
  /** Loads `url` in a tab, judged before and after. */
  navigate(tabId: number, url: string): Promise<CheckedTab>;
  /** Back, forward or reload; where the tab landed is judged. */
  history(tabId: number, action: "back" | "forward" | "reload"): Promise<CheckedTab>;
  /** Closes a tab of the call's: its records go with it. */
  close(tabId: number): Promise<void>;
  /**
   * May this call run the page tool `name` of `origin` (living in tab `at`, for a WebMCP tool)? The tab's lease, then
   * the user's policy.write.page_tools grant; returns the grant's rule, throws the refusal.
   */
  pageTool(origin: string, name: string, at: { browserId: string; tabId: number } | undefined): string;
}

/** What the runner gives the stage: the gate's context for this call's user, the call's browser, its leases. */
export interface StageSetup {
  ctx: GateContext;
  /** The call's browser (its session's view of it), or the error the call meets without one. */
  browser: () => BrowserDriver;
  /** Takes (or checks) the session's lease of a tab of a browser; throws tab_leased. */
  useTab: (browserId: string, tabId: number) => void;
  facts: AuditFactsSink;
  /** Who the user would be asked for, when a write on a site of policy.ask has no grant (absent: never asked). */
  asking?: Asking;
}

export function callGate(setup: StageSetup): CallGate {
  const { ctx, facts } = setup;
  const handed = (browser: BrowserDriver, tab: TabInfo) => new CheckedTab(ctx, browser, tab, facts, setup.asking);
  const landed = async (browser: BrowserDriver, tab: TabInfo, requestedUrl: string, closeOnDeny: boolean) => {
    await checkCommitted(ctx, browser, tab, requestedUrl, closeOnDeny);
    return handed(browser, await checkLanding(ctx, browser, tab, { requestedUrl, closeOnDeny }));
  };
  const loadTimeouts = () => ({ timeoutMs: ctx.config.loadTimeoutMs + 10_000 });
  // Sites the user allowed this call to read (policy.ask.read): read_url judges its URL, then opens it; one question.
  const allowedThisCall = new Set<string>();
  /**
   * The URL judged before the browser goes anywhere; a refusal only an allow entry would lift, on a site of
   * policy.ask.read, is asked of the user. Returns the URL to load and, when the user allowed it, the host to allow.
   */
  const judgeGo = async (url: string, tabId: number | undefined): Promise<{ target: string; host?: string }> => {
    try {
      return { target: checkBeforeNavigation(ctx, url) };
    } catch (error) {
      const asking = setup.asking;
      const canonical = canonicalizeUrl(url);
      if (
        !(error instanceof TabrelayError) ||
        error.code !== "policy_denied" ||
        !READ_ASKABLE.has(error.rule ?? "") ||
        !canonical.ok ||
        !asking ||
        !ctx.asks ||
        !ctx.readAllowances ||
        !ctx.config.ask.asksRead(url)
      ) {
        throw error;
      }
      const host = hostOf(canonical.url);
      // Allowed for this tab already (the user said yes for it, and it has not closed): no second question.
      if (tabId !== undefined && ctx.readAllowances.allows(setup.browser().info.browserId, tabId, url)) return { target: canonical.url.href };
      if (!allowedThisCall.has(host)) {
        const browserId = setup.browser().info.browserId;
        // "Always" writes policy.read.allow, which is the base policy: the broker's own user's to widen, not a member's.
        await askRead(ctx.asks, ctx.config.ask.timeoutMs, asking, { url, browserId, tabId, grantable: asking.user.role === "admin" }, ctx.config.ask.elicit);
        allowedThisCall.add(host);
      }
      return { target: canonical.url.href, host };
    }
  };
  /** What the user allowed, for this tab until it closes: the broker's judges, and the browser's rules before it goes. */
  const allowFor = async (browser: BrowserDriver, tabId: number, host: string): Promise<void> => {
    const allowances = ctx.readAllowances;
    if (!allowances) return;
    allowances.allow(browser.info.browserId, tabId, host);
    unwrap(await browser.call("browser.tabRules", { tabs: allowances.tabRules(browser.info.browserId) }));
  };
  return {
    browser: () => setup.browser(),
    async tab(tabId) {
      const browser = setup.browser();
      setup.useTab(browser.info.browserId, tabId);
      const { tab: current } = unwrap(await browser.call("tabs.get", { tabId }));
      facts({ tab: current.tabId, url: current.url });
      return handed(browser, await checkLanding(ctx, browser, current, {}));
    },
    async judgeUrl(url) {
      facts({ url });
      return (await judgeGo(url, undefined)).target;
    },
    async open(url, options) {
      facts({ url });
      const { target, host } = await judgeGo(url, undefined);
      const browser = setup.browser();
      if (host !== undefined) {
        // Allowed once: the tab exists (blank) and is allowed the site before it goes there.
        const { tab: blank } = unwrap(
          await browser.call("tabs.open", { url: BLANK, active: options.active, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }),
        );
        facts({ tab: blank.tabId });
        await allowFor(browser, blank.tabId, host);
        const { tab } = unwrap(
          await browser.call("tabs.navigate", { tabId: blank.tabId, url: target, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }, loadTimeouts()),
        );
        facts({ tab: tab.tabId, url: tab.url });
        return landed(browser, tab, url, options.forThisCall === true);
      }
      const { tab } = unwrap(
        await browser.call("tabs.open", { url: target, active: options.active, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }, loadTimeouts()),
      );
      facts({ tab: tab.tabId, url: tab.url });
      return landed(browser, tab, url, options.forThisCall === true);
    },
    async navigate(tabId, url) {
      facts({ url });
      const browser = setup.browser();
      setup.useTab(browser.info.browserId, tabId);
      const { target, host } = await judgeGo(url, tabId);
      if (host !== undefined) await allowFor(browser, tabId, host);
      ctx.denials.forget(browser.info.browserId, tabId);
      const { tab } = unwrap(
        await browser.call("tabs.navigate", { tabId, url: target, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }, loadTimeouts()),
      );
      return landed(browser, tab, url, false);
    },
    async history(tabId, action) {
      const browser = setup.browser();
      setup.useTab(browser.info.browserId, tabId);
      ctx.denials.forget(browser.info.browserId, tabId);
      const { tab } = unwrap(await browser.call("tabs.history", { tabId, action, timeoutMs: ctx.config.loadTimeoutMs }, loadTimeouts()));
      return handed(browser, await checkLanding(ctx, browser, tab, {}));
    },
    async close(tabId) {
      const browser = setup.browser();
      setup.useTab(browser.info.browserId, tabId);
      unwrap(await browser.call("tabs.close", { tabId }));
      ctx.denials.forget(browser.info.browserId, tabId);
      ctx.registry.emit("tabClosed", browser, tabId);
    },
    pageTool(origin, name, at) {
      if (at) setup.useTab(at.browserId, at.tabId);
      const verdict = gatePageTool(ctx.config.pages.toolPolicy, origin, name);
      if (!verdict.ok) throw new TabrelayError("write_denied", verdict.message, verdict.rule);
      return verdict.rule;
    },
  };
}

/**
 * A tab handed to a handler by the gate: leased to the call's session, its document (`tab`) judged by the read
 * policy. Only the stage makes one (the class is exported as a type alone); its methods are the only way into the
 * page, and the verdicts a handler needs on what it found there.
 */
class CheckedTab {
  readonly #ctx: GateContext;
  readonly #browser: BrowserDriver;
  readonly #facts: AuditFactsSink;
  readonly #asking: Asking | undefined;
  /** The tab as it was judged. */
  readonly tab: TabInfo;

  constructor(ctx: GateContext, browser: BrowserDriver, tab: TabInfo, facts: AuditFactsSink, asking: Asking | undefined) {
    this.#ctx = ctx;
    this.#browser = browser;
    this.tab = tab;
    this.#facts = facts;
    this.#asking = asking;
    facts({ tab: tab.tabId, url: tab.url });
  }

  get tabId(): number {
    return this.tab.tabId;
  }

  /** The read policy this tab's documents are judged by (with what the user allowed once for it). */
  #policy(): CompiledReadPolicy {
    return policyOfTab(this.#ctx, this.#ctx.config.policy, this.#browser.info.browserId, this.tab.tabId);
  }

  get url(): string {
    return this.tab.url;
  }

  /** The browser it is in. */
  get browser(): BrowserHandle {
    return this.#browser;
  }

  /** A call into the page the tab shows. */
  call<M extends PageMethod>(method: M, params: Omit<ParamsOf<M>, "tabId">, options?: CallOptions): Promise<Result<ResultOf<M>>> {
    // The tab's id is the one the gate judged, whatever the handler passes.
    const withTab = { ...params, tabId: this.tab.tabId } as ParamsOf<M & BridgeMethod>;
    return this.#browser.call(method, withTab, options);
  }

  /**
   * The document read from the tab has another URL than the tab had when judged (a script moved it on): that URL is
   * judged now, as a landing, before anything read from it is used.
   */
  async judgeRead(contentUrl: string, requestedUrl?: string): Promise<void> {
    if (contentUrl === this.tab.url) return;
    await checkLanding(this.#ctx, this.#browser, { ...this.tab, url: contentUrl }, { ...(requestedUrl ? { requestedUrl } : {}), closeOnDeny: false });
  }

  /** Frames read with the document (`parent`: the holder's index, -1 for the top document at `topUrl`), in one pass. */
  judgeFrames(topUrl: string, frames: readonly (FrameFacts & { parent: number })[]): FrameVerdict[] {
    return gateFrames(this.#policy(), topUrl, frames);
  }

  /** A snapshot's frames, each judged through the frames holding it. */
  judgeSnapshotFrames(frames: readonly Omit<FrameSnapshot, "nodes">[]): Map<number, FrameVerdict> {
    return judgeFrames(this.#policy(), frames);
  }

  /** Frames of the tab's document that the network rules stopped before they loaded (withheld). */
  stoppedFrames(): number {
    return this.#ctx.denials.stoppedFrames(this.#browser.info.browserId, this.tab.tabId);
  }

  /**
   * The write verdict on an action at the element the page described (`facts`, from page.inspect): its frame must be
   * readable, then the write policy decides. A refusal only a grant would lift, on a site of policy.ask, is asked of
   * the user (the element highlighted in the tab while they decide: `at`), and the call waits for the answer.
   * Returns the granting rule (or the answer); throws the refusal.
   */
  async judgeWrite(action: ActionKind, facts: ElementFacts, at?: { ref: string; revision: string; value?: string | undefined }): Promise<string | undefined> {
    const decision = gateWrite(this.#ctx.config.policy, this.#ctx.config.writePolicy, action, this.tab.url, facts);
    if (decision.ok) return decision.rule;
    if (decision.ask === undefined || !this.#asking || !this.#ctx.asks || !this.#ctx.config.ask.asksWrite(this.tab.url)) {
      throw new TabrelayError(decision.code, decision.message, decision.rule);
    }
    const highlight = at
      ? () => void this.call("page.act", { ref: at.ref, revision: at.revision, action: "highlight", value: "4000" }).catch(() => undefined)
      : undefined;
    const asked = decision.ask;
    const rule = await askWrite(
      this.#ctx.asks,
      this.#ctx.config.ask.timeoutMs,
      this.#asking,
      {
        action,
        facts,
        grant: asked,
        tab: { url: this.tab.url, tabId: this.tab.tabId, browserId: this.#browser.info.browserId },
        ...(at?.value !== undefined ? { value: at.value } : {}),
        ...(at?.value !== undefined && action === "press" ? { keys: at.value } : {}),
        ...(highlight ? { highlight } : {}),
      },
      this.#ctx.config.ask.elicit,
    );
    // The policy as it is now, after a wait of up to policy.ask.timeout_s: a deny entry added meanwhile, or the site
    // taken off the ask list, wins over the answer.
    const now = gateWrite(this.#ctx.config.policy, this.#ctx.config.writePolicy, action, this.tab.url, facts);
    if (now.ok) return now.rule;
    const same = now.ask !== undefined && now.ask.kind === asked.kind && now.ask.host === asked.host && now.ask.label === asked.label;
    if (!same || !this.#ctx.config.ask.asksWrite(this.tab.url)) {
      throw new TabrelayError(now.code, `the policy changed while the user was asked, and now refuses it: ${now.message}`, now.rule);
    }
    return rule;
  }

  /** Whether the action changes state, so the page must find the element as judged before it acts. */
  isStateChanging(action: ActionKind): boolean {
    return this.#ctx.config.writePolicy.isStateChanging(action);
  }

  /** An expression run in the top document: the write.eval grant for the tab's host. Returns the rule; throws the refusal. */
  judgeEval(): string | undefined {
    const decision = gateEval(this.#ctx.config.writePolicy, this.tab.url);
    if (!decision.ok) throw new TabrelayError(decision.code, decision.message, decision.rule);
    return decision.rule;
  }

  /** What a capture showed (the page may have moved on since the tab was judged): judged like any document. */
  judgeShown(url: string): void {
    const shown = gateTab(this.#policy(), url, undefined);
    if (!shown.ok) throw new TabrelayError("policy_denied", `the tab showed ${pageText(url, PAGE_TEXT_MAX.url)} when captured: ${shown.message}`, shown.rule);
  }

  /** The tab as it is now, its URL and title (as list_tabs shows them), after something the call did. */
  async current(): Promise<TabInfo> {
    return unwrap(await this.#browser.call("tabs.get", { tabId: this.tab.tabId })).tab;
  }

  /** The tab judged again, as it is now (after a wait the page may have gone elsewhere). */
  async again(): Promise<CheckedTab> {
    return new CheckedTab(this.#ctx, this.#browser, await checkLanding(this.#ctx, this.#browser, await this.current(), {}), this.#facts, this.#asking);
  }

  /** What the broker caught this tab doing (a navigation stopped or reset), taken: the call reports it. */
  takeCaught(): CaughtNavigation | undefined {
    return this.#ctx.denials.take(this.#browser.info.browserId, this.tab.tabId);
  }

  /** Collects what an action causes: navigations of this tab (committed, or stopped by the read policy), tabs it opens. */
  watch(): Effects {
    return watchEffects(this.#ctx, this.#browser, this.tab.tabId);
  }

  /** Closes the tab (a tab the call opened for itself). */
  async close(): Promise<void> {
    await this.#browser.call("tabs.close", { tabId: this.tab.tabId });
  }
}

export type { CheckedTab };

/** What an action caused in the browser, as it happens. */
export interface Effects {
  stop(): void;
  readonly opened: number[];
  readonly committed: string[];
  /** Top-frame navigations of the tab stopped before they were sent (outside the read policy). */
  readonly stopped: string[];
  /** Resolves once the tab committed a document or had a navigation stopped, or after `timeoutMs`. */
  landed(timeoutMs: number): Promise<void>;
}

function watchEffects(ctx: GateContext, conn: BrowserDriver, tabId: number): Effects {
  const opened: number[] = [];
  const committed: string[] = [];
  const stopped: string[] = [];
  let wake: (() => void) | undefined;
  const onEvent = (browser: BrowserDriver, frame: BridgeEvent) => {
    // By id: the call's browser is its session's view of the registry's (gate/leases.ts leasingDriver).
    if (browser.info.browserId !== conn.info.browserId) return;
    if (frame.event === "tab.created") {
      const p = frame.params;
      if (p.openerTabId === tabId && !opened.includes(p.tab.tabId)) opened.push(p.tab.tabId);
    } else if (frame.event === "tab.blocked") {
      const p = frame.params;
      if (p.tabId === tabId && !p.frame && gateStopped(policyOfTab(ctx, ctx.config.policy, conn.info.browserId, tabId), p.url)) stopped.push(p.url);
    } else if (frame.event === "tab.committed") {
      const p = frame.params;
      if (p.tabId === tabId) committed.push(p.url);
      else if (p.openerTabId === tabId && !opened.includes(p.tabId)) opened.push(p.tabId);
    }
    wake?.();
  };
  ctx.registry.on("event", onEvent);
  return {
    stop: () => ctx.registry.off("event", onEvent),
    opened,
    committed,
    stopped,
    async landed(timeoutMs: number): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (committed.length === 0 && stopped.length === 0 && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      wake = undefined;
    },
  };
}

/** A refusal as a driver's answer reads: what the person asking sees instead of the picture. */
type Refused = { ok: false; error: { code: "policy_denied"; message: string } };

/**
 * A picture of a tab for a person rather than an agent's call (the Worker's POST /screen, the dashboard's preview):
 * the verdicts the screenshot tool takes, the document the tab shows before the capture and what the capture showed
 * after, so a page the read policy refuses is never shown, whichever door asks.
 */
export async function captureForPerson(
  policy: CompiledReadPolicy,
  browser: Pick<BrowserDriver, "call">,
  tab: Pick<TabInfo, "tabId" | "url">,
  activate: boolean,
  options?: CallOptions,
): Promise<Result<CaptureResult> | Refused> {
  const refused = (url: string, message: string): Refused => ({
    ok: false,
    error: {
      code: "policy_denied",
      message: `tab ${tab.tabId} shows ${pageText(url, PAGE_TEXT_MAX.url)}, a page the read policy refuses; it is not shown (${message})`,
    },
  });
  const before = gateTab(policy, tab.url, undefined);
  if (!before.ok) return refused(tab.url, before.message);
  const shot = await browser.call("page.capture", { tabId: tab.tabId, activate }, options);
  if (!shot.ok) return shot;
  const after = gateTab(policy, shot.value.url, undefined);
  return after.ok ? shot : refused(shot.value.url, after.message);
}

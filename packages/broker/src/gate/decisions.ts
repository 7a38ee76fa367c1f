// The gate: every decision the user's policy takes about a tool call, in one place, as pure functions over
// canonical URLs and element facts. Tools, code mode and page tools call these and nothing else to decide; what a
// decision then does to a tab (reset it, close it, record it) lives in gate/enforce.ts.
//
// - gateNavigation: a URL before the browser is sent to it (and the canonical form it is sent to).
// - gateTab:        the document a tab shows (its committed URL, or what the broker caught it doing).
// - gateFrame:      one rule for every frame, whoever reads it (read, snapshot, query, actions).
// - gateWrite:      an action on an element: its frame first, then the write policy on the tab and the facts.
// - gateEval:       an expression run in a tab's top document (code mode's eval): the write policy's eval grant.
// - judgeFrames:    gateFrame over a snapshot's frames, each judged through the frames holding it.
// - gatePageTool:   a page tool (WebMCP, @tabrelay/page): the user's policy.write.page_tools grant for its origin.
// - gateNewTab:     whose a tab that appeared is (the agent's, or the user's).
// - gateStopped:    a navigation request the network rules stopped: tabrelay's refusal, or someone else's.
// - gateLease:      whether an MCP session may use a tab another session may hold (gate/leases.ts keeps the leases).
import type { ActionKind, ElementFacts, FrameSnapshot } from "@tabrelay/protocol";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import type { CompiledReadPolicy } from "../policy/readPolicy.js";
import type { CompiledWritePolicy } from "../policy/writePolicy.js";
import type { AskGrant } from "../policy/writeRules.js";
import type { PageToolPolicy, PageToolVerdict } from "../policy/pageToolPolicy.js";
import type { NewTabFacts } from "../drivers/driver.js";
import type { Principal } from "../users/principal.js";

export type { CompiledReadPolicy, PageToolPolicy };

/** What the gate says. A refusal carries the error code the call fails with, the rule and the reason. */
export type Verdict = { ok: true; rule?: string } | Refusal;

export interface Refusal {
  ok: false;
  code: "policy_denied" | "write_denied";
  rule: string;
  message: string;
  /** A write refusal exactly this narrow grant would lift: the user may be asked for it (policy.ask; policy/writeRules.ts). */
  ask?: AskGrant;
}

/** Before the browser goes anywhere: the URL as the server will read it, the canonical form to load. */
export function gateNavigation(policy: CompiledReadPolicy, url: string): { ok: true; url: string } | Refusal {
  const decision = policy.check(url);
  if (!decision.ok) return decision;
  const canonical = canonicalizeUrl(url);
  if (!canonical.ok) return { ok: false, code: "policy_denied", rule: "default: invalid URL", message: canonical.reason };
  return { ok: true, url: canonical.url.href };
}

export const BLANK = "about:blank";

/** What the broker caught a tab doing between calls (gate/tabRecord.ts). */
export interface CaughtNavigation {
  url: string;
  rule: string;
  message: string;
  /** The request was stopped before it was sent (the network rules); otherwise the tab committed it. */
  blocked?: boolean;
}

/**
 * A tab's current document. A blank tab the broker reset after catching it off-policy is refused for what it
 * was caught doing; any other document by its URL.
 */
export function gateTab(policy: CompiledReadPolicy, url: string, caught: CaughtNavigation | undefined): Verdict {
  if (url === BLANK && caught) return { ok: false, code: "policy_denied", rule: caught.rule, message: caught.message };
  return policy.check(url);
}

/** A frame as a driver reports it. `origin` is the document's own (self.origin), when the driver knows it. */
export interface FrameFacts {
  url: string;
  origin?: string;
}

export type FrameVerdict = { ok: true; url: string } | { ok: false; url: string; why: "error page" | "not what it seems" | "outside the read policy" };

/**
 * One rule for every frame, for every reader. A browser error page (a request that was stopped or failed) holds
 * nothing of the page's. A document without a URL of its own (about:srcdoc, about:blank, data:) is judged by the
 * document holding it, and only when it reports that document's origin: otherwise it is not what it seems. Any
 * other document is judged by its own URL. `url` in the verdict is the URL the frame was judged by.
 */
export function gateFrame(policy: CompiledReadPolicy, frame: FrameFacts, holderUrl: string | undefined): FrameVerdict {
  if (/^chrome-error:/i.test(frame.url)) return { ok: false, url: "", why: "error page" };
  if (!/^(?:about|data):/i.test(frame.url))
    return policy.check(frame.url).ok ? { ok: true, url: frame.url } : { ok: false, url: frame.url, why: "outside the read policy" };
  const url = holderUrl ?? "";
  if (!url || frame.origin === undefined || originOf(url) !== frame.origin) return { ok: false, url, why: "not what it seems" };
  return policy.check(url).ok ? { ok: true, url } : { ok: false, url, why: "outside the read policy" };
}

/**
 * Judges a tree of frames in one pass, parents before children (`parent`: the index of the holding frame in the
 * list, or -1 for the top document at `topUrl`). Returns each frame's verdict, in order.
 */
export function gateFrames(policy: CompiledReadPolicy, topUrl: string, frames: readonly (FrameFacts & { parent: number })[]): FrameVerdict[] {
  const verdicts: FrameVerdict[] = [];
  frames.forEach((frame, i) => {
    const holder = frame.parent < 0 ? topUrl : frame.parent < i ? verdicts[frame.parent]?.url || undefined : undefined;
    verdicts.push(gateFrame(policy, frame, holder));
  });
  return verdicts;
}

/**
 * Each frame's verdict by the gate's one frame rule (gateFrame), judged through its holders: an
 * about:srcdoc frame is judged by the frame (or page) holding it. Drivers list frames in any order.
 */
export function judgeFrames(policy: CompiledReadPolicy, frames: readonly Omit<FrameSnapshot, "nodes">[]): Map<number, FrameVerdict> {
  const byId = new Map(frames.map((f) => [f.frameId, f]));
  const verdicts = new Map<number, FrameVerdict>();
  const judge = (frame: Omit<FrameSnapshot, "nodes">, depth: number): FrameVerdict => {
    const known = verdicts.get(frame.frameId);
    if (known) return known;
    const top = frame.frameId === 0;
    const parent = byId.get(frame.parentFrameId);
    const holder = parent && depth < 32 ? judge(parent, depth + 1).url || undefined : undefined;
    const verdict: FrameVerdict = top ? { ok: true, url: frame.url } : gateFrame(policy, frame, holder);
    verdicts.set(frame.frameId, verdict);
    return verdict;
  };
  for (const frame of frames) judge(frame, 0);
  return verdicts;
}

/**
 * An action on an element. The element's frame must be readable (the frame's own URL: facts do not say what holds
 * an about: frame, so such a frame is refused rather than guessed), then the write policy decides on the tab's
 * URL and what the page reported about the element.
 */
export function gateWrite(read: CompiledReadPolicy, write: CompiledWritePolicy, action: ActionKind, tabUrl: string, facts: ElementFacts): Verdict {
  const frame = read.check(facts.frameUrl);
  if (!frame.ok) return { ...frame, message: `the element is inside a frame at ${facts.frameUrl}: ${frame.message}` };
  return write.check(action, tabUrl, facts);
}

/** An expression run in the top document of a tab at `tabUrl`: it needs the write.eval grant for the tab's host. */
export function gateEval(write: CompiledWritePolicy, tabUrl: string): Verdict {
  return write.checkEval(tabUrl);
}

/** A page tool `name` offered by `origin`: only with a grant (a page tool runs with the user's session: a write). */
export function gatePageTool(policy: PageToolPolicy, origin: string, name: string): PageToolVerdict {
  return policy.check(origin, name);
}

/**
 * Whose a tab that appeared is: the agent's when the agent opened it, when one of its tabs opened it (a popup), or
 * when the whole browser is the agent's; every other tab is the user's, never read, acted on or policed. The CDP
 * driver asks it of each new target (it is handed the rule); the extension applies the same rule in the browser, at
 * once (navigationRules.ts: a popup's first request leaves before a broker could answer).
 */
export function gateNewTab(facts: NewTabFacts): boolean {
  return facts.agentBrowser || facts.openedByAgent || facts.openerIsAgent;
}

/** A navigation request the network rules stopped: tabrelay's refusal when the read policy refuses the URL. */
export function gateStopped(policy: CompiledReadPolicy, url: string): Refusal | undefined {
  const decision = policy.check(url);
  return decision.ok ? undefined : decision;
}

/** Who holds a tab: the MCP session that opened it (or its opener, or first used the shared tab), and since when. */
export interface LeaseFacts {
  session: string;
  /** The session's clientInfo.name from initialize. */
  client: string;
  /** When the lease began (epoch ms). */
  since: number;
  /** When its session last used the tab (epoch ms). */
  lastUsed: number;
}

/** The MCP session a call comes from; absent for a caller that is no session (then no tab is anyone's to refuse). */
export interface Caller {
  session: string;
  client: string;
  /** The user the session acts for (absent: the implicit user). */
  user?: Principal;
}

export type LeaseVerdict = { ok: true; claim: boolean } | { ok: false; code: "tab_leased" | "tab_taken_back"; rule: string; message: string };

/** Whether a lease still holds: one its session has not used for `idleMs` has ended (the tab stays open, free). */
export function leaseHolds(lease: LeaseFacts | undefined, now: number, idleMs: number): lease is LeaseFacts {
  return lease !== undefined && now - lease.lastUsed < idleMs;
}

/**
 * May `caller` use tab `tabId`? Its own tab, yes; a tab no lease holds (never leased, kept past its session, idle
 * past `idleMs`, a tab the user shared that no agent used yet), yes, and the caller takes the lease (`claim`); a tab
 * another session holds, no: tab_leased, naming that client, since when, and what to do instead.
 */
export function gateLease(lease: LeaseFacts | undefined, caller: Caller | undefined, tabId: number, now: number, idleMs: number): LeaseVerdict {
  if (!caller) return { ok: true, claim: false };
  if (!leaseHolds(lease, now, idleMs)) return { ok: true, claim: true };
  if (lease.session === caller.session) return { ok: true, claim: false };
  const minutes = Math.max(1, Math.round(idleMs / 60_000));
  const same = lease.client === caller.client ? " (another session of the same client)" : "";
  return {
    ok: false,
    code: "tab_leased",
    rule: "lease",
    message:
      `tab ${tabId} belongs to another agent: client ${JSON.stringify(lease.client)}${same} has held it since ${new Date(lease.since).toISOString()}; ` +
      `each agent works in its own tabs. Use one of yours (list_tabs lists yours and free ones) or open_tab; ` +
      `the tab is freed when that agent's session ends, it closes the tab, or it leaves it unused for ${minutes} minute${minutes === 1 ? "" : "s"} (tabs.lease_idle_minutes)`,
  };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

// The gate: every decision the user's policy takes about a tool call, in one place, as pure functions over
// canonical URLs and element facts. Tools, code mode and page tools call these and nothing else to decide; what a
// decision then does to a tab (reset it, close it, record it) lives in gate/enforce.ts.
//
// - gateNavigation: a URL before the browser is sent to it (and the canonical form it is sent to).
// - gateTab:        the document a tab shows (its committed URL, or what the broker caught it doing).
// - gateFrame:      one rule for every frame, whoever reads it (read, snapshot, query, actions).
// - gateWrite:      an action on an element: its frame first, then the write policy on the tab and the facts.
// - gateStopped:    a navigation request the network rules stopped: tabrelay's refusal, or someone else's.
import type { ActionKind, ElementFacts } from "@tabrelay/protocol";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import type { CompiledReadPolicy } from "../policy/readPolicy.js";
import type { CompiledWritePolicy } from "../policy/writePolicy.js";

/** What the gate says. A refusal carries the error code the call fails with, the rule and the reason. */
export type Verdict = { ok: true; rule?: string } | Refusal;

export interface Refusal {
  ok: false;
  code: "policy_denied" | "write_denied";
  rule: string;
  message: string;
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
  if (!/^(?:about|data):/i.test(frame.url)) return policy.check(frame.url).ok ? { ok: true, url: frame.url } : { ok: false, url: frame.url, why: "outside the read policy" };
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
 * An action on an element. The element's frame must be readable (the frame's own URL: facts do not say what holds
 * an about: frame, so such a frame is refused rather than guessed), then the write policy decides on the tab's
 * URL and what the page reported about the element.
 */
export function gateWrite(read: CompiledReadPolicy, write: CompiledWritePolicy, action: ActionKind, tabUrl: string, facts: ElementFacts): Verdict {
  const frame = read.check(facts.frameUrl);
  if (!frame.ok) return { ...frame, message: `the element is inside a frame at ${facts.frameUrl}: ${frame.message}` };
  return write.check(action, tabUrl, facts);
}

/** A navigation request the network rules stopped: tabrelay's refusal when the read policy refuses the URL. */
export function gateStopped(policy: CompiledReadPolicy, url: string): Refusal | undefined {
  const decision = policy.check(url);
  return decision.ok ? undefined : decision;
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

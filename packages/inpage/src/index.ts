// Installed once per document into the extension's isolated world (the page's scripts cannot see it):
// snapshots mint refs bound to nodes and fingerprints, actions verify them before touching anything.
// Here: the API object and its install, inspect, rect, wait_for and closed shadow roots. The walk and its refs are in
// snapshot.ts, DOM queries in query.ts, the facts the gate judges in facts.ts, the actions in actions.ts; roles, names
// and visibility in dom.ts, rendered text in rendered.ts, what a click or an Enter reaches in reach.ts.
import { type ElementFacts, INPAGE_GLOBAL } from "@tabrelay/protocol";
import { act } from "./actions.js";
import { ActError, fail, type InpageApi, type InpageResult, type InspectArgs } from "./api.js";
import { content } from "./content.js";
import { factsOf, pageFacts } from "./facts.js";
import { adoptShadowRoot, hostedRoot } from "./flatTree.js";
import { matcherOf, matchVisible, query, selectorParts } from "./query.js";
import { normalize } from "./rendered.js";
import { frame, settle } from "./settle.js";
import { resolve, snapshot } from "./snapshot.js";
import { visiblePage } from "./visibleCopy.js";

export type { InpageApi, InpageResult, InspectArgs } from "./api.js";

const VERSION = 11;

// ---- inspect -----------------------------------------------------------------------------------

async function inspect(params: InspectArgs): Promise<InpageResult<ElementFacts>> {
  // The page itself (scroll without a ref) is no snapshot's ref: it holds whatever was snapshotted since.
  if (params.ref === "page") return { ok: true, value: pageFacts() };
  const found = resolve(params.ref, params.revision);
  if (!found.ok) return found;
  // A drag's points are where the page is now: scrolling the element into view would move them.
  if (params.action === "drag") await frame();
  else await settle(found.value.el);
  try {
    return { ok: true, value: factsOf(found.value.el, params.ref, params.action, params.value) };
  } catch (error) {
    return error instanceof ActError ? fail(error.code, error.message) : fail("internal", error instanceof Error ? error.message : String(error));
  }
}

// ---- wait_for ----------------------------------------------------------------------------------

/**
 * A check walks the whole page by the visibility rule (~10 us an element). On a page that keeps changing, the next one
 * waits WAIT_GAP_FACTOR times as long as the last took (checks take a fifth of the time at most), up to WAIT_MAX_GAP_MS:
 * a small page is checked every frame, a page of 10,000 elements a few times a second. No timer below a frame's length
 * (a background tab's timers run late).
 */
const WAIT_GAP_FACTOR = 4;
const WAIT_MAX_GAP_MS = 200;
const FRAME_MS = 16;

/**
 * Waits until text a person can see appears or is gone, or an element a person can see matches a selector: judged as
 * query judges (visibleCopy.ts), so a wait is no oracle for what a read withholds.
 */
function wait(params: {
  text?: string;
  textGone?: string;
  selector?: string;
  timeoutMs: number;
}): Promise<InpageResult<{ matched: string; elapsedMs: number }>> {
  const started = performance.now();
  let matcher: ReturnType<typeof matcherOf> | undefined;
  if (params.selector) {
    const parts = selectorParts(params.selector);
    matcher = parts.length > 1 ? "enters frames (`>>`), which only query does" : matcherOf(parts[0]!);
    if (typeof matcher === "string")
      return Promise.resolve(
        fail("invalid_params", `the selector ${JSON.stringify(params.selector)} ${matcher}; fix it: one CSS selector, or xpath=<expression>`),
      );
  }
  const check = (): string | undefined => {
    if (params.text || params.textGone) {
      const text = normalize(visiblePage().text());
      if (params.text && text.includes(normalize(params.text))) return `text ${JSON.stringify(params.text)} appeared`;
      if (params.textGone && !text.includes(normalize(params.textGone))) return `text ${JSON.stringify(params.textGone)} is gone`;
    }
    if (matcher && typeof matcher !== "string") {
      let found = false;
      matchVisible([matcher], () => (found = true));
      if (found) return `element ${params.selector} appeared`;
    }
    return undefined;
  };
  return new Promise((resolveWait) => {
    let finished = false;
    const done = (matched: string | undefined) => {
      finished = true;
      observer.disconnect();
      clearTimeout(timer);
      clearTimeout(later);
      if (matched) resolveWait({ ok: true, value: { matched, elapsedMs: Math.round(performance.now() - started) } });
      else resolveWait(fail("wait_timeout", `the condition did not hold within ${params.timeoutMs} ms; take a snapshot to see the page, or wait longer`));
    };
    // Re-check after DOM changes, at most once per frame and spaced by the checks' cost; settle as soon as the condition holds.
    let scheduled = false;
    let checked = 0;
    let gap = 0;
    let later: ReturnType<typeof setTimeout> | undefined;
    const timed = (): string | undefined => {
      const start = performance.now();
      const matched = check();
      checked = performance.now();
      gap = Math.min(WAIT_MAX_GAP_MS, (checked - start) * WAIT_GAP_FACTOR);
      return matched;
    };
    const recheck = () => {
      void frame().then(() => {
        scheduled = false;
        if (finished) return;
        const matched = timed();
        if (matched) done(matched);
      });
    };
    const observer = new MutationObserver(() => {
      if (scheduled) return;
      scheduled = true;
      const wait = checked + gap - performance.now();
      if (wait < FRAME_MS) recheck();
      else later = setTimeout(recheck, wait);
    });
    const timer = setTimeout(() => done(check()), params.timeoutMs);
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const now = timed();
    if (now) done(now);
  });
}

async function rect(params: { ref: string; revision: string }): Promise<InpageResult<{ x: number; y: number; width: number; height: number }>> {
  const found = resolve(params.ref, params.revision);
  if (!found.ok) return found;
  await settle(found.value.el);
  const box = found.value.el.getBoundingClientRect();
  return { ok: true, value: { x: box.x, y: box.y, width: box.width, height: box.height } };
}

// ---- closed shadow roots, for drivers without chrome.dom -----------------------------------------

/** Candidates offered per call: the driver describes each one, so a page of 100,000 custom elements cannot
 * turn one snapshot into 100,000 protocol calls. The rest come in later calls (the driver asks again). */
const MAX_CANDIDATES = 200;
/** A host without a visible root is offered again after this long: a page may attach a root to it later. */
const RECHECK_MS = 5_000;
/** Elements one sweep (a describe of a whole subtree) may cover: a larger subtree is swept in pieces. */
const SWEEP_MAX_ELEMENTS = 25_000;
/** Swept elements are swept again (a root attached to an element already swept) after this long per element. */
const RESWEEP_MS_PER_ELEMENT = 1;
/** When each custom element was last described by the driver, and whether it was defined (upgraded) then. */
const describedHosts = new WeakMap<Element, { at: number; defined: boolean }>();
/** Elements the driver has described with their whole subtree (or alone, for those without children). */
let swept = new WeakSet<Element>();
let sweptAt = 0;

/**
 * What the driver is to describe (every root type shows in DOM.describeNode), as three lists. `hosts` alone: custom
 * elements whose root this script cannot see (defined ones first, as their constructors attach roots), each offered
 * until the driver reports it described, again after its upgrade and after RECHECK_MS. `subtrees` whole (pierce): the
 * topmost elements not swept yet (the document at first, then what was inserted since), which finds closed roots on
 * every host attachShadow accepts with one describe, not one per element. `shallow` with their children only: a
 * subtree larger than a sweep may cover, whose children are swept apart. At most MAX_CANDIDATES describes and
 * SWEEP_MAX_ELEMENTS elements per call; everything is swept again after a time that grows with the page.
 */
function closedRootCandidates(): [hosts: Element[], subtrees: Element[], shallow: Element[]] | undefined {
  const now = Date.now();
  const defined: Element[] = [];
  const undefinedHosts: Element[] = [];
  const tops: Element[] = [];
  const roots: ParentNode[] = [document];
  let elements = 0;
  for (let i = 0; i < roots.length; i++) {
    const parent = roots[i]!;
    const host = parent instanceof ShadowRoot ? parent.host : null;
    for (const el of parent.querySelectorAll("*")) {
      elements++;
      const custom = el.localName.includes("-");
      const root = hostedRoot(el);
      if (root) roots.push(root);
      if (!swept.has(el)) {
        const above = el.parentElement ?? host;
        if (above === null || swept.has(above)) tops.push(el);
      }
      if (root || !custom || defined.length >= MAX_CANDIDATES) continue;
      const isDefined = el.matches(":defined");
      const seen = describedHosts.get(el);
      if (seen && seen.defined === isDefined && now - seen.at < RECHECK_MS) continue;
      if (isDefined) defined.push(el);
      else if (undefinedHosts.length < MAX_CANDIDATES) undefinedHosts.push(el);
    }
  }
  // Everything again after a while: a root attached to an element already swept (no mutation shows that).
  if (sweptAt && now - sweptAt > Math.max(RECHECK_MS, elements * RESWEEP_MS_PER_ELEMENT)) {
    swept = new WeakSet();
    sweptAt = 0;
    tops.length = 0;
    tops.push(document.documentElement);
  }
  const hosts = [...defined, ...undefinedHosts].slice(0, MAX_CANDIDATES);
  const subtrees: Element[] = [];
  const shallow: Element[] = [];
  let budget = SWEEP_MAX_ELEMENTS;
  const plan = (el: Element): void => {
    if (subtrees.length + shallow.length >= MAX_CANDIDATES || budget <= 0) return;
    const size = el.getElementsByTagName("*").length + 1;
    if (size <= budget) {
      subtrees.push(el);
      budget -= size;
      return;
    }
    shallow.push(el);
    budget -= el.childElementCount + 1;
    for (const child of el.children) if (child.firstElementChild) plan(child);
  };
  for (const top of tops) plan(top);
  return hosts.length || subtrees.length || shallow.length ? [hosts, subtrees, shallow] : undefined;
}

/** Marks `el` and what is under it (through the roots this script knows) swept. */
function markSwept(el: Element, whole: boolean): void {
  swept.add(el);
  if (!whole) {
    for (const child of el.children) if (!child.firstElementChild) swept.add(child);
    return;
  }
  const roots: ParentNode[] = [el];
  const root = hostedRoot(el);
  if (root) roots.push(root);
  for (let i = 0; i < roots.length; i++) {
    for (const inner of roots[i]!.querySelectorAll("*")) {
      swept.add(inner);
      const innerRoot = hostedRoot(inner);
      if (innerRoot) roots.push(innerRoot);
    }
  }
}

/** The driver's answer: the closed roots it read for `candidates` (every element in it was described); how many are new. */
function adoptShadowRoots(candidates: unknown, roots: unknown[]): number {
  const now = Date.now();
  let adopted = 0;
  for (const root of roots) {
    if (root instanceof ShadowRoot && adoptShadowRoot(root)) adopted++;
  }
  const lists: unknown[] = Array.isArray(candidates) ? candidates : [];
  const list = (value: unknown): Element[] => (Array.isArray(value) ? value.filter((el): el is Element => el instanceof Element) : []);
  for (const host of list(lists[0])) describedHosts.set(host, { at: now, defined: host.matches(":defined") });
  const subtrees = list(lists[1]);
  const shallow = list(lists[2]);
  if ((subtrees.length || shallow.length) && !sweptAt) sweptAt = now;
  for (const el of subtrees) markSwept(el, true);
  for (const el of shallow) markSwept(el, false);
  return adopted;
}

// ---- install -----------------------------------------------------------------------------------

declare global {
  var __tabrelayInpage: InpageApi | undefined;
}

// Indexed by the protocol's name, so this declaration and INPAGE_GLOBAL cannot drift apart (tsc fails).
if (!globalThis[INPAGE_GLOBAL] || globalThis[INPAGE_GLOBAL].version !== VERSION) {
  globalThis[INPAGE_GLOBAL] = { version: VERSION, snapshot, query, inspect, act, wait, rect, closedRootCandidates, adoptShadowRoots, content };
}

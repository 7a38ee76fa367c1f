// Installed once per document into the extension's isolated world (the page's scripts cannot see it):
// snapshots mint refs bound to nodes and fingerprints, actions verify them before touching anything.
// Here: the API object and its install, inspect, rect, wait_for and closed shadow roots. The walk and its refs are in
// snapshot.ts, the facts the gate judges in facts.ts, the actions in actions.ts; roles, names and visibility in
// dom.ts, rendered text in rendered.ts, what a click or an Enter reaches in reach.ts.
import { type ElementFacts, INPAGE_GLOBAL } from "@tabrelay/protocol";
import { act } from "./actions.js";
import { ActError, fail, type InpageApi, type InpageResult, type InspectArgs } from "./api.js";
import { content } from "./content.js";
import { factsOf, pageFacts } from "./facts.js";
import { adoptShadowRoot, shadowRootOf } from "./flatTree.js";
import { normalize } from "./rendered.js";
import { frame, settle } from "./settle.js";
import { resolve, snapshot } from "./snapshot.js";

export type { InpageApi, InpageResult, InspectArgs } from "./api.js";

const VERSION = 7;

// ---- inspect -----------------------------------------------------------------------------------

async function inspect(params: InspectArgs): Promise<InpageResult<ElementFacts>> {
  // The page itself (scroll without a ref) is no snapshot's ref: it holds whatever was snapshotted since.
  if (params.ref === "page") return { ok: true, value: pageFacts() };
  const found = resolve(params.ref, params.revision);
  if (!found.ok) return found;
  await settle(found.value.el);
  try {
    return { ok: true, value: factsOf(found.value.el, params.ref, params.action, params.value) };
  } catch (error) {
    return error instanceof ActError ? fail(error.code, error.message) : fail("internal", error instanceof Error ? error.message : String(error));
  }
}

// ---- wait_for ----------------------------------------------------------------------------------

function wait(params: { text?: string; textGone?: string; selector?: string; timeoutMs: number }): Promise<InpageResult<{ matched: string; elapsedMs: number }>> {
  const started = performance.now();
  const check = (): string | undefined => {
    const text = params.text || params.textGone ? normalize(document.body?.innerText) : "";
    if (params.text && text.includes(normalize(params.text))) return `text ${JSON.stringify(params.text)} appeared`;
    if (params.textGone && !text.includes(normalize(params.textGone))) return `text ${JSON.stringify(params.textGone)} is gone`;
    if (params.selector) {
      try {
        const el = document.querySelector(params.selector);
        if (el && el.checkVisibility()) return `element ${params.selector} appeared`;
      } catch {
        return "invalid selector";
      }
    }
    return undefined;
  };
  return new Promise((resolveWait) => {
    const done = (matched: string | undefined) => {
      observer.disconnect();
      clearTimeout(timer);
      if (matched === "invalid selector") resolveWait(fail("invalid_params", `${JSON.stringify(params.selector)} is not a valid CSS selector`));
      else if (matched) resolveWait({ ok: true, value: { matched, elapsedMs: Math.round(performance.now() - started) } });
      else resolveWait(fail("wait_timeout", `the condition did not hold within ${params.timeoutMs} ms; take a snapshot to see the page, or wait longer`));
    };
    // Re-check on every DOM change, at most once per frame; settle as soon as the condition holds.
    let scheduled = false;
    const observer = new MutationObserver(() => {
      if (scheduled) return;
      scheduled = true;
      void frame().then(() => {
        scheduled = false;
        const matched = check();
        if (matched) done(matched);
      });
    });
    const timer = setTimeout(() => done(check()), params.timeoutMs);
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const now = check();
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
/** When each custom element was last described by the driver, and whether it was defined (upgraded) then. */
const describedHosts = new WeakMap<Element, { at: number; defined: boolean }>();

/**
 * Custom elements (the usual hosts of closed roots, as in snapshot) whose root this script cannot see, in the
 * document and every shadow root it knows: defined ones first (their constructors attach roots), each offered
 * until the driver reports it described; again after its upgrade, and again after RECHECK_MS.
 */
function closedRootCandidates(): Element[] | undefined {
  const now = Date.now();
  const defined: Element[] = [];
  const undefinedHosts: Element[] = [];
  const roots: ParentNode[] = [document];
  for (let i = 0; i < roots.length && defined.length < MAX_CANDIDATES; i++) {
    for (const el of roots[i]!.querySelectorAll("*")) {
      const custom = el.localName.includes("-");
      const root = el.shadowRoot ?? (custom ? shadowRootOf(el) : null);
      if (root) roots.push(root);
      if (root || !custom) continue;
      const isDefined = el.matches(":defined");
      const seen = describedHosts.get(el);
      if (seen && seen.defined === isDefined && now - seen.at < RECHECK_MS) continue;
      if (isDefined) defined.push(el);
      else if (undefinedHosts.length < MAX_CANDIDATES) undefinedHosts.push(el);
      if (defined.length >= MAX_CANDIDATES) break;
    }
  }
  const hosts = [...defined, ...undefinedHosts].slice(0, MAX_CANDIDATES);
  return hosts.length ? hosts : undefined;
}

/** The driver's answer: the closed roots it read for `hosts` (every host in it was described). */
function adoptShadowRoots(hosts: unknown, roots: unknown[]): number {
  const now = Date.now();
  for (const host of Array.isArray(hosts) ? hosts : []) {
    if (host instanceof Element) describedHosts.set(host, { at: now, defined: host.matches(":defined") });
  }
  let adopted = 0;
  for (const root of roots) {
    if (!(root instanceof ShadowRoot)) continue;
    adoptShadowRoot(root);
    adopted++;
  }
  return adopted;
}

// ---- install -----------------------------------------------------------------------------------

declare global {
  var __tabrelayInpage: InpageApi | undefined;
}

// Indexed by the protocol's name, so this declaration and INPAGE_GLOBAL cannot drift apart (tsc fails).
if (!globalThis[INPAGE_GLOBAL] || globalThis[INPAGE_GLOBAL].version !== VERSION) {
  globalThis[INPAGE_GLOBAL] = { version: VERSION, snapshot, inspect, act, wait, rect, closedRootCandidates, adoptShadowRoots, content };
}

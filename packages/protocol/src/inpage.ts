// The in-page API both drivers call inside a document (packages/inpage implements it), and what it answers.
import type { ActEffects, ActionKind, ContentCapped, ElementFacts, InpageQuery, QueryParams, Result } from "./bridge.js";

/**
 * The in-page script (packages/inpage) installs its API on this global of the document's isolated world; both
 * drivers call it there. A call that finds no API answers INPAGE_NOT_INSTALLED instead, so the driver installs
 * the script and calls again (or, for a ref, knows the document changed since the snapshot).
 *
 * @example
 * // runs in the page (chrome.scripting func, Runtime.callFunctionOn); pass the names in as arguments
 * (global, sentinel, args) => globalThis[global]?.snapshot(args) ?? sentinel
 */
export const INPAGE_GLOBAL = "__tabrelayInpage";
export const INPAGE_NOT_INSTALLED = "not-installed";

/**
 * The in-page reader (content()) marks each shown element whose computed position is fixed or sticky with this
 * attribute (its value: "fixed" or "sticky") on the copy it serializes, never on the live page (markers the page
 * wrote itself are removed first): the broker, which sees no computed style, judges overlays by it (readable mode's
 * consent banners).
 */
export const POSITION_MARK_ATTR = "data-tabrelay-position";

/** What every in-page call answers: the same value-or-error shape as everything else that crosses a boundary. */
export type InpageResult<T> = Result<T>;

/** The in-page snapshot of one document (the driver adds the frame ids and qualifies the refs: FrameSnapshot). */
export interface InpageSnapshot {
  url: string;
  /** self.origin; older scripts did not send it. */
  origin?: string;
  title: string;
  nodes: string;
  elapsedMs?: number;
  capped?: boolean;
}

/** Limits of one content() read (CONTENT_MAX_ELEMENTS, CONTENT_MAX_CHARS when absent). */
export interface InpageContentParams {
  maxElements?: number;
  maxChars?: number;
}

/** One document's HTML with what a person cannot see marked (see HIDDEN_MARK_ATTR). */
export interface InpageDocument {
  url: string;
  origin: string;
  title: string;
  html: string;
  capped?: ContentCapped;
  /** Set while the parser has not finished the document (document.readyState "loading"). */
  loading?: true;
}

/** page.inspect's arguments in the page: with the action and its value, the facts say what it reaches. */
export interface InpageInspectArgs {
  ref: string;
  revision: string;
  action?: ActionKind;
  value?: string;
}

/**
 * The API at globalThis[INPAGE_GLOBAL], as the drivers call it. Answers are parsed by the broker (in-page code is
 * page-adjacent: what comes back is checked, never trusted).
 *
 * @example
 * const answer = await api.inspect({ ref: "e3", revision: "r7" }); // InpageResult<ElementFacts>
 */
export interface InpageApi {
  version: number;
  snapshot(params: { revision: string; interactiveOnly: boolean; viewportOnly: boolean }): InpageResult<InpageSnapshot>;
  inspect(params: InpageInspectArgs): Promise<InpageResult<ElementFacts>>;
  act(params: InpageInspectArgs & { action: ActionKind; expect?: string }): Promise<InpageResult<{ facts: ElementFacts; effects: ActEffects }>>;
  wait(params: { text?: string; textGone?: string; selector?: string; timeoutMs: number }): Promise<InpageResult<{ matched: string; elapsedMs: number }>>;
  rect(params: { ref: string; revision: string }): Promise<InpageResult<{ x: number; y: number; width: number; height: number }>>;
  query(params: Omit<QueryParams, "tabId">): InpageResult<InpageQuery>;
  /**
   * For drivers without chrome.dom: what to describe for closed shadow roots, as three lists of Elements (hosts to
   * describe one by one, subtrees to describe whole with pierce, elements to describe with their children only).
   */
  closedRootCandidates(): unknown[] | undefined;
  adoptShadowRoots(hosts: unknown, roots: unknown[]): number;
  /** The document's HTML with what a person cannot see marked. */
  content(params: InpageContentParams): InpageResult<InpageDocument>;
}

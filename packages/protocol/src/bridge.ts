// The bridge's methods, their parameters and results, and the types they carry (index.ts re-exports it with the
// frames, the in-page contract, the handshake and the error table). frames.ts and inpage.ts build on these; this
// module imports none of them (only person.ts's types, which import nothing), so the package has no circle.
import type { AskNotice, TabStateView } from "./person.js";

/**
 * Bumped when a frame changes shape; the broker refuses a browser that speaks another version. 2: the welcome
 * frame carries the navigation rules the extension must enforce before it serves a call. 3: mutual proof of the
 * pairing secret (hello / challenge / auth) instead of the secret itself in `hello`. 4: the proofs are bound to the
 * endpoint the browser dialled, and every frame after them carries a MAC under a per-connection key.
 */
export const PROTOCOL_VERSION = 4;

/** Largest frame either end of the /bridge socket accepts, in bytes (a transport limit: the CDP driver has no bridge). A rendered page's HTML travels in one frame. */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024;

/**
 * Longest report of a page's WebMCP tools a driver takes, in characters: past it the report is ignored (the page
 * offers what it offered before). The tools a page registers are a few kilobytes; this is generous.
 */
export const WEBMCP_REPORT_MAX_CHARS = 2_000_000;

import type { ErrorCode } from "./errors.js";

export interface WireError {
  code: ErrorCode;
  message: string;
  /** tabs.open that failed after it created its tab: that tab, which the broker closes (the agent never sees it). */
  tabId?: number;
}

/** A tab as the broker sees it. Only the agent's own tabs (and tabs the user shared) are ever listed. */
export interface TabInfo {
  tabId: number;
  windowId: number;
  /** The committed document's URL; "" while nothing has committed (a new tab whose server has not answered yet). */
  url: string;
  title: string;
  active: boolean;
  status: "loading" | "complete" | "unloaded";
  /** True when the user shared this tab from the popup rather than the agent opening it. */
  shared: boolean;
}

export interface PageContent {
  /** URL of the document the HTML was read from (after redirects), as the page reports it. */
  url: string;
  title: string;
  html: string;
  /**
   * HTTP status of the response that brought this document, when the browser saw it (not for a cached page): set by
   * the broker from the driver's tab.response events (for a stateless host's connection, which saw no commit of a
   * tab's document, from the page's own Navigation Timing), never in the driver's answer.
   */
  status?: number;
  /**
   * The documents of the page's frames (iframes, nested too), parents before their children (shallow frames first),
   * at most MAX_CONTENT_FRAMES and FRAME_HTML_BUDGET characters in all (the rest left out). The broker reads them
   * (one page.content per frame of `subframes`) and fits them (drivers/pageContent.ts); a driver that reads them
   * itself may send them here instead, and they are fitted the same way. The broker decides which of them the read
   * policy lets the agent see.
   */
  frames?: FrameContent[];
  /** Set when the in-page reader stopped before the end of the document (see ContentCapped). */
  capped?: ContentCapped;
  /** From the driver: the parser had not finished the document when it was read. Not passed on by the broker. */
  loading?: true;
  /**
   * From the driver, on a read of the top document: the tab's frames, as they were when it was read (a frame listed
   * here and read later either still belongs to that document or is gone). Not passed on by the broker.
   */
  subframes?: SubframeRef[];
  /** From the driver, on a read of one frame (`frameId`): the document's origin as it reports it (FrameContent.origin). */
  origin?: string;
}

/** One frame of a tab, by the driver's frame id; parentFrameId 0 for a frame of the top document. */
export interface SubframeRef {
  frameId: number;
  parentFrameId: number;
}

/**
 * The in-page reader (inpage content()) marks every element a person cannot see with HIDDEN_MARK_ATTR before the
 * HTML leaves the page: HIDDEN_SUBTREE for an element whose whole subtree is not rendered (display, opacity,
 * off-screen, clipped, zero-size with overflow hidden, inert, aria-hidden), HIDDEN_OWN_TEXT for one whose own text
 * is not seen while its children may be (visibility, text colour against the background, tiny type). Markers the
 * page itself wrote are removed first. The broker drops what is marked and says how much it withheld.
 */
export const HIDDEN_MARK_ATTR = "data-tabrelay-hidden";
export const HIDDEN_SUBTREE = "1";
export const HIDDEN_OWN_TEXT = "text";

/** What a page may send of one document (the top one, or one frame): the in-page reader stops there and says so. */
export const CONTENT_MAX_ELEMENTS = 200_000;
export const CONTENT_MAX_CHARS = 4 * 1024 * 1024;

/** How the in-page reader cut a document short: elements beyond `elements` left out, the HTML cut at `chars`. */
export interface ContentCapped {
  /** Elements the document has (counted up to where the walk stopped), when it stopped at CONTENT_MAX_ELEMENTS. */
  elements?: number;
  /** Characters of HTML the document would have made, when its HTML was cut at the character cap. */
  chars?: number;
}

export interface FrameContent {
  /** The frame's document URL (about:srcdoc and about:blank frames show their parent's content). */
  url: string;
  /** The document's origin as it reports it (self.origin): "null" for an opaque one (data:, sandboxed). */
  origin: string;
  title: string;
  html: string;
  /** Index in `frames` of the parent frame; -1 for a frame of the top document. */
  parent: number;
  /** Set when the in-page reader stopped before the end of the frame's document. */
  capped?: ContentCapped;
}

/** Elements a frame's snapshot lists at most; the walk stops there (FrameSnapshot.capped). */
export const SNAPSHOT_MAX_NODES = 50_000;

/** Frames read with a page's content, at most. */
export const MAX_CONTENT_FRAMES = 30;
/** Characters of frame HTML read with a page's content, in all (the top document's own HTML aside). */
export const FRAME_HTML_BUDGET = 4 * 1024 * 1024;

export type WaitUntil = "load" | "commit";

/** Why an element cannot be acted on as the user would see it. */
/** Why a person cannot see an element; "unseen": none of its text can be read (its colour on its background, tiny or indented type, clipped). */
export type HiddenReason = "display" | "visibility" | "opacity" | "size" | "offscreen" | "clipped" | "inert" | "aria-hidden" | "detached" | "unseen";

/**
 * What the page says about one element, gathered at action time. The broker's write policy decides on
 * these facts; the in-page script never decides.
 */
export interface ElementFacts {
  ref: string;
  role: string;
  /** Accessible name: aria-labelledby, aria-label, <label>, placeholder/title, then content. Normalised. */
  name: string;
  /** What a person sees as the control's label: its rendered text, or a field's visible label / placeholder. */
  visibleText: string;
  tag: string;
  inputType?: string;
  disabled: boolean;
  editable: boolean;
  /** Present when the element is not visible to a person. */
  hidden?: HiddenReason;
  /** Present when another element is on top at the click point. */
  coveredBy?: string;
  /** Attribute values a decoy could hide instructions in (title, aria-*, alt, placeholder, data-*, name, id). */
  attributeText: string;
  /** URL of the frame the element lives in. */
  frameUrl: string;
  /**
   * Present when what a person reads on the element cannot be trusted as its label: its DOM text is not seen
   * (transparent, tiny, moved away) while CSS-generated content (::before / ::after) shows other words, or the
   * element is too large to read as a person would. visibleText already includes generated content.
   */
  labelConflict?: string;
  /**
   * click and check: the other elements the click's HTML activation behaviour reaches (a label's control, an
   * enclosing link or button, and what those reach in turn). Empty when the click reaches only the element.
   */
  activates?: ReachedElement[];
  /** press: the key combo as pressed, normalised ("Enter", "Shift+Tab", "Control+Enter", "a"). */
  key?: string;
  /** press: the form an Enter here submits (implicit submission) and its default button; absent when it submits nothing. */
  submits?: { form: ReachedElement; button?: ReachedElement };
  /** press with Enter: why it submits nothing here (no form, a textarea, a disabled default button, ...). */
  noSubmit?: string;
  /** select: the option the requested label or value picks. */
  option?: ReachedElement;
}

/** An element an action reaches besides its target, described by the same facts the gate judges targets on. */
export interface ReachedElement {
  /** How the action reaches it, for messages: "the control of its label", "the link it is inside", ... */
  via: string;
  role: string;
  name: string;
  visibleText: string;
  tag: string;
  inputType?: string;
  /** Effectively disabled: the control's own state, a disabled fieldset or optgroup, inert, aria-disabled. */
  disabled: boolean;
  hidden?: HiddenReason;
  attributeText: string;
  labelConflict?: string;
}

/**
 * drag: press on the element, move, release at `value`'s end point (DragSpec as JSON), with HTML5 drag-and-drop events
 * when it is draggable; upload: set a file input's files (UploadFile[] as JSON); highlight: a temporary outline over it
 * (changes nothing the page reads).
 */
export type ActionKind = "click" | "fill" | "select" | "check" | "press" | "hover" | "scroll" | "drag" | "upload" | "highlight";

/** page.act's value for drag (JSON): viewport CSS pixels of the top document where the press and the release happen. */
export interface DragSpec {
  from: { x: number; y: number };
  to: { x: number; y: number };
}

/** page.act's value for upload (JSON): each file's name, content as base64, and MIME type. */
export interface UploadFile {
  name: string;
  base64: string;
  type: string;
}

/** Bytes page.act's upload takes in all, decoded (the files a program passes). */
export const UPLOAD_MAX_BYTES = 10 * 1024 * 1024;
/** Characters of JSON page.eval answers at most. */
export const EVAL_MAX_CHARS = 1024 * 1024;

/** What an action did, as the page and the driver saw it (page.act); the broker words it for the agent. */
export interface ActEffects {
  /** The action itself, in words: `clicked button "Add"`, `scrolled the page to y=640 of 2400`. */
  done: string;
  /** DOM mutations the page made within two animation frames after the action. */
  domChanged?: number;
  /** The element focused afterwards (not the target, not the body), described. */
  focus?: string;
  /** The top document started a navigation to another document (a link, a submit, a script): its destination. */
  navigating?: string;
  /** The action's document went away before it answered (it navigated): no facts come back. */
  navigated?: true;
  /** Tabs the page opened during the action (window.open, target=_blank), by id. */
  newTabs?: number[];
  /** fill: the page tried to submit a form from the events fill dispatched, and it was stopped. */
  submitStopped?: { form: string };
}

export interface ActParams {
  tabId: number;
  ref: string;
  /** From the broker to a browser: the frame `ref` lives in (FrameSnapshot.frameId), absent for the top document. */
  frameId?: number;
  revision: string;
  action: ActionKind;
  /** fill: text; select: option label or value; press: key combo like "Enter" or "Control+A"; check: "true"/"false"; drag: DragSpec, upload: UploadFile[] (JSON); highlight: milliseconds. */
  value?: string;
  /**
   * The facts the broker's gate judged (canonical JSON of ElementFacts without `ref`, see page.inspect). The page
   * recomputes them before acting, and again just before the click or submission itself, and fails with
   * stale_ref when they differ: what was judged is what is acted on.
   */
  expect?: string;
}

/** page.inspect: with `action` and `value`, the facts include what that action reaches (see ElementFacts). */
export interface InspectParams {
  tabId: number;
  ref: string;
  /** As ActParams.frameId. */
  frameId?: number;
  revision: string;
  action?: ActionKind;
  value?: string;
}

export interface SnapshotParams {
  tabId: number;
  /** Set by the broker: the revision every ref minted now belongs to. */
  revision: string;
  interactiveOnly: boolean;
  viewportOnly: boolean;
}

export interface SnapshotNode {
  ref?: string;
  role: string;
  name: string;
  depth: number;
  value?: string;
  states?: string[];
  level?: number;
  offscreen?: boolean;
  hidden?: boolean;
}

export interface FrameSnapshot {
  frameId: number;
  parentFrameId: number;
  url: string;
  /** The document's origin as it reports it (self.origin): the gate judges an about:/data: frame by it. */
  origin?: string;
  title: string;
  /**
   * The frame's nodes, one line each (a single string crosses the page -> extension -> broker path far
   * faster than thousands of objects). Fields are tab-separated, in this order:
   * ref, role, name, depth, value, states (comma-separated), level, flags ("o" offscreen, "h" hidden).
   * Empty fields are empty strings; names and values carry no tabs or newlines. A browser sends the refs as the page
   * minted them ("e3"); the broker gives those of a subframe its frame ("f12e3") and splits them again when it
   * sends one back (ref and frameId of page.inspect, page.act, page.rect: drivers/composed.ts).
   */
  nodes: string;
  /** Time the page spent walking its DOM, for diagnostics. */
  elapsedMs?: number;
  /** The walk stopped at its node limit: elements after that point in the document are not listed. */
  capped?: boolean;
}

/**
 * page.query: the elements that match a selector (CSS, `xpath=` XPath, parts joined by `>>` entering frames) in every document of the tab (frames included) and in their
 * open and closed shadow roots. Each document starts `revision`, as a snapshot does: refs of actionable matches
 * belong to it, and older refs are stale from then on.
 */
export interface QueryParams {
  tabId: number;
  revision: string;
  selector: string;
  /** The top document describes its matches from this one on (the tab's matches start with its own). */
  skip: number;
  /** Each document describes its matches up to (not including) this one; every match is counted. */
  upTo: number;
}

/** One element a query matched, described (the attributes are a fixed allowlist, never a password's value). */
export interface QueryMatch {
  tag: string;
  role: string;
  /** Accessible name, capped. */
  name: string;
  /** What a person sees of it (rendered text), capped. */
  text: string;
  /** id, class, name, type, href and src (absolute), alt, title, aria-*, data-testid, value (not a password's). */
  attributes: Record<string, string>;
  /** Present when a person cannot see it. */
  hidden?: HiddenReason;
  /** Actionable and visible: a ref of the query's revision, as a snapshot mints them (FrameSnapshot.nodes). */
  ref?: string;
  /** Of "disabled", "checked", "editable": what the element's state is (no page words), hidden or not. */
  states?: string[];
  /** Its border box in CSS pixels of the top document (viewport position plus scroll); not behind a cross-origin frame. */
  box?: { x: number; y: number; width: number; height: number };
}

/** One document's answer to a query (the driver adds the frame ids: FrameQuery). */
export interface InpageQuery {
  url: string;
  origin: string;
  title: string;
  /** Every match in the document. */
  count: number;
  /** Index among them of the first one described. */
  first: number;
  matches: QueryMatch[];
  /** The walk stopped at CONTENT_MAX_ELEMENTS elements: later ones were not searched. */
  capped?: boolean;
  /** A subframe's index in its parent's window.frames (a `>>` chain links frames by it). */
  frameIndex?: number;
  /**
   * For a selector of parts `a >> b >> c`: per part before the last, the window.frames indexes of the frame elements
   * of this document that part matches (the frames it enters). Matches count only in the documents the chain reaches.
   */
  enters?: number[][];
}

export interface FrameQuery extends InpageQuery {
  frameId: number;
  parentFrameId: number;
}

export interface WaitParams {
  tabId: number;
  text?: string;
  textGone?: string;
  selector?: string;
  /** Watched by the broker (drivers/composed.ts, from tabs.get): a browser is only asked for the other conditions. */
  urlIncludes?: string;
  timeoutMs: number;
}

/** Commands the broker may send. Map of method -> params / result. */
export interface BridgeMethods {
  "browser.ping": { params: Record<string, never>; result: { now: number } };
  /**
   * The read policy's network rules again (as the welcome's navigationRules), after config.yaml changed while the
   * browser was connected: it replaces its rules before it answers.
   */
  "browser.rules": { params: { navigationRules: NavigationRule[] }; result: { installed: number } };
  /** `asOf`: when the list was taken (epoch ms), when it is the broker's view rather than the browser's answer now. */
  "tabs.list": { params: Record<string, never>; result: { tabs: TabInfo[]; asOf?: number } };
  "tabs.open": {
    params: { url: string; active?: boolean; waitUntil?: WaitUntil; timeoutMs?: number };
    result: { tab: TabInfo };
  };
  "tabs.close": { params: { tabId: number }; result: { closed: true } };
  "tabs.activate": { params: { tabId: number }; result: { tab: TabInfo } };
  "tabs.navigate": {
    params: { tabId: number; url: string; waitUntil?: WaitUntil; timeoutMs?: number };
    result: { tab: TabInfo };
  };
  "tabs.history": {
    params: { tabId: number; action: "back" | "forward" | "reload"; timeoutMs?: number };
    result: { tab: TabInfo };
  };
  "tabs.get": { params: { tabId: number }; result: { tab: TabInfo } };
  /** The top document, or with `frameId` (from its `subframes`) one frame's document, at most FRAME_HTML_BUDGET characters. */
  "page.content": { params: { tabId: number; frameId?: number }; result: PageContent };
  "page.snapshot": { params: SnapshotParams; result: { frames: FrameSnapshot[] } };
  /** Resolves a ref minted at `revision` and reports its facts; fails with stale_ref if it no longer holds. */
  "page.inspect": { params: InspectParams; result: ElementFacts };
  /** `facts` is absent when the action navigated the page away before the page could answer. */
  "page.act": { params: ActParams; result: { facts?: ElementFacts; effects: ActEffects } };
  "page.wait": { params: WaitParams; result: { matched: string; elapsedMs: number } };
  /** Elements matching a selector in every document of the tab; fails with invalid_params for a selector that is not valid. */
  "page.query": { params: QueryParams; result: { frames: FrameQuery[] } };
  /** Scrolls a ref into view and reports its box in CSS pixels, relative to the viewport of the top frame. */
  "page.rect": { params: { tabId: number; ref: string; frameId?: number; revision: string }; result: { x: number; y: number; width: number; height: number } };
  /**
   * A PNG of what the tab shows. captureVisibleTab needs the tab to be the active one of its window:
   * with `activate` the browser makes it so, otherwise it fails with tab_not_visible. `clip` crops (CSS
   * pixels, viewport-relative); `fullPage` scrolls and stitches.
   */
  "page.capture": { params: CaptureParams; result: CaptureResult };
  /**
   * Sizes the tab's viewport so the page's innerWidth x innerHeight is width x height (CSS pixels): CDP overrides the
   * tab's device metrics; the extension resizes the tab's window by the frame it measures. Answers the size the page
   * then reports.
   */
  "tabs.viewport": { params: { tabId: number; width: number; height: number }; result: { width: number; height: number } };
  /**
   * Evaluates `expression` (as a script: its completion value; a promise is awaited) in the top document's main world,
   * and answers its value as JSON (at most EVAL_MAX_CHARS), or the kind of a value JSON cannot hold. The page can
   * see and change what runs there: the answer is page data, never trusted.
   */
  "page.eval": { params: { tabId: number; expression: string; timeoutMs: number }; result: { json?: string; unserializable?: string } };
  /**
   * Calls the WebMCP tool `name` that the tab's top document registered, with `input` (JSON text), in the page's main
   * world; answers the page's JSON text ({ ok, value } or { ok: false, error }), which is page data.
   */
  "page.webmcpCall": { params: { tabId: number; name: string; input: string; timeoutMs: number }; result: { json: string } };
  /**
   * Whether pages of `origins` (pages.allowed_origins) get WebMCP's document.modelContext from document start (config
   * pages.webmcp); the broker says so once the browser connected. Only agent tabs' tools reach the broker.
   */
  "page.webmcpWatch": { params: { enabled: boolean; origins: string[] }; result: Record<string, never> };
  /**
   * The questions the broker puts to this browser's user now (policy.ask): the extension shows each new one as a
   * notification, keeps the list for its popup, and clears the notifications of those no longer listed.
   */
  "browser.asks": { params: { questions: AskNotice[] }; result: { shown: number } };
  /**
   * The sites the user allowed once for a tab (policy.ask.read), as navigation rules scoped to that tab: the whole
   * list for this browser each time (a tab not listed has none). Installed before the answer.
   */
  "browser.tabRules": { params: { tabs: Array<{ tabId: number; rules: NavigationRule[] }> }; result: { installed: number } };
  /** What the popup shows of a tab (answering the popup's `popup.opened`): who holds it, what it did, the site's policy. */
  "browser.tabState": { params: TabStateView; result: Record<string, never> };
}

export interface CaptureParams {
  tabId: number;
  activate: boolean;
  clip?: { x: number; y: number; width: number; height: number };
  fullPage?: boolean;
}

export interface CaptureResult {
  /** Base64 PNG bytes, no data: prefix. */
  png: string;
  width: number;
  height: number;
  url: string;
  capturedAt: number;
}

export type BridgeMethod = keyof BridgeMethods;
export type ParamsOf<M extends BridgeMethod> = BridgeMethods[M]["params"];
export type ResultOf<M extends BridgeMethod> = BridgeMethods[M]["result"];

/** Result of anything that crosses a boundary: a value, never a throw. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

/**
 * One rule of the read policy as the network layer enforces it on navigation requests (top frame and frames,
 * redirects included) from agent tabs. The browser adds the agent's tab ids and the navigation resource types;
 * it never adds, drops or reorders rules. The highest priority that matches decides; at equal priority allow
 * wins. Conditions follow chrome.declarativeNetRequest: all given conditions must match.
 */
export interface NavigationRule {
  priority: number;
  action: "allow" | "block";
  /** RE2 syntax, matched against the whole request URL (which never holds a fragment). */
  regexFilter?: string;
  /** declarativeNetRequest URL filter syntax ("|https://" anchors at the start). */
  urlFilter?: string;
  /** The request's host is one of these or a subdomain of one (lower case, punycode). */
  requestDomains?: string[];
}

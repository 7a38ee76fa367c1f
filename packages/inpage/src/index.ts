// Installed once per document into the extension's isolated world (the page's scripts cannot see it):
// snapshots mint refs bound to nodes and fingerprints, actions verify them before touching anything.
import { SNAPSHOT_MAX_NODES, type ActionKind, type ElementFacts, type ReachedElement, type SnapshotNode, type WireError } from "@tabrelay/protocol";
import { accessibleName, attributeText, coveringElement, describeElement, hiddenReason, INTERACTIVE_ROLES, intersectsViewport, LANDMARK_ROLES, readLabel, roleOf } from "./dom.js";
import { adoptShadowRoot, shadowRootOf } from "./flatTree.js";
import { activationReach, effectivelyDisabled, implicitSubmission } from "./reach.js";
import { normalize } from "./rendered.js";
import { content, type ContentParams, type ContentValue } from "./content.js";

interface RefEntry {
  el: WeakRef<Element>;
  role: string;
  name: string;
}

interface State {
  revision: string;
  refs: Map<string, RefEntry>;
}

export type InpageResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** With the action and its value, the facts also say what that action reaches (ElementFacts). */
export interface InspectArgs {
  ref: string;
  revision: string;
  action?: ActionKind;
  value?: string;
}

export interface InpageApi {
  version: number;
  snapshot(params: { revision: string; interactiveOnly: boolean; viewportOnly: boolean }): InpageResult<{ url: string; title: string; nodes: string; elapsedMs: number; capped?: boolean }>;
  inspect(params: InspectArgs): Promise<InpageResult<ElementFacts>>;
  act(params: InspectArgs & { action: ActionKind; expect?: string }): Promise<InpageResult<{ facts: ElementFacts; effects: string[] }>>;
  wait(params: { text?: string; textGone?: string; selector?: string; timeoutMs: number }): Promise<InpageResult<{ matched: string; elapsedMs: number }>>;
  rect(params: { ref: string; revision: string }): Promise<InpageResult<{ x: number; y: number; width: number; height: number }>>;
  /** For drivers without chrome.dom: hosts whose closed shadow root the driver should look up and adopt. */
  closedRootCandidates(): Element[] | undefined;
  adoptShadowRoots(hosts: unknown, roots: unknown[]): number;
  /** The document's HTML with what a person cannot see marked (content.ts). */
  content(params: ContentParams): InpageResult<ContentValue>;
}

const VERSION = 7;
const MAX_NODES = SNAPSHOT_MAX_NODES;

const state: State = { revision: "", refs: new Map() };

function fail(code: WireError["code"], message: string): { ok: false; error: WireError } {
  return { ok: false, error: { code, message } };
}

// ---- snapshot ----------------------------------------------------------------------------------

function isInteractive(el: Element, role: string): boolean {
  if (INTERACTIVE_ROLES.has(role)) return true;
  if (el instanceof HTMLElement && el.isContentEditable && !el.parentElement?.isContentEditable) return true;
  const tabindex = el.getAttribute("tabindex");
  return tabindex !== null && Number(tabindex) >= 0 && role !== "generic" && role !== "none";
}

function statesOf(el: Element, role: string): string[] {
  const states: string[] = [];
  const aria = (name: string) => el.getAttribute(`aria-${name}`);
  if (el instanceof HTMLInputElement && (el.type === "checkbox" || el.type === "radio")) {
    if (el.indeterminate) states.push("mixed");
    else if (el.checked) states.push("checked");
  } else if (aria("checked") === "true") states.push("checked");
  else if (aria("checked") === "mixed") states.push("mixed");
  if (aria("pressed") === "true") states.push("pressed");
  if (aria("selected") === "true" || (el instanceof HTMLOptionElement && el.selected)) states.push("selected");
  if (aria("expanded") === "true") states.push("expanded");
  else if (aria("expanded") === "false") states.push("collapsed");
  if ((el as HTMLButtonElement).disabled === true || aria("disabled") === "true") states.push("disabled");
  if ((el as HTMLInputElement).required === true || aria("required") === "true") states.push("required");
  if ((el as HTMLInputElement).readOnly === true && role === "textbox") states.push("readonly");
  if (el === focused) states.push("focused");
  return states;
}

/** The focused element, computed once per snapshot. */
let focused: Element | null = null;

function deepActiveElement(): Element | null {
  let active = document.activeElement;
  for (let root = active ? shadowRootOf(active) : null; active && root?.activeElement; root = shadowRootOf(active)) active = root.activeElement;
  return active;
}

function valueOf(el: Element): string | undefined {
  if (el instanceof HTMLInputElement) {
    if (["checkbox", "radio", "button", "submit", "reset", "image", "file"].includes(el.type)) return undefined;
    if (el.type === "password") return el.value ? "••••" : "";
    return el.value;
  }
  if (el instanceof HTMLTextAreaElement) return el.value;
  if (el instanceof HTMLSelectElement) return [...el.selectedOptions].map((o) => normalize(o.label)).join(", ");
  if (el instanceof HTMLElement && el.isContentEditable) return normalize(el.innerText).slice(0, 200);
  return undefined;
}

/**
 * The snapshot's cheap visibility test (one style resolution per element, no ancestor walks); the full
 * test, with clipping and near-zero opacity, runs on the one element an action targets.
 */
function quickHidden(el: Element, rect: DOMRect): boolean {
  return !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true }) || rect.width < 2 || rect.height < 2 || el.closest('[inert], [aria-hidden="true"]') !== null;
}

/** One node as a line of the wire format described on FrameSnapshot.nodes. */
function encodeNode(n: SnapshotNode): string {
  const clean = (text: string | undefined) => (text ?? "").replace(/[\t\r\n]+/g, " ");
  return [n.ref ?? "", n.role, clean(n.name), String(n.depth), clean(n.value), (n.states ?? []).join(","), n.level === undefined ? "" : String(n.level), `${n.offscreen ? "o" : ""}${n.hidden ? "h" : ""}`].join("\t");
}

function snapshot(params: { revision: string; interactiveOnly: boolean; viewportOnly: boolean }): InpageResult<{ url: string; title: string; nodes: string; elapsedMs: number; capped?: boolean }> {
  const started = performance.now();
  state.revision = params.revision;
  state.refs = new Map();
  focused = deepActiveElement();
  let counter = 0;
  const nodes: SnapshotNode[] = [];
  const full = !params.interactiveOnly;
  // Iterative walk over the light DOM and every shadow root; hidden subtrees are skipped whole.
  const stack: [Element, number][] = [];
  const pushChildren = (parent: Element | ShadowRoot, depth: number) => {
    const children = parent.children;
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i]!, depth]);
  };
  if (document.body) pushChildren(document.body, 0);
  while (stack.length && nodes.length < MAX_NODES) {
    const [el, depth] = stack.pop()!;
    const tag = el.tagName;
    if (tag === "SCRIPT" || tag === "STYLE" || tag === "TEMPLATE" || tag === "NOSCRIPT" || tag === "HEAD") continue;
    // No per-element visibility test here: candidates get one below, which covers hidden ancestors too.
    const role = roleOf(el);
    const interactive = isInteractive(el, role);
    let childDepth = depth;
    const structural = role === "heading" || LANDMARK_ROLES.has(role) || role === "iframe";
    if (interactive || (full && (structural || role === "img" || role === "option")) || (!params.interactiveOnly && structural)) {
      const rect = el.getBoundingClientRect();
      const hidden = quickHidden(el, rect);
      const offscreen = !intersectsViewport(rect);
      if (!(params.viewportOnly && offscreen) && (!hidden || full)) {
        const name = accessibleName(el, role);
        const node: SnapshotNode = { role, name: name.slice(0, 150), depth };
        if (interactive && !hidden) {
          const ref = `e${++counter}`;
          state.refs.set(ref, { el: new WeakRef(el), role, name });
          node.ref = ref;
        }
        const value = valueOf(el);
        if (value !== undefined && value !== "") node.value = value.slice(0, 150);
        const states = statesOf(el, role);
        if (states.length) node.states = states;
        if (role === "heading") node.level = Number(el.getAttribute("aria-level") ?? tag.slice(1)) || 2;
        if (offscreen) node.offscreen = true;
        if (hidden) node.hidden = true;
        nodes.push(node);
        if (structural) childDepth = depth + 1;
      }
    }
    // Text inside interactive controls is already their name.
    if (interactive && role !== "listbox" && role !== "combobox") continue;
    // Asking the extension API for a closed root on every element is costly: custom elements (the usual
    // hosts of closed roots) and elements with an open root are asked.
    const shadow = el.shadowRoot ?? (tag.includes("-") ? shadowRootOf(el) : null);
    if (shadow) pushChildren(shadow, childDepth);
    if (el.firstElementChild) pushChildren(el, childDepth);
  }
  const capped = stack.length > 0; // stopped at MAX_NODES with elements still to walk
  return { ok: true, value: { url: location.href, title: document.title, nodes: nodes.map(encodeNode).join("\n"), elapsedMs: Math.round(performance.now() - started), ...(capped ? { capped } : {}) } };
}

// ---- refs -> elements --------------------------------------------------------------------------

function resolve(ref: string, revision: string): InpageResult<{ el: Element; entry: RefEntry }> {
  if (revision !== state.revision) {
    return fail(
      "stale_ref",
      state.revision
        ? `ref ${ref} is from snapshot ${revision}, but the page was snapshotted again since (now ${state.revision}); call snapshot again and use the new refs`
        : `ref ${ref} is from snapshot ${revision}, but the page has navigated or reloaded since; call snapshot again`,
    );
  }
  const entry = state.refs.get(ref);
  if (!entry) return fail("stale_ref", `ref ${ref} is not in snapshot ${revision}; call snapshot again`);
  const el = entry.el.deref();
  if (!el || !el.isConnected) return fail("stale_ref", `the element ${ref} ("${entry.name}") was removed or re-rendered since snapshot ${revision}; call snapshot again`);
  const role = roleOf(el);
  const name = accessibleName(el, role);
  if (role !== entry.role || name !== entry.name) {
    return fail("stale_ref", `the element ${ref} changed since snapshot ${revision} (was ${entry.role} "${entry.name}", now ${role} "${name}"); call snapshot again`);
  }
  return { ok: true, value: { el, entry } };
}

function factsOf(el: Element, ref: string, action?: ActionKind, value?: string): ElementFacts {
  const role = roleOf(el);
  const hidden = hiddenReason(el, true);
  const covering = hidden === undefined ? coveringElement(el) : undefined;
  const label = readLabel(el);
  const facts: ElementFacts = {
    ref,
    role,
    name: accessibleName(el, role),
    visibleText: label.text,
    tag: el.tagName.toLowerCase(),
    disabled: effectivelyDisabled(el),
    editable: isEditable(el),
    attributeText: attributeText(el),
    frameUrl: location.href,
  };
  if (el instanceof HTMLInputElement) facts.inputType = el.type;
  if (hidden) facts.hidden = hidden;
  if (covering) facts.coveredBy = describeElement(covering);
  if (label.conflict) facts.labelConflict = label.conflict;
  if (action === "click" || action === "check") facts.activates = activationReach(el).map((r) => reachedFacts(r.el, r.via));
  if (action === "press") Object.assign(facts, pressFacts(el, parseKey(value ?? "Enter")));
  if (action === "select") facts.option = optionFacts(pickOption(el, value ?? ""));
  return facts;
}

/** The facts the gate judges an element on when an action reaches it without targeting it. */
function reachedFacts(el: Element, via: string): ReachedElement {
  const role = roleOf(el);
  const label = readLabel(el);
  const hidden = hiddenReason(el, false);
  return {
    via,
    role,
    name: accessibleName(el, role),
    visibleText: label.text,
    tag: el.tagName.toLowerCase(),
    ...(el instanceof HTMLInputElement ? { inputType: el.type } : {}),
    disabled: effectivelyDisabled(el),
    ...(hidden ? { hidden } : {}),
    attributeText: attributeText(el),
    ...(label.conflict ? { labelConflict: label.conflict } : {}),
  };
}

/** What an Enter here would submit; other keys carry only their normalised name. */
function pressFacts(el: Element, key: ParsedKey): Pick<ElementFacts, "key" | "submits" | "noSubmit"> {
  if (!key.submitsLikeEnter) return { key: key.combo };
  const submission = implicitSubmission(el);
  if ("none" in submission) return { key: key.combo, noSubmit: submission.none };
  // A form has no text of its own: its accessible name (aria-label, aria-labelledby, title) stands for both.
  const name = accessibleName(submission.form, "form");
  const form: ReachedElement = {
    via: "the form Enter submits",
    role: "form",
    name,
    visibleText: name,
    tag: "form",
    disabled: false,
    attributeText: attributeText(submission.form),
  };
  return { key: key.combo, submits: { form, ...(submission.button ? { button: reachedFacts(submission.button, "the form's default button, which Enter clicks") } : {}) } };
}

function optionFacts(option: HTMLOptionElement): ReachedElement {
  const hidden = option.hidden || getComputedStyle(option).display === "none" || (option.parentElement instanceof HTMLOptGroupElement && getComputedStyle(option.parentElement).display === "none");
  const text = normalize(option.label);
  return {
    via: "the option chosen",
    role: "option",
    name: text,
    visibleText: text,
    tag: "option",
    disabled: effectivelyDisabled(option),
    ...(hidden ? { hidden: "display" as const } : {}),
    attributeText: attributeText(option),
  };
}

/** Facts as the broker's gate compares them: canonical JSON (sorted keys), without the ref the drivers rewrite. */
function fingerprint(facts: ElementFacts): string {
  const { ref: _ref, ...rest } = facts;
  return canonical(rest);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The facts that differ between what the gate judged and what holds now, for the message. */
function changedFacts(expected: string, now: ElementFacts): string {
  let judged: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(expected);
    if (parsed !== null && typeof parsed === "object") judged = parsed as Record<string, unknown>;
  } catch {
    return "the judged facts could not be read";
  }
  const current = JSON.parse(fingerprint(now)) as Record<string, unknown>;
  const keys = new Set([...Object.keys(judged), ...Object.keys(current)]);
  const changed = [...keys].filter((k) => canonical(judged[k]) !== canonical(current[k]));
  return changed.length ? changed.join(", ") : "their form";
}

/** Fails unless the element's facts (and what the action reaches) are still those the gate judged. */
function verify(el: Element, params: InspectArgs & { action: ActionKind; expect?: string }, when: string): void {
  if (params.expect === undefined) return;
  const now = factsOf(el, params.ref, params.action, params.value);
  if (fingerprint(now) === params.expect) return;
  throw new ActError(
    "stale_ref",
    `the element ${describeElement(el)} or what its action reaches changed ${when} (${changedFacts(params.expect, now)}), so the action was not performed; call snapshot again`,
  );
}

function isEditable(el: Element): boolean {
  if (el instanceof HTMLTextAreaElement) return !el.readOnly && !el.disabled;
  if (el instanceof HTMLInputElement) return !el.readOnly && !el.disabled && !["checkbox", "radio", "button", "submit", "reset", "image", "file", "range", "color", "hidden"].includes(el.type);
  return el instanceof HTMLElement && el.isContentEditable;
}

/**
 * One rendering frame. Background tabs (where the agent usually works) get no animation frames at all and
 * throttle timers to 1 s, so there a message-channel tick stands in: layout is still computed on demand.
 */
function frame(): Promise<void> {
  if (document.visibilityState === "visible") return new Promise<void>((r) => requestAnimationFrame(() => r()));
  return new Promise<void>((r) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => r();
    channel.port2.postMessage(0);
  });
}

/** Scrolls the element into view and waits until its box holds still for two frames (or ~500 ms). */
async function settle(el: Element): Promise<void> {
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  let last = el.getBoundingClientRect();
  for (let i = 0; i < 30; i++) {
    await frame();
    const now = el.getBoundingClientRect();
    if (now.x === last.x && now.y === last.y && now.width === last.width && now.height === last.height) return;
    last = now;
  }
}

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

// ---- actions -----------------------------------------------------------------------------------

function centre(el: Element): { clientX: number; clientY: number } {
  const r = el.getBoundingClientRect();
  return { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 };
}

function pointer(el: Element, type: string): void {
  const init = { bubbles: true, cancelable: true, composed: true, view: window, button: 0, ...centre(el) };
  el.dispatchEvent(type.startsWith("pointer") ? new PointerEvent(type, { ...init, pointerId: 1, pointerType: "mouse", isPrimary: true }) : new MouseEvent(type, init));
}

function hover(el: Element): void {
  for (const type of ["pointerover", "pointerenter", "mouseover", "mouseenter", "pointermove", "mousemove"]) pointer(el, type);
}

/** `beforeActivation` runs after the pointer events and focus, just before the click that activates. */
function click(el: Element, beforeActivation: () => void): void {
  hover(el);
  pointer(el, "pointerdown");
  pointer(el, "mousedown");
  if (el instanceof HTMLElement) el.focus({ preventScroll: true });
  pointer(el, "pointerup");
  pointer(el, "mouseup");
  beforeActivation();
  // click() fires the click event and runs the element's activation behaviour (links, checkboxes, submit).
  if (el instanceof HTMLElement) el.click();
  else pointer(el, "click");
}

function setNativeValue(el: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, value: string): void {
  // Frameworks (React, Vue) track the value property; the prototype's setter bypasses their instance
  // override, so the input event below is seen as a real change.
  const proto = Object.getPrototypeOf(el) as object;
  const setter = Object.getOwnPropertyDescriptor(proto, "value")?.set;
  if (setter) setter.call(el, value);
  else el.value = value;
}

function fill(el: Element, value: string): string {
  if (el instanceof HTMLElement) el.focus({ preventScroll: true });
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
    setNativeValue(el, value);
    el.dispatchEvent(new InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: value }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return `value is now ${JSON.stringify(el.type === "password" ? "••••" : el.value)}`;
  }
  if (el instanceof HTMLElement && el.isContentEditable) {
    const selection = getSelection();
    const range = document.createRange();
    range.selectNodeContents(el);
    selection?.removeAllRanges();
    selection?.addRange(range);
    if (!document.execCommand("insertText", false, value)) {
      el.textContent = value;
      el.dispatchEvent(new InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: value }));
    }
    return `text is now ${JSON.stringify(normalize(el.innerText).slice(0, 100))}`;
  }
  throw new ActError("not_actionable", `${describeElement(el)} is not a text field; use click or select_option`);
}

/** The option select_option picks for `wanted`: by label first, then by value. */
function pickOption(el: Element, wanted: string): HTMLOptionElement {
  if (!(el instanceof HTMLSelectElement)) throw new ActError("not_actionable", `${describeElement(el)} is not a <select>; click the option instead`);
  const options = [...el.options];
  const option = options.find((o) => normalize(o.label) === normalize(wanted)) ?? options.find((o) => o.value === wanted);
  if (!option) throw new ActError("element_not_found", `no option ${JSON.stringify(wanted)}; options are: ${options.map((o) => JSON.stringify(normalize(o.label))).join(", ")}`);
  return option;
}

function selectOption(el: Element, wanted: string): string {
  const option = pickOption(el, wanted);
  if (!(el instanceof HTMLSelectElement)) throw new ActError("not_actionable", `${describeElement(el)} is not a <select>`);
  if (effectivelyDisabled(option)) throw new ActError("not_actionable", `option ${JSON.stringify(wanted)} is disabled`);
  el.focus({ preventScroll: true });
  setNativeValue(el, option.value);
  el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
  return `selected ${JSON.stringify(normalize(option.label))}`;
}

function checkedOf(el: Element): boolean {
  if (el instanceof HTMLInputElement) return el.checked;
  return el.getAttribute("aria-checked") === "true" || el.getAttribute("aria-pressed") === "true";
}

function setChecked(el: Element, want: boolean, beforeActivation: () => void): string {
  if (checkedOf(el) === want) return `already ${want ? "checked" : "unchecked"}`;
  click(el, beforeActivation);
  const now = checkedOf(el);
  if (now !== want) throw new ActError("not_actionable", `clicking ${describeElement(el)} did not ${want ? "check" : "uncheck"} it`);
  return `now ${now ? "checked" : "unchecked"}`;
}

const KEYS: Record<string, { key: string; code: string; keyCode: number }> = {
  enter: { key: "Enter", code: "Enter", keyCode: 13 },
  tab: { key: "Tab", code: "Tab", keyCode: 9 },
  escape: { key: "Escape", code: "Escape", keyCode: 27 },
  esc: { key: "Escape", code: "Escape", keyCode: 27 },
  backspace: { key: "Backspace", code: "Backspace", keyCode: 8 },
  delete: { key: "Delete", code: "Delete", keyCode: 46 },
  space: { key: " ", code: "Space", keyCode: 32 },
  arrowup: { key: "ArrowUp", code: "ArrowUp", keyCode: 38 },
  arrowdown: { key: "ArrowDown", code: "ArrowDown", keyCode: 40 },
  arrowleft: { key: "ArrowLeft", code: "ArrowLeft", keyCode: 37 },
  arrowright: { key: "ArrowRight", code: "ArrowRight", keyCode: 39 },
  home: { key: "Home", code: "Home", keyCode: 36 },
  end: { key: "End", code: "End", keyCode: 35 },
  pageup: { key: "PageUp", code: "PageUp", keyCode: 33 },
  pagedown: { key: "PageDown", code: "PageDown", keyCode: 34 },
};

const MODIFIERS: Record<string, "Control" | "Alt" | "Shift" | "Meta"> = {
  control: "Control",
  ctrl: "Control",
  alt: "Alt",
  option: "Alt",
  shift: "Shift",
  meta: "Meta",
  cmd: "Meta",
  command: "Meta",
};
const MODIFIER_ORDER = ["Control", "Alt", "Shift", "Meta"] as const;

interface ParsedKey {
  /** Normalised: modifiers in the order Control, Alt, Shift, Meta, then the key ("Control+Enter", "Space", "a"). */
  combo: string;
  key: { key: string; code: string; keyCode: number };
  mods: Set<string>;
  /** Enter with no Control, Alt or Meta: the key that submits forms. */
  submitsLikeEnter: boolean;
}

function parseKey(combo: string): ParsedKey {
  const parts = combo.split("+").map((p) => p.trim()).filter(Boolean);
  const main = parts.pop();
  if (!main) throw new ActError("invalid_params", `no key in ${JSON.stringify(combo)}; use e.g. "Enter", "Tab", "Control+A"`);
  const mods = new Set<string>();
  for (const part of parts) {
    const mod = MODIFIERS[part.toLowerCase()];
    if (!mod) throw new ActError("invalid_params", `unknown modifier ${JSON.stringify(part)} in ${JSON.stringify(combo)}; use Control, Alt, Shift or Meta`);
    mods.add(mod);
  }
  const named = KEYS[main.toLowerCase()];
  const key = named ?? (main.length === 1 ? { key: main, code: /[a-z]/i.test(main) ? `Key${main.toUpperCase()}` : "", keyCode: main.toUpperCase().charCodeAt(0) } : undefined);
  if (!key) throw new ActError("invalid_params", `unknown key ${JSON.stringify(main)}; use a single character or one of ${Object.keys(KEYS).join(", ")}`);
  const name = key.key === " " ? "Space" : key.key;
  const ordered = MODIFIER_ORDER.filter((m) => mods.has(m));
  return {
    combo: [...ordered, name].join("+"),
    key,
    mods,
    submitsLikeEnter: key.key === "Enter" && !mods.has("Control") && !mods.has("Alt") && !mods.has("Meta"),
  };
}

/**
 * Synthetic key events have no default action, so the only effects besides the page's own listeners are the ones
 * emulated here: Tab moves focus, and Enter (with no Control, Alt or Meta) submits the way HTML's implicit
 * submission does, by clicking the form's default button, or submitting a form that has none. `judged` is the
 * submission the gate judged; if the page changed it while the key was down, nothing is submitted.
 */
function press(el: Element, combo: string, judged: Pick<ElementFacts, "submits" | "noSubmit">): string {
  const parsed = parseKey(combo);
  const { key, mods } = parsed;
  const target = el instanceof HTMLElement ? el : document.body;
  target.focus({ preventScroll: true });
  const init: KeyboardEventInit = {
    key: key.key,
    code: key.code,
    keyCode: key.keyCode,
    which: key.keyCode,
    bubbles: true,
    cancelable: true,
    composed: true,
    ctrlKey: mods.has("Control"),
    shiftKey: mods.has("Shift"),
    altKey: mods.has("Alt"),
    metaKey: mods.has("Meta"),
  };
  const proceed = target.dispatchEvent(new KeyboardEvent("keydown", init));
  if (key.key.length === 1 || key.key === "Enter") target.dispatchEvent(new KeyboardEvent("keypress", init));
  target.dispatchEvent(new KeyboardEvent("keyup", init));
  if (proceed && parsed.submitsLikeEnter) {
    const now = pressFacts(el, parsed);
    if (canonical({ submits: now.submits, noSubmit: now.noSubmit }) !== canonical({ submits: judged.submits, noSubmit: judged.noSubmit })) {
      throw new ActError("stale_ref", `the page changed what Enter submits while the key was pressed (the key events were delivered), so nothing was submitted; call snapshot again`);
    }
    const submission = implicitSubmission(el);
    if ("none" in submission) return `pressed ${parsed.combo}: ${submission.none}`;
    if (submission.button) {
      submission.button.click();
      return `pressed ${parsed.combo}: submitted the form with its default button ${JSON.stringify(readLabel(submission.button).text || accessibleName(submission.button))}`;
    }
    submission.form.requestSubmit();
    return `pressed ${parsed.combo}: submitted the form`;
  }
  if (proceed && key.key === "Tab") {
    const next = nextFocusable(target, init.shiftKey === true);
    next?.focus();
    return next ? `pressed ${parsed.combo}: focus moved to ${describeElement(next)}` : `pressed ${parsed.combo}`;
  }
  return `pressed ${parsed.combo}`;
}

function nextFocusable(from: Element, backwards: boolean): HTMLElement | undefined {
  const all = [...document.querySelectorAll<HTMLElement>("a[href], button, input, select, textarea, [tabindex], [contenteditable]")].filter(
    (e) => e.tabIndex >= 0 && !(e as HTMLButtonElement).disabled && e.checkVisibility(),
  );
  const i = all.indexOf(from as HTMLElement);
  return backwards ? all[i <= 0 ? all.length - 1 : i - 1] : all[(i + 1) % all.length];
}

function scroll(el: Element | null, how: string | undefined): string {
  const amount = how ?? "down";
  if (el) {
    el.scrollIntoView({ block: "center", behavior: "instant" });
    return `scrolled ${describeElement(el)} into view`;
  }
  const page = document.scrollingElement ?? document.documentElement;
  const step = innerHeight * 0.85;
  if (amount === "down") page.scrollBy(0, step);
  else if (amount === "up") page.scrollBy(0, -step);
  else if (amount === "top") page.scrollTo(0, 0);
  else if (amount === "bottom") page.scrollTo(0, page.scrollHeight);
  else if (/^-?\d+$/.test(amount)) page.scrollBy(0, Number(amount));
  else throw new ActError("invalid_params", `scroll takes "down", "up", "top", "bottom" or a pixel count, not ${JSON.stringify(amount)}`);
  return `scrolled the page to y=${Math.round(page.scrollTop)} of ${Math.round(page.scrollHeight)}`;
}

class ActError extends Error {
  constructor(
    readonly code: WireError["code"],
    message: string,
  ) {
    super(message);
  }
}

async function act(params: InspectArgs & { action: ActionKind; expect?: string }): Promise<InpageResult<{ facts: ElementFacts; effects: string[] }>> {
  if (params.action === "scroll" && params.ref === "page") {
    try {
      return { ok: true, value: { facts: pageFacts(), effects: [scroll(null, params.value)] } };
    } catch (error) {
      return error instanceof ActError ? fail(error.code, error.message) : fail("internal", String(error));
    }
  }
  const found = resolve(params.ref, params.revision);
  if (!found.ok) return found;
  const el = found.value.el;
  await settle(el);
  const writes = params.action !== "hover" && params.action !== "scroll";
  if (writes && params.expect === undefined) return fail("invalid_params", "a write action needs the facts the broker's gate judged (expect)");
  let facts: ElementFacts;
  try {
    facts = factsOf(el, params.ref, params.action, params.value);
    if (writes && params.expect !== undefined && fingerprint(facts) !== params.expect) {
      return fail("stale_ref", `the element ${describeElement(el)} or what its action reaches changed since the policy check (${changedFacts(params.expect, facts)}), so nothing was done; call snapshot again`);
    }
  } catch (error) {
    return error instanceof ActError ? fail(error.code, error.message) : fail("internal", error instanceof Error ? error.message : String(error));
  }
  const beforeActivation = () => verify(el, params, "while it was being pressed (pointer events, focus)");
  const mutations: MutationRecord[] = [];
  const observer = new MutationObserver((records) => mutations.push(...records));
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const effects: string[] = [];
  try {
    switch (params.action) {
      case "click":
        click(el, beforeActivation);
        effects.push(`clicked ${facts.role} "${facts.name}"`);
        break;
      case "fill":
        effects.push(fill(el, params.value ?? ""));
        break;
      case "select":
        effects.push(selectOption(el, params.value ?? ""));
        break;
      case "check":
        effects.push(setChecked(el, params.value !== "false", beforeActivation));
        break;
      case "press":
        effects.push(press(el, params.value ?? "Enter", facts));
        break;
      case "hover":
        hover(el);
        effects.push(`hovering ${facts.role} "${facts.name}"`);
        break;
      case "scroll":
        effects.push(scroll(el, params.value));
        break;
    }
    // Let the page react (re-render, open a menu) before reporting what changed.
    await frame();
    await frame();
    observer.disconnect();
    mutations.push(...observer.takeRecords());
    if (mutations.length) effects.push(`the page changed (${mutations.length} DOM mutation${mutations.length === 1 ? "" : "s"})`);
    const focused = deepActiveElement();
    if (focused && focused !== el && focused !== document.body && params.action !== "hover") effects.push(`focus is on ${describeElement(focused)}`);
    return { ok: true, value: { facts, effects } };
  } catch (error) {
    observer.disconnect();
    if (error instanceof ActError) return fail(error.code, error.message);
    return fail("internal", error instanceof Error ? error.message : String(error));
  }
}

function pageFacts(): ElementFacts {
  return { ref: "page", role: "document", name: document.title, visibleText: "", tag: "html", disabled: false, editable: false, attributeText: "", frameUrl: location.href };
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

if (!globalThis.__tabrelayInpage || globalThis.__tabrelayInpage.version !== VERSION) {
  globalThis.__tabrelayInpage = { version: VERSION, snapshot, inspect, act, wait, rect, closedRootCandidates, adoptShadowRoots, content };
}

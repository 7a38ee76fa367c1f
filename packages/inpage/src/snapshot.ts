// The snapshot walk, and the refs it mints: each bound to its node, role and name under the snapshot's revision,
// and resolved again (stale_ref when anything changed) before an action touches the node.
import { SNAPSHOT_MAX_NODES, type SnapshotNode } from "@tabrelay/protocol";
import { fail, type InpageResult } from "./api.js";
import { accessibleName, INTERACTIVE_ROLES, LANDMARK_ROLES, roleOf } from "./dom.js";
import { drawnJudge } from "./content.js";
import { hostedRoot, shadowRootOf } from "./flatTree.js";
import { normalize } from "./rendered.js";

export interface RefEntry {
  el: WeakRef<Element>;
  role: string;
  name: string;
}

interface State {
  revision: string;
  refs: Map<string, RefEntry>;
}

const MAX_NODES = SNAPSHOT_MAX_NODES;

const state: State = { revision: "", refs: new Map() };

export function isInteractive(el: Element, role: string): boolean {
  if (INTERACTIVE_ROLES.has(role)) return true;
  if (el instanceof HTMLElement && el.isContentEditable && !el.parentElement?.isContentEditable) return true;
  const tabindex = el.getAttribute("tabindex");
  return tabindex !== null && Number(tabindex) >= 0 && role !== "generic" && role !== "none";
}

function statesOf(el: Element, role: string): string[] {
  const states: string[] = [];
  // The element's attribute names, read in one call: most controls carry none of the states' attributes.
  const names = el.getAttributeNames();
  const aria = (name: string) => (names.includes(`aria-${name}`) ? el.getAttribute(`aria-${name}`) : null);
  if (el instanceof HTMLInputElement && (el.type === "checkbox" || el.type === "radio")) {
    if (el.indeterminate) states.push("mixed");
    else if (el.checked) states.push("checked");
  } else {
    const checked = aria("checked");
    if (checked === "true") states.push("checked");
    else if (checked === "mixed") states.push("mixed");
  }
  if (aria("pressed") === "true") states.push("pressed");
  if (aria("selected") === "true" || (el instanceof HTMLOptionElement && el.selected)) states.push("selected");
  const expanded = aria("expanded");
  if (expanded === "true") states.push("expanded");
  else if (expanded === "false") states.push("collapsed");
  if ((el as HTMLButtonElement).disabled === true || aria("disabled") === "true") states.push("disabled");
  if ((el as HTMLInputElement).required === true || aria("required") === "true") states.push("required");
  if ((el as HTMLInputElement).readOnly === true && role === "textbox") states.push("readonly");
  if (el === focused) states.push("focused");
  return states;
}

/** The focused element, computed once per snapshot. */
let focused: Element | null = null;

export function deepActiveElement(): Element | null {
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

const VISIBILITY_OPTIONS = { checkOpacity: true, checkVisibilityCSS: true };

/** The snapshot's cheap visibility test (one style resolution per element, no ancestor walks), before the reader's rule. */
function quickHidden(el: Element, width: number, height: number): boolean {
  return !el.checkVisibility(VISIBILITY_OPTIONS) || width < 2 || height < 2 || el.closest('[inert], [aria-hidden="true"]') !== null;
}

/** One node as a line of the wire format described on FrameSnapshot.nodes. */
function encodeNode(n: SnapshotNode): string {
  const clean = (text: string | undefined) => (text ?? "").replace(/[\t\r\n]+/g, " ");
  return [
    n.ref ?? "",
    n.role,
    clean(n.name),
    String(n.depth),
    clean(n.value),
    (n.states ?? []).join(","),
    n.level === undefined ? "" : String(n.level),
    `${n.offscreen ? "o" : ""}${n.hidden ? "h" : ""}`,
  ].join("\t");
}

export function snapshot(params: {
  revision: string;
  interactiveOnly: boolean;
  viewportOnly: boolean;
}): InpageResult<{ url: string; origin: string; title: string; nodes: string; elapsedMs: number; capped?: boolean }> {
  const started = performance.now();
  state.revision = params.revision;
  state.refs = new Map();
  focused = deepActiveElement();
  let counter = 0;
  const nodes: SnapshotNode[] = [];
  // What the reader's rule hands down from ancestors (content.ts applyDrawing), each ancestor read once for the walk.
  const drawn = drawnJudge();
  const full = !params.interactiveOnly;
  // The viewport, read once: the page cannot resize it while this script runs.
  const viewWidth = innerWidth;
  const viewHeight = innerHeight;
  // Iterative walk over the light DOM and every shadow root; hidden subtrees are skipped whole.
  // Each element with its depth and its tree (what its getRootNode() answers).
  const stack: Element[] = [];
  const depths: number[] = [];
  const trees: (Document | ShadowRoot)[] = [];
  const pushChildren = (parent: Element | ShadowRoot, depth: number, tree: Document | ShadowRoot) => {
    for (let child = parent.lastElementChild; child; child = child.previousElementSibling) {
      stack.push(child);
      depths.push(depth);
      trees.push(tree);
    }
  };
  const body = document.body;
  if (body) {
    // The body itself may host a root (closed ones too): what it shows is walked as well as its children.
    const bodyRoot = hostedRoot(body);
    if (bodyRoot) pushChildren(bodyRoot, 0, bodyRoot);
    pushChildren(body, 0, document);
  }
  while (stack.length && nodes.length < MAX_NODES) {
    const el = stack.pop()!;
    const depth = depths.pop()!;
    const tree = trees.pop()!;
    const tag = el.tagName;
    if (tag === "SCRIPT" || tag === "STYLE" || tag === "TEMPLATE" || tag === "NOSCRIPT" || tag === "HEAD") continue;
    // No per-element visibility test here: candidates get one below, which covers hidden ancestors too.
    const role = roleOf(el);
    const interactive = isInteractive(el, role);
    let childDepth = depth;
    const structural = role === "heading" || LANDMARK_ROLES.has(role) || role === "iframe";
    if (interactive || (full && (structural || role === "img" || role === "option")) || (!params.interactiveOnly && structural)) {
      const rect = el.getBoundingClientRect();
      const hidden = quickHidden(el, rect.width, rect.height) || drawn(el, tree) !== undefined;
      const offscreen = !(rect.bottom > 0 && rect.right > 0 && rect.top < viewHeight && rect.left < viewWidth); // intersectsViewport
      if (!(params.viewportOnly && offscreen) && (!hidden || full)) {
        const name = accessibleName(el, role);
        // A hidden node is listed by its role only: its words are withheld as every read withholds them.
        const node: SnapshotNode = { role, name: hidden ? "" : name.slice(0, 150), depth };
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
    // Only the elements attachShadow accepts are asked for a closed root (the extension API costs a call).
    const shadow = hostedRoot(el);
    if (shadow) pushChildren(shadow, childDepth, shadow);
    if (el.firstElementChild) pushChildren(el, childDepth, tree);
  }
  const capped = stack.length > 0; // stopped at MAX_NODES with elements still to walk
  return {
    ok: true,
    value: {
      url: location.href,
      origin: self.origin,
      title: document.title,
      nodes: nodes.map(encodeNode).join("\n"),
      elapsedMs: Math.round(performance.now() - started),
      ...(capped ? { capped } : {}),
    },
  };
}

// ---- refs minted outside the walk (query) ------------------------------------------------------

/** Starts `revision` without a walk (a query mints its refs into it): every older ref is stale from now on. */
export function startRevision(revision: string): void {
  state.revision = revision;
  state.refs = new Map();
}

/** A ref of the current revision, bound to the element, its role and name as resolve() checks them. */
export function mintRef(el: Element, role: string, name: string): string {
  const ref = `e${state.refs.size + 1}`;
  state.refs.set(ref, { el: new WeakRef(el), role, name });
  return ref;
}

// ---- refs -> elements --------------------------------------------------------------------------

export function resolve(ref: string, revision: string): InpageResult<{ el: Element; entry: RefEntry }> {
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
  if (!el || !el.isConnected)
    return fail("stale_ref", `the element ${ref} ("${entry.name}") was removed or re-rendered since snapshot ${revision}; call snapshot again`);
  const role = roleOf(el);
  const name = accessibleName(el, role);
  if (role !== entry.role || name !== entry.name) {
    return fail(
      "stale_ref",
      `the element ${ref} changed since snapshot ${revision} (was ${entry.role} "${entry.name}", now ${role} "${name}"); call snapshot again`,
    );
  }
  return { ok: true, value: { el, entry } };
}

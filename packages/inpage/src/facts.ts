// The element facts the broker's gate judges (ElementFacts): the element, and what its action reaches; and the
// fingerprint act() checks them against, so the page cannot change them between the check and the action.
import type { ActionKind, ElementFacts, ReachedElement } from "@tabrelay/protocol";
import { ActError, type InspectArgs } from "./api.js";
import { accessibleName, attributeText, coveringElement, describeElement, hiddenReason, readLabel, roleOf } from "./dom.js";
import { parseKey, type ParsedKey } from "./keys.js";
import { activationReach, effectivelyDisabled, implicitSubmission } from "./reach.js";
import { normalize } from "./rendered.js";

export function factsOf(el: Element, ref: string, action?: ActionKind, value?: string): ElementFacts {
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
export function pressFacts(el: Element, key: ParsedKey): Pick<ElementFacts, "key" | "submits" | "noSubmit"> {
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
  return {
    key: key.combo,
    submits: { form, ...(submission.button ? { button: reachedFacts(submission.button, "the form's default button, which Enter clicks") } : {}) },
  };
}

function optionFacts(option: HTMLOptionElement): ReachedElement {
  const hidden =
    option.hidden ||
    getComputedStyle(option).display === "none" ||
    (option.parentElement instanceof HTMLOptGroupElement && getComputedStyle(option.parentElement).display === "none");
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
export function fingerprint(facts: ElementFacts): string {
  const { ref: _ref, ...rest } = facts;
  return canonical(rest);
}

export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The facts that differ between what the gate judged and what holds now, for the message. */
export function changedFacts(expected: string, now: ElementFacts): string {
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
export function verify(el: Element, params: InspectArgs & { action: ActionKind; expect?: string }, when: string): void {
  if (params.expect === undefined) return;
  const now = factsOf(el, params.ref, params.action, params.value);
  if (fingerprint(now) === params.expect) return;
  throw new ActError(
    "stale_ref",
    `the element ${describeElement(el)} or what its action reaches changed ${when} (${changedFacts(params.expect, now)}), so the action was not performed; call snapshot again`,
  );
}

export function isEditable(el: Element): boolean {
  if (el instanceof HTMLTextAreaElement) return !el.readOnly && !el.disabled;
  if (el instanceof HTMLInputElement)
    return !el.readOnly && !el.disabled && !["checkbox", "radio", "button", "submit", "reset", "image", "file", "range", "color", "hidden"].includes(el.type);
  return el instanceof HTMLElement && el.isContentEditable;
}

/** The option select_option picks for `wanted`: by label first, then by value. */
export function pickOption(el: Element, wanted: string): HTMLOptionElement {
  if (!(el instanceof HTMLSelectElement)) throw new ActError("not_actionable", `${describeElement(el)} is not a <select>; click the option instead`);
  const options = [...el.options];
  const option = options.find((o) => normalize(o.label) === normalize(wanted)) ?? options.find((o) => o.value === wanted);
  if (!option)
    throw new ActError(
      "element_not_found",
      `no option ${JSON.stringify(wanted)}; options are: ${options.map((o) => JSON.stringify(normalize(o.label))).join(", ")}`,
    );
  return option;
}

export function pageFacts(): ElementFacts {
  return {
    ref: "page",
    role: "document",
    name: document.title,
    visibleText: "",
    tag: "html",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: location.href,
  };
}

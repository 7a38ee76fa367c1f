// What an action does besides its target, as HTML defines it: whether a control is effectively disabled, what a
// click reaches through activation behaviour (a label's control, an enclosing link or button), and what an
// Enter submits (implicit submission).
import { composedParent } from "./flatTree.js";

function inFirstLegend(el: Element, fieldset: HTMLFieldSetElement): boolean {
  const legend = [...fieldset.children].find((c) => c instanceof HTMLLegendElement);
  return legend !== undefined && legend.contains(el);
}

/**
 * Disabled as HTML and ARIA define it, whatever kind of element: the control's own state (which covers a disabled
 * fieldset outside its first legend and a disabled optgroup for form controls), an inert subtree, aria-disabled on
 * it or an ancestor, and, for elements that are not form controls, a disabled fieldset or optgroup around them.
 */
export function effectivelyDisabled(el: Element): boolean {
  if (el.matches(":disabled")) return true;
  for (let node: Element | null = el; node; node = composedParent(node)) {
    if (node.hasAttribute("inert")) return true;
    if (node.getAttribute("aria-disabled")?.trim().toLowerCase() === "true") return true;
    if (node !== el && node instanceof HTMLFieldSetElement && node.disabled && !inFirstLegend(el, node)) return true;
    if (node instanceof HTMLOptGroupElement && node.disabled) return true;
  }
  return false;
}

// ---- what a click reaches (HTML activation behaviour) --------------------------------------------

/** Interactive content (HTML), as Chromium's label tests it: a click inside one is not forwarded by the label. */
function isInteractiveContent(el: Element): boolean {
  if (el instanceof HTMLAnchorElement) return el.hasAttribute("href");
  if (el instanceof HTMLInputElement) return el.type !== "hidden";
  if (el instanceof HTMLImageElement || el instanceof HTMLObjectElement) return el.hasAttribute("usemap");
  if (el instanceof HTMLMediaElement) return el.hasAttribute("controls");
  return (
    el instanceof HTMLButtonElement ||
    el instanceof HTMLSelectElement ||
    el instanceof HTMLTextAreaElement ||
    el instanceof HTMLLabelElement ||
    el instanceof HTMLDetailsElement ||
    el instanceof HTMLIFrameElement ||
    el instanceof HTMLEmbedElement
  );
}

const ACTIVATING_INPUTS = new Set(["checkbox", "radio", "submit", "image", "reset", "button", "file", "color"]);

/** Elements whose own click does something (HTML activation behaviour) besides the events a page listens to. */
function activatesByItself(el: Element): boolean {
  if (el instanceof HTMLAnchorElement || el instanceof HTMLAreaElement) return el.hasAttribute("href");
  if (el instanceof HTMLButtonElement) return true;
  if (el instanceof HTMLInputElement) return ACTIVATING_INPUTS.has(el.type);
  return false;
}

function shadowIncludingContains(outer: Element, inner: Element): boolean {
  for (let node: Element | null = inner; node; node = composedParent(node)) if (node === outer) return true;
  return false;
}

/**
 * The elements a click on `el` reaches through HTML's activation behaviours, besides `el` itself: the control
 * of a label the click lands in (unless it lands in interactive content inside the label), an enclosing link or
 * button (Chromium follows a link around a button), and, for each of those, what a click on it reaches in turn.
 * A <summary> only toggles its <details> and is not listed. Clicks a page's own script forwards are not seen here.
 */
export function activationReach(el: Element): { el: Element; via: string }[] {
  const reached: { el: Element; via: string }[] = [];
  const seen = new Set<Element>([el]);
  const visit = (target: Element, depth: number): void => {
    if (depth > 4) return;
    let interactiveSoFar = false;
    for (let node: Element | null = target; node; node = composedParent(node)) {
      if (node instanceof HTMLLabelElement) {
        const control = node.control;
        if (control && !shadowIncludingContains(control, target) && !(interactiveSoFar && node !== target) && !seen.has(control)) {
          seen.add(control);
          reached.push({ el: control, via: node === target ? "the control of this label" : "the control of the label it is in" });
          visit(control, depth + 1);
        }
      } else if (node !== target && activatesByItself(node) && !seen.has(node)) {
        seen.add(node);
        reached.push({
          el: node,
          via: node instanceof HTMLAnchorElement || node instanceof HTMLAreaElement ? "the link it is inside" : "the control it is inside",
        });
      }
      if (isInteractiveContent(node)) interactiveSoFar = true;
    }
  };
  visit(el, 0);
  return reached;
}

// ---- what Enter submits (HTML implicit submission) -------------------------------------------------

const NO_IMPLICIT_SUBMIT = new Set(["submit", "reset", "button", "image", "file", "hidden"]);
const BLOCKS_IMPLICIT_SUBMISSION = new Set(["text", "search", "url", "tel", "email", "password", "date", "month", "week", "time", "datetime-local", "number"]);

function isSubmitButton(el: Element): el is HTMLButtonElement | HTMLInputElement {
  return (el instanceof HTMLButtonElement && el.type === "submit") || (el instanceof HTMLInputElement && (el.type === "submit" || el.type === "image"));
}

/** The form's default button: its first submit button in tree order, form= owners and image buttons included. */
export function defaultButton(form: HTMLFormElement): HTMLButtonElement | HTMLInputElement | undefined {
  const candidates: Element[] = [...form.elements].filter(isSubmitButton);
  // form.elements leaves out <input type=image> (for historical reasons).
  const root = form.getRootNode();
  if (root instanceof Document || root instanceof ShadowRoot) {
    for (const image of root.querySelectorAll("input")) if (image.type === "image" && image.form === form) candidates.push(image);
  }
  candidates.sort((a, b) => (a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  const first = candidates[0];
  return first && isSubmitButton(first) ? first : undefined;
}

/**
 * What an Enter in `el` submits, following HTML's implicit submission: in a single-line field of a form, a click
 * on the form's default button (nothing if that button is disabled); with no submit button, the form itself,
 * unless more than one field blocks implicit submission. `none` says why nothing is submitted.
 */
export function implicitSubmission(el: Element): { form: HTMLFormElement; button?: HTMLButtonElement | HTMLInputElement } | { none: string } {
  if (el instanceof HTMLTextAreaElement) return { none: "Enter in a text area adds a line; it submits no form" };
  if (!(el instanceof HTMLInputElement)) return { none: `Enter on a <${el.tagName.toLowerCase()}> submits no form (only single-line fields do)` };
  if (NO_IMPLICIT_SUBMIT.has(el.type)) return { none: `Enter on an <input type=${el.type}> submits no form here` };
  const form = el.form;
  if (!form) return { none: "the field belongs to no form" };
  const button = defaultButton(form);
  if (button) {
    if (button.matches(":disabled")) return { none: "its form's default button is disabled" };
    return { form, button };
  }
  const blocking = [...form.elements].filter((e) => e instanceof HTMLInputElement && BLOCKS_IMPLICIT_SUBMISSION.has(e.type)).length;
  if (blocking > 1) return { none: `its form has no submit button and ${blocking} fields, so Enter submits nothing` };
  return { form };
}

// The actions: pointer events and click, fill, select, check, press and scroll, each run only on the facts the
// gate judged (act() compares their fingerprint before and, for clicks, just before activation).
import type { ActEffects, ActionKind, DragSpec, ElementFacts, UploadFile } from "@tabrelay/protocol";
import { ActError, fail, type InpageResult, type InspectArgs } from "./api.js";
import { accessibleName, describeElement, readLabel } from "./dom.js";
import { canonical, changedFacts, factsOf, fingerprint, pageFacts, pickOption, pressFacts, verify } from "./facts.js";
import { parseKey } from "./keys.js";
import { effectivelyDisabled, implicitSubmission } from "./reach.js";
import { normalize } from "./rendered.js";
import { frame, settle } from "./settle.js";
import { drag, highlight, upload } from "./gestures.js";
import { deepActiveElement, resolve } from "./snapshot.js";

function centre(el: Element): { clientX: number; clientY: number } {
  const r = el.getBoundingClientRect();
  return { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 };
}

function pointer(el: Element, type: string): void {
  const init = { bubbles: true, cancelable: true, composed: true, view: window, button: 0, ...centre(el) };
  el.dispatchEvent(
    type.startsWith("pointer") ? new PointerEvent(type, { ...init, pointerId: 1, pointerType: "mouse", isPrimary: true }) : new MouseEvent(type, init),
  );
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

/**
 * Stops the form submissions the page starts while the guard is on: the submit event (requestSubmit(), a script's
 * click on a submit button) is cancelled before the page's own listeners see it, so neither the browser's nor a
 * script's submission happens. form.submit() fires no event and is not stopped (it shows as navigating).
 */
function guardSubmits(): { stop(): { form: string } | undefined } {
  let stopped: { form: string } | undefined;
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    event.stopImmediatePropagation();
    const form = event.target instanceof HTMLFormElement ? event.target : undefined;
    stopped ??= { form: form ? accessibleName(form) || form.getAttribute("action") || "a form" : "a form" };
  };
  window.addEventListener("submit", onSubmit, true);
  return {
    stop() {
      window.removeEventListener("submit", onSubmit, true);
      return stopped;
    },
  };
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
      throw new ActError(
        "stale_ref",
        `the page changed what Enter submits while the key was pressed (the key events were delivered), so nothing was submitted; call snapshot again`,
      );
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

/** The closest element holding `el` that scrolls vertically (a list, a panel), or none: the page. */
function scrollerOf(el: Element): Element | undefined {
  for (let at = el.parentElement; at && at !== document.body && at !== document.documentElement; at = at.parentElement) {
    if (/^(auto|scroll|overlay)$/.test(getComputedStyle(at).overflowY) && at.scrollHeight > at.clientHeight) return at;
  }
  return undefined;
}

/** With an element and no amount: into view. With an amount: the container it is in (or the page) scrolls by it. */
function scroll(el: Element | null, how: string | undefined): string {
  const amount = how ?? "down";
  if (el && how === undefined) {
    el.scrollIntoView({ block: "center", behavior: "instant" });
    return `scrolled ${describeElement(el)} into view`;
  }
  const inner = el ? scrollerOf(el) : undefined;
  const page = inner ?? document.scrollingElement ?? document.documentElement;
  const step = inner ? inner.clientHeight * 0.85 : innerHeight * 0.85;
  if (amount === "down") page.scrollBy(0, step);
  else if (amount === "up") page.scrollBy(0, -step);
  else if (amount === "top") page.scrollTo(0, 0);
  else if (amount === "bottom") page.scrollTo(0, page.scrollHeight);
  else if (/^-?\d+$/.test(amount)) page.scrollBy(0, Number(amount));
  else throw new ActError("invalid_params", `scroll takes "down", "up", "top", "bottom" or a pixel count, not ${JSON.stringify(amount)}`);
  return `scrolled ${inner ? describeElement(inner) : "the page"} to y=${Math.round(page.scrollTop)} of ${Math.round(page.scrollHeight)}`;
}

/**
 * The cross-document navigation the top document starts during an action (the Navigation API's navigate event:
 * links, form submissions, location changes), so the broker waits for a commit only when one is on its way.
 */
function watchNavigate(): { stop(): string | undefined } {
  let destination: string | undefined;
  const navigation = window === window.top ? (globalThis as { navigation?: EventTarget }).navigation : undefined;
  const onNavigate = (event: Event) => {
    const target = (event as Event & { destination?: { url?: string; sameDocument?: boolean } }).destination;
    if (target && target.sameDocument === false && typeof target.url === "string") destination = target.url;
  };
  navigation?.addEventListener("navigate", onNavigate);
  return {
    stop() {
      navigation?.removeEventListener("navigate", onNavigate);
      return destination;
    },
  };
}

/** A gesture's value as the broker sends it (JSON); the broker checked its shape, the page only reads it. */
function parsed<T>(value: string | undefined, action: string): T {
  try {
    return JSON.parse(value ?? "") as T;
  } catch {
    throw new ActError("invalid_params", `${action} needs its value as JSON`);
  }
}

export async function act(params: InspectArgs & { action: ActionKind; expect?: string }): Promise<InpageResult<{ facts: ElementFacts; effects: ActEffects }>> {
  if (params.action === "scroll" && params.ref === "page") {
    try {
      return { ok: true, value: { facts: pageFacts(), effects: { done: scroll(null, params.value) } } };
    } catch (error) {
      return error instanceof ActError ? fail(error.code, error.message) : fail("internal", String(error));
    }
  }
  const found = resolve(params.ref, params.revision);
  if (!found.ok) return found;
  const el = found.value.el;
  // A drag's points are where the page is now: scrolling the element into view would move them.
  if (params.action === "drag") await frame();
  else await settle(el);
  const writes = params.action !== "hover" && params.action !== "scroll" && params.action !== "highlight";
  if (writes && params.expect === undefined) return fail("invalid_params", "a write action needs the facts the broker's gate judged (expect)");
  let facts: ElementFacts;
  try {
    facts = factsOf(el, params.ref, params.action, params.value);
    if (writes && params.expect !== undefined && fingerprint(facts) !== params.expect) {
      return fail(
        "stale_ref",
        `the element ${describeElement(el)} or what its action reaches changed since the policy check (${changedFacts(params.expect, facts)}), so nothing was done; call snapshot again`,
      );
    }
  } catch (error) {
    return error instanceof ActError ? fail(error.code, error.message) : fail("internal", error instanceof Error ? error.message : String(error));
  }
  const beforeActivation = () => verify(el, params, "while it was being pressed (pointer events, focus)");
  const mutations: MutationRecord[] = [];
  const observer = new MutationObserver((records) => mutations.push(...records));
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const navigate = watchNavigate();
  // A grant to type is not a grant to submit: a form submission the page starts from the events fill dispatches
  // (an input handler calling requestSubmit()) is stopped; submitting is clicking the form's button. select and
  // check are gated as clicks on their control, and what their change starts is a navigation the read policy judges.
  const submits = params.action === "fill" ? guardSubmits() : undefined;
  let overlay: Element | undefined;
  try {
    let done: string;
    switch (params.action) {
      case "click":
        click(el, beforeActivation);
        done = `clicked ${facts.role} "${facts.name}"`;
        break;
      case "fill":
        done = fill(el, params.value ?? "");
        break;
      case "select":
        done = selectOption(el, params.value ?? "");
        break;
      case "check":
        done = setChecked(el, params.value !== "false", beforeActivation);
        break;
      case "press":
        done = press(el, params.value ?? "Enter", facts);
        break;
      case "hover":
        hover(el);
        done = `hovering ${facts.role} "${facts.name}"`;
        break;
      case "scroll":
        done = scroll(el, params.value);
        break;
      case "drag":
        done = await drag(el, parsed<DragSpec>(params.value, "drag"));
        break;
      case "upload":
        done = upload(el, parsed<UploadFile[]>(params.value, "upload"));
        break;
      case "highlight": {
        const ms = Number(params.value ?? 1500);
        overlay = highlight(el, ms);
        done = `highlighted ${describeElement(el)} for ${ms} ms`;
        break;
      }
    }
    // Let the page react (re-render, open a menu) before reporting what changed.
    await frame();
    await frame();
    observer.disconnect();
    const submitStopped = submits?.stop();
    mutations.push(...observer.takeRecords());
    // The highlight's own overlay is no change of the page's.
    if (overlay)
      mutations.splice(0, mutations.length, ...mutations.filter((m) => ![...m.addedNodes, ...m.removedNodes].includes(overlay!) && m.target !== overlay));
    const effects: ActEffects = { done };
    if (mutations.length) effects.domChanged = mutations.length;
    const focused = deepActiveElement();
    if (focused && focused !== el && focused !== document.body && params.action !== "hover") effects.focus = describeElement(focused);
    const destination = navigate.stop();
    if (destination !== undefined) effects.navigating = destination;
    if (submitStopped) effects.submitStopped = submitStopped;
    return { ok: true, value: { facts, effects } };
  } catch (error) {
    navigate.stop();
    submits?.stop();
    observer.disconnect();
    if (error instanceof ActError) return fail(error.code, error.message);
    return fail("internal", error instanceof Error ? error.message : String(error));
  }
}

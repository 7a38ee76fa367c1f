// Code mode's gestures, the same for both drivers: drag (pointer and mouse events from a press to a release, with
// HTML5 drag-and-drop events and a DataTransfer when what is pressed is draggable), upload (File objects set on a
// file input), and highlight (a temporary outline in a closed shadow root, for a person watching).
import type { DragSpec, UploadFile } from "@tabrelay/protocol";
import { ActError } from "./api.js";
import { describeElement } from "./dom.js";
import { elementAt } from "./point.js";
import { frame } from "./settle.js";

/** Pointer moves between the press and the release. */
const DRAG_STEPS = 12;

type Point = { x: number; y: number };

function composedContains(outer: Element, inner: Element): boolean {
  for (let at: Node | null = inner; at; at = at.parentNode ?? (at instanceof ShadowRoot ? at.host : null)) if (at === outer) return true;
  return false;
}

function mouse(target: Element, type: string, p: Point, buttons: number): boolean {
  const init = { bubbles: true, cancelable: true, composed: true, view: window, button: 0, buttons, clientX: p.x, clientY: p.y, screenX: p.x, screenY: p.y };
  const event = type.startsWith("pointer")
    ? new PointerEvent(type, { ...init, pointerId: 1, pointerType: "mouse", isPrimary: true, pressure: buttons ? 0.5 : 0 })
    : new MouseEvent(type, init);
  return target.dispatchEvent(event);
}

function dragEvent(target: Element, type: string, p: Point, data: DataTransfer): boolean {
  return target.dispatchEvent(
    new DragEvent(type, {
      bubbles: true,
      cancelable: true,
      composed: true,
      view: window,
      clientX: p.x,
      clientY: p.y,
      screenX: p.x,
      screenY: p.y,
      buttons: 1,
      dataTransfer: data,
    }),
  );
}

/** The element a press at `p` reaches: the deepest one there when it is inside `el` (a slider's thumb), else `el`. */
function pressedAt(el: Element, p: Point): Element {
  const hit = elementAt(document, p.x, p.y);
  return hit && composedContains(el, hit) ? hit : el;
}

/** The closest element holding `el` that the browser would drag (draggable="true", links and images by default). */
function draggableOf(el: Element): HTMLElement | undefined {
  for (let at: Element | null = el; at; at = at.parentElement) {
    if (at instanceof HTMLElement && at.getAttribute("draggable") !== "false" && at.draggable) return at;
  }
  return undefined;
}

function setRange(input: HTMLInputElement, to: Point): void {
  const box = input.getBoundingClientRect();
  const min = Number(input.min || 0);
  const max = Number(input.max || 100);
  const fraction = Math.min(1, Math.max(0, box.width > 0 ? (to.x - box.left) / box.width : 0));
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")?.set;
  setter?.call(input, String(min + fraction * (max - min)));
  input.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  input.dispatchEvent(new Event("change", { bubbles: true }));
}

/**
 * Presses on `el` at `spec.from`, moves to `spec.to` in steps, releases. The points are viewport CSS pixels of the top
 * document; in a frame, the press is at the element's centre and the move is the same distance. A draggable element
 * gets dragstart, drag, dragenter/dragover/dragleave on what is under the pointer, drop where the page accepted one,
 * and dragend (as Chrome, no mouseup then); anything else gets pointermove/mousemove to wherever the page captured
 * the pointer, or to what is under it, then pointerup/mouseup. A range input's value follows the release point.
 */
export async function drag(el: Element, spec: DragSpec): Promise<string> {
  let from: Point = spec.from;
  let to: Point = spec.to;
  if (window !== window.top) {
    const r = el.getBoundingClientRect();
    from = { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    to = { x: from.x + spec.to.x - spec.from.x, y: from.y + spec.to.y - spec.from.y };
  }
  const pressed = pressedAt(el, from);
  const along = (i: number): Point => ({ x: from.x + ((to.x - from.x) * i) / DRAG_STEPS, y: from.y + ((to.y - from.y) * i) / DRAG_STEPS });
  for (const type of ["pointerover", "pointerenter", "mouseover", "mouseenter", "pointermove", "mousemove"]) mouse(pressed, type, from, 0);
  mouse(pressed, "pointerdown", from, 1);
  const pressedOn = mouse(pressed, "mousedown", from, 1);
  if (pressed instanceof HTMLElement) pressed.focus({ preventScroll: true });
  const source = pressedOn ? draggableOf(pressed) : undefined;
  const data = new DataTransfer();
  if (source && dragEvent(source, "dragstart", from, data)) {
    mouse(pressed, "pointercancel", from, 0);
    let over: Element | undefined;
    let accepted = false;
    for (let i = 1; i <= DRAG_STEPS; i++) {
      const p = along(i);
      dragEvent(source, "drag", p, data);
      const now = elementAt(document, p.x, p.y);
      if (now !== over) {
        if (over) dragEvent(over, "dragleave", p, data);
        if (now) dragEvent(now, "dragenter", p, data);
        over = now;
      }
      accepted = over ? !dragEvent(over, "dragover", p, data) : false;
      await frame();
    }
    const dropped = over !== undefined && accepted;
    if (dropped) dragEvent(over!, "drop", to, data);
    else if (over) dragEvent(over, "dragleave", to, data);
    dragEvent(source, "dragend", to, data);
    return dropped
      ? `dragged ${describeElement(source)} and dropped it on ${describeElement(over!)}`
      : `dragged ${describeElement(source)}; nothing at the end point accepted the drop`;
  }
  const captured = (): Element | undefined => (pressed.hasPointerCapture?.(1) ? pressed : el.hasPointerCapture?.(1) ? el : undefined);
  for (let i = 1; i <= DRAG_STEPS; i++) {
    const p = along(i);
    const target = captured() ?? elementAt(document, p.x, p.y) ?? document.documentElement;
    mouse(target, "pointermove", p, 1);
    mouse(target, "mousemove", p, 1);
    await frame();
  }
  const release = captured() ?? elementAt(document, to.x, to.y) ?? document.documentElement;
  mouse(release, "pointerup", to, 0);
  mouse(release, "mouseup", to, 0);
  if (pressed instanceof HTMLInputElement && pressed.type === "range") setRange(pressed, to);
  return `dragged ${describeElement(pressed)} from (${Math.round(from.x)}, ${Math.round(from.y)}) to (${Math.round(to.x)}, ${Math.round(to.y)})`;
}

function bytesOf(base64: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64);
  const bytes = new Uint8Array(new ArrayBuffer(text.length));
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** Sets the files of a file input (as a person choosing them in the picker would) and fires input and change. */
export function upload(el: Element, files: readonly UploadFile[]): string {
  if (!(el instanceof HTMLInputElement) || el.type !== "file")
    throw new ActError("not_actionable", `${describeElement(el)} is not a file input (<input type="file">); pick the file input itself`);
  if (files.length > 1 && !el.multiple)
    throw new ActError("invalid_params", `${describeElement(el)} takes one file (it has no multiple attribute), and ${files.length} were given`);
  const data = new DataTransfer();
  for (const file of files) data.items.add(new File([bytesOf(file.base64)], file.name, { type: file.type }));
  el.files = data.files;
  el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
  const names = files.map((f) => JSON.stringify(f.name)).join(", ");
  return files.length
    ? `set ${files.length} file${files.length === 1 ? "" : "s"} on ${describeElement(el)}: ${names}`
    : `cleared the files of ${describeElement(el)}`;
}

/** The overlay's tag: a custom element the page does not define, holding a closed shadow root. */
export const HIGHLIGHT_TAG = "tabrelay-highlight";

/**
 * Outlines the element for `ms` milliseconds: a fixed-position box, drawn over the element and taking no pointer
 * events, inside a closed shadow root on an element appended to the document, removed afterwards. Returns the element.
 */
export function highlight(el: Element, ms: number): Element {
  const r = el.getBoundingClientRect();
  const host = document.createElement(HIGHLIGHT_TAG);
  host.setAttribute(
    "style",
    `all: initial; position: fixed; left: ${r.left - 3}px; top: ${r.top - 3}px; width: ${r.width + 6}px; height: ${r.height + 6}px; z-index: 2147483647; pointer-events: none;`,
  );
  const root = host.attachShadow({ mode: "closed" });
  const box = document.createElement("div");
  box.setAttribute(
    "style",
    "box-sizing: border-box; width: 100%; height: 100%; border: 3px solid #e8368f; border-radius: 4px; background: rgba(232, 54, 143, 0.12); box-shadow: 0 0 0 2px rgba(255, 255, 255, 0.8);",
  );
  root.append(box);
  document.documentElement.append(host);
  setTimeout(() => host.remove(), ms);
  return host;
}

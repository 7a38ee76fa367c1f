// @ts-check
// The dashboard's DOM helpers: finding the page's nodes, building new ones, and putting page-derived strings in
// the DOM. Page-derived strings only ever reach the DOM through pageBdi (textContent in a <bdi>) or, in
// attributes, pageString.

/** @typedef {string | HTMLElement} Part A fixed string, or a pageBdi */

// The patterns the tools clean page strings with (util/pageText.ts): written in when the broker serves the file.
const PATTERNS = { breaks: "$PLAIN_LINE_BREAKS", invisible: "$PLAIN_LINE_INVISIBLE" };
const BREAKS = new RegExp(PATTERNS.breaks, "g");
const INVISIBLE = new RegExp(PATTERNS.invisible, "gu");

/** @param {string} id */
export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error("dashboard: no #" + id + " in the page");
  return node;
}

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, prototype: T }} type
 * @returns {T}
 */
export function byIdOf(id, type) {
  const node = byId(id);
  if (!(node instanceof type)) throw new Error("dashboard: #" + id + " is not a " + type.name);
  return node;
}

/** @param {unknown} error */
export function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | undefined | null>} [props]
 * @param {(Node | string | undefined | null | false)[]} [children]
 */
export function el(tag, props, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "className") node.className = String(value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children || []) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** @param {Element | null} node @param {string} text */
export function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}

/** A string a page or a browser chose, as the tools show it: one line, no control that hides or reorders text. */
/** @param {unknown} value */
export function pageString(value) {
  return String(value === undefined || value === null ? "" : value)
    .replace(BREAKS, " ")
    .replace(INVISIBLE, "")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Text that may span lines (a program, a model's answer quoting a page): line breaks and tabs kept, every other
 * control and every invisible or reordering character removed. Shown with textContent only.
 * @param {unknown} value
 */
export function pageBlock(value) {
  return String(value === undefined || value === null ? "" : value)
    .replace(INVISIBLE, "")
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, " ");
}

/** Every page string in the DOM goes through here: cleaned, and isolated so it cannot reorder the text around it. */
/** @param {unknown} value @param {string} [className] */
export function pageBdi(value, className) {
  return el("bdi", { className, text: pageString(value) });
}

/** @param {string} title @returns {Part} */
export function titleBdi(title) {
  return pageString(title) ? pageBdi(title) : "(untitled)";
}

/** Like setText, for a line of fixed words and pageBdi parts. */
/** @param {HTMLElement} node @param {Part[]} parts */
export function setParts(node, parts) {
  const text = parts.map((part) => (typeof part === "string" ? part : part.textContent)).join("");
  if (node.textContent === text && node.childNodes.length === parts.length) return;
  node.replaceChildren(...parts);
}

/** @param {number} ms */
export function clock(ms) {
  return new Date(ms).toLocaleTimeString();
}

/** @param {number} ms */
export function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min ago";
}

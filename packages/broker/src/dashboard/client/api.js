// @ts-check
// The dashboard's calls to its broker: JSON from /dashboard/api/* (POSTs with the page's CSRF token), and what
// happens when the session behind them ends.
import { byId, setText } from "./dom.js";

/**
 * What /dashboard/api/state, /preview, /audit, /stop, /config and /policy answer (packages/broker/src/dashboard/api.ts, policyApi.ts).
 * @typedef {{ code: string, message: string }} WireError
 * @typedef {{ tabId: number, url: string, title: string, active: boolean, status: string, shared: boolean, owner: { client: string, since: number } | null }} Tab
 * @typedef {{ id: string, label: string, extensionVersion?: string, connectedAt: number, tabs: Tab[], tabsError?: WireError, broker?: string }} Browser
 * @typedef {{ ok: true, failures: number } | { ok: false, failures: number, error: string, since: number }} AuditHealth
 * @typedef {{ origin: string, server: string, since: number, tools: number }} PageView
 * @typedef {{ origin: string, name: string, agentName: string, title: string, description: string, hash: string, approvedHash: string | null, state: "approved" | "changed", granted: boolean }} PageToolView
 * @typedef {{ pages: PageView[], tools: PageToolView[] }} PagesView
 * @typedef {{ path: string, ok: boolean, error?: string, since?: number, restart: string[] }} ConfigStatus
 * @typedef {{ stopped: boolean, stoppedAt: number | null, browsers: Browser[], broker?: string, unreachable?: string[], audit?: AuditHealth, pages?: PagesView | null, config?: ConfigStatus | null }} State
 * @typedef {{ ok: true, png: string, width: number, height: number, url: string, capturedAt: number } | { ok: false, error: WireError }} Preview
 * @typedef {{ offer: string, key: string, fields: Record<string, string> } | { none: string }} GrantSuggestion
 * @typedef {{ id: number, time: number, decision: string, tool: string, client?: string, browser?: string, tab?: number, origin?: string, target?: string, rule?: string, code?: string, durationMs: number, suggestion?: GrantSuggestion }} AuditRecord
 * @typedef {{ stoppedAt: number, disconnected: { label: string }[], cluster?: { ok: true, brokers: number } | { ok: false, error: string } }} StopResult
 * @typedef {{ approved: true, origin: string, name: string, state: string, hash: string | null }} ApproveResult
 * @typedef {{ entry: Record<string, string>, key: string, value: unknown }} PolicyEntry
 * @typedef {{ entries: PolicyEntry[] } | { error: string }} PolicyView
 * @typedef {{ changed: boolean, said: string, key: string | null, base?: string }} PolicyChange
 * @typedef {{ configFile: string | null, configPathChecked: string, readPolicy: string[], writePolicy: string[], bridgeUrl: string, pairingToken: string, extensionDir: string | null, extensionDirError: string | null, policy: PolicyView | null }} DashboardConfig
 */

const csrfMeta = document.querySelector('meta[name="csrf-token"]');
const csrf = csrfMeta ? csrfMeta.getAttribute("content") || "" : "";
let ended = false;

/** The page's CSRF token, for POSTs made outside post() (the chat's streamed answer). */
export function csrfToken() {
  return csrf;
}

/** True once the session ended (or the user logged out): polls and streams stop. */
export function hasEnded() {
  return ended;
}

/** The user is logging out: the form's own answer takes the page to /login, nothing else needs to. */
export function endQuietly() {
  ended = true;
}

export function sessionEnded() {
  if (ended) return;
  ended = true;
  setText(byId("link-status"), "Your session ended; taking you to the login page.");
  window.location.assign("/login");
}

/** @param {unknown} body */
const errorOf = (body) => (body && typeof body === "object" && "error" in body && body.error ? String(body.error) : undefined);

/**
 * The broker's JSON answer; callers give it the route's type (the broker is this page's own server).
 * @param {string} path
 * @returns {Promise<unknown>}
 */
export async function getJson(path) {
  const res = await fetch(path, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
  if (res.status === 401) {
    sessionEnded();
    throw new Error("logged out");
  }
  /** @type {unknown} */
  const body = await res.json();
  if (!res.ok) throw new Error(errorOf(body) ?? "HTTP " + res.status);
  return body;
}

/**
 * @param {string} path
 * @param {Record<string, string>} [fields] sent as a form
 * @returns {Promise<unknown>}
 */
export async function post(path, fields) {
  const form = fields ? new URLSearchParams(fields) : undefined;
  const res = await fetch(path, { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf, Accept: "application/json" }, body: form });
  if (res.status === 401) {
    sessionEnded();
    throw new Error("logged out");
  }
  /** @type {unknown} */
  const body = await res.json();
  if (!res.ok) throw new Error(errorOf(body) ?? "HTTP " + res.status);
  return body;
}

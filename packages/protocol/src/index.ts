/**
 * Wire protocol between the tabrelay broker and browsers (the MV3 extension today).
 *
 * Types only: both ends import this module and nothing here runs. Every frame is a JSON object with a
 * discriminant `type`. The browser dials the broker's `/bridge` WebSocket, sends `hello` with the pairing
 * token as its first frame, and waits for `welcome` before it serves `call`s.
 *
 * @example
 * // broker -> browser
 * const call: BridgeCall<"tabs.list"> = { type: "call", id: 7, method: "tabs.list", params: {} };
 * // browser -> broker
 * const reply: BridgeResult = { type: "result", id: 7, ok: true, result: { tabs: [] } };
 */

/** Bumped when a frame changes shape; the broker refuses a browser that speaks another version. */
export const PROTOCOL_VERSION = 1;

/** Largest frame either end accepts, in bytes. A rendered page's HTML travels in one frame. */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024;

/** Stable error codes. Tools surface these verbatim; docs/errors.md explains each. */
export type ErrorCode =
  | "not_connected"
  | "browser_disconnected"
  | "unknown_browser"
  | "timeout"
  | "policy_denied"
  | "restricted_page"
  | "no_such_tab"
  | "not_agent_tab"
  | "navigation_failed"
  | "invalid_params"
  | "unknown_method"
  | "frame_too_large"
  | "unauthorized"
  | "internal";

export interface WireError {
  code: ErrorCode;
  message: string;
}

/** A tab as the broker sees it. Only the agent's own tabs (and tabs the user shared) are ever listed. */
export interface TabInfo {
  tabId: number;
  windowId: number;
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
}

export type WaitUntil = "load" | "commit";

/** Commands the broker may send. Map of method -> params / result. */
export interface BridgeMethods {
  "browser.ping": { params: Record<string, never>; result: { now: number } };
  "tabs.list": { params: Record<string, never>; result: { tabs: TabInfo[] } };
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
  "page.content": { params: { tabId: number }; result: PageContent };
}

export type BridgeMethod = keyof BridgeMethods;
export type ParamsOf<M extends BridgeMethod> = BridgeMethods[M]["params"];
export type ResultOf<M extends BridgeMethod> = BridgeMethods[M]["result"];

/** Browser -> broker, first frame. The token is the pairing token; it never travels in a URL. */
export interface HelloFrame {
  type: "hello";
  protocol: number;
  token: string;
  /** Stable id the browser generated at install, kept across restarts. */
  browserId: string;
  label: string;
  extensionVersion: string;
  userAgent: string;
}

export interface WelcomeFrame {
  type: "welcome";
  browserId: string;
  brokerVersion: string;
}

/** Broker -> browser before closing a socket it refuses, so the popup can say why. */
export interface RejectFrame {
  type: "reject";
  error: WireError;
}

export interface BridgeCall<M extends BridgeMethod = BridgeMethod> {
  type: "call";
  id: number;
  method: M;
  params: ParamsOf<M>;
}

export type BridgeResult =
  | { type: "result"; id: number; ok: true; result: unknown }
  | { type: "result"; id: number; ok: false; error: WireError };

/** Events the browser pushes without being asked. */
export interface BridgeEvents {
  /** A top-level document committed in an agent tab (redirects, JS navigation, meta refresh included). */
  "tab.committed": { tabId: number; url: string; openerTabId?: number };
  /** The page opened a new tab from an agent tab; it is the agent's too. */
  "tab.created": { tab: TabInfo; openerTabId?: number };
  "tab.removed": { tabId: number };
}

export type BridgeEventName = keyof BridgeEvents;

export type BridgeEvent = {
  [E in BridgeEventName]: { type: "event"; event: E; params: BridgeEvents[E] };
}[BridgeEventName];

export interface PingFrame {
  type: "ping";
  at: number;
}
export interface PongFrame {
  type: "pong";
  at: number;
}

export type BrowserToBroker = HelloFrame | BridgeResult | BridgeEvent | PingFrame | PongFrame;
export type BrokerToBrowser = WelcomeFrame | RejectFrame | BridgeCall | PingFrame | PongFrame;

/** Result of anything that crosses a boundary: a value, never a throw. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

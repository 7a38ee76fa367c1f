// The frames of the /bridge socket, broker <-> browser (see index.ts for the handshake they carry out).
import type { BridgeMethod, NavigationRule, ParamsOf, TabInfo, WireError } from "./bridge.js";

/**
 * Browser -> broker, first frame. Nothing in it depends on the pairing secret: the listener has proved nothing
 * yet. (Protocol 2 extensions sent the secret itself here as `token`; the broker answers them with an upgrade
 * message.)
 */
export interface HelloFrame {
  type: "hello";
  protocol: number;
  /** Stable id the browser generated at install, kept across restarts. */
  browserId: string;
  /** A fresh nonce (handshake.ts `newNonce`). */
  nonce: string;
  /** The endpoint the browser dialled (handshake.ts `canonicalEndpoint`), in both proofs. */
  endpoint: string;
  extensionVersion: string;
  /** The pairing id of a team broker's code (handshake.ts `pairingIdOf`): which user's key the proofs use. */
  pairing?: string;
}

/**
 * Broker -> browser after `hello`: its own nonce, the endpoint it proves it is (handshake.ts `provenEndpoint`), and its
 * proof over both nonces and that endpoint (`bridgeProof(secret, "broker", ...)`). The last plain frame from the broker:
 * from here on every frame either way is sealed (handshake.ts `FrameSealer`), `auth` and `welcome` included.
 */
export interface ChallengeFrame {
  type: "challenge";
  nonce: string;
  endpoint: string;
  proof: string;
}

/** The browser an extension's build is for (packages/extension/build.mjs). */
export type BrowserProduct = "chrome" | "firefox";

/** Browser -> broker, only once the broker's proof checked out: the browser's proof, then who it is. */
export interface AuthFrame {
  type: "auth";
  proof: string;
  label: string;
  userAgent: string;
  /** Absent from extensions older than the Firefox build: those are Chrome's. */
  product?: BrowserProduct;
}

export interface WelcomeFrame {
  type: "welcome";
  browserId: string;
  brokerVersion: string;
  /**
   * The read policy compiled for the network layer: the browser installs them (declarativeNetRequest session
   * rules scoped to the agent's tabs) before it serves any call, and keeps them until another broker's welcome.
   */
  navigationRules: NavigationRule[];
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

export type BridgeResult = { type: "result"; id: number; ok: true; result: unknown } | { type: "result"; id: number; ok: false; error: WireError };

/** Events the browser pushes without being asked. */
export interface BridgeEvents {
  /** A top-level document committed in an agent tab (redirects, JS navigation, meta refresh included). */
  "tab.committed": { tabId: number; url: string; openerTabId?: number };
  /**
   * A navigation request from an agent tab (top frame or a frame, a redirect hop included) was stopped before it
   * was sent, by the navigation rules. `frame`: false for the tab's top document.
   */
  "tab.blocked": { tabId: number; url: string; frame: boolean };
  /** The page opened a new tab from an agent tab; it is the agent's too. */
  "tab.created": { tab: TabInfo; openerTabId?: number };
  /**
   * A file an agent tab (or the agent's navigation) would have saved. `outcome`: "stopped", its response was stopped
   * before a download began; "cancelled", the download was cancelled as it began and erased; "deleted", it finished
   * before the cancel and its file was deleted; "left", it finished first and, not surely the agent's, was left.
   * `tabId`: the agent tab it came from, when the browser says so. The broker records it in the audit log.
   */
  "tab.download": { tabId?: number; url: string; outcome: "stopped" | "cancelled" | "deleted" | "left" };
  "tab.removed": { tabId: number };
  /**
   * The agent's tabs as they are now (what tabs.list answers): sent once the browser serves, and again whenever one of
   * them changes (URL, title, load state, the front tab, its window) or the agent's set of tabs does. The broker answers
   * list_tabs from the last one (drivers/tabView.ts); a browser that never sends it is asked each time.
   */
  "tabs.now": { tabs: TabInfo[] };
  /**
   * The response that brings a top document of an agent tab started: its HTTP status. The broker holds it until
   * that document commits (drivers/documentStatus.ts) and shows it for that document only (PageContent.status).
   */
  "tab.response": { tabId: number; url: string; status: number };
  /**
   * The WebMCP tools the top document of an agent tab registered now (document.modelContext, pages.webmcp on), as
   * the page reported them: page content, judged by the broker like any page tool. An empty list: none (any more).
   */
  "page.webmcp": { tabId: number; url: string; tools: unknown[] };
  /** The user answered a question (browser.asks) in a notification or the popup. */
  "ask.answer": { id: string; answer: "once" | "always" | "deny"; via: "notification" | "popup" };
  /**
   * The user pressed Stop in the popup: the tab is theirs again. The agent's lease ends, and its next call on the tab
   * is refused (tab_taken_back); the extension no longer treats the tab as an agent tab.
   */
  "tab.stop": { tabId: number };
  /** The popup opened on this tab: the broker answers with browser.tabState. */
  "popup.opened": { tabId: number; url: string };
  /**
   * The user confirmed, in the popup, the grant the broker offered for a refused call on this tab (`record`, the audit
   * record's id): the broker recomputes the offer from its own record and writes it (config.yaml, applied live).
   */
  "policy.grant": { tabId: number; record: number; base: string };
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

export type BrowserToBroker = HelloFrame | AuthFrame | BridgeResult | BridgeEvent | PingFrame | PongFrame;
export type BrokerToBrowser = ChallengeFrame | WelcomeFrame | RejectFrame | BridgeCall | PingFrame | PongFrame;

// The driver interface: what the tools need from a browser, whichever way it is driven (the extension over
// /bridge in drivers/extension/, or the DevTools protocol in drivers/cdp/). Drivers do mechanics only: they
// run the commands the broker sends, enforce the decisions handed to them, and answer with values. What a method
// does beyond that is composed once, over either driver's own calls (composed.ts), and so are the bookkeeping of
// calls in flight (pendingCalls.ts) and the document's HTTP status (documentStatus.ts).
import type { BridgeMethod, BrowserProduct, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";

export interface BrowserInfo {
  browserId: string;
  label: string;
  userAgent: string;
  extensionVersion: string;
  connectedAt: number;
  kind: "extension" | "cdp";
  /** The browser an extension's build is for (CDP drives Chromium). */
  product?: BrowserProduct;
  /** The user the browser belongs to (users/principal.ts ownerOf): absent is the implicit user. */
  owner?: string;
  /** That user's name (with owner): whose policy (config `users:`) the browser is held to. */
  ownerName?: string;
}

/**
 * What tools need from a browser, whichever way it is driven (the extension over /bridge, or CDP).
 * Calls never throw: results are values. When the browser goes away every call in flight fails at
 * once with browser_disconnected.
 */
export interface BrowserDriver {
  readonly info: BrowserInfo;
  readonly closed: boolean;
  call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<Result<ResultOf<M>>>;
  /** Ends the connection (a browser we started is shut down; an attached one is left running). */
  /** `code`: the WebSocket close code an extension browser gets (1012 tells it to reconnect at once: draining). */
  close(reason: string, code?: number): void;
  /**
   * The registry forgets the driver: calls in flight fail now, never after a timeout. The extension's connection
   * needs telling (its socket is the bridge's); the CDP driver learns it from its own socket.
   */
  markClosed?(): void;
}

export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What a driver saw of a tab that appeared, for the broker to say whose it is (gate/decisions.ts gateNewTab). */
export interface NewTabFacts {
  /** It was opened through tabs.open. */
  openedByAgent: boolean;
  /** The tab that opened it (its opener) is the agent's: a page's window.open or target=_blank link. */
  openerIsAgent: boolean;
  /** The whole browser is the agent's (one tabrelay launched, or a stateless host's). */
  agentBrowser: boolean;
}

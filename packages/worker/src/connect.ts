// One request's connection to its browser: the handle resolved to a DevTools endpoint (server-side), a stateless CDP
// driver over the runtime's WebSocket (every page target is the agent's, tab ids stable across connections, the
// browser left running on close), with the same network-layer policy as the Node broker's CDP attach.
import { CdpBrowser, cdpPolicyOptions, TabrelayError, type BrowserDriver, type ToolContext } from "@tabrelay/broker/core";
import { handleText, type BrowserHandle } from "./browsers.js";
import type { Platform, WorkerSettings } from "./env.js";

export async function connectBrowser(handle: BrowserHandle, settings: WorkerSettings, platform: Platform, ctx: ToolContext): Promise<BrowserDriver> {
  if (!settings.source)
    throw new TabrelayError("not_connected", "no browser provider is configured: set TABRELAY_CDP_URL, or TABRELAY_PROVIDER with its API key");
  const endpoint = await settings.source.endpoint(handle);
  settings.secrets.register(endpoint, "cdp endpoint");
  const holder: { driver?: BrowserDriver } = {};
  const driver = await CdpBrowser.connect(endpoint, {
    label: handleText(handle),
    // Stable across requests, and never the endpoint (a credential): the handle's own name.
    browserId: handleText(handle),
    ownsBrowser: false,
    stateless: true,
    socket: platform.socket,
    scripts: platform.scripts,
    callTimeoutMs: settings.config.callTimeoutMs,
    ...cdpPolicyOptions(settings.config),
    onEvent: (frame) => {
      if (holder.driver) ctx.registry.emit("event", holder.driver, frame);
    },
    onClose: () => {
      if (holder.driver) ctx.registry.remove(holder.driver);
    },
  });
  holder.driver = driver;
  return driver;
}

/**
 * The browser a request named but could not reach, as a driver whose every call fails with the reason: the tool call
 * then fails through the runner like any other (its text, its code, its audit record) instead of a generic "no browser".
 */
export function unavailableBrowser(handle: BrowserHandle | undefined, error: unknown, settings: WorkerSettings): BrowserDriver {
  const reason = error instanceof TabrelayError ? error : new TabrelayError("not_connected", error instanceof Error ? error.message : String(error));
  const message = settings.secrets.redact(reason.message);
  return {
    info: {
      browserId: handle ? handleText(handle) : "none",
      label: handle ? handleText(handle) : "none",
      userAgent: "",
      extensionVersion: "",
      connectedAt: Date.now(),
      kind: "cdp",
    },
    closed: false,
    call: async () => ({ ok: false, error: { code: reason.code, message } }),
    close: () => undefined,
  };
}

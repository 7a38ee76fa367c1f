// Browsers of the stateless entry. A browser is named by a handle, which is data (provider and session id), never a
// closure or a connection: any instance resolves it again, through the provider's API or the configured endpoint,
// so POST /browser on one instance and DELETE /browser on another act on the same browser. The DevTools URL a handle
// resolves to is a credential: it stays on the server (secrets registry), never in a response, a log line or a tool
// result.
import {
  createProviderSession,
  endHostedSession,
  hostedSessionEndpoint,
  ProviderError,
  resolveCdpEndpoint,
  TabrelayError,
  type CdpSocket,
  type HostedProvider,
  type ProviderEnv,
  type SecretSink,
} from "@tabrelay/broker/core";

const PROVIDERS = ["cdp", "browserbase", "kernel"] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface BrowserHandle {
  provider: ProviderName;
  /** The provider's session id ("default" for the one browser at a fixed cdp endpoint). */
  id: string;
}

// An id starts with a letter or digit: "." and ".." would be path segments in the provider API URL it goes into.
const HANDLE = /^(cdp|browserbase|kernel):([A-Za-z0-9][A-Za-z0-9_.-]{0,127})$/;

export function handleText(handle: BrowserHandle): string {
  return `${handle.provider}:${handle.id}`;
}

/** A handle as a client sent it (header, query, tool argument), or undefined when it is not one. */
export function parseHandle(text: string | null | undefined): BrowserHandle | undefined {
  const match = text ? HANDLE.exec(text.trim()) : null;
  const provider = PROVIDERS.find((p) => p === match?.[1]);
  return provider && match?.[2] ? { provider, id: match[2] } : undefined;
}

/** Where browsers come from: the configured provider. */
export interface BrowserSource {
  readonly provider: ProviderName;
  /** The browser a call without a handle uses (the fixed endpoint's), if there is one. */
  readonly defaultHandle?: BrowserHandle;
  create(): Promise<BrowserHandle>;
  /** The DevTools WebSocket URL of a handle's browser (a credential); not_connected when it cannot be reached. */
  endpoint(handle: BrowserHandle): Promise<string>;
  /** Shuts the browser down; "already_gone" when there was nothing to stop (idempotent). */
  stop(handle: BrowserHandle): Promise<"stopped" | "already_gone">;
}

/** Opens a raw DevTools socket (the platform's CdpSocketFactory with its payload cap). */
export type OpenSocket = (url: string) => CdpSocket;

/**
 * The one browser at a fixed DevTools endpoint (provider "cdp", TABRELAY_CDP_URL: ws(s):// or an http(s):// base whose
 * /json/version names it). create() checks it answers; stop() closes it (Browser.close), and a browser that no longer
 * answers is already stopped.
 */
export function fixedEndpoint(url: string, open: OpenSocket, fetchImpl: typeof fetch = fetch): BrowserSource {
  const handle: BrowserHandle = { provider: "cdp", id: "default" };
  const check = (h: BrowserHandle) => {
    if (h.provider !== "cdp" || h.id !== "default")
      throw new TabrelayError("unknown_browser", `browser ${handleText(h)} is not this deployment's: its provider is cdp, whose one browser is cdp:default`);
  };
  const endpoint = async (h: BrowserHandle) => {
    check(h);
    return resolveCdpEndpoint(url, fetchImpl);
  };
  return {
    provider: "cdp",
    defaultHandle: handle,
    async create() {
      await endpoint(handle);
      return handle;
    },
    endpoint,
    async stop(h) {
      let socketUrl: string;
      try {
        socketUrl = await endpoint(h);
      } catch (error) {
        if (error instanceof TabrelayError && error.code === "not_connected") return "already_gone";
        throw error;
      }
      return (await closeBrowser(socketUrl, open)) ? "stopped" : "already_gone";
    },
  };
}

/** Sends Browser.close; true once the browser answered or dropped the socket after it, false when it never answered. */
function closeBrowser(url: string, open: OpenSocket): Promise<boolean> {
  return new Promise((resolve) => {
    let socket: CdpSocket;
    try {
      socket = open(url);
    } catch {
      resolve(false);
      return;
    }
    let sent = false;
    const timer = setTimeout(() => done(sent), 5000);
    const done = (stopped: boolean) => {
      clearTimeout(timer);
      try {
        socket.close();
      } catch {
        // closed already
      }
      resolve(stopped);
    };
    socket.addEventListener("open", () => {
      sent = true;
      socket.send(JSON.stringify({ id: 1, method: "Browser.close" }));
    });
    socket.addEventListener("message", () => done(true));
    socket.addEventListener("close", () => done(sent));
    socket.addEventListener("error", () => done(sent));
  });
}

/**
 * A hosted provider's browsers (Browserbase, Kernel): POST /browser creates a session through the provider's API and
 * hands back its id; every request looks the id up again for its DevTools URL (with the API key, kept server-side);
 * DELETE ends it from any instance, and a session the provider no longer runs is already gone.
 */
export function hostedSource(name: HostedProvider, env: ProviderEnv, secrets: SecretSink, fetchImpl: typeof fetch = fetch): BrowserSource {
  const opts = { fetchImpl, secrets };
  const check = (h: BrowserHandle) => {
    if (h.provider !== name) throw new TabrelayError("unknown_browser", `browser ${handleText(h)} is not this deployment's: its provider is ${name}`);
  };
  return {
    provider: name,
    async create() {
      try {
        const session = await createProviderSession(name, env, opts);
        return { provider: name, id: session.id };
      } catch (error) {
        throw providerFailure(error, "browser_start_failed");
      }
    },
    async endpoint(h) {
      check(h);
      let url: string | undefined;
      try {
        url = await hostedSessionEndpoint(name, env, h.id, opts);
      } catch (error) {
        throw providerFailure(error, "not_connected");
      }
      if (url === undefined)
        throw new TabrelayError("not_connected", `browser ${handleText(h)} has ended (the provider no longer runs it); POST /browser for a new one`);
      return url;
    },
    async stop(h) {
      check(h);
      try {
        return await endHostedSession(name, env, h.id, opts);
      } catch (error) {
        throw providerFailure(error, "not_connected");
      }
    },
  };
}

function providerFailure(error: unknown, code: "browser_start_failed" | "not_connected"): TabrelayError {
  if (error instanceof TabrelayError) return error;
  return new TabrelayError(code, error instanceof ProviderError || error instanceof Error ? error.message : String(error));
}

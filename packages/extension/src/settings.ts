import { loadSeedConfig } from "./seed.js";

export interface Settings {
  brokerUrl?: string;
  pairingToken?: string;
  browserId: string;
  label: string;
  /** `tabrelay launch --unsafe-plain-ws`: dial ws:// to a broker off this machine, in the clear. */
  unsafePlainWs?: boolean;
}

export async function loadSettings(): Promise<Settings> {
  const stored = await chrome.storage.local.get(["brokerUrl", "pairingToken", "browserId", "label"]);
  const seed = await loadSeedConfig();
  let browserId = typeof stored["browserId"] === "string" ? stored["browserId"] : "";
  if (!browserId) {
    browserId = crypto.randomUUID();
    await chrome.storage.local.set({ browserId });
  }
  // A launcher-written config.json wins: `tabrelay launch` pairs the profile it starts.
  if (seed && (seed.url !== stored["brokerUrl"] || seed.token !== stored["pairingToken"])) {
    await chrome.storage.local.set({ brokerUrl: seed.url, pairingToken: seed.token, ...(seed.label ? { label: seed.label } : {}) });
    return {
      brokerUrl: seed.url,
      pairingToken: seed.token,
      browserId,
      label: seed.label ?? defaultLabel(stored["label"]),
      ...(seed.unsafePlainWs ? { unsafePlainWs: true } : {}),
    };
  }
  return {
    brokerUrl: typeof stored["brokerUrl"] === "string" ? stored["brokerUrl"] : undefined,
    pairingToken: typeof stored["pairingToken"] === "string" ? stored["pairingToken"] : undefined,
    browserId,
    label: defaultLabel(stored["label"]),
    ...(seed?.unsafePlainWs ? { unsafePlainWs: true } : {}),
  };
}

/**
 * Why this browser will not dial the broker URL, or "" if it may: a bridge URL must be ws(s)://, and ws:// (the
 * pairing handshake and every page in the clear) only to a broker on this machine, unless the launcher said
 * `--unsafe-plain-ws`.
 */
export function plainRemoteRefusal(settings: Pick<Settings, "brokerUrl" | "unsafePlainWs">): string {
  let url: URL;
  try {
    url = new URL(settings.brokerUrl ?? "");
  } catch {
    return `the broker URL ${JSON.stringify(settings.brokerUrl)} is not a URL; pair again with the one \`tabrelay pair\` prints`;
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:")
    return `the broker URL must start with ws:// or wss://, not ${url.protocol}//; pair again with the one \`tabrelay pair\` prints`;
  if (url.protocol === "wss:" || settings.unsafePlainWs || isLoopback(url.hostname)) return "";
  return `refusing ws://${url.host}: a broker on another machine is reached only over wss:// (put TLS in front of it, e.g. a reverse proxy such as caddy or nginx, and pair with wss://${url.host}${url.pathname}); tabrelay launch --unsafe-plain-ws overrides this`;
}

export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function defaultLabel(stored: unknown): string {
  if (typeof stored === "string" && stored) return stored;
  const ua = navigator.userAgent;
  const platform = /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "unknown OS";
  return `Chrome on ${platform}`;
}

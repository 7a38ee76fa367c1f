import { loadSeedConfig } from "./seed.js";

export interface Settings {
  brokerUrl?: string;
  pairingToken?: string;
  browserId: string;
  label: string;
}

export async function loadSettings(): Promise<Settings> {
  const stored = await chrome.storage.local.get(["brokerUrl", "pairingToken", "browserId", "label"]);
  const seed = loadSeedConfig();
  let browserId = typeof stored["browserId"] === "string" ? stored["browserId"] : "";
  if (!browserId) {
    browserId = crypto.randomUUID();
    await chrome.storage.local.set({ browserId });
  }
  // A launcher-written config.js wins: `tabrelay launch` pairs the profile it starts.
  if (seed && (seed.url !== stored["brokerUrl"] || seed.token !== stored["pairingToken"])) {
    await chrome.storage.local.set({ brokerUrl: seed.url, pairingToken: seed.token, ...(seed.label ? { label: seed.label } : {}) });
    return { brokerUrl: seed.url, pairingToken: seed.token, browserId, label: seed.label ?? defaultLabel(stored["label"]) };
  }
  return {
    brokerUrl: typeof stored["brokerUrl"] === "string" ? stored["brokerUrl"] : undefined,
    pairingToken: typeof stored["pairingToken"] === "string" ? stored["pairingToken"] : undefined,
    browserId,
    label: defaultLabel(stored["label"]),
  };
}

function defaultLabel(stored: unknown): string {
  if (typeof stored === "string" && stored) return stored;
  const ua = navigator.userAgent;
  const platform = /Mac OS X/.test(ua) ? "macOS" : /Windows/.test(ua) ? "Windows" : /Linux/.test(ua) ? "Linux" : "unknown OS";
  return `Chrome on ${platform}`;
}

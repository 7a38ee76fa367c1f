declare function importScripts(...urls: string[]): void;
declare global {
  // Written by `tabrelay launch` into its private copy of the extension; absent in a user's own install.
  var TABRELAY_CONFIG: unknown;
}

export interface SeedConfig {
  url: string;
  token: string;
  label?: string;
  unsafePlainWs?: boolean;
}

// importScripts only works while the service worker's script is first evaluated, so this runs at load.
try {
  importScripts("config.js");
} catch {
  // No launcher config: the user pairs from the popup.
}

export function loadSeedConfig(): SeedConfig | undefined {
  const raw = globalThis.TABRELAY_CONFIG;
  if (!raw || typeof raw !== "object") return undefined;
  const url: unknown = Reflect.get(raw, "url");
  const token: unknown = Reflect.get(raw, "token");
  const label: unknown = Reflect.get(raw, "label");
  if (typeof url !== "string" || typeof token !== "string") return undefined;
  return { url, token, ...(typeof label === "string" ? { label } : {}), ...(Reflect.get(raw, "unsafePlainWs") === true ? { unsafePlainWs: true } : {}) };
}

// The launcher's seed: `tabrelay start` / `tabrelay launch` write config.json (the broker URL and the pairing code)
// into their private copy of the extension, so the browser they start pairs itself; a user's own install has none.
// Read with fetch on every worker start, never with importScripts: Chrome keeps a service worker's imported scripts
// with its registration across browser restarts, so a launcher that started again on another port or with another
// code would see its browser dial the old one for good.

export interface SeedConfig {
  url: string;
  token: string;
  label?: string;
  unsafePlainWs?: boolean;
}

export const SEED_FILE = "config.json";

export async function loadSeedConfig(): Promise<SeedConfig | undefined> {
  let raw: unknown;
  try {
    const response = await fetch(chrome.runtime.getURL(SEED_FILE), { cache: "no-store" });
    if (!response.ok) return undefined;
    raw = await response.json();
  } catch {
    return undefined; // no launcher config (the user pairs from the popup), or not JSON
  }
  if (!raw || typeof raw !== "object") return undefined;
  const url: unknown = Reflect.get(raw, "url");
  const token: unknown = Reflect.get(raw, "token");
  const label: unknown = Reflect.get(raw, "label");
  if (typeof url !== "string" || typeof token !== "string") return undefined;
  return { url, token, ...(typeof label === "string" ? { label } : {}), ...(Reflect.get(raw, "unsafePlainWs") === true ? { unsafePlainWs: true } : {}) };
}

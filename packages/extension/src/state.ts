// The service worker's state shared by its modules: the bridge connection and the tabs the agent may use.
import { syncNavigationRules, watchAgentTabs } from "./navigationRules.js";

export type ConnState = "unpaired" | "connecting" | "connected" | "disconnected" | "rejected";

/** The bridge connection: written by connection.ts, read by the popup's messages. */
export const bridge: {
  socket: WebSocket | undefined;
  // Set synchronously before any await so two wake-ups (alarm + startup) never open two sockets.
  connecting: boolean;
  attempt: number;
  /** Drain closes (DRAIN_CLOSE_CODE) since the last welcome. */
  drains: number;
  reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  pingTimer: ReturnType<typeof setInterval> | undefined;
  state: ConnState;
  lastError: string;
  /** Settles once the broker's navigation rules from its welcome frame are installed: no call is served before. */
  rulesReady: Promise<void>;
  /** Why the last listener on the broker's address was not trusted, until a real broker welcomes us. */
  impostor: string;
} = {
  socket: undefined,
  connecting: false,
  attempt: 0,
  drains: 0,
  reconnectTimer: undefined,
  pingTimer: undefined,
  state: "disconnected",
  lastError: "",
  rulesReady: new Promise(() => undefined),
  impostor: "",
};

/**
 * Tabs the agent opened (or that its pages opened) and tabs the user shared. Survive worker restarts. Whose a new tab
 * is follows the broker's rule (gate/decisions.ts gateNewTab, which the CDP driver is handed), applied here at once:
 * a popup's first request leaves before the broker could answer.
 */
export const agentTabs = new Set<number>();
export const sharedTabs = new Set<number>();
export const tabsLoaded = (async () => {
  const stored = await chrome.storage.session.get(["agentTabs", "sharedTabs"]);
  for (const id of numberArray(stored["agentTabs"])) agentTabs.add(id);
  for (const id of numberArray(stored["sharedTabs"])) sharedTabs.add(id);
})();

function numberArray(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => typeof v === "number") : [];
}

const savedListeners: (() => void)[] = [];
/** `listener` hears each change of the agent's set of tabs (each saveTabs). */
export function onTabsSaved(listener: () => void): void {
  savedListeners.push(listener);
}

/** Persists the agent's tabs and rebuilds the navigation rules for them; resolves once the rules are in place. */
export async function saveTabs(rules: "wait" | "later" = "wait"): Promise<void> {
  for (const listener of savedListeners) listener();
  // A tab that left the agent's set needs no rule in a hurry (a rule for it is harmless; it only ever stops more):
  // its rebuild runs in the background, off the path of the call that closed it.
  const rebuilt = syncNavigationRules();
  await Promise.all([rules === "wait" ? rebuilt : undefined, chrome.storage.session.set({ agentTabs: [...agentTabs], sharedTabs: [...sharedTabs] })]);
}
export const scopesWatched = tabsLoaded.then(() => watchAgentTabs(isVisibleToAgent, () => [...agentTabs, ...sharedTabs]));

export function isVisibleToAgent(tabId: number): boolean {
  return agentTabs.has(tabId) || sharedTabs.has(tabId);
}

// The agent's tabs as commands and events see them.
import type { TabInfo } from "@tabrelay/protocol";
import { CommandError } from "./commandError.js";
import { tabTitle } from "./platform.js";
import { agentTabs, isVisibleToAgent, saveTabs, sharedTabs } from "./state.js";

const GROUP_TITLE = "tabrelay";

export function toTabInfo(tab: chrome.tabs.Tab): TabInfo {
  return {
    tabId: tab.id ?? -1,
    windowId: tab.windowId,
    url: tab.url ?? tab.pendingUrl ?? "",
    title: tabTitle(tab),
    active: tab.active,
    status: tab.status === "complete" ? "complete" : tab.status === "unloaded" ? "unloaded" : "loading",
    shared: tab.id !== undefined && sharedTabs.has(tab.id) && !agentTabs.has(tab.id),
  };
}

export async function agentTab(tabId: number): Promise<chrome.tabs.Tab> {
  if (!isVisibleToAgent(tabId)) {
    throw new CommandError("not_agent_tab", `tab ${tabId} is not one of the agent's tabs; list_tabs shows the tabs the agent may use`);
  }
  try {
    return await chrome.tabs.get(tabId);
  } catch {
    agentTabs.delete(tabId);
    sharedTabs.delete(tabId);
    await saveTabs("later");
    throw new CommandError("no_such_tab", `tab ${tabId} no longer exists; call list_tabs`);
  }
}

export async function groupAgentTab(tab: chrome.tabs.Tab): Promise<void> {
  if (tab.id === undefined || !chrome.tabGroups) return;
  try {
    const groups = await chrome.tabGroups.query({ title: GROUP_TITLE, windowId: tab.windowId });
    const existing = groups[0];
    if (existing) {
      await chrome.tabs.group({ tabIds: [tab.id], groupId: existing.id });
    } else {
      const groupId = await chrome.tabs.group({ tabIds: [tab.id], createProperties: { windowId: tab.windowId } });
      await chrome.tabGroups.update(groupId, { title: GROUP_TITLE, color: "purple" });
    }
  } catch {
    // Tab groups are a visual aid only; some windows (popups, app windows) cannot hold them.
  }
}

export async function fresh(tabId: number): Promise<TabInfo> {
  return toTabInfo(await chrome.tabs.get(tabId));
}

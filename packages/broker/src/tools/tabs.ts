import type { TabInfo } from "@tabrelay/protocol";
import { z } from "zod";
import { unwrap } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import type { ToolResponse } from "./response.js";
import { defineTool, fields } from "./tool.js";

/** One line of list_tabs: the title and URL the page wrote are quoted page text (see util/pageText.ts). */
export function describeTab(tab: TabInfo, free = false): string {
  const flags = [
    tab.active ? "active" : "",
    tab.status !== "complete" ? tab.status : "",
    tab.shared ? "shared by user" : "",
    free ? "free: using it makes it yours" : "",
  ].filter(Boolean);
  return `- tab ${tab.tabId}: ${pageText(tab.title)} at ${pageText(tab.url, PAGE_TEXT_MAX.url)}${flags.length ? ` [${flags.join(", ")}]` : ""}`;
}

/** A tab as a program sees it (code mode): its id, URL, title and load state. */
export function tabValue(tab: TabInfo): { id: number; url: string; title: string; status: string; active: boolean } {
  return { id: tab.tabId, url: tab.url, title: tab.title, status: tab.status, active: tab.active };
}

function reportTab(response: ToolResponse, verb: string, tab: TabInfo): void {
  response.structured(tabValue(tab));
  response.line(`${verb} tab ${tab.tabId}.`);
  response.pageText("URL", tab.url, PAGE_TEXT_MAX.url);
  response.pageText("Title", tab.title);
  if (tab.status !== "complete") response.line(`Status: ${tab.status} (the page had not finished loading; read_page reads what is there)`);
}

const BROWSER_ERRORS = ["not_connected", "browser_disconnected", "timeout"] as const;
const TAB_ERRORS = ["not_connected", "browser_disconnected", "no_such_tab", "timeout"] as const;

export const listTabs = defineTool({
  name: "list_tabs",
  title: "List tabs",
  description: "The agent's tabs: id, title, URL, state.",
  input: { browser: fields.browser },
  kind: "read",
  errors: BROWSER_ERRORS,
  async handler(ctx, _params, response) {
    const conn = ctx.browser();
    const askedAt = Date.now();
    const listed = unwrap(await conn.call("tabs.list", {}));
    // A list from the broker's view is as old as the browser's last list: a lease newer than that is not ended for
    // want of its tab in it (a popup claimed a moment ago).
    const { tabs, free, hidden } = ctx.leases.visible(listed.tabs, Math.min(askedAt, listed.asOf ?? askedAt));
    response.structured(tabs.map((tab) => ({ ...tabValue(tab), ...(free.has(tab.tabId) ? { free: true } : {}) })));
    const others = hidden > 0 ? ` ${hidden} more ${hidden === 1 ? "tab belongs" : "tabs belong"} to other agents (not listed; open_tab opens your own).` : "";
    if (tabs.length === 0) {
      response.line(`No agent tabs in "${conn.info.label}". Open one with open_tab or read_url.${others}`);
      return;
    }
    response.line(`Agent tabs in "${conn.info.label}" (titles and URLs in «» are page text):`);
    for (const tab of tabs) response.line(describeTab(tab, free.has(tab.tabId)));
    if (others) response.line(others.trim());
  },
});

export const openTab = defineTool({
  name: "open_tab",
  title: "Open a tab",
  description: "Opens a URL in a new background tab, waits for the load; returns tab id, final URL and title.",
  input: {
    url: fields.url,
    active: z.boolean().optional().describe("Bring it to the front (default false)."),
    keep: z.boolean().optional().describe("Keep it open after this session ends."),
    browser: fields.browser,
  },
  kind: "read",
  errors: ["policy_denied", "navigation_failed", ...BROWSER_ERRORS],
  async handler(ctx, { url, active, keep }, response) {
    const opened = await ctx.gate.open(url, { active: active ?? false });
    if (keep) ctx.leases.keep(opened.tabId);
    reportTab(response, "Opened", opened.tab);
  },
});

export const navigate = defineTool({
  name: "navigate",
  title: "Navigate a tab",
  description: "Loads a URL in a tab and waits for the load; returns the final URL and title.",
  input: { tab: fields.tab, url: fields.url, browser: fields.browser },
  kind: "read",
  errors: ["policy_denied", "navigation_failed", ...TAB_ERRORS],
  async handler(ctx, { tab: tabId, url }, response) {
    reportTab(response, "Navigated", (await ctx.gate.navigate(tabId, url)).tab);
  },
});

export const history = defineTool({
  name: "history",
  title: "Back, forward, reload",
  description: "Back, forward or reload; waits for the load, returns the final URL and title.",
  input: { tab: fields.tab, action: z.enum(["back", "forward", "reload"]).describe("What to do."), browser: fields.browser },
  kind: "read",
  errors: ["navigation_failed", "policy_denied", ...TAB_ERRORS],
  async handler(ctx, { tab: tabId, action }, response) {
    reportTab(response, action === "reload" ? "Reloaded" : `Went ${action} in`, (await ctx.gate.history(tabId, action)).tab);
  },
});

export const closeTab = defineTool({
  name: "close_tab",
  title: "Close a tab",
  description: "Closes a tab.",
  input: { tab: fields.tab, browser: fields.browser },
  kind: "read",
  errors: TAB_ERRORS,
  async handler(ctx, { tab }, response) {
    await ctx.gate.close(tab);
    response.line(`Closed tab ${tab}.`);
    response.structured({ closed: tab });
  },
});

export const activateTab = defineTool({
  name: "activate_tab",
  title: "Bring a tab to the front",
  description: "Brings a tab to the front.",
  input: { tab: fields.tab, browser: fields.browser },
  kind: "read",
  errors: TAB_ERRORS,
  async handler(ctx, { tab: tabId }, response) {
    const conn = ctx.browser();
    const { tab } = unwrap(await conn.call("tabs.activate", { tabId }));
    ctx.record.note({ url: tab.url });
    reportTab(response, "Activated", tab);
  },
});

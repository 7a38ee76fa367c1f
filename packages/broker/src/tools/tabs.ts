import type { TabInfo } from "@tabrelay/protocol";
import { z } from "zod";
import { unwrap } from "../util/errors.js";
import { checkBeforeNavigation, checkLanding, pickBrowser } from "./landing.js";
import type { ToolResponse } from "./response.js";
import { defineTool, fields, UNTRUSTED_NOTE } from "./tool.js";

export function describeTab(tab: TabInfo): string {
  const flags = [tab.active ? "active" : "", tab.status !== "complete" ? tab.status : "", tab.shared ? "shared by user" : ""].filter(Boolean);
  return `- tab ${tab.tabId}: ${JSON.stringify(tab.title)} ${tab.url}${flags.length ? ` [${flags.join(", ")}]` : ""}`;
}

function reportTab(response: ToolResponse, verb: string, tab: TabInfo): void {
  response.line(`${verb} tab ${tab.tabId}.`);
  response.line(`URL: ${tab.url}`);
  response.line(`Title: ${JSON.stringify(tab.title)}`);
  if (tab.status !== "complete") response.line(`Status: ${tab.status} (the page had not finished loading; read_page reads what is there)`);
}

const POLICY_ERRORS =
  "policy_denied: the URL (or where it redirected) is outside the read policy; do not retry, tell the user which host to allow in config.yaml.";
const COMMON_ERRORS =
  "not_connected: no browser; ask the user to start one. browser_disconnected: the browser went away mid-call; retry once it is back (list_browsers). no_such_tab / not_agent_tab: call list_tabs. timeout: the browser did not answer in time; retry.";

export const listTabs = defineTool({
  name: "list_tabs",
  title: "List the agent's tabs",
  description: [
    "Lists the tabs the agent may use in a browser: tabs it opened (and tabs its pages opened) plus tabs the user explicitly shared. The user's other tabs are never listed.",
    `Returns tab id, title, URL and state. ${UNTRUSTED_NOTE}`,
    `Errors: ${COMMON_ERRORS}`,
  ].join(" "),
  input: { browser: fields.browser },
  kind: "read",
  async handler(ctx, { browser }, response) {
    const conn = pickBrowser(ctx, browser);
    const { tabs } = unwrap(await conn.call("tabs.list", {}));
    if (tabs.length === 0) {
      response.line(`No agent tabs in "${conn.info.label}". Open one with open_tab or read_url.`);
      return;
    }
    response.line(`Agent tabs in "${conn.info.label}":`);
    for (const tab of tabs) response.line(describeTab(tab));
  },
});

export const openTab = defineTool({
  name: "open_tab",
  title: "Open a tab",
  description: [
    "Opens a URL in a new agent tab (in the background unless active is true) and waits for it to load. The URL and the page it finally lands on must be allowed by the read policy.",
    `Returns the tab id, final URL and title; read it with read_page. ${UNTRUSTED_NOTE}`,
    `Errors: ${POLICY_ERRORS} navigation_failed: the page did not load (DNS, refused); check the URL. ${COMMON_ERRORS}`,
  ].join(" "),
  input: {
    url: fields.url,
    active: z.boolean().optional().describe("Bring the tab to the front (default false: open in the background)."),
    browser: fields.browser,
  },
  kind: "read",
  async handler(ctx, { url, active, browser }, response) {
    const target = checkBeforeNavigation(ctx, url);
    const conn = pickBrowser(ctx, browser);
    const { tab } = unwrap(await conn.call("tabs.open", { url: target, active: active ?? false, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }, { timeoutMs: ctx.config.loadTimeoutMs + 10_000 }));
    reportTab(response, "Opened", await checkLanding(ctx, conn, tab, { requestedUrl: url }));
  },
});

export const navigate = defineTool({
  name: "navigate",
  title: "Navigate a tab",
  description: [
    "Loads a URL in one of the agent's tabs and waits for the page to load. The URL and wherever it lands must be allowed by the read policy; an off-policy landing resets the tab to about:blank.",
    `Returns the final URL and title. ${UNTRUSTED_NOTE}`,
    `Errors: ${POLICY_ERRORS} navigation_failed: the page did not load. ${COMMON_ERRORS}`,
  ].join(" "),
  input: { tab: fields.tab, url: fields.url, browser: fields.browser },
  kind: "read",
  async handler(ctx, { tab: tabId, url, browser }, response) {
    const target = checkBeforeNavigation(ctx, url);
    const conn = pickBrowser(ctx, browser);
    ctx.denials.forget(conn.info.browserId, tabId);
    const { tab } = unwrap(await conn.call("tabs.navigate", { tabId, url: target, waitUntil: "load", timeoutMs: ctx.config.loadTimeoutMs }, { timeoutMs: ctx.config.loadTimeoutMs + 10_000 }));
    reportTab(response, "Navigated", await checkLanding(ctx, conn, tab, { requestedUrl: url }));
  },
});

function historyTool(action: "back" | "forward" | "reload", name: string, title: string, what: string) {
  return defineTool({
    name,
    title,
    description: [
      `${what} in one of the agent's tabs and waits for the page to load. Where it lands must be allowed by the read policy.`,
      `Returns the final URL and title. ${UNTRUSTED_NOTE}`,
      `Errors: navigation_failed: there is no page ${action === "reload" ? "to reload" : `to go ${action} to`}. ${POLICY_ERRORS} ${COMMON_ERRORS}`,
    ].join(" "),
    input: { tab: fields.tab, browser: fields.browser },
    kind: "read",
    async handler(ctx, { tab: tabId, browser }, response) {
      const conn = pickBrowser(ctx, browser);
      ctx.denials.forget(conn.info.browserId, tabId);
      const { tab } = unwrap(await conn.call("tabs.history", { tabId, action, timeoutMs: ctx.config.loadTimeoutMs }, { timeoutMs: ctx.config.loadTimeoutMs + 10_000 }));
      reportTab(response, action === "reload" ? "Reloaded" : `Went ${action} in`, await checkLanding(ctx, conn, tab, {}));
    },
  });
}

export const goBack = historyTool("back", "go_back", "Go back", "Goes back one page in history");
export const goForward = historyTool("forward", "go_forward", "Go forward", "Goes forward one page in history");
export const reload = historyTool("reload", "reload", "Reload", "Reloads the page");

export const closeTab = defineTool({
  name: "close_tab",
  title: "Close a tab",
  description: `Closes one of the agent's tabs. Tabs the user shared can be closed too; the user's other tabs cannot. ${UNTRUSTED_NOTE} Errors: ${COMMON_ERRORS}`,
  input: { tab: fields.tab, browser: fields.browser },
  kind: "read",
  async handler(ctx, { tab, browser }, response) {
    const conn = pickBrowser(ctx, browser);
    unwrap(await conn.call("tabs.close", { tabId: tab }));
    ctx.denials.forget(conn.info.browserId, tab);
    response.line(`Closed tab ${tab}.`);
  },
});

export const activateTab = defineTool({
  name: "activate_tab",
  title: "Bring a tab to the front",
  description: `Makes one of the agent's tabs the active tab of its window and focuses the window. ${UNTRUSTED_NOTE} Errors: ${COMMON_ERRORS}`,
  input: { tab: fields.tab, browser: fields.browser },
  kind: "read",
  async handler(ctx, { tab: tabId, browser }, response) {
    const conn = pickBrowser(ctx, browser);
    const { tab } = unwrap(await conn.call("tabs.activate", { tabId }));
    reportTab(response, "Activated", tab);
  },
});

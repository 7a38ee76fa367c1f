// Every tool the broker offers, the browser's (tools/) and code mode's (code/), in the order tools/list shows them.
import { click, fill, hover, pressKey, scroll, selectOption, setChecked, waitFor } from "./tools/act.js";
import { listBrowsers } from "./tools/browsers.js";
import { query } from "./tools/query.js";
import { readPage, readUrl } from "./tools/read.js";
import { activateTab, closeTab, history, listTabs, navigate, openTab } from "./tools/tabs.js";
import { browserApi, browserRun } from "./code/browserRun.js";
import { screenshot } from "./tools/screenshot.js";
import { snapshot } from "./tools/snapshot.js";
import type { Tool } from "./tools/tool.js";
import type { BrokerConfig } from "./config/config.js";
import { sessionTools } from "./tools/sessions.js";

export { programTools } from "./tools/programTools.js";

/** Every tool the broker offers, in the order tools/list shows them. */
export const tools: readonly Tool[] = [
  readUrl,
  readPage,
  listBrowsers,
  listTabs,
  openTab,
  navigate,
  history,
  activateTab,
  closeTab,
  snapshot,
  query,
  screenshot,
  click,
  fill,
  selectOption,
  setChecked,
  pressKey,
  hover,
  scroll,
  waitFor,
  browserApi,
  browserRun,
];

/**
 * The tools this broker lists: every tool, plus those for browsers the model starts (browser_start, ...) where
 * config names a source (`browsers.source`); without one they would only answer no_browser_source.
 */
export function toolsFor(config: Pick<BrokerConfig, "browserSource">): readonly Tool[] {
  // Program-only tools (tools/programTools.ts) are never in this list: code mode calls them directly.
  if (!config.browserSource) return tools.filter((t) => !t.programOnly);
  const at = tools.indexOf(listBrowsers) + 1;
  return [...tools.slice(0, at), ...sessionTools, ...tools.slice(at)].filter((t) => !t.programOnly);
}

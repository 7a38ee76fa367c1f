import { click, fill, hover, pressKey, scroll, selectOption, setChecked, waitFor } from "./act.js";
import { listBrowsers } from "./browsers.js";
import { query } from "./query.js";
import { readPage, readUrl } from "./read.js";
import { activateTab, closeTab, history, listTabs, navigate, openTab } from "./tabs.js";
import { browserApi, browserRun } from "./run.js";
import { screenshot } from "./screenshot.js";
import { snapshot } from "./snapshot.js";
import type { Tool } from "./tool.js";

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

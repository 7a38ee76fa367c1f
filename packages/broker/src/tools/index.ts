import { listBrowsers } from "./browsers.js";
import { readPage, readUrl } from "./read.js";
import { activateTab, closeTab, goBack, goForward, listTabs, navigate, openTab, reload } from "./tabs.js";
import type { Tool } from "./tool.js";

/** Every tool the broker offers, in the order tools/list shows them. */
export const tools: readonly Tool[] = [
  readUrl,
  readPage,
  listBrowsers,
  listTabs,
  openTab,
  navigate,
  goBack,
  goForward,
  reload,
  activateTab,
  closeTab,
];

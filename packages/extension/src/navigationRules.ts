// Enforces the broker's navigation rules (its read policy compiled for the network layer) with
// declarativeNetRequest session rules: a navigation request of an agent tab (top frame or frame, every redirect
// hop) to an origin the policy refuses is stopped before it is sent. The extension decides nothing: it installs
// the broker's rules as they are, twice, with two scopes, and rebuilds them whenever those scopes change:
//
// - the agent's tabs (tabIds): every navigation of the tabs it opened, and of tabs the user shared;
// - tabs not known yet (excludedTabIds: the agent's tabs and the user's known tabs) whose navigation a page of
//   an agent tab started (initiatorDomains: the hosts of the agent tabs' documents). A page's window.open or
//   target=_blank link creates its tab and sends the request before any tab event can reach this worker;
//   this scope stops that first request too. A tab is the user's once a second has passed without it being
//   claimed as an agent tab; a user's GET navigation stopped in that second is sent again once it is known;
// - while the agent opens a tab (tabs.open), every tab not known yet: the new tab is created with its URL, and
//   its first request is sent before its id can be named.
import type { NavigationRule } from "@tabrelay/protocol";
import { requestError } from "./platform.js";

const STORAGE_KEY = "navigationRules";
type ResourceType = chrome.declarativeNetRequest.ResourceType;
/** Documents: the top frame, frames, and <object>/<embed> (which hold documents too). */
const NAVIGATIONS = ["main_frame", "sub_frame", "object"] as ResourceType[];
const TOP_FRAME = ["main_frame"] as ResourceType[];
/** What is installed when the broker's rules cannot be: every navigation of agent tabs is stopped. */
const BLOCK_ALL: NavigationRule[] = [{ priority: 1, action: "block" }];
/** How long a new tab may be claimed as the agent's (a popup of an agent page) before it counts as the user's. */
const CLAIM_MS = 1000;
/** Hosts kept per agent tab as initiators (its documents and frames), at most. */
const MAX_HOSTS_PER_TAB = 50;

let rules: NavigationRule[] | undefined;
let isAgentTab: (tabId: number) => boolean = () => false;
let agentTabIds: () => Iterable<number> = () => [];
/** Tabs known to be the user's: never scoped, whatever their pages do. */
const userTabs = new Set<number>();
/** Hosts whose pages an agent tab shows (top documents and frames): navigations they start in new tabs are scoped. */
const agentHosts = new Map<number, Set<string>>();
/** Rebuilds run one at a time; a change during a rebuild asks for one more. */
let running: Promise<void> | undefined;
let again = false;
let lastError = "";
let installedIds: number[] | undefined;

const loaded = (async () => {
  const stored = await chrome.storage.session.get(STORAGE_KEY).catch(() => ({}));
  const value: unknown = (stored as Record<string, unknown>)[STORAGE_KEY];
  if (rules === undefined && Array.isArray(value)) rules = value as NavigationRule[];
})();

/**
 * Where the agent's tabs come from (agent tabs and tabs the user shared). Every tab open now that is not the
 * agent's is the user's; later tabs are classified as they appear.
 */
export async function watchAgentTabs(isAgent: (tabId: number) => boolean, agentIds: () => Iterable<number>): Promise<void> {
  isAgentTab = isAgent;
  agentTabIds = agentIds;
  const tabs = await chrome.tabs.query({}).catch(() => [] as chrome.tabs.Tab[]);
  for (const tab of tabs) {
    if (tab.id === undefined) continue;
    if (isAgent(tab.id)) noteHost(tab.id, tab.url);
    else userTabs.add(tab.id);
  }
}

/** The broker's rules from its welcome frame: installed before the extension serves any call. */
export async function setNavigationRules(next: unknown): Promise<void> {
  rules = Array.isArray(next) ? (next as NavigationRule[]) : BLOCK_ALL;
  await chrome.storage.session.set({ [STORAGE_KEY]: rules }).catch(() => undefined);
  await syncNavigationRules();
}

/** Rules the broker scoped to one agent tab (sites the user allowed once for it), by tab. */
let tabRules = new Map<number, NavigationRule[]>();

/** The broker's tab-scoped rules (the whole list each time); resolves once they are in place. Returns how many tabs. */
export async function setTabRules(next: ReadonlyArray<{ tabId: number; rules: NavigationRule[] }>): Promise<number> {
  tabRules = new Map(next.filter((t) => Number.isInteger(t.tabId) && Array.isArray(t.rules)).map((t) => [t.tabId, t.rules]));
  await syncNavigationRules();
  return tabRules.size;
}

/** The last installation problem, for the popup ("" when the rules are in place). */
export function navigationRulesError(): string {
  return lastError;
}

/** tabs.open calls in flight (see install). */
let opening = 0;
/** The hosts of the URLs those calls open: initiators from the start, so the new page's popups are scoped. */
const openingHosts: string[] = [];
/** Hosts that tabs not known yet loaded from while a tabs.open was in flight (its redirects), by tab. */
const unclaimedHosts = new Map<number, Set<string>>();

/**
 * Scopes every tab not known yet until the returned function is called (once the opened tab is the agent's), and
 * makes `url`'s host an initiator; resolves once that scope is in place. The next rebuild after the call drops it.
 */
export async function scopeNewTabs(url: string): Promise<() => void> {
  opening++;
  const host = hostOf(url);
  if (host) openingHosts.push(host);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    opening--;
    if (host) openingHosts.splice(openingHosts.indexOf(host), 1);
  };
  try {
    await syncNavigationRules();
  } catch (error) {
    end();
    throw error;
  }
  return end;
}

/** Rebuilds the session rules for the current tabs; resolves once they are in place. */
export async function syncNavigationRules(): Promise<void> {
  await loaded;
  if (running) {
    again = true;
    // Whoever asks waits for the rebuild that includes their change.
    while (running !== undefined) await running;
    return;
  }
  running = (async () => {
    do {
      again = false;
      await install();
    } while (again);
  })();
  try {
    await running;
  } finally {
    running = undefined;
  }
}

function hostOf(url: string | undefined): string | undefined {
  if (!url || !/^https?:/i.test(url)) return undefined;
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "") || undefined;
  } catch {
    return undefined;
  }
}

/** Records a host an agent tab's document comes from; true when it is new. */
function noteHost(tabId: number, url: string | undefined): boolean {
  const host = hostOf(url);
  if (!host) return false;
  const hosts = agentHosts.get(tabId) ?? new Set<string>();
  agentHosts.set(tabId, hosts);
  if (hosts.has(host) || hosts.size >= MAX_HOSTS_PER_TAB) return false;
  hosts.add(host);
  return true;
}

async function install(): Promise<void> {
  const agent = [...new Set(agentTabIds())].filter((id) => Number.isInteger(id) && id >= 0);
  // A tab opened with its URL made its first requests before it was the agent's: their hosts become its own now.
  for (const [id, hosts] of unclaimedHosts) {
    if (!agent.includes(id)) continue;
    for (const host of hosts) noteHost(id, `https://${host}/`);
    unclaimedHosts.delete(id);
  }
  if (opening === 0) unclaimedHosts.clear();
  for (const id of agentHosts.keys()) if (!agent.includes(id)) agentHosts.delete(id);
  const pending = opening > 0 ? [...openingHosts, ...[...unclaimedHosts.values()].flatMap((hosts) => [...hosts])] : [];
  const initiators = [...new Set([...[...agentHosts.values()].flatMap((hosts) => [...hosts]), ...pending])];
  // The ids installed last (asked of the browser once per worker start: session rules outlive the worker).
  installedIds ??= (await chrome.declarativeNetRequest.getSessionRules()).map((rule) => rule.id);
  const removeRuleIds = installedIds;
  const scopes: chrome.declarativeNetRequest.RuleCondition[] = [];
  const known = [...agent, ...userTabs];
  if (agent.length > 0) {
    scopes.push({ tabIds: agent, resourceTypes: NAVIGATIONS });
    // IPv6 literals cannot be named as initiators: their pages' popups are scoped only once claimed (docs/safety.md).
    const domains = initiators.filter((host) => !host.includes(":"));
    if (domains.length > 0) scopes.push({ excludedTabIds: known, initiatorDomains: domains, resourceTypes: TOP_FRAME });
  }
  // While the agent opens a tab, every tab not known yet is scoped, whoever started it: the new tab's first
  // request (and its redirects) is stopped before its id is known. The scope goes as soon as the tab is the agent's.
  if (opening > 0) scopes.push(known.length > 0 ? { excludedTabIds: known, resourceTypes: NAVIGATIONS } : { resourceTypes: NAVIGATIONS });
  const build = (list: NavigationRule[]) => scopes.flatMap((scope, s) => list.map((rule, i) => toDnr(rule, s * list.length + i + 1, scope)));
  const wanted = build(rules ?? BLOCK_ALL);
  // A tab's own rules, for an agent tab only, numbered after the others.
  for (const [tabId, own] of tabRules) {
    if (!agent.includes(tabId)) continue;
    for (const rule of own) wanted.push(toDnr(rule, wanted.length + 1, { tabIds: [tabId], resourceTypes: NAVIGATIONS }));
  }
  try {
    await chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds, addRules: wanted });
    installedIds = wanted.map((rule) => rule.id);
    lastError = "";
  } catch (error) {
    // Fail closed: rules the browser refuses (a regex it cannot take) leave agent tabs unable to navigate at all.
    lastError = `the broker's navigation rules could not be installed (${error instanceof Error ? error.message : String(error)}); agent tabs cannot navigate`;
    installedIds = undefined;
    const fallback = build(BLOCK_ALL);
    await chrome.declarativeNetRequest.updateSessionRules({
      removeRuleIds: (await chrome.declarativeNetRequest.getSessionRules()).map((rule) => rule.id),
      addRules: fallback,
    });
    installedIds = fallback.map((rule) => rule.id);
  }
}

function toDnr(rule: NavigationRule, id: number, scope: chrome.declarativeNetRequest.RuleCondition): chrome.declarativeNetRequest.Rule {
  const condition: chrome.declarativeNetRequest.RuleCondition = { ...scope };
  if (rule.regexFilter !== undefined) condition.regexFilter = rule.regexFilter;
  if (rule.urlFilter !== undefined) condition.urlFilter = rule.urlFilter;
  if (rule.requestDomains !== undefined) condition.requestDomains = rule.requestDomains;
  const type = (rule.action === "allow" ? "allow" : "block") as chrome.declarativeNetRequest.RuleActionType;
  return { id, priority: Math.max(1, Math.floor(rule.priority)), action: { type }, condition };
}

// ---- tab scopes --------------------------------------------------------------------------------

/** How many times a tab whose opener is not classified yet is looked at again before it counts as the user's. */
const MAX_CLAIM_ROUNDS = 10;
/** Claims a tab as the agent's (events.ts): a popup whose opener became an agent tab after the popup appeared. */
let claimLate: (tab: chrome.tabs.Tab) => Promise<void> = async () => undefined;

export function onLateClaim(claim: (tab: chrome.tabs.Tab) => Promise<void>): void {
  claimLate = claim;
}

/**
 * Decides whose a new tab is, once it has had time to be claimed as a popup of an agent page. A popup can appear
 * before its opener is known as the agent's (the agent's tabs.open has not returned yet, on a busy machine): such a
 * tab stays scoped until its opener is classified, and is the agent's if the opener is. Only a tab with no opener
 * or the user's tab as opener is the user's, and only then is a navigation stopped in it sent again.
 */
function classifyNewTab(id: number, round: number): void {
  if (isAgentTab(id) || userTabs.has(id)) return;
  void chrome.tabs
    .get(id)
    .then(async (tab) => {
      if (isAgentTab(id)) return;
      const opener = tab.openerTabId;
      if (opener !== undefined && isAgentTab(opener)) return claimLate(tab);
      if (opener !== undefined && !userTabs.has(opener) && round < MAX_CLAIM_ROUNDS) {
        setTimeout(() => classifyNewTab(id, round + 1), CLAIM_MS);
        return;
      }
      userTabs.add(id);
      void syncNavigationRules();
      // An opener that was never classified (it closed first): the user's now, but what it stopped is not resent.
      if (opener === undefined || userTabs.has(opener)) retryStopped(id);
      else stopped.delete(id);
    })
    .catch(() => undefined);
}

chrome.tabs.onCreated.addListener((tab) => {
  const id = tab.id;
  if (id === undefined) return;
  // Not the user's until it has had time to be claimed as a popup of an agent page.
  setTimeout(() => classifyNewTab(id, 0), CLAIM_MS);
});

chrome.tabs.onRemoved.addListener((tabId) => {
  const known = userTabs.delete(tabId) || agentHosts.delete(tabId);
  for (const key of resent) if (key.startsWith(`${tabId} `)) resent.delete(key);
  stopped.delete(tabId);
  if (known) void syncNavigationRules();
});

// A host an agent tab loads from is known from its request, before its page can run a script.
chrome.webRequest.onBeforeRequest.addListener(
  (details): undefined => {
    if (details.tabId < 0) return;
    if (!isAgentTab(details.tabId)) {
      // Perhaps the tab a tabs.open is creating (its id is not known yet): keep the host for when it is claimed.
      const host = hostOf(details.url);
      if (opening === 0 || userTabs.has(details.tabId) || !host) return;
      const hosts = unclaimedHosts.get(details.tabId) ?? new Set<string>();
      unclaimedHosts.set(details.tabId, hosts);
      if (hosts.size >= MAX_HOSTS_PER_TAB || hosts.has(host)) return;
      hosts.add(host);
      void syncNavigationRules();
      return;
    }
    if (details.type === "main_frame") agentHosts.delete(details.tabId);
    if (noteHost(details.tabId, details.url)) void syncNavigationRules();
  },
  { urls: ["http://*/*", "https://*/*"], types: NAVIGATIONS as chrome.webRequest.ResourceType[] },
);

/** GET navigations stopped in tabs not known yet, to send again if they turn out to be the user's. */
const stopped = new Map<number, string>();
/** Tab and URL of each navigation sent again: never twice (another extension may be what stops it). */
const resent = new Set<string>();

chrome.webRequest.onErrorOccurred.addListener(
  (details) => {
    if (requestError(details.error) !== "net::ERR_BLOCKED_BY_CLIENT" || details.tabId < 0 || isAgentTab(details.tabId) || details.method !== "GET") return;
    stopped.set(details.tabId, details.url);
    // Known as the user's already (the error can arrive after the tab was classified): send it again now.
    if (userTabs.has(details.tabId)) retryStopped(details.tabId);
  },
  { urls: ["http://*/*", "https://*/*"], types: TOP_FRAME as chrome.webRequest.ResourceType[] },
);

function retryStopped(tabId: number): void {
  const url = stopped.get(tabId);
  stopped.delete(tabId);
  if (!url || resent.has(`${tabId} ${url}`)) return;
  resent.add(`${tabId} ${url}`);
  if (resent.size > 1000) resent.clear();
  void syncNavigationRules().then(() => chrome.tabs.update(tabId, { url }).catch(() => undefined));
}

// Which MCP session holds which tab, by browser id and tab id: the bookkeeping behind gateLease (decisions.ts).
// A session leases the tabs it opens, the tabs those tabs open (the browser's tab.created / tab.committed events
// with an opener), and a free tab the first time it uses one (a tab the user shared, a tab kept past its session, a
// lease gone idle). A lease ends on close_tab (or any close of the tab), when the tab goes away, when the user
// stops sharing it, after its session leaves it unused for the idle time (the tab stays open, free), and with its
// session (its tabs are closed then, unless opened with keep). Nothing here decides who may use a tab: gateLease does.
// In a cluster with a shared store, every lease is also written there (write-behind), and a browser that connects
// takes on the leases its tabs had on the broker it left (a drain, a crash): a tab stays its session's.
import type { BridgeEvent, TabInfo } from "@tabrelay/protocol";
import type { BridgeMethod, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import type { BrowserDriver, CallOptions } from "../drivers/driver.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import type { Store } from "../store/store.js";
import { gateLease, leaseHolds, type Caller, type LeaseFacts, type LeaseVerdict } from "./decisions.js";

export interface Lease extends LeaseFacts {
  /** The session (or a page of one of its tabs) opened the tab: it is closed when the session ends, unless kept. */
  opened: boolean;
  /** Left open when its session ends (open_tab's keep). */
  keep: boolean;
}

/** A tab a session's end left to close: the browser it is in, and the tab. */
export interface EndedLease {
  browserId: string;
  tabId: number;
}

/** Where a cluster's leases are kept for the brokers: the shared store's lease methods. */
export type LeaseShare = Pick<Store, "putLease" | "dropLease" | "dropSessionLeases" | "leases">;

const key = (browserId: string, tabId: number) => `${browserId}:${tabId}`;
/** Popups whose opener no session held yet, kept for one that takes it later (their events can come first). */
const ORPHANS_MAX = 1000;

export class TabLeases {
  /** A lease its session leaves unused this long ends (tabs.lease_idle_minutes). */
  readonly idleMs: number;
  readonly #byTab = new Map<string, Lease & { browserId: string; tabId: number }>();
  /** Popup -> its opener, for popups that appeared while their opener was free. */
  readonly #orphans = new Map<string, string>();
  #share: { store: LeaseShare; warn: (message: string) => void } | undefined;
  /** When each shared lease's use was last written (a use is written again once a tenth of the idle time passed). */
  readonly #written = new Map<string, number>();

  /** Tabs the user took back (Stop in the popup), with the session that held each: its next call there is refused. */
  readonly #takenBack = new Map<string, string>();

  constructor(idleMs: number) {
    this.idleMs = idleMs;
  }

  /**
   * The user took the tab back (Stop): the lease ends, and the session that held it is told so at its next call on
   * the tab (tab_taken_back), once; after that the tab is the user's like any other (the browser refuses it as not
   * the agent's). Returns the session that held it, if one did.
   */
  takeBack(browserId: string, tabId: number, now: number): string | undefined {
    const holder = this.holder(browserId, tabId, now);
    this.release(browserId, tabId);
    if (!holder) return undefined;
    this.#takenBack.set(key(browserId, tabId), holder.session);
    // A tab taken back leaves the agent's tabs, so the browser may never say it went away: the oldest go first.
    while (this.#takenBack.size > ORPHANS_MAX) {
      const oldest = this.#takenBack.keys().next().value;
      if (oldest === undefined) break;
      this.#takenBack.delete(oldest);
    }
    return holder.session;
  }

  /** Whether the user took the tab back and its agent has not been told yet. */
  takenBack(browserId: string, tabId: number): boolean {
    return this.#takenBack.has(key(browserId, tabId));
  }

  /** The lease that holds the tab now (none once idle past `idleMs`). */
  holder(browserId: string, tabId: number, now: number): Lease | undefined {
    const lease = this.#byTab.get(key(browserId, tabId));
    return leaseHolds(lease, now, this.idleMs) ? lease : undefined;
  }

  /**
   * A call of `caller` on the tab: the gate's verdict, and on a yes the lease taken (a free tab) or its idle time
   * restarted (the caller's own).
   */
  use(browserId: string, tabId: number, caller: Caller | undefined, now: number): LeaseVerdict {
    const k = key(browserId, tabId);
    const held = this.#takenBack.get(k);
    // Told once, to the session that held it (any other caller meets the tab as the user's, like any tab of theirs).
    if (held !== undefined && held === caller?.session) {
      this.#takenBack.delete(k);
      return {
        ok: false,
        code: "tab_taken_back",
        rule: "the user took the tab back",
        message: `the user took tab ${tabId} back (Stop in the tabrelay popup): it is theirs now, and tabrelay refuses calls on it. Do not use it again; tell the user where you were in the task, and use open_tab for a tab of your own if it goes on`,
      };
    }
    const lease = this.#byTab.get(k);
    const verdict = gateLease(lease, caller, tabId, now, this.idleMs);
    if (!verdict.ok || !caller) return verdict;
    if (verdict.claim) this.grant(browserId, tabId, caller, now, { opened: false });
    else if (lease) {
      lease.lastUsed = now;
      if (this.#share && now - (this.#written.get(k) ?? 0) > this.idleMs / 10) this.#put(lease);
    }
    return verdict;
  }

  /**
   * Shares this broker's leases (a cluster with a shared store): written as they change, and each browser that
   * connects takes on what the store holds for it. Call once, before browsers connect.
   */
  share(store: LeaseShare, registry: BrowserRegistry, warn: (message: string) => void): void {
    this.#share = { store, warn };
    registry.on("connected", (browser) => void this.#adopt(browser.info.browserId));
  }

  /** The leases another broker held on this browser's tabs, where this broker holds none yet. */
  async #adopt(browserId: string): Promise<void> {
    const records = await this.#share?.store
      .leases(browserId)
      .catch((error: unknown) => void this.#share?.warn(`leases: could not read browser ${browserId}'s: ${String(error)}`));
    const now = Date.now();
    for (const r of records ?? []) {
      const k = key(browserId, r.tabId);
      if (this.#byTab.has(k)) continue;
      const lease = { browserId, tabId: r.tabId, session: r.session, client: r.client, since: r.since, lastUsed: r.lastUsed, opened: r.opened, keep: r.keep };
      if (leaseHolds(lease, now, this.idleMs)) this.#byTab.set(k, lease);
    }
  }

  #put(lease: Lease & { browserId: string; tabId: number }): void {
    const share = this.#share;
    if (!share) return;
    this.#written.set(key(lease.browserId, lease.tabId), Date.now());
    void share.store
      .putLease({
        browserId: lease.browserId,
        tabId: lease.tabId,
        session: lease.session,
        client: lease.client,
        since: lease.since,
        lastUsed: lease.lastUsed,
        opened: lease.opened,
        keep: lease.keep,
      })
      .catch((error: unknown) => share.warn(`leases: could not write a lease: ${String(error)}`));
  }

  /** The caller opened the tab (or takes a free one): it holds it, and the tab's popups that appeared first. */
  grant(browserId: string, tabId: number, caller: Caller, now: number, options: { opened: boolean; keep?: boolean }): void {
    const k = key(browserId, tabId);
    const lease = {
      browserId,
      tabId,
      session: caller.session,
      client: caller.client,
      since: now,
      lastUsed: now,
      opened: options.opened,
      keep: options.keep ?? false,
    };
    this.#byTab.set(k, lease);
    this.#put(lease);
    this.#orphans.delete(k);
    for (const [popup, opener] of this.#orphans) {
      if (opener !== k) continue;
      const id = Number(popup.slice(popup.lastIndexOf(":") + 1));
      this.grant(browserId, id, caller, now, { opened: true, keep: options.keep ?? false });
    }
  }

  /** Its session asked that the tab outlive the session. */
  keep(browserId: string, tabId: number): void {
    const lease = this.#byTab.get(key(browserId, tabId));
    if (!lease) return;
    lease.keep = true;
    this.#put(lease);
  }

  release(browserId: string, tabId: number): void {
    const k = key(browserId, tabId);
    const had = this.#byTab.delete(k);
    this.#orphans.delete(k);
    const share = this.#share;
    if (had && share) {
      this.#written.delete(k);
      void share.store.dropLease(browserId, tabId).catch((error: unknown) => share.warn(`leases: could not drop a lease: ${String(error)}`));
    }
  }

  /**
   * What `caller` sees of a browser's tabs: its own and free ones (`free`: held by no session); the count of those
   * other sessions hold. A lease on a tab the list no longer shows (gone, or the user stopped sharing it) ends here,
   * when it began before the list was asked for (`askedAt`: a popup leased since may not be in it yet).
   */
  visible(
    browserId: string,
    tabs: readonly TabInfo[],
    caller: Caller | undefined,
    now: number,
    askedAt: number,
  ): { tabs: TabInfo[]; free: Set<number>; hidden: number } {
    const listed = new Set(tabs.map((t) => t.tabId));
    for (const lease of [...this.#byTab.values()]) {
      if (lease.browserId === browserId && !listed.has(lease.tabId) && lease.since <= askedAt) this.release(browserId, lease.tabId);
    }
    const mine = tabs.filter((t) => gateLease(this.#byTab.get(key(browserId, t.tabId)), caller, t.tabId, now, this.idleMs).ok);
    const free = new Set(mine.filter((t) => !this.holder(browserId, t.tabId, now)).map((t) => t.tabId));
    return { tabs: mine, free, hidden: tabs.length - mine.length };
  }

  /**
   * The session ended: every lease it held ends. Returns the tabs to close: those it opened, still held (not idle)
   * and did not keep. A tab it only took (shared by the user, kept by another session, idle) stays open.
   */
  endSession(session: string, now: number): EndedLease[] {
    const close: EndedLease[] = [];
    for (const [k, lease] of this.#byTab) {
      if (lease.session !== session) continue;
      this.#byTab.delete(k);
      this.#written.delete(k);
      if (lease.opened && !lease.keep && leaseHolds(lease, now, this.idleMs)) close.push({ browserId: lease.browserId, tabId: lease.tabId });
    }
    const share = this.#share;
    if (share) void share.store.dropSessionLeases(session).catch((error: unknown) => share.warn(`leases: could not drop an ended session's: ${String(error)}`));
    return close;
  }

  /** The browser's events: a popup of a held tab is held by the same session; a tab that went away is nobody's. */
  onEvent(browser: BrowserDriver, frame: BridgeEvent, now: number): void {
    const browserId = browser.info.browserId;
    if (frame.event === "tab.removed") {
      this.release(browserId, frame.params.tabId);
      this.#takenBack.delete(key(browserId, frame.params.tabId));
      return;
    }
    const popup = frame.event === "tab.created" ? frame.params.tab.tabId : frame.event === "tab.committed" ? frame.params.tabId : undefined;
    const opener = frame.event === "tab.created" || frame.event === "tab.committed" ? frame.params.openerTabId : undefined;
    if (popup === undefined || opener === undefined || this.#byTab.has(key(browserId, popup))) return;
    const holder = this.holder(browserId, opener, now);
    if (holder) {
      this.grant(browserId, popup, holder, now, { opened: true, keep: holder.keep });
      return;
    }
    if (this.#orphans.size >= ORPHANS_MAX) this.#orphans.clear();
    this.#orphans.set(key(browserId, popup), key(browserId, opener));
  }
}

const byRegistry = new WeakMap<BrowserRegistry, TabLeases>();

/**
 * The leases of a registry's tabs: one per registry, following its browsers' tab events from the first call (the
 * broker's, when it wires the gate to the browsers' events in gate/enforce.ts, with the config's idle time). The
 * runner, the MCP adapter and the dashboard reach the same one through the registry and config they hold.
 */
export function tabLeases(registry: BrowserRegistry, config: { tabLeaseIdleMs: number }): TabLeases {
  const known = byRegistry.get(registry);
  if (known) return known;
  const leases = new TabLeases(config.tabLeaseIdleMs);
  registry.on("event", (browser, frame) => leases.onEvent(browser, frame, Date.now()));
  byRegistry.set(registry, leases);
  return leases;
}

/** Failures that say the tab is no longer one the agent may use here: gone, or no longer shared. */
const GONE = new Set(["no_such_tab", "not_agent_tab"]);

/**
 * The call's browser as its session uses it: a tab it opens (tabs.open) is leased to the session, a tab closed
 * through it (tabs.close, or a call that finds the tab gone or no longer shared) is released. Without a session,
 * the browser itself. A view, not the registry's object: compare browsers by info.browserId, never by identity.
 */
export function leasingDriver(driver: BrowserDriver, leases: TabLeases, caller: Caller | undefined): BrowserDriver {
  if (!caller) return driver;
  const browserId = driver.info.browserId;
  return {
    get info() {
      return driver.info;
    },
    get closed() {
      return driver.closed;
    },
    close: (reason) => driver.close(reason),
    async call<M extends BridgeMethod>(method: M, params: ParamsOf<M>, options?: CallOptions): Promise<Result<ResultOf<M>>> {
      const result = await driver.call(method, params, options);
      const tabId: unknown = Reflect.get(params, "tabId");
      if (result.ok && method === "tabs.open") {
        const opened = tabIdOf(Reflect.get(result.value, "tab"));
        if (opened !== undefined) leases.grant(browserId, opened, caller, Date.now(), { opened: true });
      } else if (typeof tabId === "number" && ((result.ok && method === "tabs.close") || (!result.ok && GONE.has(result.error.code)))) {
        leases.release(browserId, tabId);
      }
      return result;
    },
  };
}

function tabIdOf(tab: unknown): number | undefined {
  const id: unknown = tab !== null && typeof tab === "object" ? Reflect.get(tab, "tabId") : undefined;
  return typeof id === "number" ? id : undefined;
}

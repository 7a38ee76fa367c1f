// Browsers the model starts and stops itself (browser_start, browser_stop, browser_list_sessions, browser_live_view,
// browser_run with browser "new"), from the source config.yaml names (`browsers.source`):
// - local: a headless Chromium launched here (cdpChromium.ts), attached as a browser of tabrelay's own (ownsBrowser:
//   every tab in it is the agent's; downloads refused); stopping it ends the process and deletes its profile;
// - browserbase, kernel: a hosted session through the same provider client as `tabrelay serve --provider`
//   (providers.ts); stopping it ends the session through the provider's API, so it is not billed on.
// Only the browsers started here can be stopped here: the user's own Chrome (the extension) and browsers attached
// by `serve --cdp-url` or `launch --cdp` are never in this table.
//
// Limits: at most max_sessions at once (starting ones included); one no call has picked for idle_minutes is stopped;
// all of them are stopped when the broker closes. A browser that goes away by itself (it crashed, the provider ended
// the session) is cleaned up the same way.
//
// Secrets: a CDP endpoint, a provider's connect URL and its live-view URL are registered in the broker's registry
// before anything can quote them; a result names a started browser only by its registry id and label.
import type { BrowserSource, BrowserSourceSettings } from "../config/browsers.js";
import type { BrowserDriver } from "../drivers/driver.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { TabrelayError } from "../util/errors.js";
import type { Logger } from "../util/log.js";
import type { SecretSink } from "../util/secrets.js";
import { DEFAULT_PRINCIPAL, type Principal } from "../users/principal.js";
import { launchLocalChromium } from "./cdpChromium.js";
import { findChromium } from "./chromium.js";
import { createProviderSession } from "./providers.js";

/** What a tool may say about a started browser: no endpoint, no provider URL. */
export interface StartedBrowser {
  /** The registry's browser id (cdp-...): what every tool's `browser` takes. */
  readonly id: string;
  readonly label: string;
  readonly source: BrowserSource;
  readonly startedAt: number;
  /** browser_run's browser "new": stopped when its run ends. */
  readonly temporary: boolean;
  /** The user who started it (users/principal.ts): only their agents see, use and stop it. */
  readonly owner: string;
  /** The local Chromium's process id (local source). */
  readonly pid?: number;
  /** The provider's session id (hosted sources; not a secret: using it takes the API key). */
  readonly providerSessionId?: string;
}

interface Entry extends StartedBrowser {
  readonly driver: BrowserDriver;
  /** The provider's live-view URL (hosted sources); undefined when the provider has none. */
  readonly liveViewUrl: () => Promise<string | undefined>;
  /** Detaches the browser and ends the process or the provider's session; idempotent, never throws. */
  readonly end: () => Promise<void>;
}

export interface BrowserSessionsOptions {
  settings: BrowserSourceSettings;
  registry: BrowserRegistry;
  /** The broker's attach (Broker.attachCdp): the browser joins the registry as a CDP browser. */
  attach(endpoint: string, options: { label: string; ownsBrowser: boolean; owner?: Principal }): Promise<BrowserDriver>;
  secrets: SecretSink;
  log: Logger;
  /** Where the providers' API keys and URLs are read (default process.env). */
  env?: NodeJS.ProcessEnv;
}

const TITLES: Record<BrowserSource, string> = { local: "local Chromium", browserbase: "Browserbase session", kernel: "Kernel browser" };

export class BrowserSessions {
  readonly #options: BrowserSessionsOptions;
  readonly #entries = new Map<string, Entry>();
  /** Ids started here and stopped since: stopping one again is fine. */
  /** Stopped browsers' ids, with their users. */
  readonly #stopped = new Map<string, string>();
  readonly #ending = new Map<string, Promise<void>>();
  readonly #timer: ReturnType<typeof setInterval>;
  #starting = 0;
  #count = 0;
  #closed = false;

  constructor(options: BrowserSessionsOptions) {
    this.#options = options;
    const every = Math.max(250, Math.min(30_000, Math.floor(options.settings.idleMs / 4)));
    this.#timer = setInterval(() => this.#sweep(), every);
    this.#timer.unref();
    // Gone by itself (crashed, closed, the provider ended it): end the rest (the process, the session) too.
    options.registry.on("disconnected", (driver) => {
      const entry = this.#entries.get(driver.info.browserId);
      if (entry && entry.driver === driver) void this.stop(entry.id, "its browser went away");
    });
  }

  get settings(): BrowserSourceSettings {
    return this.#options.settings;
  }

  /** The started browsers, newest first. */
  /** The started browsers (one user's, given their id), newest first. */
  list(owner?: string): StartedBrowser[] {
    return [...this.#entries.values()]
      .filter((e) => owner === undefined || e.owner === owner)
      .sort((a, b) => b.startedAt - a.startedAt)
      .map(publicView);
  }

  /** A started browser (of that user, given their id: another user's is as unknown as one never started). */
  get(id: string, owner?: string): StartedBrowser | undefined {
    const entry = this.#entries.get(id);
    return entry && (owner === undefined || entry.owner === owner) ? publicView(entry) : undefined;
  }

  /** Since when no call has picked this browser (epoch ms): its start, or the last call. */
  lastUsed(id: string): number | undefined {
    const entry = this.#entries.get(id);
    return entry ? Math.max(entry.startedAt, this.#options.registry.lastPicked(id) ?? 0) : undefined;
  }

  /** Stopped here (by that user, given their id). */
  wasStopped(id: string, owner?: string): boolean {
    return owner === undefined ? this.#stopped.has(id) : this.#stopped.get(id) === owner;
  }

  async liveViewUrl(id: string): Promise<string | undefined> {
    const entry = this.#entries.get(id);
    return entry ? entry.liveViewUrl() : undefined;
  }

  /** Starts a browser from the source; session_limit at the cap, browser_start_failed when it cannot. */
  async start(options: { temporary?: boolean; owner?: Principal } = {}): Promise<StartedBrowser> {
    if (this.#closed) throw new TabrelayError("browser_start_failed", "the broker is shutting down; no browser was started");
    const { maxSessions } = this.#options.settings;
    const owner = options.owner ?? DEFAULT_PRINCIPAL;
    if (this.#entries.size + this.#starting >= maxSessions) {
      // The cap is the broker's; only the caller's own browsers are named.
      const ids = [...this.#entries.values()].filter((e) => e.owner === owner.user).map((e) => e.id);
      throw new TabrelayError(
        "session_limit",
        `this broker already runs ${maxSessions} browser${maxSessions === 1 ? "" : "s"} it started (browsers.max_sessions)${ids.length ? `; yours: ${ids.join(", ")}; stop one with browser_stop, then retry` : "; none of them is yours: retry later, or ask the broker's admin to raise browsers.max_sessions"}`,
      );
    }
    this.#starting++;
    let entry: Entry;
    try {
      entry = await this.#launch(++this.#count, options.temporary ?? false, owner);
    } finally {
      this.#starting--;
    }
    if (this.#closed) {
      await entry.end();
      throw new TabrelayError("browser_start_failed", "the broker is shutting down; the browser it had started was stopped");
    }
    this.#entries.set(entry.id, entry);
    this.#options.log.info(
      `sessions: started ${entry.label} (${entry.id}${entry.pid !== undefined ? `, pid ${entry.pid}` : ""}${entry.providerSessionId ? `, provider session ${entry.providerSessionId}` : ""})`,
    );
    return publicView(entry);
  }

  /**
   * Stops a browser started here: "stopped", or "already" when it was stopped before. undefined when this id was
   * never started here (the caller refuses with not_started_here). Never throws.
   */
  async stop(id: string, why = "stopped", owner?: string): Promise<"stopped" | "already" | undefined> {
    // Another user's browser was never started here, as far as this caller knows.
    const mine = this.#entries.get(id);
    if (owner !== undefined && mine && mine.owner !== owner) return undefined;
    const pending = this.#ending.get(id);
    if (pending) {
      await pending;
      return "already";
    }
    const entry = this.#entries.get(id);
    if (!entry) return this.wasStopped(id, owner) ? "already" : undefined;
    const ending = entry.end().finally(() => {
      this.#entries.delete(id);
      this.#stopped.set(id, entry.owner);
      this.#ending.delete(id);
    });
    this.#ending.set(id, ending);
    await ending;
    this.#options.log.info(`sessions: ${entry.label} (${id}) ${why}`);
    return "stopped";
  }

  /** Stops every started browser (the broker is closing); later starts are refused. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await Promise.all([...this.#entries.keys()].map((id) => this.stop(id, "stopped: the broker is closing")));
  }

  #sweep(): void {
    const now = Date.now();
    for (const entry of this.#entries.values()) {
      if (entry.temporary || this.#ending.has(entry.id)) continue;
      const last = this.lastUsed(entry.id) ?? now;
      if (now - last >= this.#options.settings.idleMs)
        void this.stop(entry.id, `stopped: no call for ${Math.round((now - last) / 1000)} s (browsers.idle_minutes)`);
    }
  }

  async #launch(n: number, temporary: boolean, owner: Principal): Promise<Entry> {
    const { settings, secrets } = this.#options;
    const label = `started ${TITLES[settings.source]} ${n}`;
    const failed = (what: string, error: unknown): TabrelayError =>
      new TabrelayError("browser_start_failed", secrets.redact(`${what}: ${error instanceof Error ? error.message : String(error)}`));
    if (settings.source === "local") {
      let launched: Awaited<ReturnType<typeof launchLocalChromium>>;
      try {
        launched = await launchLocalChromium({ chromiumPath: settings.chromiumPath ?? findChromium(), headless: settings.headless });
      } catch (error) {
        throw failed("could not launch a local Chromium (browsers.source: local; set browsers.chromium to its path if it is elsewhere)", error);
      }
      secrets.register(launched.endpoint, "cdp endpoint");
      let driver: BrowserDriver;
      try {
        driver = await this.#options.attach(launched.endpoint, { label, ownsBrowser: true, owner });
      } catch (error) {
        await launched.close();
        throw failed("the local Chromium started but could not be attached; it was stopped", error);
      }
      const end = once(async () => {
        if (!driver.closed) driver.close("stopped by browser_stop");
        await launched.close();
      });
      return {
        id: driver.info.browserId,
        label,
        source: "local",
        startedAt: Date.now(),
        temporary,
        owner: owner.user,
        ...(launched.process.pid !== undefined ? { pid: launched.process.pid } : {}),
        driver,
        liveViewUrl: async () => undefined,
        end,
      };
    }
    const source = settings.source;
    let session: Awaited<ReturnType<typeof createProviderSession>>;
    try {
      session = await createProviderSession(source, this.#options.env ?? process.env, { secrets });
    } catch (error) {
      throw failed(`could not create a ${TITLES[source]} (browsers.source: ${source})`, error);
    }
    let driver: BrowserDriver;
    try {
      driver = await this.#options.attach(session.endpoint, { label, ownsBrowser: false, owner });
    } catch (error) {
      await session.stop();
      throw failed(`${TITLES[source]} ${session.id} was created but could not be attached; it was ended`, error);
    }
    const end = once(async () => {
      if (!driver.closed) driver.close("stopped by browser_stop");
      await session.stop();
    });
    return {
      id: driver.info.browserId,
      label,
      source,
      startedAt: Date.now(),
      temporary,
      owner: owner.user,
      providerSessionId: session.id,
      driver,
      liveViewUrl: () => session.liveViewUrl(),
      end,
    };
  }
}

function publicView(entry: Entry): StartedBrowser {
  return {
    id: entry.id,
    label: entry.label,
    source: entry.source,
    startedAt: entry.startedAt,
    temporary: entry.temporary,
    owner: entry.owner,
    ...(entry.pid !== undefined ? { pid: entry.pid } : {}),
    ...(entry.providerSessionId !== undefined ? { providerSessionId: entry.providerSessionId } : {}),
  };
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn().catch(() => undefined));
}

// config.yaml, live: the Node broker watches the file and applies a valid change within a second, without a restart
// and without dropping an MCP session or a browser. What a change can reach while the broker runs is applied in place
// on the one BrokerConfig object every part reads at each call (the read and write policy and users' policies, read
// limits, the bridge's extension ids and call timeout); the other sections are built into running parts at start
// (the listener, sessions, the store, the cluster, OAuth, page origins, screenshots, code mode's tool list), so a
// change there is applied, said, and audited as waiting for a restart. A change that does not validate keeps the
// running config; its reason (with the line) is logged, audited, and shown by `status()` (the dashboard, doctor).
import { watch, type FSWatcher } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { compileSettings, ConfigError, type BrokerConfig, type ConfigFile } from "./build.js";
import { readConfigFile } from "./config.js";
import { loadRanking } from "./ranking.js";

/** The sections a running broker applies at once; every other top-level key waits for a restart. */
export const LIVE_SECTIONS = ["policy", "users", "read", "bridge"] as const;

export type ReloadOutcome = { ok: true; changed: string[]; restart: string[] } | { ok: false; error: string };

export interface ConfigStatus {
  path: string;
  ok: boolean;
  /** Why the file on disk is not in force (the line and the reason), since when. */
  error?: string;
  since?: number;
  /** Sections changed on disk that apply at the next start. */
  restart: string[];
}

export interface ConfigReloaderOptions {
  /** The running config, changed in place. */
  config: BrokerConfig;
  /** Called after a valid change was applied (with the live sections it touched) or refused. */
  onReload: (outcome: ReloadOutcome) => void;
  /** Quiet time after the last change event before the file is read (editors write in several steps). */
  debounceMs?: number;
}

export class ConfigReloader {
  readonly #options: ConfigReloaderOptions;
  readonly #path: string;
  /** A file named with --config is followed through symlinks, as a start follows it; the data dir's own never is. */
  readonly #named: boolean;
  /** The file the broker started with, and the last valid one read. */
  readonly #started: ConfigFile;
  #last: ConfigFile;
  #watcher: FSWatcher | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #error: { message: string; since: number } | undefined;
  #restart = new Set<string>();

  constructor(options: ConfigReloaderOptions) {
    this.#options = options;
    this.#path = options.config.configPath;
    this.#named = resolve(this.#path) !== resolve(join(options.config.dataDir, "config.yaml"));
    // The file as the broker started with it (read again: BrokerConfig keeps the compiled settings, not the text).
    this.#started = this.#read();
    this.#last = this.#started;
  }

  /** Starts watching the file's folder (an editor may replace the file rather than write it). */
  start(): void {
    const name = basename(this.#path);
    this.#watcher = watch(dirname(this.#path), { persistent: false }, (_event, file) => {
      if (file === null || file.toString() === name) this.#schedule();
    });
    this.#watcher.on("error", () => undefined); // the folder went away: the running config stays
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#timer) clearTimeout(this.#timer);
  }

  status(): ConfigStatus {
    return {
      path: this.#path,
      ok: this.#error === undefined,
      ...(this.#error ? { error: this.#error.message, since: this.#error.since } : {}),
      restart: [...this.#restart],
    };
  }

  /** Reads the file and applies it (what a change event does, after the debounce); the outcome as onReload hears it. */
  reload(): ReloadOutcome {
    const outcome = this.#apply();
    if (outcome.ok) {
      this.#error = undefined;
      if (outcome.changed.length === 0 && outcome.restart.length === 0) return outcome; // saved without a change
    } else {
      this.#error = { message: outcome.error, since: this.#error?.since ?? Date.now() };
    }
    this.#options.onReload(outcome);
    return outcome;
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.reload();
    }, this.#options.debounceMs ?? 100);
  }

  #read(): ConfigFile {
    try {
      return readConfigFile(this.#path, { named: this.#named, warn: () => undefined });
    } catch {
      return {};
    }
  }

  #apply(): ReloadOutcome {
    const config = this.#options.config;
    let file: ConfigFile;
    let next: ReturnType<typeof compileSettings>;
    try {
      file = readConfigFile(this.#path, { named: this.#named, warn: () => undefined });
      next = compileSettings(file, this.#path, loadRanking(config.rankingPath), config.configName);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { ok: false, error: error instanceof ConfigError ? message : `${this.#path}: ${message}` };
    }
    const live = (key: string) => (LIVE_SECTIONS as readonly string[]).includes(key);
    const same = (a: ConfigFile, b: ConfigFile, key: keyof ConfigFile) => JSON.stringify(a[key]) === JSON.stringify(b[key]);
    const keys = [...new Set([...Object.keys(this.#started), ...Object.keys(this.#last), ...Object.keys(file)])] as (keyof ConfigFile)[];
    const changed = keys.filter((key) => live(key) && !same(this.#last, file, key));
    const restart = keys.filter((key) => !live(key) && !same(this.#last, file, key));
    if (changed.includes("policy") || changed.includes("users")) {
      config.policy = next.policy;
      config.writePolicy = next.writePolicy;
      config.ask = next.ask;
      config.userPolicies = next.userPolicies;
      config.pages = { ...config.pages, toolPolicy: next.pages.toolPolicy };
    }
    if (changed.includes("read")) {
      config.readMaxChars = next.readMaxChars;
      config.loadTimeoutMs = next.loadTimeoutMs;
    }
    if (changed.includes("bridge")) {
      config.extensionIds = next.extensionIds;
      config.callTimeoutMs = next.callTimeoutMs;
    }
    this.#last = file;
    // What differs from the file the broker started with, in sections only a start applies (changed back: not waiting).
    this.#restart = new Set(keys.filter((key) => !live(key) && !same(this.#started, file, key)));
    return { ok: true, changed, restart };
  }
}

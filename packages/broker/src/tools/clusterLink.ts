// What the tools and the MCP sessions see of a cluster (issue 16 §3), runtime-neutral: the Redis side is
// cluster/cluster.ts, loaded by the Node broker only when config names cluster.redis_url.
import type { BrowserInfo } from "../drivers/driver.js";
import type { Principal } from "../users/principal.js";
import type { CallOutcome } from "./idempotency.js";

/** A browser connected to another broker of the cluster, as presence has it. */
export interface RemoteBrowser {
  info: BrowserInfo;
  /** The broker holding its bridge socket (or DevTools connection). */
  broker: string;
}

/** A tool call carried to the broker holding its browser, with who made it; that broker runs and audits it. */
export interface ForwardedCall {
  tool: string;
  args: unknown;
  user: Principal;
  session?: { session: string; client: string };
  /** A code-mode run's id, for a command's audit record. */
  run?: string;
}

/** An MCP session as every broker of the cluster knows it: whose, and which client opened it. */
export interface SharedSession {
  user: Principal;
  client: string;
}

export interface ClusterLink {
  readonly brokerId: string;
  /** The user's browsers on other brokers, newest first (live brokers only). */
  remoteBrowsers(owner: string): RemoteBrowser[];
  /**
   * Runs a call on the broker holding its browser (`browserId`, as locate found it); fails at once with
   * browser_disconnected when that broker goes, or the browser shows up on another.
   */
  forward(broker: string, call: ForwardedCall, signal: AbortSignal, browserId?: string): Promise<CallOutcome>;
  /** The directory of MCP sessions shared by the brokers. */
  sessions: SessionDirectory;
  /** A directory of records every broker reads (`name` keeps each kind apart: the dashboard's logins). */
  directory<T>(name: string): Directory<T>;
  /** A table each broker writes its own rows of and every broker reads whole (page tools on offer: pages/clustered.ts). */
  table(name: string): SharedTable;
  /** The other live brokers' ids. */
  peers(): string[];
  /** The broker holding a browser of any user, by id, when it is another one. */
  holderOf(browserId: string): string | undefined;
  /**
   * Asks another broker what only it knows (its browsers' tabs for a dashboard): its `answer` handler's value, or
   * undefined when it has none for `topic` or did not answer within `timeoutMs`.
   */
  ask(broker: string, topic: string, body: unknown, timeoutMs: number): Promise<unknown>;
  /** Answers other brokers' `ask` for a topic. */
  answer(topic: string, handler: (body: unknown) => Promise<unknown>): void;
  /** Tells every other broker something (at most once each: a lost message is not sent again). */
  broadcast(topic: string, body: unknown): void;
  /** Hears what other brokers broadcast on a topic. */
  onBroadcast(topic: string, listener: (body: unknown) => void): void;
  /**
   * Claims `key` (in the namespace `name`) for `ttlMs` across the cluster: true for the first claim only, false while an
   * earlier one lives; rejects when Redis cannot be asked (the caller refuses rather than guesses).
   */
  claimOnce(name: string, key: string, ttlMs: number): Promise<boolean>;
  /** The emergency stop, one for the whole cluster: a broker joining while it is in effect honours it too. */
  emergencyStop: EmergencyStop;
}

export interface EmergencyStop {
  /** Since when it is in effect, undefined while it is not (what this broker last learnt). */
  readonly at: number | undefined;
  /** Puts it in effect (a time) or lifts it (undefined) on every broker; rejects when Redis could not take it. */
  set(at: number | undefined): Promise<void>;
  /** Called when another broker (or a heal of a lost message) changes it. */
  onChange(listener: (at: number | undefined) => void): void;
}

/** Rows by key, one set per broker: this broker's are set here, the others' arrive as they change. */
export interface SharedTable {
  /** Sets (or, with undefined, removes) this broker's row. */
  set(key: string, value: unknown): void;
  /** Other live brokers' rows for `key`. */
  remote(key: string): Array<{ broker: string; value: unknown }>;
  /** Called with the key whose rows changed on another broker. */
  onChange(listener: (key: string) => void): () => void;
}

/** Records by id that every broker of the cluster reads, each living until it expires or is ended. */
export interface Directory<T> {
  save(id: string, value: T, ttlMs: number): Promise<void>;
  find(id: string): Promise<T | undefined>;
  /** The record was used: it lives another `ttlMs` (throttled by the caller). */
  touch(id: string, ttlMs: number): Promise<void>;
  /** Ends it on every broker (their onEnded listeners run). */
  end(id: string): Promise<void>;
  onEnded(listener: (id: string) => void): void;
}

export type SessionDirectory = Directory<SharedSession>;

/**
 * Where a call naming `selector` (none: the user's newest browser) goes: undefined to run here (a local browser, or
 * no browser anywhere: the local registry then says why), or the broker holding it.
 */
export function locate(
  local: readonly BrowserInfo[],
  remote: readonly RemoteBrowser[],
  selector: string | undefined,
): { broker: string; browserId: string } | undefined {
  if (remote.length === 0) return undefined;
  const at = (b: RemoteBrowser) => ({ broker: b.broker, browserId: b.info.browserId });
  if (selector === undefined || selector === "") {
    const newestLocal = local[0]?.connectedAt ?? -1;
    const newestRemote = remote[0]!;
    return newestRemote.info.connectedAt > newestLocal ? at(newestRemote) : undefined;
  }
  if (local.some((b) => b.browserId === selector)) return undefined;
  const byId = remote.find((b) => b.info.browserId === selector);
  if (byId) return at(byId);
  // A label names one browser of the whole cluster, or none (ambiguous labels are refused here, by the registry).
  const labelled = remote.filter((b) => b.info.label === selector);
  if (labelled.length === 1 && !local.some((b) => b.label === selector)) return at(labelled[0]!);
  return undefined;
}

/** Whether `selector` is a label several of the user's browsers carry, here and on other brokers together. */
export function ambiguousLabel(local: readonly BrowserInfo[], remote: readonly RemoteBrowser[], selector: string): boolean {
  if (local.some((b) => b.browserId === selector) || remote.some((b) => b.info.browserId === selector)) return false;
  return local.filter((b) => b.label === selector).length + remote.filter((b) => b.info.label === selector).length > 1;
}

// A broker as a member of a cluster (issue 16 §3): `cluster.redis_url` in config. Redis holds
//   - liveness: tabrelay:broker:<id>, refreshed every HEARTBEAT_MS, expiring DEAD_AFTER_MS after a broker stops;
//   - presence: the hash tabrelay:browsers, browser id -> "<broker id>|<BrowserInfo JSON>", mirrored in memory by
//     every member (changes are broadcast; a full read every RECONCILE_MS heals what a lost message missed);
//   - MCP sessions: tabrelay:session:<id> -> whose and which client, living as long as the session is idle-valid
//     (and other directories alike: tabrelay:dashboard:<id> holds the dashboard's logins);
//   - the emergency stop: tabrelay:stopped -> since when, while it is in effect;
// and carries calls over pub/sub: tabrelay:to:<broker id> takes calls (and questions: a dashboard asking for its
// browsers' tabs) for that broker and the answers to its own; tabrelay:all takes presence changes, ended sessions,
// the emergency stop and goodbyes.
// A forwarded call fails at once with browser_disconnected when its broker says goodbye, stops answering (its
// liveness key expires), or its browser shows up on another broker; it is never re-sent.
// This module keeps liveness, presence and calls; cluster/shared.ts the directories, tables, questions, notes and
// the emergency stop; cluster/wire.ts the keys and messages.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import type { BrowserInfo } from "../drivers/driver.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import type { CallOutcome } from "../tools/idempotency.js";
import type { Logger } from "../util/log.js";
import { ownerOf } from "../users/principal.js";
import { MissingBeats } from "./liveness.js";
import type {
  ClusterLink,
  Directory,
  EmergencyStop,
  ForwardedCall,
  RemoteBrowser,
  SessionDirectory,
  SharedSession,
  SharedTable,
} from "../tools/clusterLink.js";
import { SharedState } from "./shared.js";
import { failure, K, lost, redact, serverOf, type Message } from "./wire.js";

const HEARTBEAT_MS = 500;
const DEAD_AFTER_MS = 1500;
const RECONCILE_MS = 2000;
/** A forwarded call nobody answers is given up after this long (the longest a program may run is 10 min). */
const FORWARD_LIMIT_MS = 11 * 60_000;

/** Runs a call forwarded here on this broker's own browser. */
export type CallHandler = (call: ForwardedCall, signal: AbortSignal) => Promise<CallOutcome>;

interface Pending {
  broker: string;
  browser: string | undefined;
  resolve(outcome: CallOutcome): void;
  timer: NodeJS.Timeout;
}

// Removes a presence entry only while it is still this broker's (the browser may have reconnected elsewhere).
const WITHDRAW = `local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, string.len(ARGV[2]) + 1) == ARGV[2] .. '|' then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0`;

export interface ClusterOptions {
  redisUrl: string;
  registry: BrowserRegistry;
  log: Logger;
  /** Stable across restarts when set (cluster.broker_id); random otherwise. */
  brokerId?: string;
  /**
   * A digest of the secrets every broker must share (the MCP token pages' tokens are keyed by, the pairing code the
   * implicit user's browsers prove): a broker whose digest differs is named by /ready.
   */
  fingerprint: string;
}

export class Cluster implements ClusterLink {
  readonly brokerId: string;
  readonly #cmd: Redis;
  readonly #sub: Redis;
  readonly #registry: BrowserRegistry;
  readonly #log: Logger;
  /** Other brokers' browsers, by browser id. */
  readonly #remote = new Map<string, RemoteBrowser>();
  readonly #pending = new Map<string, Pending>();
  readonly #running = new Map<string, AbortController>();
  /** Directories, tables, questions, notes and the emergency stop. */
  readonly #shared: SharedState;
  readonly sessions: SessionDirectory;
  readonly emergencyStop: EmergencyStop;
  /** The other live brokers, as the last reconcile found them. */
  #peers: string[] = [];
  #handler: CallHandler | undefined;
  #timers: NodeJS.Timeout[] = [];
  #draining = false;
  /** When this broker's own beat last landed in Redis (#mayJudge). */
  #beatAt = Date.now();
  /** Brokers whose beat was missing at a look: dead only if still missing a heartbeat later (liveness.ts). */
  readonly #missing = new MissingBeats(HEARTBEAT_MS);
  #left = false;
  #healthy = true;
  readonly #fingerprint: string;
  /** A live broker whose shared secrets differ from this one's, when there is one. */
  #mismatch: string | undefined;

  private constructor(options: ClusterOptions, cmd: Redis, sub: Redis) {
    this.brokerId = options.brokerId ?? `b-${randomBytes(6).toString("hex")}`;
    this.#cmd = cmd;
    this.#sub = sub;
    this.#registry = options.registry;
    this.#log = options.log;
    this.#fingerprint = options.fingerprint;
    this.#shared = new SharedState({ cmd, publish: (channel, message) => this.#publish(channel, message), brokerId: this.brokerId, log: options.log });
    this.sessions = this.#shared.directory<SharedSession>("session");
    this.emergencyStop = this.#shared.emergencyStop;
  }

  /** Connects to Redis, announces this broker and its browsers, and starts following the others. */
  static async join(options: ClusterOptions): Promise<Cluster> {
    const connect = () => new Redis(options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 });
    const cmd = connect();
    const sub = connect();
    const server = serverOf(options.redisUrl);
    try {
      await Promise.all([cmd.connect(), sub.connect()]);
    } catch (error) {
      cmd.disconnect();
      sub.disconnect();
      // eslint-disable-next-line preserve-caught-error -- the cause would carry the URL with its password; the message is redacted
      throw new Error(
        `cannot reach Redis at ${server} (cluster.redis_url): ${redact(error instanceof Error ? error.message : String(error), options.redisUrl)}; start it, or check the URL and its password`,
      );
    }
    const cluster = new Cluster(options, cmd, sub);
    await cluster.#start(server);
    return cluster;
  }

  async #start(server: string): Promise<void> {
    for (const client of [this.#cmd, this.#sub]) {
      client.on("error", (error: Error) => {
        if (this.#healthy) this.#log.warn(`cluster: Redis at ${server}: ${error.message}`);
        this.#healthy = false;
      });
      client.on("ready", () => (this.#healthy = true));
    }
    // Redis back after an outage (perhaps restarted empty): this broker and its browsers are announced again. (The
    // first "ready" came before this listener, in join.)
    this.#cmd.on("ready", () => {
      this.#log.info(`cluster: Redis at ${server} is back; announcing this broker's browsers again`);
      void this.#beat()
        .then(async () => {
          for (const browser of this.#registry.list()) await this.#announce(browser.info);
        })
        .catch(() => undefined);
    });
    this.#sub.on("message", (_channel: string, text: string) => this.#onMessage(text));
    await this.#sub.subscribe(K.to(this.brokerId), K.all);
    await this.#beat();
    await this.#reconcile();
    for (const browser of this.#registry.list()) await this.#announce(browser.info);
    this.#registry.on(
      "connected",
      (driver) => void this.#announce(driver.info).catch((error: unknown) => this.#log.warn(`cluster: announcing ${driver.info.browserId}: ${String(error)}`)),
    );
    this.#registry.on("disconnected", (driver) => void this.#withdraw(driver.info.browserId).catch(() => undefined));
    this.#timers.push(setInterval(() => void this.#beat().catch(() => undefined), HEARTBEAT_MS));
    // Calls waiting on other brokers: their brokers' liveness checked every beat, so a killed broker fails them
    // within DEAD_AFTER_MS + HEARTBEAT_MS, not at the next full reconcile.
    this.#timers.push(setInterval(() => void this.#checkPending().catch(() => undefined), HEARTBEAT_MS));
    this.#timers.push(setInterval(() => void this.#reconcile().catch(() => undefined), RECONCILE_MS));
    this.#log.info(`cluster: joined as ${this.brokerId} (Redis at ${server})`);
  }

  /** Redis answers and this broker is not draining: what the readiness endpoint reports. */
  get ready(): { ok: boolean; reason?: string } {
    if (this.#draining) return { ok: false, reason: "draining" };
    if (!this.#healthy || this.#cmd.status !== "ready") return { ok: false, reason: `Redis connection ${this.#cmd.status}` };
    if (this.#mismatch) {
      return {
        ok: false,
        reason: `broker ${this.#mismatch} has another MCP token or pairing code: give every broker the same TABRELAY_MCP_TOKEN and TABRELAY_PAIRING_TOKEN (or the same token files)`,
      };
    }
    return { ok: true };
  }

  onCall(handler: CallHandler): void {
    this.#handler = handler;
  }

  remoteBrowsers(owner: string): RemoteBrowser[] {
    // Called on every call that names a browser: the local ids are gathered once, not once per remote browser.
    const here = new Set(this.#registry.list(owner).map((l) => l.info.browserId));
    return [...this.#remote.values()]
      .filter((b) => ownerOf(b.info) === owner && !here.has(b.info.browserId))
      .sort((a, b) => b.info.connectedAt - a.info.connectedAt);
  }

  forward(broker: string, call: ForwardedCall, signal: AbortSignal, browserId?: string): Promise<CallOutcome> {
    const id = randomBytes(9).toString("base64url");
    const selector = call.args && typeof call.args === "object" ? Reflect.get(call.args, "browser") : undefined;
    const browser = browserId ?? (typeof selector === "string" ? selector : undefined);
    return new Promise<CallOutcome>((resolve) => {
      const done = (outcome: CallOutcome) => {
        const pending = this.#pending.get(id);
        if (!pending) return;
        clearTimeout(pending.timer);
        this.#pending.delete(id);
        signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const onAbort = () => {
        void this.#publish(K.to(broker), { kind: "cancel", id });
        done(failure("cancelled", "the call was cancelled; what the browser had been sent happened", true));
      };
      this.#pending.set(id, {
        broker,
        browser,
        resolve: done,
        timer: setTimeout(() => done(lost(broker, `no answer within ${FORWARD_LIMIT_MS / 60_000} minutes`)), FORWARD_LIMIT_MS),
      });
      signal.addEventListener("abort", onAbort, { once: true });
      this.#publish(K.to(broker), { kind: "call", id, from: this.brokerId, call }).then(
        (receivers) => {
          // Nobody subscribed to it: the broker is gone (its presence not yet expired). Nothing was sent anywhere.
          if (receivers === 0)
            done(
              failure(
                "browser_disconnected",
                `the broker holding this browser (${broker}) is gone; nothing was sent; retry: the browser reconnects to another broker`,
                false,
              ),
            );
        },
        (error: unknown) =>
          done(failure("browser_disconnected", `the cluster's Redis could not carry the call (${String(error)}); nothing was sent; retry`, false)),
      );
    });
  }

  table(name: string): SharedTable {
    return this.#shared.table(name);
  }

  directory<T>(name: string): Directory<T> {
    return this.#shared.directory<T>(name);
  }

  peers(): string[] {
    return [...this.#peers];
  }

  holderOf(browserId: string): string | undefined {
    return this.#remote.get(browserId)?.broker;
  }

  claimOnce(name: string, key: string, ttlMs: number): Promise<boolean> {
    return this.#shared.claimOnce(name, key, ttlMs);
  }

  ask(broker: string, topic: string, body: unknown, timeoutMs: number): Promise<unknown> {
    return this.#shared.ask(broker, topic, body, timeoutMs);
  }

  answer(topic: string, handler: (body: unknown) => Promise<unknown>): void {
    this.#shared.answer(topic, handler);
  }

  broadcast(topic: string, body: unknown): void {
    this.#shared.broadcast(topic, body);
  }

  onBroadcast(topic: string, listener: (body: unknown) => void): void {
    this.#shared.onBroadcast(topic, listener);
  }

  /**
   * Stops taking calls from the cluster's new work (not ready any more) but answers those in flight; leave() then
   * withdraws this broker's browsers and says goodbye, so callers elsewhere fail at once rather than wait.
   */
  async drain(): Promise<void> {
    this.#draining = true;
    await this.#beat().catch(() => undefined);
  }

  /** Calls forwarded here still running. */
  get running(): number {
    return this.#running.size;
  }

  async leave(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    for (const timer of this.#timers) clearInterval(timer);
    try {
      // Withdrawn and goodbye first: a caller elsewhere learns the browsers are gone before any answer of a call
      // aborted below could reach it, so the next call there does not find them listed.
      for (const browser of this.#registry.list()) await this.#withdraw(browser.info.browserId);
      await this.#cmd.del(K.broker(this.brokerId));
      await this.#cmd.srem(K.members, this.brokerId);
      await this.#shared.leave();
      await this.#publish(K.all, { kind: "bye", broker: this.brokerId });
    } catch {
      // Redis gone: the liveness key expires by itself.
    }
    for (const [, controller] of this.#running) controller.abort();
    for (const [, pending] of this.#pending)
      pending.resolve(failure("browser_disconnected", "this broker is shutting down; the call's outcome is unknown", true));
    this.#shared.close();
    this.#sub.disconnect();
    this.#cmd.disconnect();
  }

  async #beat(): Promise<void> {
    await this.#cmd.set(K.broker(this.brokerId), JSON.stringify({ draining: this.#draining, at: Date.now(), secrets: this.#fingerprint }), "PX", DEAD_AFTER_MS);
    this.#beatAt = Date.now();
    await this.#cmd.sadd(K.members, this.brokerId);
  }

  /**
   * Whether this broker may judge another dead by its missing beat: only while its own beats land on time. One that
   * was itself held up (its event loop stalled, Redis slow to it) has just woken on the same starved machine as the
   * others may have, and the beat it finds missing may be one the other broker is about to write: it judges at its
   * next beat instead.
   */
  #mayJudge(): boolean {
    const late = Date.now() - this.#beatAt;
    // Beats that fail for long (Redis refusing this broker's writes) do not switch the judging off for good.
    return late <= 2 * HEARTBEAT_MS || late > 3 * DEAD_AFTER_MS;
  }

  async #announce(info: BrowserInfo): Promise<void> {
    await this.#cmd.hset(K.browsers, info.browserId, `${this.brokerId}|${JSON.stringify(info)}`);
    await this.#publish(K.all, { kind: "up", broker: this.brokerId, info });
  }

  async #withdraw(browserId: string): Promise<void> {
    await this.#cmd.eval(WITHDRAW, 1, K.browsers, browserId, this.brokerId);
    await this.#publish(K.all, { kind: "down", broker: this.brokerId, browserId });
  }

  /** Re-reads presence and liveness: drops dead brokers' browsers, and fails calls waiting on a dead broker. */
  async #reconcile(): Promise<void> {
    // Before any await: this broker's own beat, sent in the same wake-up, may land meanwhile.
    const judged = this.#mayJudge();
    const entries = await this.#cmd.hgetall(K.browsers);
    const parsed: RemoteBrowser[] = [];
    for (const value of Object.values(entries)) {
      const bar = value.indexOf("|");
      try {
        parsed.push({ broker: value.slice(0, bar), info: JSON.parse(value.slice(bar + 1)) as BrowserInfo });
      } catch {
        // a corrupt entry is skipped; its broker rewrites it on the next connect
      }
    }
    const brokers = [...new Set([...parsed.map((b) => b.broker), ...[...this.#pending.values()].map((p) => p.broker)])].filter((b) => b !== this.brokerId);
    const beating = new Map<string, boolean>();
    if (brokers.length > 0) {
      const beats = await this.#cmd.mget(...brokers.map(K.broker));
      brokers.forEach((b, i) => beating.set(b, Boolean(beats[i])));
    }
    const dead = judged ? this.#missing.look(beating, Date.now()) : new Set<string>();
    const members = await this.#checkMembers();
    this.#peers = members;
    await this.#shared.reconcile(members);
    this.#remote.clear();
    // A browser is listed while its broker beats (a look that finds the beat missing hides it until the next look); a
    // call waiting on a broker fails only once the broker is confirmed dead.
    for (const entry of parsed) if (entry.broker !== this.brokerId && (beating.get(entry.broker) || !judged)) this.#remote.set(entry.info.browserId, entry);
    for (const [, pending] of this.#pending) if (dead.has(pending.broker)) pending.resolve(lost(pending.broker, "it stopped answering"));
  }

  /** Every live member's shared-secrets digest against this one's; members without a beat leave the set. The live ones. */
  async #checkMembers(): Promise<string[]> {
    const members = (await this.#cmd.smembers(K.members)).filter((m) => m !== this.brokerId);
    if (members.length === 0) {
      this.#mismatch = undefined;
      return [];
    }
    const beats = await this.#cmd.mget(...members.map(K.broker));
    let mismatch: string | undefined;
    const gone: string[] = [];
    members.forEach((member, i) => {
      const beat = beats[i];
      if (!beat) return void gone.push(member);
      try {
        if ((JSON.parse(beat) as { secrets?: string }).secrets !== this.#fingerprint) mismatch ??= member;
      } catch {
        // a beat this version cannot read is no evidence either way
      }
    });
    if (gone.length > 0) await this.#cmd.srem(K.members, ...gone);
    if (mismatch && mismatch !== this.#mismatch)
      this.#log.warn(`cluster: broker ${mismatch} has another MCP token or pairing code; give every broker the same ones`);
    this.#mismatch = mismatch;
    return members.filter((m) => !gone.includes(m));
  }

  async #checkPending(): Promise<void> {
    if (this.#pending.size === 0 || !this.#mayJudge()) return;
    const brokers = [...new Set([...this.#pending.values()].map((p) => p.broker))];
    const beats = await this.#cmd.mget(...brokers.map(K.broker));
    const beating = new Map(brokers.map((b, i) => [b, Boolean(beats[i])]));
    for (const [id, entry] of this.#remote) if (beating.get(entry.broker) === false) this.#remote.delete(id);
    const dead = this.#missing.look(beating, Date.now());
    if (dead.size === 0) return;
    for (const [, pending] of this.#pending) if (dead.has(pending.broker)) pending.resolve(lost(pending.broker, "it stopped answering"));
  }

  #onMessage(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (this.#shared.handle(message)) return;
    switch (message.kind) {
      case "call":
        void this.#serve(message.id, message.from, message.call);
        return;
      case "cancel":
        this.#running.get(message.id)?.abort();
        return;
      case "answer": {
        const pending = this.#pending.get(message.id);
        // The holder says the browser went during the call: it is not there, whatever "down" is still on its way
        // (an "up" from its next connection comes after this answer and lists it again).
        if (
          pending?.browser !== undefined &&
          message.outcome.result.error?.code === "browser_disconnected" &&
          this.#remote.get(pending.browser)?.broker === pending.broker
        ) {
          this.#remote.delete(pending.browser);
        }
        pending?.resolve(message.outcome);
        return;
      }
      case "up":
        if (message.broker !== this.brokerId) {
          this.#remote.set(message.info.browserId, { broker: message.broker, info: message.info });
          // The browser reconnected to another broker: calls waiting on the old one will not be answered by it.
          for (const [, pending] of this.#pending) {
            if (pending.broker !== message.broker && pending.browser === message.info.browserId)
              pending.resolve(lost(pending.broker, "its browser reconnected to another broker"));
          }
        } else this.#remote.delete(message.info.browserId);
        return;
      case "down":
        // Calls waiting on it are not failed here: its broker is alive and answers them (browser_disconnected where
        // the browser went during one; done where the call itself closed it, as browser_stop does).
        if (this.#remote.get(message.browserId)?.broker === message.broker) this.#remote.delete(message.browserId);
        return;
      case "bye":
        this.#shared.gone(message.broker);
        this.#peers = this.#peers.filter((b) => b !== message.broker);
        for (const [id, entry] of this.#remote) if (entry.broker === message.broker) this.#remote.delete(id);
        for (const [, pending] of this.#pending) if (pending.broker === message.broker) pending.resolve(lost(message.broker, "it shut down"));
        return;
    }
  }

  async #serve(id: string, from: string, call: ForwardedCall): Promise<void> {
    const controller = new AbortController();
    this.#running.set(id, controller);
    let outcome: CallOutcome;
    try {
      outcome = this.#handler ? await this.#handler(call, controller.signal) : failure("not_connected", "this broker takes no forwarded calls yet", false);
    } catch (error) {
      outcome = failure("internal", `the broker holding the browser failed: ${error instanceof Error ? error.message : String(error)}`, false);
    } finally {
      this.#running.delete(id);
    }
    await this.#publish(K.to(from), { kind: "answer", id, outcome }).catch(() => undefined);
  }

  #publish(channel: string, message: Message): Promise<number> {
    return this.#cmd.publish(channel, JSON.stringify(message));
  }
}

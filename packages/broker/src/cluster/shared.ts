// What the brokers of a cluster share beside browsers and calls (cluster.ts): directories of records (MCP sessions,
// dashboard logins), tables each broker writes its own rows of, questions to one broker and notes to all, and the
// emergency stop. Redis holds the state; the messages of cluster/wire.ts carry the changes; a reconcile heals what
// a lost message missed.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "../util/log.js";
import type { Directory, EmergencyStop, SharedTable } from "../tools/clusterLink.js";
import { K, type Message, type Publish } from "./wire.js";

interface Table {
  own: Map<string, unknown>;
  /** Other brokers' rows: broker -> key -> value. */
  remote: Map<string, Map<string, unknown>>;
  listeners: Set<(key: string) => void>;
}

export class SharedState {
  readonly #cmd: Redis;
  readonly #publish: Publish;
  readonly #brokerId: string;
  readonly #log: Logger;
  /** Directories' ended listeners, by directory name. */
  readonly #endedListeners = new Map<string, Array<(id: string) => void>>();
  readonly #asks = new Map<string, { broker: string; resolve(value: unknown): void }>();
  readonly #answers = new Map<string, (body: unknown) => Promise<unknown>>();
  readonly #notes = new Map<string, Array<(body: unknown) => void>>();
  readonly #stopListeners: Array<(at: number | undefined) => void> = [];
  #stoppedAt: number | undefined;
  readonly #tables = new Map<string, Table>();

  constructor(options: { cmd: Redis; publish: Publish; brokerId: string; log: Logger }) {
    this.#cmd = options.cmd;
    this.#publish = options.publish;
    this.#brokerId = options.brokerId;
    this.#log = options.log;
  }

  directory<T>(name: string): Directory<T> {
    return {
      save: async (id, value, ttlMs) => void (await this.#cmd.set(K.record(name, id), JSON.stringify(value), "PX", Math.max(1, Math.round(ttlMs)))),
      find: async (id) => {
        const text = await this.#cmd.get(K.record(name, id));
        if (!text) return undefined;
        try {
          return JSON.parse(text) as T;
        } catch {
          return undefined;
        }
      },
      touch: async (id, ttlMs) => void (await this.#cmd.pexpire(K.record(name, id), Math.max(1, Math.round(ttlMs)))),
      end: async (id) => {
        await this.#cmd.del(K.record(name, id));
        await this.#publish(K.all, { kind: "session-ended", id, directory: name });
      },
      onEnded: (listener) => {
        const listeners = this.#endedListeners.get(name) ?? [];
        listeners.push(listener);
        this.#endedListeners.set(name, listeners);
      },
    };
  }

  async claimOnce(name: string, key: string, ttlMs: number): Promise<boolean> {
    return (await this.#cmd.set(K.record(name, key), "1", "PX", Math.max(1, Math.round(ttlMs)), "NX")) === "OK";
  }

  table(name: string): SharedTable {
    let table = this.#tables.get(name);
    if (!table) this.#tables.set(name, (table = { own: new Map(), remote: new Map(), listeners: new Set() }));
    const state = table;
    return {
      set: (key, value) => {
        if (value === undefined) state.own.delete(key);
        else state.own.set(key, value);
        const write =
          value === undefined ? this.#cmd.hdel(K.table(name, this.#brokerId), key) : this.#cmd.hset(K.table(name, this.#brokerId), key, JSON.stringify(value));
        void write
          .then(() => this.#publish(K.all, { kind: "row", table: name, broker: this.#brokerId, key, ...(value === undefined ? {} : { value }) }))
          .catch(() => undefined);
      },
      remote: (key) => [...state.remote].flatMap(([broker, rows]) => (rows.has(key) ? [{ broker, value: rows.get(key) }] : [])),
      onChange: (listener) => {
        state.listeners.add(listener);
        return () => state.listeners.delete(listener);
      },
    };
  }

  ask(broker: string, topic: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const id = randomBytes(9).toString("base64url");
    return new Promise<unknown>((resolve) => {
      const timer = setTimeout(() => done(undefined), timeoutMs);
      const done = (value: unknown) => {
        if (!this.#asks.delete(id)) return;
        clearTimeout(timer);
        resolve(value);
      };
      this.#asks.set(id, { broker, resolve: done });
      this.#publish(K.to(broker), { kind: "ask", id, from: this.#brokerId, topic, body }).then(
        (receivers) => receivers === 0 && done(undefined),
        () => done(undefined),
      );
    });
  }

  answer(topic: string, handler: (body: unknown) => Promise<unknown>): void {
    this.#answers.set(topic, handler);
  }

  broadcast(topic: string, body: unknown): void {
    void this.#publish(K.all, { kind: "note", from: this.#brokerId, topic, body }).catch(() => undefined);
  }

  onBroadcast(topic: string, listener: (body: unknown) => void): void {
    const listeners = this.#notes.get(topic) ?? [];
    listeners.push(listener);
    this.#notes.set(topic, listeners);
  }

  readonly emergencyStop: EmergencyStop = ((shared: SharedState): EmergencyStop => ({
    get at() {
      return shared.#stoppedAt;
    },
    set: async (at) => {
      // Kept in Redis (a broker starting, or back after an outage, while it is in effect reads it) and told to all.
      if (at === undefined) await shared.#cmd.del(K.stopped);
      else await shared.#cmd.set(K.stopped, String(at));
      shared.#applyStop(at);
      await shared.#publish(K.all, { kind: "stop", ...(at === undefined ? {} : { at }) });
    },
    onChange: (listener) => void shared.#stopListeners.push(listener),
  }))(this);

  /** Takes the messages that are its own; false for the others (presence and calls). */
  handle(message: Message): boolean {
    switch (message.kind) {
      case "session-ended":
        for (const listener of this.#endedListeners.get(message.directory ?? "session") ?? []) listener(message.id);
        return true;
      case "ask":
        void this.#reply(message.id, message.from, message.topic, message.body);
        return true;
      case "reply":
        this.#asks.get(message.id)?.resolve(message.value);
        return true;
      case "stop":
        this.#applyStop(message.at);
        return true;
      case "note":
        if (message.from !== this.#brokerId) for (const listener of this.#notes.get(message.topic) ?? []) listener(message.body);
        return true;
      case "row": {
        const table = this.#tables.get(message.table);
        if (!table || message.broker === this.#brokerId) return true;
        const rows = table.remote.get(message.broker) ?? new Map<string, unknown>();
        if (message.value === undefined) rows.delete(message.key);
        else rows.set(message.key, message.value);
        table.remote.set(message.broker, rows);
        for (const listener of table.listeners) listener(message.key);
        return true;
      }
      default:
        return false;
    }
  }

  /** A broker said goodbye: its rows go, and questions to it are answered with nothing. */
  gone(broker: string): void {
    for (const [, table] of this.#tables) {
      const rows = table.remote.get(broker);
      if (!rows) continue;
      table.remote.delete(broker);
      for (const key of rows.keys()) for (const listener of table.listeners) listener(key);
    }
    for (const [, ask] of this.#asks) if (ask.broker === broker) ask.resolve(undefined);
  }

  /** Re-reads what a lost message may have missed: the live brokers' rows, and the emergency stop. */
  async reconcile(live: string[]): Promise<void> {
    for (const [name, table] of this.#tables) {
      const before = new Set([...table.remote.values()].flatMap((rows) => [...rows.keys()]));
      const next = new Map<string, Map<string, unknown>>();
      for (const broker of live) {
        const rows = await this.#cmd.hgetall(K.table(name, broker));
        const parsed = new Map<string, unknown>();
        for (const [key, text] of Object.entries(rows)) {
          try {
            parsed.set(key, JSON.parse(text));
          } catch {
            // skipped: its broker rewrites it on its next change
          }
        }
        if (parsed.size > 0) next.set(broker, parsed);
      }
      const changed = new Set([...before, ...[...next.values()].flatMap((rows) => [...rows.keys()])]);
      const same = JSON.stringify([...table.remote].map(([b, r]) => [b, [...r]])) === JSON.stringify([...next].map(([b, r]) => [b, [...r]]));
      table.remote = next;
      if (!same) for (const key of changed) for (const listener of table.listeners) listener(key);
    }
    // This broker's own rows, written again: Redis may have lost them (an outage, a restart).
    for (const [name, table] of this.#tables) {
      if (table.own.size > 0) await this.#cmd.hset(K.table(name, this.#brokerId), ...[...table.own].flatMap(([k, v]) => [k, JSON.stringify(v)]));
    }
    // A stop or resume whose message was lost (an outage) is healed here.
    this.#applyStop(stoppedAt(await this.#cmd.get(K.stopped)));
  }

  /** This broker leaves: its rows are deleted (the caller says goodbye after). */
  async leave(): Promise<void> {
    for (const name of this.#tables.keys()) await this.#cmd.del(K.table(name, this.#brokerId));
  }

  /** The connection is closing: questions still waiting are answered with nothing. */
  close(): void {
    for (const [, ask] of this.#asks) ask.resolve(undefined);
  }

  #applyStop(at: number | undefined): void {
    if (at === this.#stoppedAt) return;
    this.#stoppedAt = at;
    for (const listener of this.#stopListeners) listener(at);
  }

  async #reply(id: string, from: string, topic: string, body: unknown): Promise<void> {
    const handler = this.#answers.get(topic);
    let value: unknown;
    try {
      value = handler ? await handler(body) : undefined;
    } catch (error) {
      this.#log.warn(`cluster: answering ${topic} for ${from}: ${error instanceof Error ? error.message : String(error)}`);
    }
    await this.#publish(K.to(from), { kind: "reply", id, ...(value === undefined ? {} : { value }) }).catch(() => undefined);
  }
}

function stoppedAt(value: string | null): number | undefined {
  const at = value === null ? Number.NaN : Number(value);
  return Number.isFinite(at) ? at : undefined;
}

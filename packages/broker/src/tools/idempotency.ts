// Writes at most once (issue 16 §4). A write tool (and browser_run) called with an `idempotency_key` claims the key
// in the store before it runs; a retry with the same key and the same arguments gets the first call's outcome back
// without touching the browser, on whichever broker it lands (the store is shared). The same key with other
// arguments is idempotency_conflict. A retry arriving while the first call still runs waits for its outcome.
// An outcome that is unknown (the action was sent and the answer lost) is stored as such and never re-run; so is a
// first call whose broker stopped mid-way (its pending record stops being renewed and expires).
// A call that never reached the browser (refused, no browser, bad arguments) releases its key: its retry runs.
// A key belongs to the MCP session that made it (issue 24 §7): another session, even the same user's, gets neither
// its outcome nor a run, but idempotency_conflict naming the client that holds it. A retry is its own session's.
import type { IdempotencyRecord, Store } from "../store/store.js";
import type { RenderedResult } from "./response.js";

export const IDEMPOTENCY_FIELD = "idempotency_key";
/** A key: printable ASCII without spaces, so that it reads back the same from any client and log. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,200}$/;

/** How long a pending record lives without renewal, and how often the broker running its call renews it. */
const LEASE_MS = 15_000;
const RENEW_MS = 5_000;
/** How long a key is remembered: a retry a day later is a new call. */
export const IDEMPOTENCY_RETAIN_MS = 24 * 60 * 60_000;
/** How often old records are forgotten (by each broker, on its next keyed call). */
const FORGET_EVERY_MS = 10 * 60_000;
/** A stored outcome bigger than this keeps its text and drops its images (a screenshot a write returned). */
const MAX_STORED_CHARS = 1_000_000;

/** What the wrapped call reports: its result, whether its action reached the browser, and whether the outcome is lost. */
export interface CallOutcome {
  result: RenderedResult;
  dispatched: boolean;
  unknown: boolean;
}

export type KeyedAnswer =
  /** This call held the key and ran. */
  | { kind: "ran"; outcome: CallOutcome }
  /** An earlier call with this key had this outcome; nothing ran now. */
  | { kind: "replayed"; result: RenderedResult; firstAt: number; unknown: boolean }
  /** The key was used for another tool or other arguments. */
  | { kind: "conflict"; firstTool: string; firstAt: number }
  /** The key is another session's: its outcome is that session's; nothing ran now. */
  | { kind: "foreign"; client: string; firstAt: number }
  /** The first call's broker stopped while it ran: whether it happened is unknown; nothing ran now. */
  | { kind: "lost"; firstAt: number }
  /** The caller gave up waiting for the first call to end. */
  | { kind: "cancelled" };

export interface IdempotencyOptions {
  now?: () => number;
  leaseMs?: number;
  renewMs?: number;
}

export class Idempotency {
  readonly #store: () => Promise<Store>;
  readonly #now: () => number;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  #forgotAt = 0;

  constructor(store: () => Promise<Store>, options: IdempotencyOptions = {}) {
    this.#store = store;
    this.#now = options.now ?? Date.now;
    this.#leaseMs = options.leaseMs ?? LEASE_MS;
    this.#renewMs = options.renewMs ?? RENEW_MS;
  }

  /** Runs `call` at most once per (user, key), for the session `owner` only: see the module comment. */
  async once(
    user: string,
    owner: { session: string; client: string },
    key: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    call: () => Promise<CallOutcome>,
  ): Promise<KeyedAnswer> {
    const store = await this.#store();
    await this.#forgetOld(store);
    const argsHash = await hashArgs(args);
    for (let wait = 20; ; wait = Math.min(wait * 2, 250)) {
      const now = this.#now();
      const existing = await store.claimIdempotency({
        userId: user,
        key,
        tool,
        argsHash,
        session: owner.session,
        client: owner.client,
        createdAt: now,
        expiresAt: now + this.#leaseMs,
      });
      if (!existing) return { kind: "ran", outcome: await this.#run(store, user, key, call) };
      // A key made before keys had owners ("") answers any session of its user, as it did then.
      if (existing.session !== "" && existing.session !== owner.session) return { kind: "foreign", client: existing.client, firstAt: existing.createdAt };
      if (existing.tool !== tool || existing.argsHash !== argsHash) return { kind: "conflict", firstTool: existing.tool, firstAt: existing.createdAt };
      const ended = await this.#ended(store, existing);
      if (ended) return ended;
      // Still running (here or on another broker): wait for its outcome, polling the shared store.
      if (signal.aborted) return { kind: "cancelled" };
      await sleep(wait, signal);
    }
  }

  async #run(store: Store, user: string, key: string, call: () => Promise<CallOutcome>): Promise<CallOutcome> {
    // Cleared whatever the call does: it never outlives it.
    const renew = setInterval(() => void store.extendIdempotency(user, key, this.#now() + this.#leaseMs).catch(() => undefined), this.#renewMs);
    let outcome: CallOutcome;
    try {
      outcome = await call();
    } catch (error) {
      // runTool never throws; should a bug make it, the key is not left pending for a minute.
      clearInterval(renew);
      await store.releaseIdempotency(user, key).catch(() => undefined);
      throw error;
    }
    clearInterval(renew);
    if (!outcome.dispatched) await store.releaseIdempotency(user, key);
    else await store.settleIdempotency(user, key, outcome.unknown ? "unknown" : "done", serialize(outcome.result));
    return outcome;
  }

  /** The answer a record gives a retry, or undefined while its call still runs. */
  async #ended(store: Store, record: IdempotencyRecord): Promise<KeyedAnswer | undefined> {
    if (record.state !== "pending") {
      return { kind: "replayed", result: deserialize(record.result), firstAt: record.createdAt, unknown: record.state === "unknown" };
    }
    const now = this.#now();
    if (record.expiresAt >= now) return undefined;
    // Its broker stopped renewing it: declare it lost, unless its broker settled it just now (then replay that).
    const lost = { text: "the first call's broker stopped before it answered", isError: true };
    if (await store.settleIdempotency(record.userId, record.key, "unknown", JSON.stringify({ lost: true, ...lost }), now))
      return { kind: "lost", firstAt: record.createdAt };
    const again = await store.idempotency(record.userId, record.key);
    if (!again) return undefined;
    if (again.state === "pending") return undefined;
    return this.#ended(store, again);
  }

  async #forgetOld(store: Store): Promise<void> {
    const now = this.#now();
    if (now - this.#forgotAt < FORGET_EVERY_MS) return;
    this.#forgotAt = now;
    await store.forgetIdempotency(now - IDEMPOTENCY_RETAIN_MS).catch(() => undefined);
  }
}

/** The key a call carries; undefined when absent or malformed (then the tool's strict arguments refuse it). */
export function keyOf(args: unknown): string | undefined {
  const key = args && typeof args === "object" ? Reflect.get(args, IDEMPOTENCY_FIELD) : undefined;
  return typeof key === "string" && IDEMPOTENCY_KEY_PATTERN.test(key) ? key : undefined;
}

/** SHA-256 (hex) of the arguments as canonical JSON (keys sorted), the key itself left out. Web Crypto: the core runs on Workers too. */
export async function hashArgs(args: unknown): Promise<string> {
  const rest =
    args && typeof args === "object" && !Array.isArray(args) ? Object.fromEntries(Object.entries(args).filter(([name]) => name !== IDEMPOTENCY_FIELD)) : args;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical(rest ?? null)));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function serialize(result: RenderedResult): string {
  // `value` is what a program gets back from a command: not stored (a keyed call comes from MCP, not a program).
  const { value: _value, ...stored } = result;
  const json = JSON.stringify(stored);
  if (json.length <= MAX_STORED_CHARS) return json;
  const { images: _images, ...small } = stored;
  return JSON.stringify({ ...small, text: `${small.text}\n(The first call's images are not kept for a retry.)` });
}

function deserialize(json: string | undefined): RenderedResult {
  try {
    const parsed: unknown = JSON.parse(json ?? "null");
    if (parsed && typeof parsed === "object" && typeof Reflect.get(parsed, "text") === "string") return parsed as RenderedResult;
  } catch {
    // reported below
  }
  return { text: "the first call's outcome could not be read back from the store", isError: true };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

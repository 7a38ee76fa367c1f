// How many wrong tokens the dashboard's login takes, and from whom. A guess counts against every bucket it
// falls in, and is refused unchecked while any of them is full:
// - its source: one bucket per address (per /64 for IPv6: one client may hold all of it), except that every
//   loopback address (127.0.0.0/8, ::1) is one source, this machine, since any local process can send from any of them;
// - the user it tries to log in as: the dashboard has one user today (one token), so this bucket is one
//   cap on every guess from everywhere, and spreading guesses over many addresses does not help.
// Named users, when they come, pass their name as `user`; a wrong name then still counts against its source.
import { isIP } from "node:net";
import { addressBlock } from "../util/addresses.js";

export interface LoginLimits {
  /** The window in which failures count. */
  windowMs: number;
  /** Wrong tokens per window from one source (one address, or this machine for loopback). */
  perSource: number;
  /** Wrong tokens per window against one user, from all sources together. */
  perUser: number;
  /** Sources remembered at most (the oldest are forgotten first); users are few. */
  maxSources: number;
}

export const LOGIN_LIMITS: LoginLimits = { windowMs: 60_000, perSource: 5, perUser: 20, maxSources: 10_000 };

/** The only user until the dashboard has named ones. */
export const DASHBOARD_USER = "dashboard";

export interface LoginAttempt {
  /** The socket's remote address (IPv4-mapped IPv6 is read as IPv4). */
  address: string;
  user?: string;
}

/** What filled the bucket that refuses: words for the person who is made to wait. */
export type LoginScope = "this machine" | "this address" | "this dashboard";

export type LoginVerdict = { ok: true } | { ok: false; waitMs: number; scope: LoginScope };

interface Bucket {
  key: string;
  max: number;
  scope: LoginScope;
}

export class LoginThrottle {
  readonly #limits: LoginLimits;
  /** Failure times per bucket key, oldest first; the map is in order of the last failure. */
  readonly #failures = new Map<string, number[]>();

  constructor(limits: LoginLimits = LOGIN_LIMITS) {
    this.#limits = limits;
  }

  /** Whether a login may be checked now; if not, how long until the fullest bucket it falls in has room. */
  check(attempt: LoginAttempt, now: number): LoginVerdict {
    let refused: { waitMs: number; scope: LoginScope } | undefined;
    for (const bucket of this.#buckets(attempt)) {
      const recent = this.#recent(bucket.key, now);
      const oldest = recent[recent.length - bucket.max];
      if (recent.length < bucket.max || oldest === undefined) continue;
      const waitMs = this.#limits.windowMs - (now - oldest);
      if (!refused || waitMs > refused.waitMs) refused = { waitMs, scope: bucket.scope };
    }
    return refused ? { ok: false, ...refused } : { ok: true };
  }

  /** Counts a wrong token against each bucket the attempt falls in. */
  failed(attempt: LoginAttempt, now: number): void {
    for (const bucket of this.#buckets(attempt)) {
      const list = this.#recent(bucket.key, now);
      list.push(now);
      this.#failures.delete(bucket.key);
      this.#failures.set(bucket.key, list);
    }
    let sources = [...this.#failures.keys()].filter((key) => key.startsWith("source:")).length;
    for (const key of this.#failures.keys()) {
      if (sources <= this.#limits.maxSources) break;
      if (!key.startsWith("source:")) continue;
      this.#failures.delete(key);
      sources--;
    }
  }

  #buckets(attempt: LoginAttempt): Bucket[] {
    const local = isLoopbackAddress(attempt.address);
    return [
      {
        key: local ? "source:loopback" : `source:${addressBlock(attempt.address) ?? attempt.address.toLowerCase()}`,
        max: this.#limits.perSource,
        scope: local ? "this machine" : "this address",
      },
      { key: `user:${attempt.user ?? DASHBOARD_USER}`, max: this.#limits.perUser, scope: "this dashboard" },
    ];
  }

  #recent(key: string, now: number): number[] {
    const recent = (this.#failures.get(key) ?? []).filter((t) => now - t < this.#limits.windowMs);
    if (recent.length === 0) this.#failures.delete(key);
    else this.#failures.set(key, recent);
    return recent;
  }
}

/** 127.0.0.0/8 and ::1 (also as IPv4-mapped or in full): every address a local process can send from. */
export function isLoopbackAddress(address: string): boolean {
  const plain = address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  if (isIP(plain) === 4) return plain.startsWith("127.");
  if (isIP(plain) !== 6) return false;
  return /^(0{0,4}:){1,7}0{0,3}1$|^::1$/.test(plain);
}

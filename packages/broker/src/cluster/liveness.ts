// When a broker of the cluster is taken for dead by another: its beat (a key that expires 1.5 s after each write, written
// every 500 ms) missing at one look and still missing at a look at least a heartbeat later. One look that finds it
// missing (a beat late in flight on a starved machine, a key expired a moment early) fails no call; a broker that is
// gone is gone at the next look too.

/** Brokers whose beat was missing at a look, and since when. */
export class MissingBeats {
  readonly #since = new Map<string, number>();
  readonly #confirmAfterMs: number;

  constructor(confirmAfterMs: number) {
    this.#confirmAfterMs = confirmAfterMs;
  }

  /** Of the brokers looked at now (`beating` by broker), the ones taken for dead. */
  look(beating: ReadonlyMap<string, boolean>, now: number): Set<string> {
    const dead = new Set<string>();
    for (const [broker, beats] of beating) {
      if (beats) {
        this.#since.delete(broker);
        continue;
      }
      const since = this.#since.get(broker);
      if (since === undefined) this.#since.set(broker, now);
      else if (now - since >= this.#confirmAfterMs) dead.add(broker);
    }
    return dead;
  }
}

// A copy of this broker's audit log in the shared store (issue 16 §2), for a team on PostgreSQL: each broker keeps
// writing its own log first (the record a write waits for, on local disk), and this copies what it wrote, in order,
// every SHIP_MS, so that `tabrelay audit --shared` reads the records of every broker as one log. A write still in
// flight is copied once it completed (the local log's tail holds it back, as for a reader); a store that cannot be
// reached is retried, and the copy catches up from where the store says it stopped (its highest id of ours).
import type { AuditLog } from "./auditLog.js";
import type { Store } from "../store/store.js";
import type { Logger } from "../util/log.js";

const SHIP_MS = 500;
const BATCH = 500;

export class AuditShipper {
  readonly #log: AuditLog;
  readonly #store: Store;
  readonly #broker: string;
  readonly #logger: Logger;
  #cursor: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #failing = false;

  constructor(log: AuditLog, store: Store, broker: string, logger: Logger) {
    this.#log = log;
    this.#store = store;
    this.#broker = broker;
    this.#logger = logger;
  }

  start(): void {
    this.#timer = setInterval(() => void this.ship(), SHIP_MS);
    this.#timer.unref();
  }

  /** Copies what is new; one pass at a time. Resolves when the pass ends (failures are logged once, then retried). */
  ship(): Promise<void> {
    this.#running ??= this.#pass().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** Stops, after a last pass. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.ship();
  }

  async #pass(): Promise<void> {
    try {
      this.#cursor ??= await this.#store.auditCursor(this.#broker);
      for (;;) {
        const records = this.#log.list({ afterId: this.#cursor, limit: BATCH });
        if (records.length === 0) break;
        await this.#store.putAudit(
          this.#broker,
          records.map(({ id, ...rest }) => ({ localId: id, ...rest })),
        );
        this.#cursor = records[records.length - 1]!.id;
        if (records.length < BATCH) break;
      }
      if (this.#failing) this.#logger.info("audit: the shared store takes this broker's records again");
      this.#failing = false;
    } catch (error) {
      if (!this.#failing)
        this.#logger.warn(
          `audit: cannot copy records to the shared store (${error instanceof Error ? error.message : String(error)}); the local log has them, and they are copied once it is back`,
        );
      this.#failing = true;
    }
  }
}

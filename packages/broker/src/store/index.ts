// Opens the broker's store: PostgreSQL when the config names one (`store.postgres_url`), else SQLite in the data dir.
import { PostgresStore } from "./postgres.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./store.js";

export { StoreConflict, STORE_SCHEMA_VERSION, type NewUser, type Pairing, type Role, type Store, type TokenInfo, type User } from "./store.js";
export { PostgresStore } from "./postgres.js";
export { SqliteStore, STORE_DB_FILE } from "./sqlite.js";

export async function openStore(options: { dataDir: string; postgresUrl?: string }): Promise<Store> {
  return options.postgresUrl ? PostgresStore.open(options.postgresUrl) : SqliteStore.open(options.dataDir);
}

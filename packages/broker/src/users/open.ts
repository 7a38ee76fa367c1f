// The users of the store config names, opened apart from a broker (the CLI's `tabrelay users`, `tabrelay audit
// --shared`) or by one. PostgreSQL's driver is loaded only when config names it.
import type { BrokerConfig, NodeBrokerConfig } from "../config/config.js";
import { SqliteStore } from "../store/sqlite.js";
import type { Store } from "../store/store.js";
import { Users } from "./users.js";

/** The users of the store config names, for the CLI (`tabrelay users`): no broker needs to run. */
export function openUsers(config: NodeBrokerConfig): Promise<Users> {
  const users = new Users({ store: openStore(config), mcpToken: config.mcpToken, dashboardToken: config.dashboardToken, pairingToken: config.pairingToken });
  return users.store().then(() => users);
}

/** The store config names: PostgreSQL (opened asynchronously, on first use), else <data-dir>/store.db. */
export async function openStore(config: BrokerConfig): Promise<Store> {
  if (config.store.postgresUrl) {
    const { PostgresStore } = await import("../store/postgres.js");
    return PostgresStore.open(config.store.postgresUrl);
  }
  return SqliteStore.open(config.dataDir);
}

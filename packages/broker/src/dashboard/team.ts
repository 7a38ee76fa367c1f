// The admin's view of the team in the dashboard (its users view): every user, their tokens (never the secrets), and
// how many browsers each has connected, here and on the cluster's other brokers.
import type { BrowserRegistry } from "../drivers/registry.js";
import { ownerOf } from "../users/principal.js";
import type { Users } from "../users/users.js";
import type { DashboardUsers } from "./api.js";

export interface TeamOptions {
  users: Users;
  registry: BrowserRegistry;
  /** A user's browsers connected to the cluster's other brokers (0 outside a cluster). */
  remoteBrowsers: (user: string) => number;
  /** Revokes a user and disconnects their browsers (Broker.revokeUser). */
  revoke: (name: string) => Promise<{ name: string }>;
}

export function dashboardTeam(options: TeamOptions): DashboardUsers {
  return {
    list: async () => {
      const store = await options.users.store();
      const [all, tokens] = await Promise.all([store.users(), store.tokens()]);
      const connected = options.registry.list();
      return {
        users: all.map((u) => ({
          id: u.id,
          name: u.name,
          role: u.role,
          createdAt: u.createdAt,
          revokedAt: u.revokedAt ?? null,
          browsers: connected.filter((b) => ownerOf(b.info) === u.id).length + options.remoteBrowsers(u.id),
          tokens: tokens
            .filter((t) => t.userId === u.id)
            .map((t) => ({ id: t.id, name: t.name, createdAt: t.createdAt, lastUsedAt: t.lastUsedAt ?? null, revokedAt: t.revokedAt ?? null })),
        })),
      };
    },
    revoke: (name) => options.revoke(name),
  };
}

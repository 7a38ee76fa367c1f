// PostgreSQL's rows as the store's records: the columns of each table, and the mapping to the types store.ts names.
import type { IdempotencyRecord, LeaseRecord, Pairing, TokenInfo, User } from "./store.js";

// BIGINT (int8) arrives as a string: pg does not guess whether it fits a number. Epoch ms always do.
export type Ms = string;
export type UserRow = { id: string; name: string; role: string; subject: string | null; created_at: Ms; revoked_at: Ms | null };
export type TokenRow = { id: string; user_id: string; name: string; created_at: Ms; last_used_at: Ms | null; revoked_at: Ms | null };
export type PairingRow = { id: string; user_id: string; secret: string; created_at: Ms; revoked_at: Ms | null };
export type IdempotencyRow = {
  user_id: string;
  key: string;
  tool: string;
  args_hash: string;
  session: string;
  client: string;
  state: string;
  result: string | null;
  created_at: Ms;
  expires_at: Ms;
};
export type JoinedUser = { u_name: string; u_role: string; u_subject: string | null; u_created_at: Ms };

export function ms(value: Ms): number {
  return Number(value);
}

export function idempotencyOf(row: IdempotencyRow): IdempotencyRecord {
  return {
    userId: row.user_id,
    key: row.key,
    tool: row.tool,
    argsHash: row.args_hash,
    session: row.session,
    client: row.client,
    state: row.state as IdempotencyRecord["state"],
    ...(row.result !== null ? { result: row.result } : {}),
    createdAt: ms(row.created_at),
    expiresAt: ms(row.expires_at),
  };
}

export function userOf(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    role: row.role === "admin" ? "admin" : "member",
    ...(row.subject !== null ? { subject: row.subject } : {}),
    createdAt: ms(row.created_at),
    ...(row.revoked_at !== null ? { revokedAt: ms(row.revoked_at) } : {}),
  };
}

export function joinedUserOf(id: string, row: JoinedUser): User {
  return userOf({ id, name: row.u_name, role: row.u_role, subject: row.u_subject, created_at: row.u_created_at, revoked_at: null });
}

export function tokenOf(row: TokenRow): TokenInfo {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    createdAt: ms(row.created_at),
    ...(row.last_used_at !== null ? { lastUsedAt: ms(row.last_used_at) } : {}),
    ...(row.revoked_at !== null ? { revokedAt: ms(row.revoked_at) } : {}),
  };
}

export function pairingOf(row: PairingRow): Pairing {
  return {
    id: row.id,
    userId: row.user_id,
    secret: row.secret,
    createdAt: ms(row.created_at),
    ...(row.revoked_at !== null ? { revokedAt: ms(row.revoked_at) } : {}),
  };
}

export type LeaseRow = {
  browser_id: string;
  tab_id: string | number;
  session: string;
  client: string;
  since: string | number;
  last_used: string | number;
  opened: boolean;
  keep: boolean;
};

export function leaseOf(row: LeaseRow): LeaseRecord {
  return {
    browserId: row.browser_id,
    tabId: Number(row.tab_id),
    session: row.session,
    client: row.client,
    since: Number(row.since),
    lastUsed: Number(row.last_used),
    opened: row.opened,
    keep: row.keep,
  };
}

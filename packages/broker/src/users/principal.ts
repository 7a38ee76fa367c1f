// Who a call is for. Identity travels in the call context (DESIGN.md): the MCP session's principal is the user its
// bearer token (or OAuth access token) belongs to, and a user reaches only the browsers paired or attached as theirs.
// The embedded single-user broker has one implicit user, `default`, an admin: every browser and call is its own.
import type { Role } from "../store/store.js";

export interface Principal {
  /** The user's id (`default` for the implicit user). */
  user: string;
  /** The user's unique name, as audit records and the dashboard show it. */
  name: string;
  role: Role;
}

export const DEFAULT_USER_ID = "default";

/** The implicit user: whoever holds the broker's own token files (mcp-token, dashboard-token) and pairing code (pairing-token). */
export const DEFAULT_PRINCIPAL: Principal = Object.freeze({ user: DEFAULT_USER_ID, name: "default", role: "admin" });

/** The user a browser belongs to: the one whose pairing code it used, or who attached it. */
export function ownerOf(info: { owner?: string }): string {
  return info.owner ?? DEFAULT_USER_ID;
}

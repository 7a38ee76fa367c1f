// Page tokens: what a page presents on /page (as the WebSocket subprotocol bearer.<token>). Minted per origin,
// short-lived and signed, so an app's own backend can ask the broker for one (POST /page-tokens, with the MCP
// bearer) and hand it to its page for one connection. A token names the user whose bearer minted it: the page's
// tools are offered to that user's agents alone (a token naming none is the implicit user's, as the CLI mints). The key is derived from the MCP token: tokens survive a
// broker restart (a page reconnecting with its token comes back) and all die when the MCP token is replaced.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { DEFAULT_USER_ID } from "../users/principal.js";

export const PAGE_TOKEN_DEFAULT_TTL_S = 600;
export const PAGE_TOKEN_MAX_TTL_S = 24 * 3600;

export type PageTokenCheck = { ok: true; origin: string; owner: string; expiresAt: number } | { ok: false; reason: string };

export function pageTokenKey(mcpToken: string): Buffer {
  return createHmac("sha256", mcpToken).update("tabrelay page-token key v1").digest();
}

/** `<payload>.<signature>`, both base64url: characters a WebSocket subprotocol may hold. */
export function mintPageToken(
  key: Buffer,
  origin: string,
  ttlSeconds = PAGE_TOKEN_DEFAULT_TTL_S,
  now = Date.now(),
  owner = DEFAULT_USER_ID,
): { token: string; expiresAt: number } {
  const expiresAt = Math.floor(now / 1000) + Math.max(1, Math.min(PAGE_TOKEN_MAX_TTL_S, Math.floor(ttlSeconds)));
  const claims = { v: 1, o: origin, e: expiresAt, n: randomBytes(9).toString("base64url"), ...(owner !== DEFAULT_USER_ID ? { u: owner } : {}) };
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return { token: `${payload}.${sign(key, payload)}`, expiresAt: expiresAt * 1000 };
}

export function verifyPageToken(key: Buffer, token: string, now = Date.now()): PageTokenCheck {
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) return { ok: false, reason: "not a tabrelay page token" };
  const expected = Buffer.from(sign(key, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { ok: false, reason: "its signature does not check out (minted by another broker, or before the MCP token changed)" };
  let claims: { v?: unknown; o?: unknown; e?: unknown; u?: unknown };
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as typeof claims;
  } catch {
    return { ok: false, reason: "not a tabrelay page token" };
  }
  if (claims.v !== 1 || typeof claims.o !== "string" || typeof claims.e !== "number" || (claims.u !== undefined && typeof claims.u !== "string"))
    return { ok: false, reason: "not a tabrelay page token" };
  if (claims.e * 1000 <= now)
    return { ok: false, reason: `it expired at ${new Date(claims.e * 1000).toISOString()}; mint a fresh one per connection (POST /page-tokens)` };
  return { ok: true, origin: claims.o, owner: claims.u ?? DEFAULT_USER_ID, expiresAt: claims.e * 1000 };
}

function sign(key: Buffer, payload: string): string {
  return createHmac("sha256", key).update(payload).digest("base64url");
}

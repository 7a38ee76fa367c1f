// Two doors, two kinds of token (users/users.ts): an MCP token (`trt_`, the broker's mcp-token) opens /mcp and is what
// an agent holds; a dashboard token (`trd_`, the broker's dashboard-token) opens the dashboard, where the person answers
// for the agent. Each door is asked with the other's tokens, on a real SQLite store in a temporary data dir.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite.js";
import { DEFAULT_PRINCIPAL } from "../../src/users/principal.js";
import { DASHBOARD_TOKEN_PREFIX, isDashboardToken, TOKEN_PREFIX, tokenHash, Users } from "../../src/users/users.js";
import { SecretRegistry } from "../../src/util/secrets.js";

const MCP_TOKEN = "unit-mcp-token-0123456789abcdef";
const DASHBOARD_TOKEN = "unit-dashboard-token-0123456789abcdef";
const PAIRING_TOKEN = "unit-pairing-token-0123456789abcdef";

let dir: string;
let store: SqliteStore;
let secrets: SecretRegistry;
let users: Users;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tabrelay-users-"));
  store = SqliteStore.open(dir);
  secrets = new SecretRegistry();
  users = new Users({ store, mcpToken: MCP_TOKEN, dashboardToken: DASHBOARD_TOKEN, pairingToken: PAIRING_TOKEN, secrets });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the MCP door (Users.authenticate)", () => {
  it("takes the broker's MCP token and a user's trt_ token", async () => {
    const { user, token } = await users.add("alice");
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(await users.authenticate(MCP_TOKEN)).toEqual(DEFAULT_PRINCIPAL);
    expect(await users.authenticate(token)).toMatchObject({ user: user.id, name: "alice" });
  });

  it("refuses the broker's dashboard token and a user's trd_ dashboard token", async () => {
    const { dashboardToken } = await users.add("alice");
    expect(dashboardToken.startsWith(DASHBOARD_TOKEN_PREFIX)).toBe(true);
    expect(await users.authenticate(DASHBOARD_TOKEN)).toBeUndefined();
    expect(await users.authenticate(dashboardToken)).toBeUndefined();
  });

  it("refuses a dashboard token's secret dressed as an MCP token (trd_ swapped for trt_): the prefix is part of the hash", async () => {
    const { dashboardToken } = await users.add("alice");
    expect(await users.authenticate(`${TOKEN_PREFIX}${dashboardToken.slice(DASHBOARD_TOKEN_PREFIX.length)}`)).toBeUndefined();
  });
});

describe("the dashboard's door (Users.authenticateDashboard)", () => {
  it("takes the broker's dashboard token and a user's trd_ token", async () => {
    const { user, dashboardToken } = await users.add("alice");
    expect(await users.authenticateDashboard(DASHBOARD_TOKEN)).toEqual(DEFAULT_PRINCIPAL);
    expect(await users.authenticateDashboard(dashboardToken)).toMatchObject({ user: user.id, name: "alice" });
  });

  it("refuses the broker's MCP token and a user's trt_ MCP token, which agents hold", async () => {
    const { token } = await users.add("alice");
    const another = await users.issueToken("alice", "laptop claude");
    expect(await users.authenticateDashboard(MCP_TOKEN)).toBeUndefined();
    expect(await users.authenticateDashboard(token)).toBeUndefined();
    expect(await users.authenticateDashboard(another.token)).toBeUndefined();
    expect(await users.authenticateDashboard(`${DASHBOARD_TOKEN_PREFIX}${token.slice(TOKEN_PREFIX.length)}`)).toBeUndefined();
  });

  it("refuses a stored MCP token's hash even under a trd_ token (a kind is checked by its id too)", async () => {
    const { user } = await users.add("alice");
    // A row as no code of tabrelay writes it: a trd_ secret stored under an MCP token's id.
    const planted = `${DASHBOARD_TOKEN_PREFIX}planted-0123456789abcdefghij`;
    await store.addToken({ id: "t_planted000000000", userId: user.id, name: "planted", hash: tokenHash(planted), createdAt: 1 });
    expect(await users.authenticateDashboard(planted)).toBeUndefined();
  });

  it("takes no token at all when the broker has no dashboard token of its own (empty is none)", async () => {
    const bare = new Users({ store, mcpToken: MCP_TOKEN, dashboardToken: "", pairingToken: PAIRING_TOKEN });
    expect(await bare.authenticateDashboard("")).toBeUndefined();
    expect(await bare.authenticateDashboard(MCP_TOKEN)).toBeUndefined();
  });

  it("a new dashboard token replaces the user's old one, and a revoked user's stops at once", async () => {
    const { dashboardToken: first } = await users.add("alice");
    const renewed = await users.issueDashboardToken("alice");
    expect(renewed.replaced).toBe(1);
    expect(renewed.info.id).toMatch(/^d_[a-z0-9]{16}$/);
    expect(await users.authenticateDashboard(first)).toBeUndefined();
    expect(await users.authenticateDashboard(renewed.token)).toMatchObject({ name: "alice" });
    // The MCP tokens are the agents': a new dashboard token leaves them alone.
    const tokens = await store.tokens();
    expect(tokens.filter((t) => !isDashboardToken(t) && t.revokedAt === undefined)).toHaveLength(1);
    await users.revoke("alice");
    expect(await users.authenticateDashboard(renewed.token)).toBeUndefined();
  });

  it("registers a user's dashboard token as a secret once it is used: every exit redacts it", async () => {
    const { dashboardToken } = await users.add("alice");
    expect(secrets.redact(`token ${dashboardToken}`)).toBe(`token ${dashboardToken}`);
    await users.authenticateDashboard(dashboardToken);
    expect(secrets.redact(`token ${dashboardToken}`)).toBe("token [redacted: dashboard token]");
  });
});

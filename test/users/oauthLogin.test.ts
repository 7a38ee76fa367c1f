// OAuth resource-server mode end to end: a real OpenID provider (oidc-provider) issues access tokens over HTTP (the
// authorization code flow with PKCE), a broker with `auth.oauth` takes them as the user with their subject, and the MCP
// SDK's own client calls tools with them. Each user has a browser (the stub extension, paired with their own code).
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { allowYaml, call, closedPort, connectClient, MCP_TOKEN, startBroker, type TestBroker } from "../harness.js";
import { StubExtension } from "../stubExtension.js";
import { signingKey, startIdp, userToken, type Idp } from "../idp.js";

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};

interface Refused {
  status: number;
  challenge: string | null;
  body: string;
}

describe("OAuth: access tokens from the configured issuer act as the user with their subject", () => {
  let idp: Idp;
  let otherIdp: Idp;
  let broker: TestBroker;
  let resource: string;
  let metadataUrl: string;
  let aliceStatic: string;
  let aliceDashboard: string;
  let aliceToken: string;
  const stubs: StubExtension[] = [];
  const clients: Client[] = [];

  /** An initialize POST to /mcp as a client sends it, with this bearer token or none. */
  async function initialize(token?: string): Promise<Refused> {
    const res = await fetch(`${broker.url}/mcp`, {
      method: "POST",
      headers: {
        ...(token !== undefined ? { Authorization: `Bearer ${token}` } : {}),
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(INITIALIZE),
    });
    return { status: res.status, challenge: res.headers.get("www-authenticate"), body: await res.text() };
  }

  /** A refusal never quotes the token, nor its signature alone. */
  function expectNoToken(refused: Refused, token: string): void {
    const signature = token.split(".")[2] ?? token;
    expect(`${refused.body} ${refused.challenge ?? ""}`).not.toContain(signature);
  }

  async function client(token: string): Promise<Client> {
    const c = await connectClient(broker.url, token);
    clients.push(c);
    return c;
  }

  beforeAll(async () => {
    [idp, otherIdp] = await Promise.all([signingKey("k1").then((k) => startIdp([k])), signingKey("k2").then((k) => startIdp([k]))]);
    const port = await closedPort();
    resource = `http://127.0.0.1:${port}/mcp`;
    metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
    broker = await startBroker({ port, yaml: allowYaml(`auth:\n  oauth:\n    issuer: "${idp.issuer}"\n    resource: "${resource}"\n    scopes: [browse]\n`) });
    for (const name of ["alice", "bob", "carol"]) {
      const added = await broker.broker.users.add(name, { subject: name });
      if (name === "alice") [aliceStatic, aliceDashboard] = [added.token, added.dashboardToken];
      if (name === "carol") continue;
      const stub = new StubExtension({ port: broker.port, browserId: `${name}-browser-0001`, token: added.pairingCode, label: `${name} stub` });
      stubs.push(stub);
      await stub.welcomed;
    }
    aliceToken = await userToken(idp, "alice", "browse", { resource });
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    for (const stub of stubs) stub.ws.close();
    await broker?.close();
    await Promise.allSettled([idp?.close(), otherIdp?.close()]);
  });

  it("points an unauthenticated client at its metadata, which names the resource and the issuer", async () => {
    const res = await fetch(`${broker.url}/mcp`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadataUrl}", scope="browse"`);
    await res.body?.cancel();
    // What the MCP SDK's client reads from the challenge, and the document it then fetches.
    expect(extractWWWAuthenticateParams(res).resourceMetadataUrl?.href).toBe(metadataUrl);
    const document = await (await fetch(metadataUrl)).json();
    expect(document).toEqual({
      resource,
      authorization_servers: [idp.issuer],
      bearer_methods_supported: ["header"],
      scopes_supported: ["browse"],
      resource_name: "tabrelay",
    });
    expect(await discoverOAuthProtectedResourceMetadata(resource)).toMatchObject({ resource, authorization_servers: [idp.issuer] });
    expect(await (await fetch(`${broker.url}/.well-known/oauth-protected-resource`)).json()).toEqual(document);
    // Public, but still behind the Host check (DNS rebinding).
    const rebound = await broker.broker.app.request("/.well-known/oauth-protected-resource/mcp", { headers: { Host: "evil.example:80" } });
    expect(rebound.status).toBe(403);
  });

  it("lets alice's agent use her token: it sees only her browser, and bob's browser id is unknown_browser", async () => {
    expect(decodeJwt(aliceToken)).toMatchObject({ iss: idp.issuer, aud: resource, sub: "alice" });
    const alice = await client(aliceToken);
    const listed = await call(alice, "list_browsers");
    expect(listed.text).toContain("alice stub");
    expect(listed.text).not.toContain("bob stub");
    expect(listed.text).not.toContain("bob-browser-0001");
    const theirs = await call(alice, "list_tabs", { browser: "bob-browser-0001" });
    expect(theirs.isError).toBe(true);
    expect(theirs.text).toMatch(/^unknown_browser/);
    expect(broker.broker.audit.list({ user: "alice" }).some((r) => r.tool === "list_browsers")).toBe(true);
  });

  it("keeps the static tokens working beside OAuth: a user's own and the broker's", async () => {
    expect((await call(await client(aliceStatic), "list_browsers")).text).toContain("alice stub");
    expect((await call(await client(MCP_TOKEN), "list_browsers")).text).toContain("No browser is connected");
  });

  it("refuses no token, an expired one, another audience's, another issuer's and a made-up one with 401 invalid_token", async () => {
    const none = await initialize();
    expect(none).toMatchObject({ status: 401, challenge: `Bearer resource_metadata="${metadataUrl}", scope="browse"` });
    expect(none.body).toContain(idp.issuer);

    const expired = await userToken(idp, "alice", "browse", { resource, client: "short-lived" });
    const exp = decodeJwt(expired).exp ?? 0;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, exp * 1000 - Date.now() + 50)));
    const cases: Array<[token: string, description: string]> = [
      [expired, "token has expired"],
      [await userToken(idp, "alice", "browse", { resource: "https://other.example.com/mcp" }), "token audience is not this resource"],
      [await userToken(otherIdp, "alice", "browse", { resource }), "token is not from this resource's authorization server"],
      ["trt_not-a-real-token-not-a-real-token", "token is not a JWT access token"],
    ];
    for (const [token, description] of cases) {
      const refused = await initialize(token);
      expect(refused.status).toBe(401);
      expect(refused.challenge).toBe(`Bearer resource_metadata="${metadataUrl}", scope="browse", error="invalid_token", error_description="${description}"`);
      expect(refused.body).toMatch(/^invalid_token: /);
      expectNoToken(refused, token);
    }
    // The SDK's client gives up on the 401 too (it has no auth provider to get another token with).
    await expect(connectClient(broker.url, expired)).rejects.toThrow(/invalid_token: token has expired/);
  });

  it("refuses a token without the required scope with 403 insufficient_scope", async () => {
    const token = await userToken(idp, "alice", "admin", { resource });
    const refused = await initialize(token);
    expect(refused.status).toBe(403);
    expect(refused.challenge).toBe(
      `Bearer resource_metadata="${metadataUrl}", scope="browse", error="insufficient_scope", error_description="token lacks scope browse"`,
    );
    expectNoToken(refused, token);
  });

  it("refuses a valid token whose subject is no user with 403 naming the command that adds one", async () => {
    const token = await userToken(idp, "mallory", "browse", { resource });
    const refused = await initialize(token);
    expect(refused.status).toBe(403);
    // Signing in again would not help: no challenge, a step for an admin instead.
    expect(refused.challenge).toBeNull();
    expect(refused.body).toContain('tabrelay users add NAME --subject "mallory"');
    expectNoToken(refused, token);
  });

  it("refuses a revoked user's token at the next request, an open session included", async () => {
    const token = await userToken(idp, "carol", "browse", { resource });
    const carol = await client(token);
    expect((await call(carol, "list_browsers")).isError).toBe(false);
    await broker.broker.users.revoke("carol");
    const refused = await initialize(token);
    expect(refused.status).toBe(403);
    expect(refused.challenge).toBeNull();
    expect(refused.body).toContain("was revoked");
    await expect(call(carol, "list_browsers")).rejects.toThrow(/was revoked/);
  });

  it("signs the dashboard in with the user's own dashboard token, never with an access token (an agent holds those)", async () => {
    const login = async (token: string) => {
      const form = await fetch(`${broker.url}/login`);
      const cookie = (form.headers.getSetCookie().find((c) => c.startsWith("tabrelay_login_")) ?? "").split(";")[0] ?? "";
      const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
      const res = await fetch(`${broker.url}/login`, {
        method: "POST",
        redirect: "manual",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: broker.url, Cookie: cookie },
        body: new URLSearchParams({ csrf, token }).toString(),
      });
      await res.body?.cancel();
      return res.status;
    };
    // Alice's access token works at /mcp (above) but the dashboard will answer for her: it is refused there.
    expect(await login(aliceToken)).toBe(401);
    expect(await login(await userToken(idp, "mallory", "browse", { resource }))).toBe(401);
    expect(await login(aliceDashboard)).toBe(303);
  });
});

describe("OAuth off (no auth.oauth): an access token is just a wrong token", () => {
  it("refuses a valid JWT from a real issuer for a user with that subject, and serves no metadata", async () => {
    const idp = await startIdp([await signingKey("k1")]);
    const plain = await startBroker();
    try {
      await plain.broker.users.add("alice", { subject: "alice" });
      const token = await userToken(idp, "alice", "browse", { resource: `${plain.url}/mcp` });
      const res = await fetch(`${plain.url}/mcp`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body: JSON.stringify(INITIALIZE),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="tabrelay"');
      expect(await res.text()).toContain("missing or wrong bearer token");
      expect((await fetch(`${plain.url}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
      const owner = await connectClient(plain.url, MCP_TOKEN);
      expect((await call(owner, "list_browsers")).isError).toBe(false);
      await owner.close();
    } finally {
      await plain.close();
      await idp.close();
    }
  });
});

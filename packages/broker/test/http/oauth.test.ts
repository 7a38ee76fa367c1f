// The broker's OAuth resource server against a real OpenID provider (oidc-provider) on 127.0.0.1: tokens are obtained
// over HTTP from its authorization and token endpoints, never built by hand, except the forgeries an attacker would make.
import { createPublicKey } from "node:crypto";
import { base64url, decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import type { JWK } from "oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OAuthResource, type OAuthResult } from "../../src/auth/oauth.js";
import { clientToken, listen, RESOURCE, signingKey, startIdp, stop, userToken, type Idp } from "../../../../test/idp.js";

/** A fetch that records what it fetched, and fails while `down` is set. */
function recordingFetch(): { fetch: typeof fetch; urls: string[]; down: boolean } {
  const state = {
    urls: [] as string[],
    down: false,
    fetch: async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const url = input instanceof Request ? input.url : String(input);
      state.urls.push(url);
      if (state.down) throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
      return fetch(input, init);
    },
  };
  return state;
}

function expectRejected(result: OAuthResult, error: "invalid_token" | "insufficient_scope", description: RegExp, token: string): void {
  expect(result.ok).toBe(false);
  if (result.ok) return;
  expect(result.error).toBe(error);
  expect(result.description).toMatch(description);
  const signature = token.split(".")[2] ?? token;
  expect(`${result.description} ${result.detail ?? ""}`).not.toContain(signature || token);
}

function withPayload(token: string, change: (claims: Record<string, unknown>) => void): string {
  const [header = "", payload = "", signature = ""] = token.split(".");
  const claims: Record<string, unknown> = { ...decodeJwt(token) };
  change(claims);
  expect(payload).not.toBe("");
  return `${header}.${base64url.encode(JSON.stringify(claims))}.${signature}`;
}

let idp: Idp;
let keys: JWK[];

beforeAll(async () => {
  keys = [await signingKey("k1")];
  idp = await startIdp(keys);
});

afterAll(async () => {
  await idp.close();
});

describe("discovery", () => {
  it("publishes RFC 9728 metadata naming the issuer, at the path-suffixed well-known URL", () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, scopes: ["browse"], resourceName: "tabrelay" });
    expect(oauth.metadata()).toEqual({
      resource: RESOURCE,
      authorization_servers: [idp.issuer],
      bearer_methods_supported: ["header"],
      scopes_supported: ["browse"],
      resource_name: "tabrelay",
    });
    expect(oauth.metadataUrl()).toBe("https://tabrelay.example.com/.well-known/oauth-protected-resource/mcp");
    const root = new OAuthResource({ issuer: idp.issuer, resource: "HTTPS://TabRelay.example.com:443/" });
    expect(root.metadata()).toEqual({ resource: "https://tabrelay.example.com", authorization_servers: [idp.issuer], bearer_methods_supported: ["header"] });
    expect(root.metadataUrl()).toBe("https://tabrelay.example.com/.well-known/oauth-protected-resource");
  });

  it("challenges with the metadata URL, the scopes, and a safely quoted error", () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, scopes: ["browse", "admin"] });
    expect(oauth.challenge()).toBe('Bearer resource_metadata="https://tabrelay.example.com/.well-known/oauth-protected-resource/mcp", scope="browse admin"');
    const header = oauth.challenge({ error: "invalid_token", description: 'bad "quote" \\ and\r\nX-Injected: 1' });
    expect(header).toBe(
      'Bearer resource_metadata="https://tabrelay.example.com/.well-known/oauth-protected-resource/mcp", scope="browse admin", error="invalid_token", error_description="bad \\"quote\\" \\\\ and??X-Injected: 1"',
    );
    expect(new OAuthResource({ issuer: idp.issuer, resource: RESOURCE }).challenge()).not.toContain("scope=");
  });

  it("refuses settings that would weaken the checks, at construction", () => {
    expect(() => new OAuthResource({ issuer: "http://id.example.com", resource: RESOURCE })).toThrow(/https/);
    expect(() => new OAuthResource({ issuer: idp.issuer, resource: "https://tabrelay.example.com/mcp#frag" })).toThrow(/fragment/);
    expect(() => new OAuthResource({ issuer: idp.issuer, resource: "tabrelay.example.com/mcp" })).toThrow(/absolute/);
    expect(() => new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, jwksUrl: "http://keys.example.com/jwks" })).toThrow(/https/);
    expect(() => new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, scopes: ['a"b'] })).toThrow(/scope/);
  });
});

describe("tokens from the provider", () => {
  it("accepts a user's token from the authorization code flow: the subject is the user", async () => {
    const token = await userToken(idp, "alice");
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "RS256", kid: "k1", typ: "at+jwt" });
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, scopes: ["browse"] });
    const result = await oauth.verify(token);
    expect(result).toMatchObject({ ok: true, subject: "alice", scopes: ["browse"], clientId: "mcp-client" });
    if (result.ok) expect(result.expiresAt).toBeGreaterThan(Date.now() / 1000 + 250);
  });

  it("accepts a client credentials token, whose subject is the client", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    expect(await oauth.verify(await clientToken(idp, "service"))).toMatchObject({ ok: true, subject: "service", clientId: "service" });
  });

  it("refuses an expired token, allowing only the configured clock tolerance", async () => {
    const token = await clientToken(idp, "service");
    const exp = decodeJwt(token).exp ?? 0;
    const at = (sec: number, tolerance = 0) =>
      new OAuthResource({ issuer: idp.issuer, resource: RESOURCE }, { now: () => sec * 1000, clockToleranceSec: tolerance });
    expectRejected(await at(exp).verify(token), "invalid_token", /expired/, token);
    expectRejected(await at(exp + 3600).verify(token), "invalid_token", /expired/, token);
    expect((await at(exp - 1).verify(token)).ok).toBe(true);
    expect((await at(exp + 3, 5).verify(token)).ok).toBe(true);
  });

  it("refuses a token for another audience, including near misses of this resource's URL", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    for (const other of [
      "https://other.example.com/mcp",
      "https://tabrelay.example.com",
      "https://tabrelay.example.com/mcpx",
      "https://tabrelay.example.com/mcp/",
      "https://tabrelay.example.com/mcp/admin",
      "https://tabrelay.example.com:8443/mcp",
      "http://tabrelay.example.com/mcp",
      "https://tabrelay.example.com.evil.example/mcp",
    ]) {
      const token = await clientToken(idp, "service", { resource: other });
      expect(decodeJwt(token).aud).toBe(other);
      expectRejected(await oauth.verify(token), "invalid_token", /audience/, token);
    }
    // Scheme and host compare case-insensitively, a default port is no difference (RFC 3986 section 6.2.2).
    for (const same of ["HTTPS://TABRELAY.EXAMPLE.COM/mcp", "https://tabrelay.example.com:443/mcp"]) {
      expect((await oauth.verify(await clientToken(idp, "service", { resource: same }))).ok).toBe(true);
    }
  });

  it("refuses a token from another issuer, even one that shares this issuer's keys, without fetching keys", async () => {
    const other = await startIdp([await signingKey("other")]);
    const sharing = await startIdp(keys);
    try {
      const recorder = recordingFetch();
      const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE }, { fetch: recorder.fetch });
      for (const token of [await clientToken(other, "service"), await clientToken(sharing, "service")]) {
        expect(decodeJwt(token).aud).toBe(RESOURCE);
        expectRejected(await oauth.verify(token), "invalid_token", /not from this resource's authorization server/, token);
      }
      expect(recorder.urls).toEqual([]);
    } finally {
      await Promise.all([other.close(), sharing.close()]);
    }
  });

  it("refuses a tampered token", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    const token = await userToken(idp, "alice");
    const forged = withPayload(token, (claims) => {
      claims.sub = "admin";
    });
    expectRejected(await oauth.verify(forged), "invalid_token", /signature is invalid/, forged);
    const truncated = token.slice(0, -4);
    expectRejected(await oauth.verify(truncated), "invalid_token", /signature is invalid|malformed/, truncated);
    expectRejected(await oauth.verify("opaque-token-value"), "invalid_token", /not a JWT/, "opaque-token-value");
  });

  it("refuses an HS256 token, whether from the provider with a guessable secret or keyed with the issuer's public key", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    const fromProvider = await clientToken(idp, "hs-signer");
    expect(decodeProtectedHeader(fromProvider).alg).toBe("HS256");
    expectRejected(await oauth.verify(fromProvider), "invalid_token", /algorithm is not accepted/, fromProvider);
    // Algorithm confusion: an HMAC keyed with the issuer's published RSA key, which anyone can fetch.
    const pem = createPublicKey({ key: { ...keys[0] }, format: "jwk" }).export({ type: "spki", format: "pem" });
    const confused = await new SignJWT({ ...decodeJwt(fromProvider), sub: "admin" })
      .setProtectedHeader({ alg: "HS256", kid: "k1", typ: "at+jwt" })
      .sign(new TextEncoder().encode(String(pem)));
    expectRejected(await oauth.verify(confused), "invalid_token", /algorithm is not accepted/, confused);
  });

  it('refuses an unsigned "alg: none" token', async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    const real = await userToken(idp, "alice");
    const unsigned = `${base64url.encode(JSON.stringify({ alg: "none", typ: "at+jwt" }))}.${real.split(".")[1]}.`;
    expectRejected(await oauth.verify(unsigned), "invalid_token", /algorithm is not accepted/, unsigned);
  });

  it("refuses a token without a subject", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE });
    const token = await clientToken(idp, "no-subject");
    expect(decodeJwt(token).sub).toBeUndefined();
    expectRejected(await oauth.verify(token), "invalid_token", /no sub claim/, token);
  });

  it("answers insufficient_scope when a required scope is missing", async () => {
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE, scopes: ["browse", "admin"] });
    const token = await userToken(idp, "alice", "browse");
    const result = await oauth.verify(token);
    expectRejected(result, "insufficient_scope", /^token lacks scope admin$/, token);
    if (!result.ok) expect(oauth.challenge(result)).toContain('scope="browse admin", error="insufficient_scope"');
    expect(await oauth.verify(await userToken(idp, "alice", "browse admin"))).toMatchObject({ ok: true, scopes: ["browse", "admin"] });
  });
});

describe("the issuer's keys", () => {
  it("follows a key rotation: a token signed by the new key verifies once the JWKS is refetched", async () => {
    const oldKey = await signingKey("old");
    const rotating = await startIdp([oldKey]);
    try {
      const patient = recordingFetch();
      const eager = recordingFetch();
      const verifier = (f: typeof fetch, cooldown: number) =>
        new OAuthResource({ issuer: rotating.issuer, resource: RESOURCE }, { fetch: f, jwksCooldownSec: cooldown });
      const slow = verifier(patient.fetch, 30);
      const fast = verifier(eager.fetch, 0.2);
      const before = await clientToken(rotating, "service");
      expect((await slow.verify(before)).ok).toBe(true);
      expect((await fast.verify(before)).ok).toBe(true);

      // The provider signs with a new key and still publishes the old one for tokens already out.
      rotating.rotate([await signingKey("new"), oldKey]);
      const after = await clientToken(rotating, "service");
      expect(decodeProtectedHeader(after).kid).toBe("new");

      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(await fast.verify(after)).toMatchObject({ ok: true, subject: "service" });
      expect((await fast.verify(before)).ok).toBe(true);
      expect(eager.urls.filter((u) => u.endsWith("/jwks"))).toHaveLength(2);

      // Within the cooldown an unknown kid does not refetch: a flood of forged kids cannot hammer the issuer.
      expectRejected(await slow.verify(after), "invalid_token", /not among the issuer's keys/, after);
      const { privateKey } = await generateKeyPair("RS256");
      for (let i = 0; i < 5; i++) {
        const forged = await new SignJWT({ ...decodeJwt(after) }).setProtectedHeader({ alg: "RS256", kid: `forged-${i}` }).sign(privateKey);
        expectRejected(await slow.verify(forged), "invalid_token", /not among the issuer's keys/, forged);
      }
      expect(patient.urls.filter((u) => u.endsWith("/jwks"))).toHaveLength(1);
    } finally {
      await rotating.close();
    }
  });

  it("answers invalid_token with a loggable reason when the issuer cannot be reached, and recovers when it can", async () => {
    const { server, origin: deadIssuer } = await listen((_req, res) => res.end());
    await stop(server);
    const { privateKey } = await generateKeyPair("ES256");
    const token = await new SignJWT({ sub: "alice", aud: RESOURCE })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setIssuer(deadIssuer)
      .setExpirationTime("5m")
      .sign(privateKey);
    const unreachable = await new OAuthResource({ issuer: deadIssuer, resource: RESOURCE }).verify(token);
    expectRejected(unreachable, "invalid_token", /signing keys could not be fetched/, token);
    if (!unreachable.ok) expect(unreachable.detail).toMatch(/openid-configuration.*fetch failed.*ECONNREFUSED/);

    const deadJwks = await new OAuthResource({ issuer: deadIssuer, resource: RESOURCE, jwksUrl: `${deadIssuer}/jwks` }).verify(token);
    expectRejected(deadJwks, "invalid_token", /signing keys could not be fetched/, token);
    if (!deadJwks.ok) expect(deadJwks.detail).toMatch(/JWKS failed/);

    const recorder = recordingFetch();
    recorder.down = true;
    const oauth = new OAuthResource({ issuer: idp.issuer, resource: RESOURCE }, { fetch: recorder.fetch });
    const good = await clientToken(idp, "service");
    expectRejected(await oauth.verify(good), "invalid_token", /signing keys could not be fetched/, good);
    recorder.down = false;
    expect((await oauth.verify(good)).ok).toBe(true);
  });

  it("refuses discovery metadata that names another issuer (mix-up)", async () => {
    const { server, origin } = await listen((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ issuer: idp.issuer, jwks_uri: `${idp.issuer}/jwks` }));
    });
    try {
      const token = await clientToken(idp, "service");
      const result = await new OAuthResource({ issuer: origin, resource: RESOURCE }).verify(withPayload(token, (c) => (c.iss = origin)));
      expect(result).toMatchObject({ ok: false, description: "the authorization server's signing keys could not be fetched" });
      if (!result.ok) expect(result.detail).toMatch(/does not name issuer/);
    } finally {
      await stop(server);
    }
  });
});

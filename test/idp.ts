// A real OpenID provider (oidc-provider) on 127.0.0.1 for OAuth tests: access tokens are obtained over HTTP from its
// authorization and token endpoints, as an MCP client obtains them (packages/broker/test/http/oauth.test.ts, test/users/oauthLogin.test.ts).
import { createHash, createSecretKey, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { base64url, exportJWK, generateKeyPair } from "jose";
import Provider, { type Configuration, type JWK } from "oidc-provider";

/** The audience tokens are asked for unless a test names another. */
export const RESOURCE = "https://tabrelay.example.com/mcp";
const REDIRECT = "http://127.0.0.1:8976/callback";
const GUESSABLE_SECRET = "secret";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** One OpenID provider on a fixed issuer URL; `rotate` swaps in a provider with new keys, as a redeploy would. */
export interface Idp {
  issuer: string;
  rotate(keys: JWK[]): void;
  close(): Promise<void>;
}

export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" };
}

function providerConfig(keys: JWK[]): Configuration {
  const signingKid = keys[0]?.kid;
  const service = (client_id: string) => ({
    client_id,
    client_secret: `${client_id}-secret`,
    grant_types: ["client_credentials"],
    redirect_uris: [],
    response_types: [],
  });
  return {
    clients: [
      {
        client_id: "mcp-client",
        token_endpoint_auth_method: "none",
        application_type: "native",
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
      // The same as mcp-client, but its access tokens live one second: a test waits them out to hold an expired one.
      {
        client_id: "short-lived",
        token_endpoint_auth_method: "none",
        application_type: "native",
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
      service("service"),
      service("no-subject"),
      service("hs-signer"),
    ],
    jwks: { keys },
    cookies: { keys: ["oauth-test-cookie-key"] },
    // The dev login page accepts any name; the account is that name (the token's sub).
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    ttl: {
      Interaction: 600,
      Session: 600,
      Grant: 600,
      AccessToken: (_ctx, _token, client) => (client.clientId === "short-lived" ? 1 : 300),
      IdToken: 300,
      ClientCredentials: 300,
      AuthorizationCode: 60,
    },
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: () => true,
        // Any resource, so a test can ask for a token meant for another service.
        getResourceServerInfo: (_ctx, indicator, client) => ({
          scope: "browse admin",
          audience: indicator,
          accessTokenFormat: "jwt",
          accessTokenTTL: 300,
          jwt: {
            sign: client.clientId === "hs-signer" ? { alg: "HS256", key: createSecretKey(Buffer.from(GUESSABLE_SECRET)) } : { alg: "RS256", kid: signingKid },
          },
        }),
      },
    },
    formats: {
      customizers: {
        jwt: (_ctx, token, parts) => {
          if (token.clientId === "no-subject") delete parts.payload.sub;
        },
      },
    },
  };
}

export async function listen(handler: Handler): Promise<{ server: Server; origin: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://127.0.0.1:${port}` };
}

export async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function startIdp(keys: JWK[]): Promise<Idp> {
  let handler: Handler = (_req, res) => res.writeHead(503).end();
  const { server, origin } = await listen((req, res) => handler(req, res));
  const install = (k: JWK[]) => {
    const callback = new Provider(origin, providerConfig(k)).callback();
    handler = (req, res) => void callback(req, res);
  };
  install(keys);
  return { issuer: origin, rotate: install, close: () => stop(server) };
}

/** Client credentials: the token's subject is the client itself (RFC 9068 section 2.2). */
export async function clientToken(idp: Idp, client: string, opts: { resource?: string; scope?: string } = {}): Promise<string> {
  const res = await fetch(`${idp.issuer}/token`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`${client}:${client}-secret`)}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: opts.resource ?? RESOURCE, scope: opts.scope ?? "browse" }),
  });
  return accessToken(res);
}

async function accessToken(res: Response): Promise<string> {
  const body: unknown = await res.json();
  if (res.status !== 200 || typeof body !== "object" || body === null || !("access_token" in body) || typeof body.access_token !== "string") {
    throw new Error(`token endpoint answered ${res.status}: ${JSON.stringify(body)}`);
  }
  return body.access_token;
}

/**
 * Authorization code with PKCE, as an MCP client does it: the user signs in and consents through the provider's own
 * (development) login and consent pages, driven over HTTP with a cookie jar; the code is then exchanged for a token.
 */
export async function userToken(idp: Idp, login: string, scope = "browse", options: { client?: string; resource?: string } = {}): Promise<string> {
  const client = options.client ?? "mcp-client";
  const resource = options.resource ?? RESOURCE;
  const jar = new Map<string, string>();
  const send = async (url: URL, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const eq = pair.indexOf("=");
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
  const verifier = base64url.encode(randomBytes(32));
  let url = new URL(`${idp.issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: client,
    response_type: "code",
    redirect_uri: REDIRECT,
    scope: `openid ${scope}`,
    resource,
    state: base64url.encode(randomBytes(8)),
    code_challenge: base64url.encode(createHash("sha256").update(verifier).digest()),
    code_challenge_method: "S256",
  }).toString();
  let init: RequestInit = {};
  for (let step = 0; step < 12; step++) {
    const res = await send(url, init);
    const location = res.headers.get("location");
    if (location !== null) {
      await res.body?.cancel();
      const target = new URL(location, url);
      if (target.href.startsWith(REDIRECT)) {
        const code = target.searchParams.get("code");
        if (code === null) throw new Error(`authorization failed: ${target.search}`);
        const token = await fetch(`${idp.issuer}/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: client, resource }),
        });
        return accessToken(token);
      }
      url = target;
      init = {};
      continue;
    }
    const page = await res.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (prompt === undefined) throw new Error(`unexpected page (${res.status}): ${page.slice(0, 300)}`);
    init = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ prompt, login, password: "any" }).toString(),
    };
  }
  throw new Error("the authorization flow did not reach the redirect URI");
}

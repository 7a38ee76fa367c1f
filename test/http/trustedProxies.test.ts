// mcp.trusted_proxies over real sockets: a load balancer's X-Forwarded-Proto, X-Forwarded-Host and X-Real-IP count
// only when they come from a peer config names, for the dashboard (login throttle, Origin check, Secure cookies) and
// for /mcp's Origin check alike. The attack this closes: a client that reaches a broker's port directly, sending the
// public name as Host and an X-Real-IP of its choosing, dodged the per-address login throttle (a new address per
// guess) or got another address held back; and the two doors judged the broker's own origin by two rules.
// Loopback stands in for the network: the broker listens on 127.0.0.1; the load balancer is 127.0.0.5, an attacker
// on the same network 127.0.0.9 (Linux sends from any 127/8 address).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_TOKEN, MCP_TOKEN, startBroker, type TestBroker } from "../harness.js";
import { cookieOf, raw, setCookies, type RawResponse } from "../rawHttp.js";

const PUBLIC = "tabrelay.example";
const PROXY = "127.0.0.5";
const OTHER = "127.0.0.9";
const WRONG = "wrong-token-wrong-token-wrong-token";
let broker: TestBroker;

beforeAll(async () => {
  broker = await startBroker({ yaml: `mcp:\n  allowed_hosts: ["${PUBLIC}"]\n  trusted_proxies: ["${PROXY}"]\n` });
});

afterAll(async () => {
  await broker?.close();
});

/** The login form, then the token posted, as a browser behind `from` would: Host the public name, plus `headers`. */
async function login(from: string, token: string, headers: Record<string, string>, origin: string): Promise<RawResponse> {
  const all = { Host: PUBLIC, ...headers };
  const form = await raw(`${broker.url}/login`, { headers: all, localAddress: from });
  const nonce = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!nonce || !csrf) throw new Error(`no login form: ${form.status} ${form.body.slice(0, 200)}`);
  return raw(`${broker.url}/login`, {
    method: "POST",
    localAddress: from,
    headers: { ...all, "Content-Type": "application/x-www-form-urlencoded", Origin: origin, Cookie: nonce },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
}

const viaProxy = (client: string) => ({ "X-Forwarded-Proto": "https", "X-Forwarded-Host": PUBLIC, "X-Real-IP": client });

describe("the dashboard's login behind a load balancer", () => {
  it("counts a client that is not the load balancer by its own address, whatever X-Real-IP it sends", async () => {
    for (let i = 0; i < 5; i++) expect((await login(OTHER, WRONG, { "X-Real-IP": `198.51.100.${i}` }, `http://${PUBLIC}`)).status).toBe(401);
    // Five guesses, five made-up addresses: all were this machine's (loopback is one source), so the sixth is held back.
    const held = await login(OTHER, DASHBOARD_TOKEN, { "X-Real-IP": "198.51.100.77" }, `http://${PUBLIC}`);
    expect(held.status).toBe(429);
    expect(held.body).toContain("Too many wrong tokens from this machine.");
  });

  it("counts clients behind the load balancer by its X-Real-IP, an IPv6 client by its /64, however it is written", async () => {
    // The proxy's clients are sources of their own, apart from this machine's bucket the test above filled.
    for (let i = 1; i <= 5; i++) expect((await login(PROXY, WRONG, viaProxy(`2001:db8::${i}`), `https://${PUBLIC}`)).status).toBe(401);
    const sameBlock = await login(PROXY, DASHBOARD_TOKEN, viaProxy("2001:DB8:0:0:ffff:0:0:9"), `https://${PUBLIC}`);
    expect(sameBlock.status).toBe(429);
    expect(sameBlock.body).toContain("Too many wrong tokens from this address.");
    const otherBlock = await login(PROXY, DASHBOARD_TOKEN, viaProxy("2001:db8:0:1::9"), `https://${PUBLIC}`);
    expect(otherBlock.status).toBe(303);
    // The browser used https through the balancer: the cookie is Secure, named for port 443.
    expect(setCookies(otherBlock).find((c) => c.startsWith("tabrelay_session_443="))).toMatch(/; Secure/i);
  });

  it("believes https and the public origin from the load balancer only", async () => {
    // Not from the load balancer: the scheme it claims is not believed, so the https origin is another site's.
    const forged = await raw(`${broker.url}/login`, { headers: { Host: PUBLIC, "X-Forwarded-Proto": "https" }, localAddress: OTHER });
    expect(setCookies(forged).join("\n")).not.toMatch(/Secure/i);
  });
});

/** An initialize request to /mcp from `from`, with the bearer. */
function initialize(from: string, headers: Record<string, string>): Promise<RawResponse> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "proxy-test", version: "1" } },
  });
  return raw(`${broker.url}/mcp`, {
    method: "POST",
    localAddress: from,
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${MCP_TOKEN}`,
      Host: PUBLIC,
      ...headers,
    },
    body,
  });
}

describe("/mcp's Origin check behind a load balancer", () => {
  it("takes the public https origin the browser used from the load balancer, as the dashboard does", async () => {
    expect((await initialize(PROXY, { ...viaProxy("203.0.113.4"), Origin: `https://${PUBLIC}` })).status).toBe(200);
  });

  it("refuses that origin from anyone else, and another origin from the load balancer", async () => {
    expect((await initialize(OTHER, { "X-Forwarded-Proto": "https", Origin: `https://${PUBLIC}` })).status).toBe(403);
    expect((await initialize(PROXY, { ...viaProxy("203.0.113.4"), Origin: "https://evil.example" })).status).toBe(403);
    expect((await initialize(PROXY, { ...viaProxy("203.0.113.4"), "X-Forwarded-Host": "evil.example", Origin: "https://evil.example" })).status).toBe(403);
  });
});

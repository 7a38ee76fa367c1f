// The broker's HTTP routes through hono's fetch core (app.request): no socket carries these requests.
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpBrokerProof, newNonce } from "@tabrelay/protocol";
import { Broker, loadConfig, silentLogger } from "../../src/index.js";

const TOKEN = randomBytes(32).toString("base64url");
let broker: Broker;
let base = "";
let host = "";

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-httpapp-"));
  writeFileSync(join(dataDir, "config.yaml"), 'policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\nscreenshots:\n  enabled: true\n');
  const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: TOKEN, TABRELAY_PAIRING_TOKEN: randomBytes(32).toString("base64url") } });
  broker = new Broker({ config, log: silentLogger });
  // Listening fixes the port the Host checks name; the requests below never touch the socket.
  const { port } = await broker.listen();
  host = `127.0.0.1:${port}`;
  base = `http://${host}`;
});

afterAll(async () => {
  await broker.close();
});

/** A body that records whether anything read it. */
function watchedBody(): { body: ReadableStream<Uint8Array>; read: () => boolean } {
  let pulled = false;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulled = true;
        controller.enqueue(new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'));
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, read: () => pulled };
}

function post(path: string, headers: Record<string, string>, body: ReadableStream<Uint8Array> | string): Promise<Response> {
  return Promise.resolve(broker.app.request(`${base}${path}`, { method: "POST", headers, body, duplex: "half" }));
}

describe("broker HTTP app", () => {
  it("answers an unknown path with 404", async () => {
    const response = await broker.app.request(`${base}/nope`, { headers: { Host: host } });
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("not found\n");
  });

  it("reports health: name, version, browsers, audit", async () => {
    const response = await broker.app.request(`${base}/health`, { headers: { Host: host } });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body: unknown = await response.json();
    expect(body).toMatchObject({ status: "ok", name: "tabrelay", browsers: [], audit: { ok: true, failures: 0 } });
    expect(typeof Reflect.get(body as object, "version")).toBe("string");
  });

  it("refuses /mcp for a foreign Host with 403, before reading the body", async () => {
    const watched = watchedBody();
    const response = await post("/mcp", { Host: "evil.example", Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, watched.body);
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/DNS rebinding/);
    expect(watched.read()).toBe(false);
  });

  it("refuses /mcp from a foreign Origin with 403, before reading the body", async () => {
    const watched = watchedBody();
    const response = await post(
      "/mcp",
      { Host: host, Origin: "https://evil.example", Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      watched.body,
    );
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/Origin "https:\/\/evil.example" is not allowed/);
    expect(watched.read()).toBe(false);
  });

  it("refuses /mcp without the token with 401 and WWW-Authenticate, before reading the body", async () => {
    for (const authorization of [undefined, "Bearer wrong", `Basic ${TOKEN}`]) {
      const watched = watchedBody();
      const response = await post(
        "/mcp",
        { Host: host, "Content-Type": "application/json", ...(authorization ? { Authorization: authorization } : {}) },
        watched.body,
      );
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="tabrelay"');
      expect(watched.read()).toBe(false);
    }
  });

  it("answers /auth/proof with a proof that checks out against the token, for the address it proves it is", async () => {
    const nonce = newNonce();
    // Called without a socket, the app knows no address of its own: a loopback address the client claims is not
    // taken (a relay could claim its own), and the proof names none that any client dialled.
    const response = await post(
      "/auth/proof",
      { Host: host, "Content-Type": "application/json" },
      JSON.stringify({ nonce, endpoint: "http://127.0.0.1:9333" }),
    );
    expect(response.status).toBe(200);
    const body: unknown = await response.json();
    const endpoint = Reflect.get(body as object, "endpoint");
    expect(endpoint).toBe("http://no-socket:0");
    expect(Reflect.get(body as object, "proof")).toBe(await mcpBrokerProof(TOKEN, nonce, "http://no-socket:0"));
    expect(await mcpBrokerProof("another token", nonce, "http://no-socket:0")).not.toBe(Reflect.get(body as object, "proof"));
    expect(await mcpBrokerProof(TOKEN, nonce, "http://127.0.0.1:9333")).not.toBe(Reflect.get(body as object, "proof"));
  });

  it("refuses /auth/proof without a well-formed nonce", async () => {
    for (const body of ["", "null", '{"nonce": "short"}', JSON.stringify({ nonce: newNonce(), pad: "x".repeat(2000) })]) {
      const response = await post("/auth/proof", { Host: host, "Content-Type": "application/json" }, body);
      expect(response.status).toBe(400);
    }
  });

  it("sends a visitor without a session from the dashboard to /login", async () => {
    const response = await broker.app.request(`${base}/`, { headers: { Host: host } });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/login");
    const login = await broker.app.request(`${base}/login`, { headers: { Host: host } });
    expect(login.status).toBe(200);
    expect(login.headers.get("set-cookie")).toMatch(new RegExp(`^tabrelay_login_${host.split(":")[1]}=`));
  });

  it("serves a stored screenshot by its signed link, and refuses a tampered one", async () => {
    const bytes = Buffer.from("not really a png, the store does not look");
    const stored = await broker.context.screenshots?.put(bytes, { width: 1, height: 1, pageUrl: "http://127.0.0.1/", capturedAt: Date.now() });
    if (!stored) throw new Error("screenshots are enabled in this config");
    const response = await broker.app.request(stored.url, { headers: { Host: host } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    const tampered = stored.url.replace(/sig=([0-9a-f])/, (_, c: string) => `sig=${c === "0" ? "1" : "0"}`);
    expect((await broker.app.request(tampered, { headers: { Host: host } })).status).toBe(404);
    expect((await broker.app.request(stored.url, { method: "POST", headers: { Host: host } })).status).toBe(405);
  });

  it("serves a named user's screenshot link to that user's token alone: another's is a 404 as a made-up link, none a 401", async () => {
    const ann = await broker.users.add("ann");
    const ben = await broker.users.add("ben");
    const annId = ann.user.id;
    const stored = await broker.context.screenshots?.put(Buffer.from("ann's picture"), {
      width: 1,
      height: 1,
      pageUrl: "http://127.0.0.1/",
      capturedAt: Date.now(),
      owner: annId,
    });
    if (!stored) throw new Error("screenshots are enabled in this config");
    expect(new URL(stored.url).searchParams.get("u")).toBe(annId);
    const get = (url: string, token?: string) => broker.app.request(url, { headers: { Host: host, ...(token ? { Authorization: `Bearer ${token}` } : {}) } });
    expect((await get(stored.url, ann.token)).status).toBe(200);
    const theirs = await get(stored.url, ben.token);
    const madeUp = await get(
      stored.url.replace(/\/shots\/([0-9a-f])/, (_, c: string) => `/shots/${c === "0" ? "1" : "0"}`),
      ann.token,
    );
    expect(theirs.status).toBe(404);
    expect(madeUp.status).toBe(404);
    expect(await theirs.text()).toBe(await madeUp.text());
    expect((await get(stored.url, TOKEN)).status).toBe(404);
    expect((await get(stored.url)).status).toBe(401);
    expect((await get(stored.url.replace(/&u=[^&]+/, ""))).status).toBe(404);
  });

  it("serves the dashboard's script as ES modules: every module it imports, as JavaScript under the dashboard's CSP", async () => {
    const page = await broker.app.request(`${base}/login`, { headers: { Host: host } });
    const csp = page.headers.get("content-security-policy");
    expect(csp).toContain("script-src 'self'");
    const seen = new Set<string>();
    const pending = ["/dashboard/app.js"];
    for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
      if (seen.has(path)) continue;
      seen.add(path);
      const response = await broker.app.request(`${base}${path}`, { headers: { Host: host } });
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type"), path).toBe("text/javascript; charset=utf-8");
      expect(response.headers.get("content-security-policy"), path).toBe(csp);
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      const source = await response.text();
      expect(source, path).not.toContain("$PLAIN_LINE_");
      for (const m of source.matchAll(/^import [^"]* from "\.\/([a-z]+\.js)";$/gm)) pending.push(`/dashboard/${m[1] ?? ""}`);
    }
    expect([...seen].sort()).toEqual([
      "/dashboard/api.js",
      "/dashboard/app.js",
      "/dashboard/asks.js",
      "/dashboard/audit.js",
      "/dashboard/browsers.js",
      "/dashboard/chat.js",
      "/dashboard/controls.js",
      "/dashboard/dom.js",
      "/dashboard/pages.js",
      "/dashboard/policy.js",
      "/dashboard/preview.js",
    ]);
  });

  it("refuses the dashboard on a foreign Host", async () => {
    const response = await broker.app.request(`http://evil.example/`, { headers: { Host: "evil.example" } });
    expect(response.status).toBe(403);
  });
});

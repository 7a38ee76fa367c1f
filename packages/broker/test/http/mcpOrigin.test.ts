// /mcp and the Origin header (issue 12, section 4): the broker's own origin is same-origin, not cross-site, and is
// accepted (with the bearer still required); every other origin is refused unless mcp.allowed_origins names it.
// The MCP conformance suite's dns-rebinding-protection scenario checks the same from outside (scripts/conformance.mjs).
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Broker, loadConfig, silentLogger } from "../../src/index.js";

const TOKEN = randomBytes(32).toString("base64url");
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "origin-test", version: "1" } },
});
let broker: Broker;
let port = 0;

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-origin-"));
  writeFileSync(join(dataDir, "config.yaml"), 'mcp:\n  allowed_origins: ["https://trusted.example"]\n');
  const config = loadConfig({ dataDir, port: 0, env: { TABRELAY_MCP_TOKEN: TOKEN, TABRELAY_PAIRING_TOKEN: randomBytes(32).toString("base64url") } });
  broker = new Broker({ config, log: silentLogger });
  ({ port } = await broker.listen());
});

afterAll(async () => {
  await broker.close();
});

/** An initialize request over the real socket, with the Host and Origin a client or a page would send (fetch would drop Host). */
function initialize(
  host: string,
  origin: string | undefined,
  token: string | null = TOKEN,
): Promise<{ status: number; session: string | undefined; text: string }> {
  const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Host: host };
  if (origin !== undefined) headers["Origin"] = origin;
  if (token !== null) headers["Authorization"] = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/mcp", method: "POST", headers }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, session: res.headers["mcp-session-id"] as string | undefined, text }));
    });
    req.on("error", reject);
    req.end(INITIALIZE);
  });
}

describe("/mcp and Origin", () => {
  it("accepts the broker's own origin, by either loopback name", async () => {
    for (const name of ["127.0.0.1", "localhost"]) {
      const response = await initialize(`${name}:${port}`, `http://${name}:${port}`);
      expect(response.status).toBe(200);
      expect(response.session).toBeTruthy();
    }
  });

  it("still wants the bearer from the broker's own origin", async () => {
    const response = await initialize(`localhost:${port}`, `http://localhost:${port}`, null);
    expect(response.status).toBe(401);
  });

  it("refuses another port, another scheme and another host on the same machine", async () => {
    for (const origin of [`http://localhost:${port + 1}`, `https://localhost:${port}`, "http://evil.example", `http://127.0.0.1.evil.example:${port}`]) {
      const response = await initialize(`localhost:${port}`, origin);
      expect(response.status, origin).toBe(403);
      expect(response.text).toMatch(/is not allowed; add it to mcp.allowed_origins/);
    }
  });

  it("refuses an origin that names the broker when the Host does not (DNS rebinding)", async () => {
    const response = await initialize("evil.example", `http://localhost:${port}`);
    expect(response.status).toBe(403);
    expect(response.text).toMatch(/DNS rebinding/);
  });

  it("accepts an origin the config trusts", async () => {
    const response = await initialize(`127.0.0.1:${port}`, "https://trusted.example");
    expect(response.status).toBe(200);
  });
});

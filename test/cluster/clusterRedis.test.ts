// A cluster whose Redis goes away, and comes back empty (issue 16 §3): each broker keeps serving its own browsers,
// says it is not ready, fails a call for another broker's browser at once (never hangs it), and once Redis is back
// announces its browsers again, so calls between brokers work as before.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Broker, loadConfig, silentLogger } from "../../packages/broker/src/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, connectClient, startBroker, waitFor, type TestBroker } from "../harness.js";
import { redisReplies, startRedis, type TestRedis } from "../redis.js";
import { StubExtension } from "../stubExtension.js";

let redis: TestRedis;
let a: TestBroker;
let b: TestBroker;
let stub: StubExtension;
let viaB: Client;

const yaml = () => `cluster:\n  redis_url: "${redis.url}"\n`;
const ready = async (broker: TestBroker) => {
  const response = await fetch(`${broker.url}/ready`);
  return { status: response.status, body: (await response.json()) as { ready: boolean; reasons?: string[] } };
};
const remoteOnB = () => b.broker.context.cluster?.remoteBrowsers("default") ?? [];

beforeAll(async () => {
  redis = await startRedis();
  a = await startBroker({ yaml: yaml() });
  b = await startBroker({ yaml: yaml() });
  stub = new StubExtension({
    port: a.port,
    browserId: "stub-on-a",
    label: "stub on a",
    handlers: {
      "tabs.list": async () => ({
        tabs: [{ tabId: 7, windowId: 1, url: "https://example.com/", title: "held by broker a", status: "complete", active: true, shared: false }],
      }),
    },
  });
  await stub.welcomed;
  await waitFor("the stub in B's view of presence", () => (remoteOnB().length === 1 ? true : undefined));
  viaB = await connectClient(b.url);
}, 60_000);

afterAll(async () => {
  await viaB?.close();
  stub?.ws.close();
  await a?.close();
  await b?.close();
  await redis?.stop();
});

describe("a cluster's Redis away", () => {
  it("reaches A's browser through B while Redis is up", async () => {
    expect((await ready(b)).status).toBe(200);
    const listed = await call(viaB, "list_tabs", { browser: "stub-on-a" });
    expect(listed.isError, listed.text).toBe(false);
    expect(listed.text).toContain("held by broker a");
  });

  it("with Redis gone: not ready, a call for another broker's browser fails at once, local work goes on", async () => {
    redis.kill();
    await waitFor("B not ready", async () => ((await ready(b)).status === 503 ? true : undefined));
    expect((await ready(b)).body.reasons?.[0]).toMatch(/^cluster: Redis connection /);
    const started = Date.now();
    const refused = await call(viaB, "list_tabs", { browser: "stub-on-a" });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^browser_disconnected: the cluster's Redis could not carry the call .*nothing was sent/);
    expect(Date.now() - started).toBeLessThan(10_000);
    // A still serves its own browser, to a session opened now (it cannot be shared, but it works here).
    const onA = await connectClient(a.url);
    try {
      const local = await call(onA, "list_tabs", { browser: "stub-on-a" });
      expect(local.isError, local.text).toBe(false);
      expect(local.text).toContain("held by broker a");
    } finally {
      await onA.close();
    }
  });
});

describe("a cluster's Redis back, empty", () => {
  it("announces each broker's browsers again, and calls cross brokers again", async () => {
    // The same Redis started afresh is out of reach of this helper; an empty, reconnecting Redis is the same thing
    // to a broker: so a second run starts with a flushed store and every broker's connections dropped.
    const fresh = await startRedis();
    await a.close();
    await b.close();
    redis = fresh;
    a = await startBroker({ yaml: yaml() });
    b = await startBroker({ yaml: yaml() });
    const again = new StubExtension({ port: a.port, browserId: "stub-on-a", label: "stub on a", handlers: stub.handlers });
    await again.welcomed;
    await waitFor("presence", () => (remoteOnB().length === 1 ? true : undefined));
    // Redis loses everything and drops every connection, as a restart without persistence does.
    expect(await redisReplies(redis.port, [["AUTH", redis.password], ["FLUSHALL"], ["HEXISTS", "tabrelay:browsers", "stub-on-a"]])).toEqual([
      "+OK",
      "+OK",
      "0",
    ]);
    await redisReplies(redis.port, [
      ["AUTH", redis.password],
      ["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
    ]);
    // Only a re-announcement can put it back.
    await waitFor(
      "A's browser announced again",
      async () =>
        (
          await redisReplies(redis.port, [
            ["AUTH", redis.password],
            ["HEXISTS", "tabrelay:browsers", "stub-on-a"],
          ])
        )[1] === "1"
          ? true
          : undefined,
      10_000,
    );
    await waitFor("and seen by B", () => (remoteOnB().length === 1 ? true : undefined), 10_000);
    await waitFor("B ready again", async () => ((await ready(b)).status === 200 ? true : undefined), 10_000);
    const client = await connectClient(b.url);
    try {
      const listed = await call(client, "list_tabs", { browser: "stub-on-a" });
      expect(listed.isError, listed.text).toBe(false);
      expect(listed.text).toContain("held by broker a");
    } finally {
      await client.close();
      again.ws.close();
    }
  });
});

describe("a broker with other secrets", () => {
  it("is named by every other broker's /ready until it goes: pages' tokens and the implicit user's pairing need the same ones", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-odd-"));
    writeFileSync(join(dataDir, "config.yaml"), yaml());
    const config = loadConfig({
      dataDir,
      port: 0,
      env: { TABRELAY_MCP_TOKEN: "another-mcp-token-0123456789abcdef", TABRELAY_PAIRING_TOKEN: "another-pairing-token-0123456789ab" },
    });
    const odd = new Broker({ config, log: silentLogger });
    await odd.listen();
    try {
      await waitFor("B naming the odd broker", async () => ((await ready(b)).status === 503 ? true : undefined), 10_000);
      expect((await ready(b)).body.reasons?.[0]).toMatch(
        /^cluster: broker \S+ has another MCP token or pairing code: give every broker the same TABRELAY_MCP_TOKEN and TABRELAY_PAIRING_TOKEN/,
      );
    } finally {
      await odd.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    await waitFor("B ready once it left", async () => ((await ready(b)).status === 200 ? true : undefined), 10_000);
  });
});

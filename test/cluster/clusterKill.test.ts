// Killing a broker of a cluster (issue 16 §3): two brokers run as `tabrelay serve` processes behind nginx with TLS
// (the documented deploy/nginx.conf, a throwaway certificate), a third in this process; a real Chromium's extension
// dials wss:// through nginx, as a team's browsers do, and lands on one of the two. That broker is killed with
// SIGKILL: no goodbye, no drain. The browser must come back, on the other broker (the target: within 2 s); a call waiting on the
// killed broker fails at once with browser_disconnected (not at its own timeout), and the next call reaches the
// browser where it is now.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findChromium, launchChromium, prepareExtension, type LaunchedBrowser } from "../../packages/broker/src/index.js";
import { call, connectClient, MCP_TOKEN, openTab, page, PAIRING_TOKEN, startBroker, startSite, waitFor, type TestBroker, type TestSite } from "../harness.js";
import { startNginx, type TestNginx } from "../nginx.js";
import { startRedis, type TestRedis } from "../redis.js";
import { startPostgres, type TestPostgres } from "../postgres.js";
import { freePort } from "../ports.js";

const CLI = fileURLToPath(new URL("../../packages/cli/dist/main.js", import.meta.url));

interface ServeProcess {
  port: number;
  child: ChildProcess;
  dataDir: string;
}

let redis: TestRedis;
let pg: TestPostgres;
let site: TestSite;
let local: TestBroker;
let served: ServeProcess[] = [];
let nginx: TestNginx;
let certDir: string;
let profileDir: string;
let browser: LaunchedBrowser;
let client: Client;

const yaml = () => `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
mcp:
  allowed_hosts: ["127.0.0.1"]
store:
  postgres_url: "${pg.url}"
cluster:
  redis_url: "${redis.url}"
`;

async function serve(): Promise<ServeProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-serve-"));
  writeFileSync(join(dataDir, "config.yaml"), yaml());
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--data-dir", dataDir], {
    env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  await waitFor(
    `tabrelay serve on ${port} ready`,
    async () => {
      if (child.exitCode !== null) throw new Error(`tabrelay serve exited: ${stderr}`);
      const ready = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined);
      return ready?.status === 200 ? true : undefined;
    },
    20_000,
  );
  return { port, child, dataDir };
}

beforeAll(async () => {
  [redis, pg, site] = await Promise.all([startRedis(), startPostgres(), startSite("127.0.0.1")]);
  site.route("/slow", page("Slow", "<p>Nothing will appear here.</p>"));
  local = await startBroker({ yaml: yaml() });
  served = [await serve(), await serve()];
  certDir = mkdtempSync(join(tmpdir(), "tabrelay-cert-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      join(certDir, "key.pem"),
      "-out",
      join(certDir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { stdio: "ignore" },
  );
  nginx = await startNginx(
    served.map((s) => s.port),
    { tls: { cert: join(certDir, "cert.pem"), key: join(certDir, "key.pem") } },
  );
  profileDir = mkdtempSync(join(tmpdir(), "tabrelay-kill-profile-"));
  const extensionDir = prepareExtension(profileDir, `wss://127.0.0.1:${nginx.port}/bridge`, PAIRING_TOKEN, "team chromium");
  // The throwaway certificate is not one Chromium trusts: this flag stands in for a real one.
  browser = launchChromium({ chromiumPath: findChromium(), profileDir, extensionDir, headless: true, extraArgs: ["--ignore-certificate-errors"] });
  client = await connectClient(local.url);
  await waitFor(
    "the browser in the cluster's presence",
    () => ((local.broker.context.cluster?.remoteBrowsers("default").length ?? 0) > 0 ? true : undefined),
    30_000,
  );
}, 120_000);

afterAll(async () => {
  await client?.close();
  await browser?.kill();
  for (const s of served) {
    s.child.kill("SIGKILL");
    rmSync(s.dataDir, { recursive: true, force: true });
  }
  await nginx?.stop();
  await local?.close();
  await Promise.allSettled([redis?.stop(), pg?.stop(), site?.close()]);
  if (certDir) rmSync(certDir, { recursive: true, force: true });
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
});

/** The port of the serve process holding the browser, asked of each one directly. */
async function holderPort(): Promise<number | undefined> {
  for (const s of served) {
    if (s.child.exitCode !== null || s.child.signalCode !== null) continue;
    const health = (await fetch(`http://127.0.0.1:${s.port}/health`).then(
      (r) => r.json(),
      () => undefined,
    )) as { browsers?: unknown[] } | undefined;
    if (health?.browsers && health.browsers.length > 0) return s.port;
  }
  return undefined;
}

describe("a broker killed under a browser", () => {
  it("the browser comes back on the other broker, and a call waiting on the dead one fails at once, not at its timeout", async () => {
    const before = await holderPort();
    expect(before).toBeDefined();
    const victim = served.find((s) => s.port === before)!;
    const tab = await openTab(client, `${site.origin}/slow`);
    const waiting = call(client, "wait_for", { tab, selector: "#never", timeout_ms: 25_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const killedAt = Date.now();
    victim.child.kill("SIGKILL");
    const answer = await waiting;
    const failedAfter = Date.now() - killedAt;
    expect(answer.isError).toBe(true);
    expect(answer.text).toMatch(/^browser_disconnected: /);
    // At once, not at the call's own 25 s: the dead broker's liveness lapses in 1.5 s, or the browser shows up elsewhere
    // first. (The 2 s targets are figures of the cluster bench; a shared CI machine only gets a wide bound here.)
    expect(failedAfter).toBeLessThan(10_000);
    const back = await waitFor(
      "the browser on the other broker",
      async () => {
        const port = await holderPort();
        return port !== undefined && port !== before ? port : undefined;
      },
      10_000,
    );
    const reconnectedAfter = Date.now() - killedAt;
    expect(back).not.toBe(before);
    expect(reconnectedAfter).toBeLessThan(10_000);
    process.stderr.write(`clusterKill: the waiting call failed ${failedAfter} ms after the kill; the browser was back ${reconnectedAfter} ms after it\n`);
    // The next call reaches the browser where it is now.
    await waitFor("presence on the local broker", () => ((local.broker.context.cluster?.remoteBrowsers("default").length ?? 0) > 0 ? true : undefined));
    const listed = await call(client, "list_browsers");
    expect(listed.text).toContain("team chromium");
    const again = await call(client, "read_url", { url: `${site.origin}/slow` });
    expect(again.isError, again.text).toBe(false);
    expect(again.text).toContain("Nothing will appear here.");
    // The tab the session opened before the kill is still its own on the broker the browser moved to (the lease
    // was kept in the shared store): another session, asking first, is refused it; the session reads it.
    const other = await connectClient(local.url);
    try {
      const theirs = await call(other, "read_page", { tab });
      expect(theirs.text).toMatch(/^tab_leased: /);
      expect((await call(other, "list_tabs")).text).not.toContain("/slow");
    } finally {
      await other.close();
    }
    const own = await call(client, "read_page", { tab });
    expect(own.isError, own.text).toBe(false);
    expect(own.text).toContain("Nothing will appear here.");
  });
});

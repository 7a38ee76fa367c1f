#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, which needs Node 22+) against a real
// `tabrelay serve` on this machine, for the server scenarios that apply to tabrelay (tools it does not offer, such as
// the suite's own test tools, prompts and resources, are not run).
//
// The suite has no option to send a bearer token, and /mcp requires one. So the suite talks to a small reverse proxy
// on loopback that adds `Authorization: Bearer <token>` and, as any reverse proxy in front of the broker does, names
// the broker in Host and Origin where the request named the proxy itself. Every other Host or Origin (the suite's
// DNS-rebinding probe sends evil.example.com) reaches the broker unchanged, so the broker's own door checks answer it.
//
// Usage: node scripts/conformance.mjs --bin PATH/TO/conformance [--scenario NAME ...]
//   exit 0 when every scenario passes; 1 otherwise, with the suite's report of each failure.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest, createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SCENARIOS = ["server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"];
const CLI = fileURLToPath(new URL("../packages/cli/bin/tabrelay.js", import.meta.url));

const { values } = parseArgs({ options: { bin: { type: "string" }, scenario: { type: "string", multiple: true } } });
if (!values.bin) {
  process.stderr.write("usage: node scripts/conformance.mjs --bin PATH/TO/conformance [--scenario NAME ...]\n");
  process.exit(2);
}
const scenarios = values.scenario?.length ? values.scenario : SCENARIOS;
const token = randomBytes(32).toString("base64url");
const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-conformance-"));

/** Starts `tabrelay serve` on a free port and resolves with its MCP URL once it prints it. */
function startBroker() {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dataDir], {
    env: { ...process.env, TABRELAY_MCP_TOKEN: token, TABRELAY_PAIRING_TOKEN: randomBytes(32).toString("base64url") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const url = new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const found = /http:\/\/127\.0\.0\.1:\d+\/mcp/.exec(stderr);
      if (found) resolve(new URL(found[0]));
    });
    child.once("exit", (code) => reject(new Error(`tabrelay serve exited (${code}) before listening:\n${stderr}`)));
  });
  return { child, url };
}

/** The bearer-adding reverse proxy, on a free loopback port. */
function startProxy(broker) {
  const server = createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const own = [`localhost:${server.address().port}`, `127.0.0.1:${server.address().port}`];
    if (own.includes(headers.host)) headers.host = `${headers.host.split(":")[0]}:${broker.port}`;
    for (const origin of own) if (headers.origin === `http://${origin}`) headers.origin = `http://${origin.split(":")[0]}:${broker.port}`;
    const upstream = httpRequest({ host: "127.0.0.1", port: broker.port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", (error) => {
      if (!res.headersSent) res.writeHead(502, { "Content-Type": "text/plain" });
      res.end(`proxy: ${error.message}`);
    });
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function runScenario(url, scenario) {
  return new Promise((resolve) => {
    const child = spawn(values.bin, ["server", "--url", url, "--scenario", scenario], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.once("exit", (code) => resolve({ scenario, ok: code === 0, output }));
  });
}

const broker = startBroker();
let failed = 0;
try {
  const proxy = await startProxy(await broker.url);
  const url = `http://localhost:${proxy.address().port}/mcp`;
  for (const scenario of scenarios) {
    const result = await runScenario(url, scenario);
    const summary = /Passed: \d+\/\d+[^\n]*/.exec(result.output)?.[0] ?? "no summary";
    process.stdout.write(`conformance ${scenario}: ${result.ok ? "ok" : "FAILED"} (${summary})\n`);
    if (!result.ok) {
      failed++;
      process.stdout.write(
        result.output.split("Test Results:")[0] + (/=== Failed Checks ===[\s\S]*?(?=\n\S[^\n]*:\n|$)/.exec(result.output)?.[0] ?? "") + "\n",
      );
    }
  }
  proxy.close();
} finally {
  broker.child.kill("SIGTERM");
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);

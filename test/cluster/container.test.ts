// deploy/Dockerfile, exercised as far as this machine allows: no container registry is reachable here, so the image
// itself is not built (its base image cannot be pulled). What the image runs is: its ENTRYPOINT, ENV and HEALTHCHECK
// are read from the file and run against this checkout's build, with /app mapped to the checkout and the port moved
// to a free one. The broker starts from the entrypoint as a cluster member, the health check passes once it is
// ready, and `docker stop` (SIGTERM) drains it: its browser is told to reconnect (1012) and it exits 0.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_TOKEN, PAIRING_TOKEN, waitFor } from "../harness.js";
import { startRedis, type TestRedis } from "../redis.js";
import { StubExtension } from "../stubExtension.js";
import { freePort } from "../ports.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
const DOCKERFILE = readFileSync(join(ROOT, "deploy/Dockerfile"), "utf8");

/** The JSON array after `instruction` in the Dockerfile's final stage (exec form). */
function execForm(instruction: string): string[] {
  const stage = DOCKERFILE.slice(DOCKERFILE.lastIndexOf("\nFROM "));
  const line = stage.split("\n").find((l) => l.startsWith(`${instruction} `));
  if (!line) throw new Error(`deploy/Dockerfile has no ${instruction} in its final stage`);
  const json = line.slice(line.indexOf("["));
  return JSON.parse(json) as string[];
}

function envOf(): Record<string, string> {
  const stage = DOCKERFILE.slice(DOCKERFILE.lastIndexOf("\nFROM "));
  const env: Record<string, string> = {};
  for (const line of stage.split("\n").filter((l) => l.startsWith("ENV "))) {
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const [key, value] = pair.split("=");
      if (key && value !== undefined) env[key] = value;
    }
  }
  return env;
}

let redis: TestRedis;
let dataDir: string;
let port: number;
let child: ChildProcess | undefined;

/** A command of the image, as it runs here: /app is the checkout, 9333 the free port. */
const here = (args: string[]) => args.map((a) => a.replaceAll("/app", ROOT).replaceAll("9333", String(port)));

beforeAll(async () => {
  redis = await startRedis();
  dataDir = mkdtempSync(join(tmpdir(), "tabrelay-container-"));
  port = await freePort();
  writeFileSync(join(dataDir, "config.yaml"), `cluster:\n  redis_url: "${redis.url}"\nmcp:\n  allowed_hosts: ["127.0.0.1:${port}"]\n`);
});

afterAll(async () => {
  child?.kill("SIGKILL");
  await redis?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("deploy/Dockerfile", () => {
  it("runs the broker from its entrypoint with its environment; the health check passes once ready", async () => {
    const env = envOf();
    expect(env["TABRELAY_DATA_DIR"]).toBe("/data");
    const [command, ...args] = here(execForm("ENTRYPOINT"));
    expect(command).toBe("node");
    child = spawn(process.execPath, args, {
      env: { ...process.env, ...env, TABRELAY_DATA_DIR: dataDir, TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    const healthcheck = here(execForm("HEALTHCHECK"));
    const healthy = () => spawnSync(process.execPath, healthcheck.slice(1), { timeout: 5000 }).status === 0;
    expect(healthcheck[0]).toBe("node");
    await waitFor(
      "the health check to pass",
      () => {
        if (child?.exitCode !== null && child?.exitCode !== undefined) throw new Error(`the entrypoint exited: ${stderr}`);
        return healthy() ? true : undefined;
      },
      20_000,
    );
    // Listening on every interface, as a container must: reachable on this machine's other address too, if it has one.
    const other = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    if (other) expect((await fetch(`http://${other}:${port}/health`)).status).toBe(200);
  });

  it("drains on docker stop (SIGTERM): its browser is told to reconnect elsewhere, and it exits 0", async () => {
    const stub = new StubExtension({ port, browserId: "container-stub", label: "stub" });
    await stub.welcomed;
    const exited = new Promise<number | null>((resolve) => child?.once("exit", (code) => resolve(code)));
    child?.kill("SIGTERM");
    expect(await stub.closed).toEqual({ code: 1012, reason: "draining" });
    expect(await exited).toBe(0);
  });
});

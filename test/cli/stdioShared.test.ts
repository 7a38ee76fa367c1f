// Several agents on one broker through `tabrelay stdio`, as their MCP clients start it: real `tabrelay stdio`
// processes (node packages/cli/bin/tabrelay.js stdio --port P --data-dir D), the SDK's own client on each, the
// shared broker they start, and a stub browser on the real bridge protocol. The broker outlives any one agent;
// when it goes away, the agents reconnect by themselves; a message over 10 MB is answered and the next one served.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StdinLines } from "@tabrelay/broker";
import { afterEach, describe, expect, it } from "vitest";
import { call, closedPort, MCP_TOKEN, PAIRING_TOKEN, waitFor } from "../harness.js";
import { StubExtension } from "../stubExtension.js";
import { CLI, cleanEnv, tempDir } from "./run.js";

const ENV = { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN };

interface Agent {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function agent(port: number, dataDir: string, name: string): Promise<Agent> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "stdio", "--port", String(port), "--data-dir", dataDir],
    env: cleanEnv(ENV),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name, version: "0" });
  await client.connect(transport);
  cleanups.push(() => client.close().catch(() => undefined));
  return { client, transport, stderr: () => stderr };
}

function sharedPid(dataDir: string): number | undefined {
  const file = join(dataDir, "shared-broker.json");
  if (!existsSync(file)) return undefined;
  try {
    const pid: unknown = Reflect.get(JSON.parse(readFileSync(file, "utf8")) as object, "pid");
    return typeof pid === "number" ? pid : undefined;
  } catch {
    return undefined; // removed meanwhile
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the shared brokers a test's agents started (they outlive the agents by design). */
function stopSharedBrokers(dataDir: string): void {
  cleanups.push(() => {
    const pid = sharedPid(dataDir);
    if (pid !== undefined && alive(pid)) process.kill(pid, "SIGKILL");
  });
}

async function stub(port: number, label: string, handlers: ConstructorParameters<typeof StubExtension>[0]["handlers"] = {}): Promise<StubExtension> {
  const s = new StubExtension({ port, label, handlers });
  cleanups.push(() => s.close());
  await s.welcomed;
  return s;
}

async function exited(pid: number | undefined): Promise<void> {
  if (pid === undefined) return;
  await waitFor(`process ${pid} to exit`, () => !alive(pid) || undefined, 10_000);
}

describe("tabrelay stdio: several agents share one broker that outlives any one of them", () => {
  it("two agents on one port: the first quits, the second's next call works and the browser stays connected", async () => {
    const port = await closedPort();
    const dataDir = tempDir("stdio-shared");
    stopSharedBrokers(dataDir);
    const first = await agent(port, dataDir, "first-agent");
    const second = await agent(port, dataDir, "second-agent");
    const brokerPid = sharedPid(dataDir);
    // The broker runs in a process of its own, not in the first agent's.
    expect(brokerPid).toBeDefined();
    expect(brokerPid).not.toBe(first.transport.pid);
    expect(first.stderr()).toMatch(/started a shared one in the background/);
    const browser = await stub(port, "shared stub");
    let browserClosed = false;
    void browser.closed.then(() => (browserClosed = true));
    for (const a of [first, second]) expect((await call(a.client, "list_browsers")).text).toContain("shared stub");

    const firstPid = first.transport.pid ?? undefined;
    await first.client.close();
    await exited(firstPid);
    expect((await call(second.client, "list_browsers")).text).toContain("shared stub");
    expect(browserClosed).toBe(false);
    expect(sharedPid(dataDir)).toBe(brokerPid);
  }, 60_000);

  it("the shared broker killed: the agents start a new one and carry on without initializing again; a call cut off says a retry works", async () => {
    const port = await closedPort();
    const dataDir = tempDir("stdio-killed");
    stopSharedBrokers(dataDir);
    const first = await agent(port, dataDir, "first-agent");
    const second = await agent(port, dataDir, "second-agent");
    const oldPid = sharedPid(dataDir);
    if (oldPid === undefined) throw new Error("no shared broker");
    await stub(port, "old stub", { "tabs.list": () => "never" });
    const cutOff = call(first.client, "list_tabs").then(
      () => "answered",
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    await new Promise((r) => setTimeout(r, 500));
    process.kill(oldPid, "SIGKILL");
    expect(await cutOff).toMatch(/connection to the broker at http:\/\/127\.0\.0\.1:\d+ was lost while this call ran.*reconnects by itself: retry the call/);
    // A new shared broker, started by one of the agents; both carry on on their own.
    const newPid = await waitFor("a new shared broker", () => {
      const pid = sharedPid(dataDir);
      return pid !== undefined && pid !== oldPid && alive(pid) ? pid : undefined;
    });
    for (const a of [second, first]) expect((await call(a.client, "list_browsers")).text).toContain("No browser is connected");
    // The browser dials whichever broker holds the port.
    await stub(port, "new stub");
    for (const a of [first, second]) expect((await call(a.client, "list_browsers")).text).toContain("new stub");
    expect(first.stderr() + second.stderr()).toMatch(/reconnected to the broker/);
    // Stopped cleanly (SIGTERM: it removes its pid file), the shared broker is replaced at once as well.
    process.kill(newPid, "SIGTERM");
    await exited(newPid);
    for (const a of [first, second]) expect((await call(a.client, "list_browsers")).text).toContain("No browser is connected");
    const thirdPid = sharedPid(dataDir);
    expect(thirdPid !== undefined && thirdPid !== newPid && alive(thirdPid)).toBe(true);
  }, 60_000);

  it("a broker of `tabrelay serve` stopped and started again on the port: the agents reconnect to it (and start none of their own)", async () => {
    const port = await closedPort();
    const dataDir = tempDir("stdio-serve");
    const serve = async (): Promise<ChildProcess> => {
      const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--data-dir", dataDir], {
        stdio: ["ignore", "ignore", "pipe"],
        env: cleanEnv(ENV),
      });
      cleanups.push(() => void child.kill("SIGKILL"));
      let stderr = "";
      child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      await waitFor("tabrelay serve to listen", () => stderr.includes("is listening on") || undefined, 20_000);
      return child;
    };
    const server = await serve();
    const first = await agent(port, dataDir, "first-agent");
    const second = await agent(port, dataDir, "second-agent");
    for (const a of [first, second]) expect((await call(a.client, "list_browsers")).isError).toBe(false);
    server.kill("SIGTERM");
    await exited(server.pid);
    await new Promise((r) => setTimeout(r, 1_000));
    await serve();
    for (const a of [first, second]) expect((await call(a.client, "list_browsers")).text).toContain("No browser is connected");
    expect(sharedPid(dataDir)).toBeUndefined();
  }, 60_000);

  it("an 11 MB message gets an error naming the limit, and the next call works", async () => {
    const port = await closedPort();
    const dataDir = tempDir("stdio-big");
    stopSharedBrokers(dataDir);
    const a = await agent(port, dataDir, "big-agent");
    const big = await a.client.callTool({ name: "read_url", arguments: { url: `http://127.0.0.1/${"x".repeat(11 * 1024 * 1024)}` } }).then(
      () => "answered",
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    expect(big).toMatch(/this message is 11\.0 MB, over the 10 MB limit for one MCP message on stdin.*nothing was done/);
    expect((await call(a.client, "list_browsers")).text).toContain("No browser is connected");
    expect(a.stderr()).not.toMatch(/session ending/);
  }, 60_000);

  it("a raw agent: the error carries the line's id, the next lines are served, and stdin closed ends with a reason", async () => {
    const port = await closedPort();
    const dataDir = tempDir("stdio-raw");
    stopSharedBrokers(dataDir);
    const child = spawn(process.execPath, [CLI, "stdio", "--port", String(port), "--data-dir", dataDir], {
      stdio: ["pipe", "pipe", "pipe"],
      env: cleanEnv(ENV),
    });
    cleanups.push(() => void child.kill("SIGKILL"));
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const answers = () =>
      stdout
        .split("\n")
        .filter(Boolean)
        .map((l): unknown => JSON.parse(l));
    const send = (m: unknown) => child.stdin.write(`${JSON.stringify(m)}\n`);
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
    await waitFor("initialize's answer", () => answers().length === 1 || undefined, 20_000);
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    child.stdin.write(
      `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"read_url","arguments":{"url":"${"y".repeat(11 * 1024 * 1024)}"}}}\n`,
    );
    child.stdin.write("not json\n");
    send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
    await waitFor("three more answers", () => answers().length === 4 || undefined, 20_000);
    expect(answers()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: "big-1", error: expect.objectContaining({ code: -32600, message: expect.stringContaining("over the 10 MB limit") }) }),
        expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32700 }) }),
        expect.objectContaining({ id: 3, result: expect.objectContaining({ tools: expect.any(Array) }) }),
      ]),
    );
    const code = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.stdin.end();
    expect(await code).toBe(0);
    expect(stderr).toMatch(/stdio session ending: the agent closed stdin/);
  }, 60_000);
});

describe("stdin lines over the limit", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  const refusedId = (line: string, limit = 1024) => {
    const reader = new StdinLines(limit);
    // In pieces, as a pipe delivers it.
    const bytes = encode(`${line}\n`);
    const out = [];
    for (let i = 0; i < bytes.length; i += 300) out.push(...reader.push(bytes.subarray(i, i + 300)));
    expect(out).toHaveLength(1);
    const [first] = out;
    return first?.kind === "refused" ? first.id : "not refused";
  };
  const pad = "z".repeat(5000);

  it("takes the top-level id from the head or the tail, never a nested one", () => {
    expect(refusedId(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"${pad}"}}`)).toBe(42);
    expect(refusedId(`{"method":"tools/call","params":{"x":"${pad}"},"jsonrpc":"2.0","id":"tail-7"}`)).toBe("tail-7");
    expect(refusedId(`{"method":"tools/call","params":{"id":5,"x":"${pad}","y":{"id":6}}}`)).toBeNull();
  });

  it("serves the next line after one over the limit, and keeps a line under it whole", () => {
    const reader = new StdinLines(1024);
    const out = reader.push(encode(`{"id":1,"x":"${pad}"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`));
    expect(out.map((l) => l.kind)).toEqual(["refused", "message"]);
    expect(out[1]).toEqual({ kind: "message", message: { jsonrpc: "2.0", id: 2, method: "ping" } });
  });
});

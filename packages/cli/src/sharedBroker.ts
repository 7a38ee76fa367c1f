// The broker `tabrelay stdio` agents share when no broker runs on the port: a detached background process
// (`tabrelay stdio --shared-broker`), so it outlives the agent that started it. It writes where it runs into the
// data dir (shared-broker.json) and its log beside it, and exits once no agent has had a session for a while.
import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Broker, VERSION, createLogger, type BrokerConfig, type NodeBrokerConfig } from "@tabrelay/broker";
import { EXIT, EnvironmentError, isAddressInUse, onShutdown } from "./commands/shared.js";

export const SHARED_MARKER = "shared-broker.json";
export const SHARED_LOG = "shared-broker.log";
/** The shared broker exits after this long without any MCP session (every agent gone). */
export const SHARED_IDLE_MS = 5 * 60_000;
/** A broker that was not the shared one (`tabrelay serve`, the service) gets this long to come back before an agent starts one. */
export const TAKEOVER_GRACE_MS = 30_000;

interface Marker {
  pid: number;
  host: string;
  port: number;
  version: string;
  startedAt: string;
}

export function readMarker(dataDir: string): Marker | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(join(dataDir, SHARED_MARKER), "utf8"));
    if (typeof value !== "object" || value === null) return undefined;
    const pid: unknown = Reflect.get(value, "pid");
    const port: unknown = Reflect.get(value, "port");
    const host: unknown = Reflect.get(value, "host");
    if (typeof pid !== "number" || typeof port !== "number" || typeof host !== "string") return undefined;
    return { pid, port, host, version: String(Reflect.get(value, "version")), startedAt: String(Reflect.get(value, "startedAt")) };
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM";
  }
}

/** `tabrelay stdio --shared-broker`: the broker alone, until no agent has used it for SHARED_IDLE_MS. */
export async function runSharedBroker(config: NodeBrokerConfig): Promise<number | undefined> {
  const broker = new Broker({ config, log: createLogger() });
  try {
    await broker.listen();
  } catch (error) {
    if (isAddressInUse(error)) {
      process.stderr.write(`tabrelay: port ${config.port} is taken (another agent's shared broker won the race, or another program); this one is not needed\n`);
      return EXIT.environment;
    }
    throw error;
  }
  const marker: Marker = { pid: process.pid, host: config.host, port: config.port, version: VERSION, startedAt: new Date().toISOString() };
  // Written whole, then renamed into place: a reader never sees half of it.
  const partial = join(config.dataDir, `${SHARED_MARKER}.${process.pid}`);
  writeFileSync(partial, `${JSON.stringify(marker)}\n`, { mode: 0o600 });
  renameSync(partial, join(config.dataDir, SHARED_MARKER));
  process.stderr.write(
    `${marker.startedAt} tabrelay ${VERSION}: shared broker for stdio agents on ${config.host}:${config.port} (pid ${process.pid}); exits after ${SHARED_IDLE_MS / 60_000} minutes without an agent\n`,
  );
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(idleCheck);
    process.stderr.write(`${new Date().toISOString()} tabrelay: shared broker stopping: ${why}\n`);
    if (readMarker(config.dataDir)?.pid === process.pid) rmSync(join(config.dataDir, SHARED_MARKER), { force: true });
    await broker.close();
  };
  let lastBusy = Date.now();
  const idleCheck = setInterval(
    () => {
      if (broker.mcpSessions > 0) lastBusy = Date.now();
      else if (Date.now() - lastBusy >= SHARED_IDLE_MS) void stop(`no agent for ${SHARED_IDLE_MS / 60_000} minutes`).then(() => process.exit(EXIT.ok));
    },
    Math.min(15_000, SHARED_IDLE_MS / 4),
  );
  onShutdown(() => stop("signal"));
  return undefined; // keep running
}

/** What a forwarder does when nothing listens on the broker's port: start the shared broker, now or after a grace. */
export class SharedBrokerStarter {
  readonly #config: BrokerConfig;
  readonly #configArg: string | undefined;
  readonly #base: string;
  #starting: Promise<void> | undefined;
  /** Whether the broker last reached was the shared one (nobody else brings that back). */
  #onShared = false;

  constructor(config: BrokerConfig, configArg: string | undefined, base: string) {
    this.#config = config;
    this.#configArg = configArg;
    this.#base = base;
  }

  /** The relay reached a broker: note whether it is the shared one. */
  connected(): void {
    const marker = readMarker(this.#config.dataDir);
    this.#onShared = marker !== undefined && marker.port === this.#config.port && alive(marker.pid);
  }

  /**
   * `lostForMs` undefined: the agent just started and no broker runs: start one. Otherwise the broker went away:
   * at once when it was the shared one (stopped, or gone without cleaning up), else after TAKEOVER_GRACE_MS
   * (a `tabrelay serve` or the service restarting gets the port back first).
   */
  async noBroker(lostForMs: number | undefined): Promise<void> {
    if (lostForMs !== undefined) {
      const marker = readMarker(this.#config.dataDir);
      const sharedDied = this.#onShared || (marker !== undefined && marker.port === this.#config.port && !alive(marker.pid));
      if (!sharedDied && lostForMs < TAKEOVER_GRACE_MS) return;
      // Several agents notice at once: let one go first.
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      if (await answers(this.#base)) return;
    }
    this.#starting ??= this.#start().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  async #start(): Promise<void> {
    const { dataDir, host, port } = this.#config;
    const logPath = join(dataDir, SHARED_LOG);
    try {
      if (statSync(logPath).size > 5 * 1024 * 1024) renameSync(logPath, `${logPath}.1`);
    } catch {
      // no log yet
    }
    const fd = openSync(logPath, "a", 0o600);
    const script = process.argv[1] ?? "";
    const args = [
      ...process.execArgv,
      script,
      "stdio",
      "--shared-broker",
      "--host",
      host,
      "--port",
      String(port),
      "--data-dir",
      dataDir,
      ...(this.#configArg ? ["--config", this.#configArg] : []),
    ];
    const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", "ignore", fd], cwd: dataDir, env: process.env });
    closeSync(fd);
    child.unref();
    let exited: number | null | undefined;
    child.once("exit", (code) => (exited = code));
    process.stderr.write(
      `tabrelay: no broker answered at ${this.#base}; started a shared one in the background (pid ${child.pid ?? "?"}, log ${logPath}); it outlives this agent\n`,
    );
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (await answers(this.#base)) return;
      // Exit 4: the port was taken meanwhile (another agent's shared broker): that one serves.
      if (exited !== undefined && exited !== EXIT.environment)
        throw new EnvironmentError(`the shared broker did not start (exit code ${String(exited)}); see ${logPath}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new EnvironmentError(`the shared broker did not answer at ${this.#base} within 15 s; see ${logPath}`);
  }
}

async function answers(base: string): Promise<boolean> {
  try {
    const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

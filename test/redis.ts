// A throwaway Redis server for tests, from Debian's package (`apt-get install redis-server`): its own free port on
// 127.0.0.1, its own temp dir, a random password (the URL carries it), no persistence (nothing saved, no append-only
// file: the data dies with the test). Several test files may each start one at once. kill() stops it the hard way,
// for a test of what brokers do when Redis dies.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";

const REDIS_SERVER = "/usr/bin/redis-server";

export interface TestRedis {
  /** redis://:<password>@127.0.0.1:<port> */
  url: string;
  port: number;
  password: string;
  /** SIGTERM, waits for the exit, removes the temp dir. */
  stop(): Promise<void>;
  /** SIGKILL, at once: the server vanishes as in a crash (stop() still cleans up after it). */
  kill(): void;
  /** SIGSTOP: the server holds every command unanswered (a stalled Redis) until resume(). */
  pause(): void;
  resume(): void;
}

export async function startRedis(): Promise<TestRedis> {
  if (!existsSync(REDIS_SERVER)) throw new Error(`no Redis server at ${REDIS_SERVER}: install it with \`apt-get install redis-server\``);
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-redis-"));
  const password = randomBytes(18).toString("base64url");
  const logFile = join(dir, "redis.log");
  let child: ChildProcess | undefined;
  let port: number;

  const kill = () => {
    try {
      child?.kill("SIGKILL");
    } catch {
      // Gone already.
    }
  };
  // A test process that dies without stop() must not leave a server behind.
  const stopNow = () => {
    kill();
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stopNow);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.off("exit", stopNow);
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child?.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(kill, 3000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })());

  try {
    // The free port can be taken by another test file between our probe and the server's bind: try again then.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      // In a file (0600), not on the command line where `ps` shows it.
      const configFile = join(dir, "redis.conf");
      const config = [
        `port ${port}`,
        "bind 127.0.0.1",
        "protected-mode yes",
        `requirepass ${password}`,
        'save ""',
        "appendonly no",
        `dir ${dir}`,
        `logfile ${logFile}`,
        "daemonize no",
      ];
      writeFileSync(configFile, `${config.join("\n")}\n`, { mode: 0o600 });
      const started = spawn(REDIS_SERVER, [configFile], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
      child = started;
      let stderr = "";
      started.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
      const exited = new Promise<string>((resolve) => {
        started.once("exit", (code, signal) => resolve(`exited (${signal ?? `code ${String(code)}`})`));
        started.once("error", (error) => resolve(error.message));
      });
      const outcome = await Promise.race([exited, answers(port, password, 10_000)]);
      if (outcome === "PONG") break;
      kill();
      const log = `${stderr}\n${existsSync(logFile) ? readFileSync(logFile, "utf8") : ""}`.trim();
      if (attempt < 5 && /Address already in use/.test(log)) continue;
      throw new Error(`Redis did not start (${outcome}):\n${log.split("\n").slice(-10).join("\n")}`);
    }
    return {
      url: `redis://:${password}@127.0.0.1:${port}`,
      port,
      password,
      stop,
      kill,
      pause: () => void child?.kill("SIGSTOP"),
      resume: () => void child?.kill("SIGCONT"),
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A reply as redisReplies gives it: `+OK` and `-ERR ...` lines as they are, `:1` as "1", bulk strings as their text. */
export type RedisReply = string | null | RedisReply[];

/**
 * Sends `commands` on one raw connection (RESP arrays of bulk strings) and gives back one reply per command. Enough
 * for AUTH, PING, CONFIG GET and simple keys; not a client.
 */
export function redisReplies(port: number, commands: string[][], timeoutMs = 2000): Promise<RedisReply[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let buffer = Buffer.alloc(0);
    const replies: RedisReply[] = [];
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`Redis on port ${port} sent ${replies.length} of ${commands.length} replies within ${timeoutMs} ms`)));
    socket.once("error", fail);
    socket.once("connect", () => {
      socket.write(commands.map((args) => `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("")}`).join(""));
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (let parsed = parseReply(buffer, 0); parsed; parsed = parseReply(buffer, 0)) {
        replies.push(parsed.reply);
        buffer = buffer.subarray(parsed.next);
      }
      if (replies.length >= commands.length) {
        socket.destroy();
        resolve(replies);
      }
    });
    socket.once("close", () => {
      if (replies.length < commands.length)
        reject(new Error(`Redis on port ${port} closed the connection after ${replies.length} of ${commands.length} replies`));
    });
  });
}

/** One RESP2 reply at `at`, or undefined while it has not all arrived. */
function parseReply(buffer: Buffer, at: number): { reply: RedisReply; next: number } | undefined {
  const end = buffer.indexOf("\r\n", at);
  if (end < 0) return undefined;
  const line = buffer.toString("utf8", at, end);
  const count = Number(line.slice(1));
  switch (line[0]) {
    case "$": {
      if (count < 0) return { reply: null, next: end + 2 };
      if (buffer.length < end + 2 + count + 2) return undefined;
      return { reply: buffer.toString("utf8", end + 2, end + 2 + count), next: end + 2 + count + 2 };
    }
    case "*": {
      if (count < 0) return { reply: null, next: end + 2 };
      const items: RedisReply[] = [];
      let next = end + 2;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, next);
        if (!item) return undefined;
        items.push(item.reply);
        next = item.next;
      }
      return { reply: items, next };
    }
    case ":":
      return { reply: line.slice(1), next: end + 2 };
    default:
      return { reply: line, next: end + 2 };
  }
}

/** "PONG" once the server answers AUTH + PING, or why not after `timeoutMs`. */
async function answers(port: number, password: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const [auth, ping] = await redisReplies(port, [["AUTH", password], ["PING"]], 1000);
      // Another program on the port answers something else (or another Redis, with another password).
      if (auth === "+OK" && ping === "+PONG") return "PONG";
      last = `AUTH answered ${JSON.stringify(auth)}, PING ${JSON.stringify(ping)}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return `no PONG within ${timeoutMs} ms: ${last}`;
}

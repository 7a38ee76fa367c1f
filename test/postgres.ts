// PostgreSQL for tests, from Debian's packages (`apt-get install postgresql`). One throwaway server per run
// (startPostgresServer, from test/services.ts, the e2e project's global setup): its own data dir under the temp dir,
// its own free port on 127.0.0.1, password auth over TCP (the URL carries a real password), no durability (fsync
// off: the data dies with the run). Each test file gets a database of its own on it (startPostgres); a file run
// outside the e2e project (no global setup) starts a server of its own.
// We run as root and PostgreSQL refuses to, so its binaries run as the `postgres` OS user (runuser).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { inject } from "vitest";
import { freePort } from "./ports.js";

const run = promisify(execFile);
const ROOT = "/usr/lib/postgresql";
const OS_USER = "postgres";
const DB_USER = "tabrelay";

export interface TestPostgres {
  /** postgres://tabrelay:<password>@127.0.0.1:<port>/<this file's database> */
  url: string;
  /** A further empty database on the same server (dropped by stop()); its URL. */
  createDatabase(): Promise<string>;
  /** Drops this file's databases (and stops the server, if this file started it). */
  stop(): Promise<void>;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's PostgreSQL server (test/services.ts): postgres://tabrelay:<password>@127.0.0.1:<port>, no database. */
    postgresServer?: string;
  }
}

/** A database of this file's own on the run's server (or on a server of its own outside the e2e project). */
export async function startPostgres(): Promise<TestPostgres> {
  let shared: string | undefined;
  try {
    shared = inject("postgresServer");
  } catch {
    // Not under vitest's runner with a global setup: no shared server.
  }
  const own = shared ? undefined : await startPostgresServer();
  const server = shared ?? own?.url ?? "";
  const prefix = `t_${process.pid}_${randomBytes(4).toString("hex")}`;
  const created: string[] = [];
  const createDatabase = async () => {
    const name = `${prefix}_${created.length}`;
    await onServer(server, `CREATE DATABASE ${name}`);
    created.push(name);
    return `${server}/${name}`;
  };
  try {
    const url = await createDatabase();
    return {
      url,
      createDatabase,
      async stop() {
        if (own) return own.stop();
        for (const name of created.splice(0)) await onServer(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      },
    };
  } catch (error) {
    await own?.stop();
    throw error;
  }
}

async function onServer(server: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

export interface PostgresServer {
  /** postgres://tabrelay:<password>@127.0.0.1:<port> (no database: append /<name>) */
  url: string;
  stop(): Promise<void>;
}

/** A server of its own: initdb, start, stop() kills it and removes its files. */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = binDir();
  const { uid, gid } = await osUser();
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-pg-"));
  chownSync(dir, uid, gid);
  const data = join(dir, "data");
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const passwordFile = join(dir, "password");
  writeFileSync(passwordFile, password, { mode: 0o600 });
  chownSync(passwordFile, uid, gid);
  let port: number;
  const stop = async () => {
    process.off("exit", stopNow);
    await asPostgres(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  // A test process that dies without stop() must not leave a server behind.
  const stopNow = () => {
    const pid = postmasterPid(data);
    try {
      if (pid) process.kill(pid, "SIGQUIT");
    } catch {
      // Gone already.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stopNow);
  try {
    await asPostgres(bin, "initdb", [
      "-D",
      data,
      "-U",
      DB_USER,
      `--pwfile=${passwordFile}`,
      "--auth-local=trust",
      "--auth-host=scram-sha-256",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);
    // The free port can be taken by another test file between our probe and the server's bind: try again then.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const options = [
        `-p ${port}`,
        "-c listen_addresses=127.0.0.1",
        `-k ${dir}`,
        "-c fsync=off",
        "-c synchronous_commit=off",
        "-c full_page_writes=off",
        "-c max_connections=400",
        "-c shared_buffers=64MB",
      ];
      try {
        await asPostgres(bin, "pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options.join(" "), "-w", "-t", "30", "start"]);
        break;
      } catch (error) {
        const log = existsSync(join(dir, "log")) ? readFileSync(join(dir, "log"), "utf8") : "";
        if (attempt >= 5 || !/could not (bind|create listen socket)/.test(log))
          throw new Error(`PostgreSQL did not start: ${String(error)}\n${log}`, { cause: error });
      }
    }
    return { url: `postgres://${DB_USER}:${password}@127.0.0.1:${port}`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function binDir(): string {
  const versions = existsSync(ROOT)
    ? readdirSync(ROOT)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(ROOT, name, "bin", "postgres")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) throw new Error(`no PostgreSQL server binaries in ${ROOT}/<version>/bin: install them with \`apt-get install postgresql\``);
  return join(ROOT, newest, "bin");
}

async function osUser(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run("id", ["-u", OS_USER]), run("id", ["-g", OS_USER])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function asPostgres(bin: string, tool: string, args: string[]): Promise<void> {
  await run("runuser", ["-u", OS_USER, "--", join(bin, tool), ...args], { cwd: "/" });
}

function postmasterPid(data: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

// A throwaway PostgreSQL server for tests, from Debian's packages (`apt-get install postgresql`): its own data dir
// under the temp dir, its own free port on 127.0.0.1, password auth over TCP (the URL carries a real password), no
// durability (fsync off: the data dies with the test). Several test files may each start one at once.
// We run as root and PostgreSQL refuses to, so its binaries run as the `postgres` OS user (runuser).
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./ports.js";

const run = promisify(execFile);
const ROOT = "/usr/lib/postgresql";
const OS_USER = "postgres";
const DB_USER = "tabrelay";
const DB_NAME = "tabrelay_test";

export interface TestPostgres {
  /** postgres://tabrelay:<password>@127.0.0.1:<port>/tabrelay_test */
  url: string;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  const { uid, gid } = await osUser();
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-pg-"));
  chownSync(dir, uid, gid);
  const data = join(dir, "data");
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const passwordFile = join(dir, "password");
  writeFileSync(passwordFile, password, { mode: 0o600 });
  chownSync(passwordFile, uid, gid);
  let port = 0;
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
    await asPostgres(bin, "initdb", ["-D", data, "-U", DB_USER, `--pwfile=${passwordFile}`, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"]);
    // The free port can be taken by another test file between our probe and the server's bind: try again then.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const options = [`-p ${port}`, "-c listen_addresses=127.0.0.1", `-k ${dir}`, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=50", "-c shared_buffers=16MB"];
      try {
        await asPostgres(bin, "pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options.join(" "), "-w", "-t", "30", "start"]);
        break;
      } catch (error) {
        const log = existsSync(join(dir, "log")) ? readFileSync(join(dir, "log"), "utf8") : "";
        if (attempt >= 5 || !/could not (bind|create listen socket)/.test(log)) throw new Error(`PostgreSQL did not start: ${String(error)}\n${log}`);
      }
    }
    const url = `postgres://${DB_USER}:${password}@127.0.0.1:${port}`;
    const admin = new pg.Client({ connectionString: `${url}/postgres` });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DB_NAME}`);
    } finally {
      await admin.end();
    }
    return { url: `${url}/${DB_NAME}`, stop };
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

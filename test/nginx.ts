// A throwaway nginx in front of test brokers, from Debian's package (`apt-get install nginx`), running the documented
// deployment config itself (deploy/nginx.conf): the lines marked `#@ name` there are rewritten for a test (brokers on
// 127.0.0.1, a free loopback port, plain HTTP, pid and logs in a temp dir); the rest runs as shipped. nginx runs in the
// foreground as this process's child, in its own process group so that its workers go with it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "./ports.js";

const run = promisify(execFile);
const NGINX = "/usr/sbin/nginx";
export const DEPLOY_CONFIG = fileURLToPath(new URL("../deploy/nginx.conf", import.meta.url));

export interface TestNginx {
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  /** Points nginx at other brokers (a reload: sockets already open stay where they are); resolves once new connections get the new list. */
  setUpstreams(ports: number[]): Promise<void>;
  stop(): Promise<void>;
}

export interface TestPaths {
  /** nginx's prefix: pid, logs and temp files live here. */
  dir: string;
  listenPort: number;
  /** TLS as a deployment has it (the `tls` lines kept, with these files): a certificate and its key, PEM. */
  tls?: { cert: string; key: string };
}

/**
 * deploy/nginx.conf with its `#@` lines rewritten for a test: `upstreams` are broker ports on 127.0.0.1. Throws on a
 * marker it does not know, so a new one in the deployment file cannot slip through untested.
 */
export function testConfig(template: string, upstreams: number[], paths: TestPaths): string {
  if (upstreams.length === 0) throw new Error("nginx needs at least one upstream port");
  let brokers = false;
  const out: string[] = [];
  for (const line of template.split("\n")) {
    const marker = /#@\s*(\w+)\s*$/.exec(line);
    if (!marker) {
      out.push(line);
      continue;
    }
    const indent = /^\s*/.exec(line)?.[0] ?? "";
    switch (marker[1]) {
      case "user": // As root the workers run as nobody; as anyone else nginx keeps the user it has.
        break;
      case "tls": // Plain HTTP on loopback, unless the test gives a certificate.
        if (paths.tls)
          out.push(
            line
              .replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${paths.tls.key};`)
              .replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${paths.tls.cert};`)
              .replace(/#@.*$/, ""),
          );
        break;
      case "pid":
        out.push(`${indent}pid ${join(paths.dir, "nginx.pid")};`);
        break;
      case "error_log":
        out.push(`${indent}error_log ${join(paths.dir, "error.log")} notice;`);
        break;
      case "access_log":
        out.push(`${indent}access_log ${join(paths.dir, "access.log")};`);
        break;
      case "http":
        out.push(`${indent}http {`);
        for (const kind of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) out.push(`${indent}    ${kind}_temp_path ${join(paths.dir, `${kind}_temp`)};`);
        break;
      case "listen":
        out.push(`${indent}listen 127.0.0.1:${paths.listenPort}${paths.tls ? " ssl" : ""};`);
        break;
      case "broker": {
        if (brokers) break;
        brokers = true;
        // The deployment's own server parameters (max_fails, fail_timeout), with the test's addresses.
        const rest = /server\s+\S+\s*([^;]*);/.exec(line)?.[1] ?? "";
        for (const port of upstreams) out.push(`${indent}server 127.0.0.1:${port}${rest ? ` ${rest.trim()}` : ""};`);
        break;
      }
      default:
        throw new Error(`deploy/nginx.conf: test/nginx.ts does not know the marker "#@ ${marker[1]}" (${line.trim()})`);
    }
  }
  if (!brokers) throw new Error("deploy/nginx.conf has no `#@ broker` line");
  return out.join("\n");
}

export async function startNginx(upstreams: number[], options: { tls?: { cert: string; key: string } } = {}): Promise<TestNginx> {
  if (!existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: install it with \`apt-get install nginx\``);
  const template = readFileSync(DEPLOY_CONFIG, "utf8");
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-nginx-"));
  // The workers (nobody, when we are root) read nothing here, but write proxy temp files under it.
  chmodSync(dir, 0o755);
  const configFile = join(dir, "nginx.conf");
  const errorLog = join(dir, "error.log");
  const args = ["-p", `${dir}/`, "-c", configFile, "-e", errorLog, "-g", "daemon off;"];
  let child: ChildProcess | undefined;
  let port: number;

  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child?.pid) process.kill(-child.pid, signal);
    } catch {
      // Gone already.
    }
  };
  // A test process that dies without stop() must not leave nginx listening.
  const stopNow = () => {
    killGroup("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stopNow);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.off("exit", stopNow);
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child?.once("exit", resolve));
        killGroup("SIGTERM"); // fast shutdown: open WebSockets are closed, not waited for
        const timer = setTimeout(() => killGroup("SIGKILL"), 3000);
        await exited;
        clearTimeout(timer);
      }
      killGroup("SIGKILL"); // a worker left behind by a master that died
      rmSync(dir, { recursive: true, force: true });
    })());

  const log = () => (existsSync(errorLog) ? readFileSync(errorLog, "utf8") : "");
  try {
    // The free port can be taken by someone else between our probe and nginx's bind: try again then.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      writeFileSync(configFile, testConfig(template, upstreams, { dir, listenPort: port, ...(options.tls ? { tls: options.tls } : {}) }));
      const started = spawn(NGINX, args, { cwd: dir, detached: true, stdio: ["ignore", "ignore", "pipe"] });
      child = started;
      let stderr = "";
      started.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8192)));
      const exited = new Promise<string>((resolve) => {
        started.once("exit", (code, signal) => resolve(`exited (${signal ?? `code ${String(code)}`})`));
        started.once("error", (error) => resolve(error.message));
      });
      const outcome = await Promise.race([
        exited,
        ready(join(dir, "nginx.pid"), started.pid ?? -1, port, 10_000).then((ok) => (ok ? "listening" : "no listener after 10 s")),
      ]);
      if (outcome === "listening") break;
      killGroup("SIGKILL");
      const why = `${stderr}\n${log()}`.trim();
      if (attempt < 5 && /Address already in use/.test(why)) continue;
      throw new Error(`nginx did not start (${outcome}):\n${why.split("\n").slice(-10).join("\n")}`);
    }
    const listenPort = port;
    return {
      port,
      url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`,
      stop,
      async setUpstreams(ports) {
        writeFileSync(configFile, testConfig(template, ports, { dir, listenPort, ...(options.tls ? { tls: options.tls } : {}) }));
        // A bad config would be logged and the old one kept: check it first, for a clear error.
        await run(NGINX, ["-t", "-q", ...args]).catch((error: { stderr?: string }) => {
          throw new Error(`nginx refused the new config: ${error.stderr ?? String(error)}`);
        });
        const before = log().length;
        child?.kill("SIGHUP"); // the master only: it starts new workers and retires the old ones
        // New workers started and every old one stopped taking connections (they finish their open ones).
        const deadline = Date.now() + 10_000;
        for (;;) {
          const since = log().slice(before);
          const started = (since.match(/start worker process \d+/g) ?? []).length;
          const retired = (since.match(/gracefully shutting down/g) ?? []).length;
          if (/reconfiguring/.test(since) && started > 0 && retired >= started) return;
          if (Date.now() > deadline) throw new Error(`nginx did not finish reloading within 10 s:\n${since}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Whether nginx `pid` bound its port within `timeoutMs`: it writes its pid file only after binding (another program
 * that holds the port would answer a knock too), and the port then accepts connections.
 */
async function ready(pidFile: string, pid: number, port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const written = existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() === String(pid);
    const ok =
      written &&
      (await new Promise<boolean>((resolve) => {
        const socket = connect({ host: "127.0.0.1", port });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      }));
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

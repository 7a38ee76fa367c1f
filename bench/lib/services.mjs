// The services bench/lib/cluster.mjs runs tabrelay's brokers among: Redis and nginx from Debian's packages, a free
// port, and a CPU meter over /proc for what each part of the setup used during a phase.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ROOT, cleanups, descendants, round, sleep, startedPids, tail, tempDir } from "./common.mjs";

const REDIS_SERVER = "/usr/bin/redis-server";
const NGINX = "/usr/sbin/nginx";
const DEPLOY_CONFIG = join(ROOT, "deploy/nginx.conf");

// ---------------------------------------------------------------------------------------------------------------
// Redis and nginx, from Debian's packages (ported from test/redis.ts and test/nginx.ts).

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on the port and, given `send`, answers with `expect` in it. */
function knock(port, send, expect) {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let got = "";
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => (send ? socket.write(send) : done(true)));
    socket.on("data", (chunk) => {
      got += chunk;
      if (got.includes(expect)) done(true);
    });
  });
}

export async function startRedis() {
  if (!existsSync(REDIS_SERVER)) throw new Error(`no Redis server at ${REDIS_SERVER}: apt-get install redis-server`);
  const dir = tempDir("redis");
  const password = randomBytes(18).toString("base64url");
  const port = await freePort();
  const configFile = join(dir, "redis.conf");
  writeFileSync(
    configFile,
    [
      `port ${port}`,
      "bind 127.0.0.1",
      "protected-mode yes",
      `requirepass ${password}`,
      'save ""',
      "appendonly no",
      `dir ${dir}`,
      `logfile ${join(dir, "redis.log")}`,
      "daemonize no",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const child = spawn(REDIS_SERVER, [configFile], { cwd: dir, stdio: ["ignore", "ignore", "ignore"] });
  startedPids.add(child.pid);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await Promise.race([exited, sleep(3000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    startedPids.delete(child.pid);
  };
  cleanups.push(stop);
  const deadline = Date.now() + 10_000;
  while (!(await knock(port, `AUTH ${password}\r\nPING\r\n`, "+PONG"))) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(
        `Redis did not start on port ${port}: ${existsSync(join(dir, "redis.log")) ? readFileSync(join(dir, "redis.log"), "utf8").slice(-1000) : ""}`,
      );
    await sleep(25);
  }
  return { url: `redis://:${password}@127.0.0.1:${port}`, port, pid: child.pid, stop };
}

/** deploy/nginx.conf with its `#@` lines rewritten as test/nginx.ts does, plus the X-Bench-Upstream header. */
function nginxConfig(template, upstreams, dir, listenPort) {
  let brokers = false;
  const out = [];
  for (const line of template.split("\n")) {
    const marker = /#@\s*(\w+)\s*$/.exec(line);
    if (!marker) {
      out.push(line);
      continue;
    }
    const indent = /^\s*/.exec(line)?.[0] ?? "";
    switch (marker[1]) {
      case "user":
      case "tls":
        break;
      case "pid":
        out.push(`${indent}pid ${join(dir, "nginx.pid")};`);
        break;
      case "error_log":
        out.push(`${indent}error_log ${join(dir, "error.log")} notice;`);
        break;
      case "access_log":
        // Off: 2 x 2,000 lines a second would be written to disk otherwise, and nobody reads them.
        out.push(`${indent}access_log off;`);
        break;
      case "http":
        out.push(`${indent}http {`);
        for (const kind of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) out.push(`${indent}    ${kind}_temp_path ${join(dir, `${kind}_temp`)};`);
        // The bench's one addition: which broker answered (no location sets add_header, so all inherit it).
        out.push(`${indent}    add_header X-Bench-Upstream $upstream_addr always;`);
        break;
      case "listen":
        out.push(`${indent}listen 127.0.0.1:${listenPort};`);
        break;
      case "broker": {
        if (brokers) break;
        brokers = true;
        const rest = /server\s+\S+\s*([^;]*);/.exec(line)?.[1] ?? "";
        for (const port of upstreams) out.push(`${indent}server 127.0.0.1:${port}${rest ? ` ${rest.trim()}` : ""};`);
        break;
      }
      default:
        throw new Error(`deploy/nginx.conf: bench/lib/cluster.mjs does not know the marker "#@ ${marker[1]}"`);
    }
  }
  if (!brokers) throw new Error("deploy/nginx.conf has no `#@ broker` line");
  return out.join("\n");
}

export async function startNginx(upstreams) {
  if (!existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: apt-get install nginx`);
  const dir = tempDir("nginx");
  chmodSync(dir, 0o755);
  const port = await freePort();
  const configFile = join(dir, "nginx.conf");
  writeFileSync(configFile, nginxConfig(readFileSync(DEPLOY_CONFIG, "utf8"), upstreams, dir, port));
  const child = spawn(NGINX, ["-p", `${dir}/`, "-c", configFile, "-e", join(dir, "error.log"), "-g", "daemon off;"], {
    cwd: dir,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = tail(child.stderr);
  startedPids.add(child.pid);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const killGroup = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // gone
    }
  };
  const stop = async () => {
    killGroup("SIGTERM");
    await Promise.race([exited, sleep(3000)]);
    killGroup("SIGKILL");
    startedPids.delete(child.pid);
  };
  cleanups.push(stop);
  const pidFile = join(dir, "nginx.pid");
  const deadline = Date.now() + 10_000;
  while (!(existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() === String(child.pid) && (await knock(port)))) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(
        `nginx did not start: ${stderr()}\n${existsSync(join(dir, "error.log")) ? readFileSync(join(dir, "error.log"), "utf8").slice(-1000) : ""}`,
      );
    await sleep(25);
  }
  /** What nginx logged about its upstreams (counts by kind), e.g. connections to a broker that timed out. */
  const upstreamErrors = () => {
    const text = existsSync(join(dir, "error.log")) ? readFileSync(join(dir, "error.log"), "utf8") : "";
    const kinds = {
      connectTimedOut: /upstream timed out \(110: Connection timed out\) while connecting to upstream/g,
      readTimedOut: /upstream timed out \(110: Connection timed out\) while reading/g,
      noLiveUpstreams: /no live upstreams/g,
      refused: /Connection refused\) while connecting to upstream/g,
      reset: /reset by peer\) while/g,
      prematurelyClosed: /upstream prematurely closed/g,
    };
    return Object.fromEntries(
      Object.entries(kinds)
        .map(([k, re]) => [k, (text.match(re) ?? []).length])
        .filter(([, n]) => n > 0),
    );
  };
  return { url: `http://127.0.0.1:${port}`, port, pid: child.pid, stop, upstreamErrors };
}

// ---------------------------------------------------------------------------------------------------------------
// CPU time of processes (and their children), from /proc: what each part of the setup used during a phase.

function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    for (const p of [pid, ...descendants(pid)]) {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
      } catch {
        // gone
      }
    }
  }
  return ticks / 100;
}

/** Busy CPU seconds of the whole machine (every core), from /proc/stat. */
function machineBusySeconds() {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/** Cores used by each group of processes over a phase, by the whole machine, and by everything else on it. */
export function cpuMeter(groups) {
  const before = Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, cpuSeconds(pids)]));
  const machine0 = machineBusySeconds();
  const t0 = performance.now();
  return () => {
    const s = (performance.now() - t0) / 1000;
    const out = Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, round((cpuSeconds(pids) - before[k]) / s, 2)]));
    const machine = (machineBusySeconds() - machine0) / s;
    const mine = Object.values(out).reduce((a, b) => a + b, 0);
    return { ...out, machine: round(machine, 2), otherWork: round(Math.max(0, machine - mine), 2) };
  };
}

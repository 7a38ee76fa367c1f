// Figures 19-20 (issue 16, a broker for a team): memory per idle connected browser, and several brokers under load.
// No peer has either: playwright-mcp and chrome-devtools-mcp are each one process for one person, with one browser
// and no remote browsers, so these figures are tabrelay's alone.
//
// 19. One broker (no cluster), its RSS and V8 heap after a forced GC; then N simulated browsers connect (2-4 child
//     processes, many WebSockets each, the real bridge handshake and sealed frames) and stay idle; measured again.
// 20. Three brokers sharing a Redis (presence, forwarded calls, MCP sessions), the documented deploy/nginx.conf in
//     front of them; N simulated browsers, each dialled directly to one broker (round robin over the three: the
//     handshake refuses a plain-ws relay it cannot prove, so through a loopback nginx it would not pass); MCP sessions
//     (the SDK's Client, streamable HTTP) from two child processes, through nginx, send list_tabs calls naming a
//     random browser. Each simulated browser answers tabs.list with one tab titled with its own id, so an answer naming
//     another browser than asked is seen ("crossed"). Phases: a fixed rate (open loop) for --duration seconds, then
//     back-to-back calls (--per-session in flight per session) for --saturation seconds; then the same on one broker
//     (no cluster, no Redis) holding every browser, behind the same nginx config with one upstream.
//     nginx gets one line more than the documented file, `add_header X-Bench-Upstream $upstream_addr always;`, so
//     the bench knows which broker each call landed on (local: the broker holding the browser; forwarded: another).
//
// `node bench/run.mjs --only=cluster [--browsers=1000] [--sessions=50] [--rate=100] [--duration=30] [--saturation=10]
//  [--per-session=1] [--memory-browsers=1000]` runs 19 and 20; `--only=idle-memory` runs 19 alone.
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { BENCH, MCP_TOKEN, PAIRING_TOKEN, ROOT, cleanups, log, message, quantile, round, runCleanups, sleep, startedPids, tail, tempDir } from "./common.mjs";
import { printTable, verdict } from "./output.mjs";
import { cpuMeter, startNginx, startRedis } from "./services.mjs";

const CHILD = fileURLToPath(new URL("./clusterChild.mjs", import.meta.url));
/** The node flags the tabrelay bin runs the broker with (packages/cli/bin/tabrelay.js), and its environment. */
const BROKER_EXEC_ARGV = ["--max-semi-space-size=1", "--optimize-for-size", "--expose-gc"];
const BROKER_ENV = { MALLOC_ARENA_MAX: "1" };

export const CLUSTER_DEFAULTS = { browsers: 1000, sessions: 50, rate: 100, duration: 30, saturation: 10, perSession: 1, memoryBrowsers: 1000, brokers: 3 };

export function clusterOptions(argv) {
  const flag = (name, fallback) => {
    const hit = argv.find((a) => a.startsWith(`--${name}=`));
    if (!hit) return fallback;
    const value = Number(hit.slice(name.length + 3));
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
    return value;
  };
  const d = CLUSTER_DEFAULTS;
  return {
    browsers: flag("browsers", d.browsers),
    sessions: flag("sessions", d.sessions),
    rate: flag("rate", d.rate),
    duration: flag("duration", d.duration),
    saturation: flag("saturation", d.saturation),
    perSession: flag("per-session", d.perSession),
    memoryBrowsers: flag("memory-browsers", d.memoryBrowsers),
    brokers: d.brokers,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Child processes (bench/lib/clusterChild.mjs), driven over IPC.

function startChild(role, { execArgv = [], env = {} } = {}) {
  const child = fork(CHILD, [role], { cwd: ROOT, execArgv, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe", "ipc"] });
  startedPids.add(child.pid);
  const stderr = tail(child.stderr);
  const waiting = new Map();
  let seq = 0;
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  void exited.then(({ code, signal }) => {
    startedPids.delete(child.pid);
    for (const { reject } of waiting.values()) reject(new Error(`${role} process exited (${code ?? signal}):\n${stderr()}`));
    waiting.clear();
  });
  child.on("message", (msg) => {
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.ok) w.resolve(msg.value);
    else w.reject(new Error(`${role}: ${msg.error}`));
  });
  const request = (type, body = {}) =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      waiting.set(id, { resolve, reject });
      child.send({ id, type, ...body });
    });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await Promise.race([request("close").catch(() => undefined), sleep(15_000)]);
    await Promise.race([exited, sleep(3000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  return { child, pid: child.pid, request, stop, stderr };
}

async function startBroker({ yaml, cluster }) {
  const dataDir = tempDir("cluster-broker");
  writeFileSync(join(dataDir, "config.yaml"), yaml);
  // TABRELAY_BENCH_CPU_PROF=DIR (diagnostics): each broker writes a V8 CPU profile there when it stops.
  const prof = process.env.TABRELAY_BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.TABRELAY_BENCH_CPU_PROF}`] : [];
  const proc = startChild("broker", { execArgv: [...BROKER_EXEC_ARGV, ...prof], env: BROKER_ENV });
  cleanups.push(proc.stop);
  const env = { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN };
  const { port } = await proc.request("start", { dataDir, env });
  return { ...proc, port, cluster };
}

function brokerYaml({ redisUrl, brokerId } = {}) {
  return [
    "mcp:",
    '  allowed_hosts: ["127.0.0.1"]',
    "  max_sessions: 1000",
    "  max_sessions_per_client: 1000",
    ...(redisUrl ? ["cluster:", `  redis_url: "${redisUrl}"`, `  broker_id: ${brokerId}`] : []),
    "",
  ].join("\n");
}

/** `targets` ({port, browserId}) spread over `processes` simulated-browser processes, connected. */
async function startBrowsers(targets, processes) {
  const procs = Array.from({ length: processes }, () => startChild("browsers"));
  for (const p of procs) cleanups.push(p.stop);
  const t0 = performance.now();
  const parts = procs.map((_, i) => targets.filter((__, j) => j % processes === i));
  const results = await Promise.all(procs.map((p, i) => p.request("connect", { targets: parts[i], token: PAIRING_TOKEN, concurrency: 16 })));
  const connected = results.reduce((n, r) => n + r.connected, 0);
  if (connected < targets.length)
    throw new Error(`only ${connected} of ${targets.length} simulated browsers connected: ${results.flatMap((r) => r.firstFailures).join("; ")}`);
  return { procs, connectS: round((performance.now() - t0) / 1000, 1) };
}

function browserProcesses(n) {
  return Math.max(2, Math.min(4, Math.ceil(n / 250)));
}

function simIds(n) {
  const salt = randomBytes(3).toString("hex");
  return Array.from({ length: n }, (_, i) => `sim-${salt}-${String(i).padStart(5, "0")}`);
}

// ---------------------------------------------------------------------------------------------------------------
// 19: memory per idle connected browser.

const MiB = 1024 * 1024;

export async function benchIdleMemory(opts) {
  const n = opts.memoryBrowsers;
  log(`19: one broker, ${n} idle simulated browsers ...`);
  const broker = await startBroker({ yaml: brokerYaml() });
  try {
    await sleep(1000);
    const before = await broker.request("memory");
    const ids = simIds(n);
    const { procs, connectS } = await startBrowsers(
      ids.map((browserId) => ({ port: broker.port, browserId })),
      browserProcesses(n),
    );
    await sleep(3000);
    const after = await broker.request("memory");
    for (const p of procs) await p.stop();
    if (after.browsers !== n) throw new Error(`the broker holds ${after.browsers} browsers, not ${n}`);
    const per = (key) => round((after[key] - before[key]) / n / 1024, 1);
    return {
      n,
      connectS,
      gcExposed: after.gcExposed,
      before: mib(before),
      after: mib(after),
      perBrowserKiB: { rss: per("rss"), rssAnon: per("rssAnon"), heapUsed: per("heapUsed"), external: per("external") },
    };
  } finally {
    await broker.stop();
  }
}

function mib(m) {
  return {
    rss: round(m.rss / MiB, 1),
    rssAnon: round(m.rssAnon / MiB, 1),
    heapUsed: round(m.heapUsed / MiB, 1),
    heapTotal: round(m.heapTotal / MiB, 1),
    external: round(m.external / MiB, 1),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 20: several brokers under load.

/** The load on one topology: brokers up, browsers connected, nginx in front; the rate phase, then saturation. */
async function loadPass(opts, topology) {
  const count = topology === "three" ? opts.brokers : 1;
  const redis = topology === "three" ? await startRedis() : undefined;
  const brokers = [];
  for (let i = 0; i < count; i++)
    brokers.push(await startBroker({ yaml: brokerYaml(redis ? { redisUrl: redis.url, brokerId: `bench-${i}` } : {}), cluster: Boolean(redis) }));
  const ids = simIds(opts.browsers);
  const holder = ids.map((_, i) => i % count);
  log(`20 (${topology === "three" ? `${count} brokers` : "one broker"}): ${opts.browsers} simulated browsers connecting ...`);
  const { procs: browserProcs, connectS } = await startBrowsers(
    ids.map((browserId, i) => ({ port: brokers[holder[i]].port, browserId })),
    browserProcesses(opts.browsers),
  );
  // Every broker knows every browser before the agents start.
  const presenceT0 = performance.now();
  for (;;) {
    const counts = await Promise.all(brokers.map((b) => b.request("count")));
    if (counts.every((c) => c.local + c.remote === opts.browsers)) break;
    if (performance.now() - presenceT0 > 30_000) throw new Error(`presence incomplete after 30 s: ${JSON.stringify(counts)}`);
    await sleep(100);
  }
  const presenceS = round((performance.now() - presenceT0) / 1000, 2);
  const nginx = await startNginx(brokers.map((b) => b.port));
  const upstreamIndex = new Map(brokers.map((b, i) => [`127.0.0.1:${b.port}`, i]));
  const agentProcs = [startChild("agents"), startChild("agents")];
  for (const p of agentProcs) cleanups.push(p.stop);
  const perProc = [Math.ceil(opts.sessions / 2), Math.floor(opts.sessions / 2)];
  const opened = await Promise.all(agentProcs.map((p, i) => p.request("open", { url: nginx.url, token: MCP_TOKEN, sessions: perProc[i], browserIds: ids })));
  const meter = () =>
    cpuMeter({
      brokers: brokers.map((b) => b.pid),
      nginx: [nginx.pid],
      ...(redis ? { redis: [redis.pid] } : {}),
      browsers: browserProcs.map((p) => p.pid),
      agents: agentProcs.map((p) => p.pid),
    });
  const phase = async (what, body) => {
    const cpu = meter();
    const load0 = loadavg()[0];
    const nginxBefore = nginx.upstreamErrors();
    await Promise.all(brokers.map((b) => b.request("lag")));
    const tallies = await Promise.all(
      agentProcs.map((p, i) => p.request("run", { ...body, ...(body.rate ? { rate: (body.rate * perProc[i]) / opts.sessions } : {}) })),
    );
    const cpuCoresUsed = cpu();
    const brokerLoopDelayMs = await Promise.all(brokers.map((b) => b.request("lag")));
    return {
      ...summarise(tallies, holder, upstreamIndex, what === "rate" ? body.rate : undefined),
      cpuCoresUsed,
      brokerLoopDelayMs,
      nginxUpstreamErrors: countsSince(nginx.upstreamErrors(), nginxBefore),
      loadavg1: [round(load0, 2), round(loadavg()[0], 2)],
    };
  };
  try {
    // A short warm-up (JIT, connection pools), not counted.
    await phase("warmup", { mode: "rate", rate: Math.min(opts.rate, 200), durationMs: 2000 });
    log(`20 (${topology}): ${opts.rate} calls/s for ${opts.duration} s ...`);
    const rate = await phase("rate", { mode: "rate", rate: opts.rate, durationMs: opts.duration * 1000 });
    log(`20 (${topology}): back to back, ${opts.perSession} in flight per session, ${opts.saturation} s ...`);
    const saturation = await phase("saturation", { mode: "closed", perSession: opts.perSession, durationMs: opts.saturation * 1000 });
    const simStats = await Promise.all(browserProcs.map((p) => p.request("stats")));
    return {
      brokers: count,
      connectS,
      presenceS,
      sessionsOpenS: round(Math.max(...opened.map((o) => o.ms)) / 1000, 1),
      rate,
      saturation,
      browsersAfter: {
        open: simStats.reduce((n, s) => n + s.open, 0),
        unexpectedCloses: simStats.reduce((n, s) => n + s.unexpectedCloses, 0),
        methods: mergeCounts(simStats.map((s) => s.methods)),
      },
    };
  } finally {
    for (const p of agentProcs) await p.stop();
    await nginx.stop();
    for (const p of browserProcs) await p.stop();
    for (const b of brokers) await b.stop();
    if (redis) await redis.stop();
  }
}

function countsSince(now, before) {
  return Object.fromEntries(
    Object.entries(now)
      .map(([k, n]) => [k, n - (before[k] ?? 0)])
      .filter(([, n]) => n > 0),
  );
}

function mergeCounts(list) {
  const out = {};
  for (const counts of list) for (const [k, v] of Object.entries(counts)) out[k] = (out[k] ?? 0) + v;
  return out;
}

function latencyStats(values) {
  if (!values.length) return { n: 0 };
  const s = [...values].sort((a, b) => a - b);
  return { n: s.length, p50: round(quantile(s, 0.5)), p90: round(quantile(s, 0.9)), p99: round(quantile(s, 0.99)), max: round(s[s.length - 1]) };
}

function summarise(tallies, holder, upstreamIndex, rateAsked) {
  const all = [];
  const local = [];
  const forwarded = [];
  let unknownLanding = 0;
  for (const t of tallies) {
    for (const [ms, b, upstream] of t.latencies) {
      all.push(ms);
      const landed = upstreamIndex.get(upstream);
      if (landed === undefined) unknownLanding++;
      else if (landed === holder[b]) local.push(ms);
      else forwarded.push(ms);
    }
  }
  const sum = (key) => tallies.reduce((n, t) => n + t[key], 0);
  const elapsedS = Math.max(...tallies.map((t) => t.elapsedMs)) / 1000;
  const issuedS = Math.max(...tallies.map((t) => t.issuedMs)) / 1000;
  const answered = sum("answered");
  return {
    rateAsked,
    sent: sum("sent"),
    notSent: sum("notSent"),
    answered,
    ok: sum("ok"),
    crossed: sum("crossed"),
    lost: sum("lost"),
    errors: mergeCounts(tallies.map((t) => t.errors)),
    samples: { crossed: tallies.flatMap((t) => t.crossedSamples).slice(0, 3), lost: tallies.flatMap((t) => t.lostSamples).slice(0, 3) },
    elapsedS: round(elapsedS, 2),
    // Answers per second over the phase (from its first call to its last answer).
    achievedPerS: round(answered / elapsedS, 1),
    issuedPerS: round(sum("sent") / issuedS, 1),
    latency: latencyStats(all),
    local: latencyStats(local),
    forwarded: latencyStats(forwarded),
    unknownLanding,
  };
}

export async function benchClusterLoad(opts) {
  const out = { options: opts };
  for (const topology of ["three", "one"]) {
    try {
      out[topology] = await loadPass(opts, topology);
    } catch (error) {
      out[topology] = { error: message(error) };
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The table.

const NO_PEER = "- (no peer equivalent)";

export function idleMemoryRows(mem) {
  if (!mem) return [];
  if (mem.error)
    return [
      {
        figure: "19. memory per idle connected browser, one broker",
        tabrelay: `failed: ${mem.error.split("\n")[0].slice(0, 80)}`,
        playwright: NO_PEER,
        devtools: NO_PEER,
        target: "<= 50 KiB",
      },
    ];
  return [
    {
      figure: `19. memory per idle connected browser, one broker (N=${mem.n} simulated)`,
      tabrelay: `${mem.perBrowserKiB.rss} KiB RSS (V8 heap ${mem.perBrowserKiB.heapUsed} KiB, external ${mem.perBrowserKiB.external} KiB)`,
      playwright: NO_PEER,
      devtools: NO_PEER,
      target: `<= 50 KiB${verdict(mem.perBrowserKiB.rss <= 50)}`,
    },
    {
      figure: "    broker RSS / V8 heap used, no browser -> all connected (after GC)",
      tabrelay: `${mem.before.rss} -> ${mem.after.rss} MiB / ${mem.before.heapUsed} -> ${mem.after.heapUsed} MiB`,
      playwright: "",
      devtools: "",
      target: "",
    },
    { figure: "    time to connect them all (handshakes, 16 at a time per process)", tabrelay: `${mem.connectS} s`, playwright: "", devtools: "", target: "" },
  ];
}

export function clusterRows(load) {
  if (!load) return [];
  const o = load.options;
  const rows = [];
  const cell = (pass, fn) => (!pass ? "n/a" : pass.error ? `failed: ${pass.error.split("\n")[0].slice(0, 80)}` : fn(pass));
  const lat = (s) => (s?.n ? `p50 ${s.p50} ms, p99 ${s.p99} ms (N=${s.n})` : "none");
  const three = load.three;
  const one = load.one;
  rows.push(
    {
      figure: `20. ${o.brokers} brokers + Redis behind nginx, ${o.browsers} simulated browsers, ${o.sessions} MCP sessions: list_tabs at ${o.rate}/s for ${o.duration} s`,
      tabrelay: cell(three, (p) => lat(p.rate.latency)),
      playwright: NO_PEER,
      devtools: NO_PEER,
      target: `p99 < 50 ms${three?.rate?.latency?.n ? verdict(three.rate.latency.p99 < 50) : ""}`,
    },
    {
      figure: "    calls/s asked / answered",
      tabrelay: cell(
        three,
        (p) => `${p.rate.rateAsked} / ${p.rate.achievedPerS}${p.rate.notSent ? ` (${p.rate.notSent} not sent: client at its in-flight cap)` : ""}`,
      ),
      playwright: "",
      devtools: "",
      target: "2,000/s for 60 s (issue 16)",
    },
    {
      figure: "    calls lost (no answer) / crossed (another browser's answer) / refused",
      tabrelay: cell(
        three,
        (p) =>
          `${p.rate.lost} / ${p.rate.crossed} / ${Object.values(p.rate.errors).reduce((a, b) => a + b, 0)}${Object.keys(p.rate.errors).length ? ` ${JSON.stringify(p.rate.errors)}` : ""} of ${p.rate.sent}`,
      ),
      playwright: "",
      devtools: "",
      target: `0 / 0${three?.rate ? verdict(three.rate.lost === 0 && three.rate.crossed === 0) : ""}`,
    },
    { figure: "    local (landed on the browser's broker)", tabrelay: cell(three, (p) => lat(p.rate.local)), playwright: "", devtools: "", target: "" },
    {
      figure: "    forwarded (landed on another broker, through Redis)",
      tabrelay: cell(
        three,
        (p) => `${lat(p.rate.forwarded)}${p.rate.local.n && p.rate.forwarded.n ? `; +${round(p.rate.forwarded.p50 - p.rate.local.p50, 2)} ms at p50` : ""}`,
      ),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "    during the rate phase: brokers' event loop delay p99 / max; nginx's upstream errors",
      tabrelay: cell(
        three,
        (p) =>
          `${p.rate.brokerLoopDelayMs.map((l) => `${l.p99}/${l.max}`).join(", ")} ms; ${Object.keys(p.rate.nginxUpstreamErrors).length ? JSON.stringify(p.rate.nginxUpstreamErrors) : "none"}`,
      ),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "    CPU cores used during the rate phase (of 2; otherWork: processes not the bench's)",
      tabrelay: cell(three, (p) =>
        Object.entries(p.rate.cpuCoresUsed)
          .map(([k, v]) => `${k} ${v}`)
          .join(", "),
      ),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: `    the same load on one broker (no cluster) holding all ${o.browsers}`,
      tabrelay: cell(one, (p) => `${lat(p.rate.latency)}; ${p.rate.achievedPerS}/s answered; lost ${p.rate.lost}, crossed ${p.rate.crossed}`),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: `    throughput, calls back to back (${o.perSession} in flight per session, ${o.saturation} s): three brokers / one broker`,
      tabrelay: `${cell(three, (p) => `${p.saturation.achievedPerS}/s (p99 ${p.saturation.latency.p99} ms)`)} / ${cell(one, (p) => `${p.saturation.achievedPerS}/s (p99 ${p.saturation.latency.p99} ms)`)}`,
      playwright: "",
      devtools: "",
      target: three?.saturation && one?.saturation ? `${round(three.saturation.achievedPerS / one.saturation.achievedPerS, 2)}x one broker` : "",
    },
    {
      figure: "    lost / crossed while back to back: three brokers / one broker",
      tabrelay: `${cell(three, (p) => `${p.saturation.lost} / ${p.saturation.crossed}`)} / ${cell(one, (p) => `${p.saturation.lost} / ${p.saturation.crossed}`)}`,
      playwright: "",
      devtools: "",
      target: "0 / 0",
    },
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------------------------
// `--only=cluster` / `--only=idle-memory` (bench/run.mjs).

export async function runClusterBench(argv) {
  const started = performance.now();
  const opts = clusterOptions(argv);
  const onlyMemory = argv.includes("--only=idle-memory");
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: (await import("node:os")).cpus().length,
    loadavgAtStart: loadavg().map((x) => round(x, 2)),
  };
  let memory;
  try {
    memory = await benchIdleMemory(opts);
  } catch (error) {
    memory = { error: message(error) };
  }
  await runCleanups();
  let load;
  if (!onlyMemory) {
    load = await benchClusterLoad(opts);
    await runCleanups();
  }
  meta.durationS = round((performance.now() - started) / 1000, 1);
  process.stdout.write(
    `\ntabrelay benchmark, ${meta.date}: issue 16 figures, Node ${process.version}, ${meta.cpus} CPUs, load average at start ${meta.loadavgAtStart.join(" ")}\n\n`,
  );
  printTable([...idleMemoryRows(memory), ...clusterRows(load)]);
  const notes = [
    "No peer equivalent: playwright-mcp and chrome-devtools-mcp are each one process for one person (one browser, stdio), with no remote browsers and no several-server mode.",
    "Everything runs on this one machine: brokers, Redis, nginx, the simulated browsers and the MCP clients share its CPUs, so the rate and throughput figures are this machine's, not a cluster's.",
    "Simulated browsers: child processes speaking the real bridge protocol (hello, challenge, auth, HMAC-sealed frames) with @tabrelay/protocol's handshake code; each answers tabs.list with one tab titled with its own browser id. No pings (the extension sends one every 20 s).",
    "19: the broker (packages/broker/dist in a child process with the tabrelay bin's node flags and MALLOC_ARENA_MAX=1), measured after GC until the heap stops shrinking, before any browser and 3 s after the last one connected; KiB per browser = the difference / N.",
    ...(load
      ? [
          "20: browsers dial their broker directly (the handshake's relay check refuses plain ws through a loopback nginx); MCP calls go through nginx round robin. nginx runs deploy/nginx.conf with its marked lines rewritten as test/nginx.ts does, access_log off, and one line added, `add_header X-Bench-Upstream $upstream_addr`, to tell local from forwarded calls. Latency: the client's callTool, from send to answer. Rate phase: open loop (calls sent on schedule whatever the answers), after a 2 s warm-up; lost = no answer within 30 s or a transport error; crossed = an answer listing another browser's tab than the one named. One broker: no Redis, every browser on it, the same nginx config with one upstream.",
        ]
      : []),
  ];
  process.stdout.write(`\nNotes:\n${notes.map((n) => `- ${n}`).join("\n")}\n`);
  const failures = [
    memory?.error && `19: ${memory.error}`,
    load?.three?.error && `20 (three brokers): ${load.three.error}`,
    load?.one?.error && `20 (one broker): ${load.one.error}`,
  ].filter(Boolean);
  if (failures.length) process.stdout.write(`\nDid not work:\n${failures.map((f) => `- ${f.split("\n").slice(0, 8).join("\n  ")}`).join("\n")}\n`);
  const file = onlyMemory ? "idle-memory.json" : "cluster.json";
  process.stdout.write(`\n(${meta.durationS} s; JSON in bench/results/${file})\n`);
  mkdirSync(join(BENCH, "results"), { recursive: true });
  writeFileSync(join(BENCH, "results", file), `${JSON.stringify({ meta: { ...meta, notes }, memory, load }, null, 2)}\n`);
}

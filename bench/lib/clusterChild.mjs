// The processes of figures 19-20 (bench/lib/cluster.mjs), one role each, driven by their parent over IPC:
//   broker   a tabrelay broker (packages/broker/dist) with the node flags of the tabrelay bin; reports its memory
//            after a forced GC, and how many browsers it holds and knows of on other brokers;
//   browsers simulated browsers: many WebSockets speaking the real bridge protocol (hello, the broker's challenge
//            checked, auth, sealed frames, with @tabrelay/protocol's own handshake code, as test/stubExtension.ts);
//            each answers tabs.list with one tab whose title is its own browser id;
//   agents   MCP sessions (the SDK's Client over streamable HTTP) sending list_tabs calls naming random browsers,
//            at a fixed rate or back to back, and what each answer was.
// Every request is {id, type, ...}; every reply {id, ok, value | error}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const ROOT = new URL("../../", import.meta.url).pathname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const handlers = {};
let setUp;
const ready = new Promise((resolve) => (setUp = resolve));

process.on("message", async (msg) => {
  try {
    await ready; // the role's imports, which register its handlers
    const value = await handlers[msg.type](msg);
    process.send({ id: msg.id, ok: true, value });
  } catch (error) {
    process.send({ id: msg.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
});
process.on("disconnect", () => process.exit(0));

const role = process.argv[2];
if (role === "broker") await brokerRole();
else if (role === "browsers") await browsersRole();
else if (role === "agents") await agentsRole();
else throw new Error(`clusterChild: unknown role ${role}`);
setUp();

// ---------------------------------------------------------------------------------------------------------------

async function brokerRole() {
  const { Broker, loadConfig, silentLogger } = await import(pathToFileURL(join(ROOT, "packages/broker/dist/index.js")).href);
  let broker;
  handlers.start = async ({ dataDir, env }) => {
    const config = loadConfig({ dataDir, port: 0, env });
    broker = new Broker({ config, log: silentLogger });
    const { port } = await broker.listen();
    return { port, pid: process.pid };
  };
  handlers.memory = async () => {
    // GC until the heap stops shrinking, then let the allocator settle.
    let last = Infinity;
    for (let i = 0; i < 6; i++) {
      globalThis.gc?.();
      await sleep(200);
      const used = process.memoryUsage().heapUsed;
      if (last - used < 64 * 1024) break;
      last = used;
    }
    await sleep(500);
    const m = process.memoryUsage();
    const status = readFileSync("/proc/self/status", "utf8");
    const kb = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1]);
    return {
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      rssAnon: kb("RssAnon") * 1024,
      rssFile: kb("RssFile") * 1024,
      browsers: broker.registry.list().length,
      gcExposed: typeof globalThis.gc === "function",
    };
  };
  // How late the broker's event loop ran (a stall delays every call, and a beat late by 1.5 s makes the other
  // brokers take this one for dead); read and reset per phase.
  const { monitorEventLoopDelay } = await import("node:perf_hooks");
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  handlers.lag = () => {
    // The histogram records the whole interval between checks: the delay is what exceeds the 10 ms resolution.
    const ms = (ns) => Math.max(0, Math.round((ns - 10e6) / 1e4) / 100);
    const out = { p50: ms(lag.percentile(50)), p99: ms(lag.percentile(99)), max: ms(lag.max) };
    lag.reset();
    return out;
  };
  handlers.count = () => ({ local: broker.registry.list().length, remote: broker.context.cluster?.remoteBrowsers("default").length ?? 0 });
  handlers.close = async () => {
    await broker.close();
    setTimeout(() => process.exit(0), 20);
  };
}

// ---------------------------------------------------------------------------------------------------------------

async function browsersRole() {
  const { default: WebSocket } = await import("ws");
  const protocol = await import(pathToFileURL(join(ROOT, "packages/protocol/dist/index.js")).href);
  const { BUILTIN_EXTENSION_ID } = await import(pathToFileURL(join(ROOT, "packages/broker/dist/config/build.js")).href);
  const { FrameOpener, FrameSealer, PROTOCOL_VERSION, bridgeProof, canonicalEndpoint, frameKeys, newNonce, proofsEqual } = protocol;
  const sockets = new Map();
  const methods = {};
  let unexpectedCloses = 0;

  function connect({ port, browserId, token }) {
    return new Promise((resolve, reject) => {
      const url = `ws://127.0.0.1:${port}/bridge`;
      const endpoint = canonicalEndpoint(url);
      const ws = new WebSocket(url, { origin: `chrome-extension://${BUILTIN_EXTENSION_ID}`, perMessageDeflate: false });
      const nonce = newNonce();
      const tab = { tabId: 1, windowId: 1, url: `http://127.0.0.1/sim/${browserId}`, title: browserId, active: true, status: "complete", shared: false };
      let sealer;
      let opener;
      let welcomed = false;
      const timer = setTimeout(() => fail(new Error(`${browserId}: no welcome within 15 s`)), 15_000);
      const fail = (error) => {
        clearTimeout(timer);
        ws.terminate();
        reject(error);
      };
      const send = (frame) => {
        const text = JSON.stringify(frame);
        if (!sealer) return ws.send(text);
        void sealer.seal(text, (bytes) => ws.readyState === WebSocket.OPEN && ws.send(bytes));
      };
      ws.on("open", () => ws.send(JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, browserId, nonce, endpoint, extensionVersion: "0.0.0-bench" })));
      ws.on("error", (error) => !welcomed && fail(error));
      ws.on("close", (code) => {
        sockets.delete(browserId);
        if (!welcomed) fail(new Error(`${browserId}: closed (${code}) before the welcome`));
        else if (!ws.benchClosing) unexpectedCloses++;
      });
      // One frame at a time, in order, as the extension does (the MACs are async).
      let queue = Promise.resolve();
      ws.on("message", (data) => {
        const raw = data.toString();
        queue = queue.then(async () => {
          const text = opener ? await opener.open(raw) : raw;
          if (text === undefined) return fail(new Error(`${browserId}: a frame failed its check: ${raw.slice(0, 200)}`));
          const frame = JSON.parse(text);
          if (frame.type === "challenge") {
            const transcript = { browserNonce: nonce, brokerNonce: frame.nonce, browserId, endpoint };
            if (frame.endpoint !== endpoint || !proofsEqual(frame.proof, await bridgeProof(token, "broker", transcript)))
              return fail(new Error(`${browserId}: the broker did not prove itself`));
            const keys = await frameKeys(token, transcript);
            sealer = await FrameSealer.create(keys["browser>broker"]);
            opener = await FrameOpener.create(keys["broker>browser"]);
            send({
              type: "auth",
              proof: await bridgeProof(token, "browser", transcript),
              label: `sim ${browserId}`,
              userAgent: "tabrelay-bench simulated browser",
            });
          } else if (frame.type === "welcome") {
            welcomed = true;
            clearTimeout(timer);
            sockets.set(browserId, ws);
            resolve();
          } else if (frame.type === "reject") fail(new Error(`${browserId}: rejected: ${JSON.stringify(frame.error)}`));
          else if (frame.type === "call") {
            methods[frame.method] = (methods[frame.method] ?? 0) + 1;
            if (frame.method === "tabs.list") send({ type: "result", id: frame.id, ok: true, result: { tabs: [tab] } });
            else send({ type: "result", id: frame.id, ok: false, error: { code: "unknown_method", message: `a simulated browser has no ${frame.method}` } });
          }
        });
      });
    });
  }

  handlers.connect = async ({ targets, token, concurrency = 16 }) => {
    const t0 = performance.now();
    const failures = [];
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const target = targets[next++];
        try {
          await connect({ ...target, token });
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { connected: targets.length - failures.length, failed: failures.length, firstFailures: failures.slice(0, 3), ms: performance.now() - t0 };
  };
  handlers.stats = () => ({ open: sockets.size, unexpectedCloses, methods });
  handlers.close = async () => {
    for (const ws of sockets.values()) {
      ws.benchClosing = true;
      ws.close();
    }
    await sleep(200);
    setTimeout(() => process.exit(0), 20);
  };
}

// ---------------------------------------------------------------------------------------------------------------

async function agentsRole() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  let clients = [];
  let browsers = [];
  /** benchCall id -> the upstream nginx chose for the POST carrying it (its X-Bench-Upstream response header). */
  const landing = new Map();
  const tag = `${process.pid}`;
  let callSeq = 0;

  // The SDK's fetch, wrapped only to read which broker nginx sent each tools/call to.
  const fetchWithLanding = async (url, init) => {
    const res = await fetch(url, init);
    const upstream = res.headers.get("x-bench-upstream");
    if (upstream && typeof init?.body === "string") {
      const m = /"benchCall":"([^"]+)"/.exec(init.body);
      if (m) landing.set(m[1], upstream.split(/,\s*/).at(-1));
    }
    return res;
  };

  handlers.open = async ({ url, token, sessions, browserIds }) => {
    browsers = browserIds;
    const t0 = performance.now();
    for (let i = 0; i < sessions; i++) {
      const client = new Client({ name: `tabrelay-bench-agent-${i}`, version: "0.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: fetchWithLanding }),
      );
      clients.push(client);
    }
    return { sessions: clients.length, ms: performance.now() - t0 };
  };

  function newTally() {
    return { sent: 0, answered: 0, ok: 0, crossed: 0, crossedSamples: [], errors: {}, lost: 0, lostSamples: [], notSent: 0, byLanding: {}, latencies: [] };
  }

  /** One list_tabs call naming a random browser; its latency and what came back, into `tally`. */
  async function oneCall(client, tally, timeoutMs) {
    const b = Math.floor(Math.random() * browsers.length);
    const asked = browsers[b];
    const benchCall = `${tag}-${callSeq++}`;
    tally.sent++;
    const t0 = performance.now();
    try {
      const result = await client.callTool({ name: "list_tabs", arguments: { browser: asked }, _meta: { benchCall } }, undefined, { timeout: timeoutMs });
      const ms = performance.now() - t0;
      tally.answered++;
      const text = (result.content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("\n");
      const upstream = landing.get(benchCall) ?? "unknown";
      landing.delete(benchCall);
      if (result.isError) {
        const code = /^([a-z_]+)/.exec(text)?.[1] ?? "error";
        tally.errors[code] = (tally.errors[code] ?? 0) + 1;
        return;
      }
      const titles = [...text.matchAll(/- tab \d+: «([^»]*)»/g)].map((m) => m[1]);
      if (titles.length !== 1 || titles[0] !== asked) {
        tally.crossed++;
        if (tally.crossedSamples.length < 3) tally.crossedSamples.push({ asked, got: titles, text: text.slice(0, 200) });
        return;
      }
      tally.ok++;
      // [ms, browser index, landing upstream]: the parent knows which broker holds which browser.
      tally.latencies.push([Math.round(ms * 1000) / 1000, b, upstream]);
    } catch (error) {
      landing.delete(benchCall);
      tally.lost++;
      if (tally.lostSamples.length < 3) tally.lostSamples.push(error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * mode "rate": calls issued on a fixed schedule (open loop: a slow answer does not delay the next call), spread
   * round robin over the sessions, at most `maxInFlight` outstanding (beyond that a due call is counted notSent);
   * mode "closed": `perSession` calls in flight on every session, each followed at once by the next.
   */
  handlers.run = async ({ mode, rate, durationMs, perSession = 1, maxInFlight = 4000, timeoutMs = 30_000 }) => {
    const tally = newTally();
    const start = performance.now();
    const inFlight = new Set();
    if (mode === "rate") {
      const total = Math.round((rate * durationMs) / 1000);
      let issued = 0;
      await new Promise((resolve) => {
        const tick = () => {
          const now = performance.now();
          const due = Math.min(total, Math.floor(((now - start) / 1000) * rate));
          while (issued < due) {
            if (inFlight.size >= maxInFlight) {
              tally.notSent += due - issued;
              issued = due;
              break;
            }
            const p = oneCall(clients[issued % clients.length], tally, timeoutMs).finally(() => inFlight.delete(p));
            inFlight.add(p);
            issued++;
          }
          if (issued >= total) {
            clearInterval(timer);
            resolve();
          }
        };
        const timer = setInterval(tick, 4);
      });
    } else {
      const until = start + durationMs;
      const loop = async (client) => {
        while (performance.now() < until) await oneCall(client, tally, timeoutMs);
      };
      await Promise.all(clients.flatMap((c) => Array.from({ length: perSession }, () => loop(c))));
    }
    const issuedMs = performance.now() - start;
    await Promise.all(inFlight);
    return { ...tally, issuedMs, elapsedMs: performance.now() - start };
  };

  handlers.close = async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    clients = [];
    setTimeout(() => process.exit(0), 20);
  };
}

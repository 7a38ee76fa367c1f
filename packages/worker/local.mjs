#!/usr/bin/env node
// Runs the built Workers bundle (dist/worker.js + dist/quickjs.wasm) locally under workerd, Cloudflare's own runtime
// (the `workerd` npm package ships its binary), on a loopback port, with the given bindings: what the tests and the
// bench start, and a way to try the Worker without an account. As a command it reads the bindings from the
// environment (TABRELAY_*, BROWSERBASE_*, KERNEL_*, AWS_*):
//   TABRELAY_MCP_TOKEN=... TABRELAY_CDP_URL=ws://... node packages/worker/local.mjs [--port 8787]
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const COMPATIBILITY_DATE = "2026-11-01";

/** The workerd binary of the installed `workerd` package (its platform package's, e.g. @cloudflare/workerd-linux-64). */
export function workerdBinary() {
  const path = createRequire(import.meta.url)("workerd").default;
  if (typeof path !== "string") throw new Error("the workerd package did not name its binary: npm install workerd");
  return path;
}

/** A Cap'n Proto text literal (workerd's config language). */
function capnpText(value) {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")}"`;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts workerd serving the bundle on 127.0.0.1:`port` (a free one by default) with `bindings` as text bindings,
 * outbound connections allowed to loopback and private addresses (a local browser, a local provider or bucket).
 * Resolves once GET /health answers; `output()` is what the Worker wrote (console.log on stdout, errors on stderr).
 */
export async function startWorkerd({ bindings, port, timeoutMs = 20_000 }) {
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-workerd-"));
  copyFileSync(join(here, "dist/worker.js"), join(dir, "worker.js"));
  copyFileSync(join(here, "dist/quickjs.wasm"), join(dir, "quickjs.wasm"));
  const listen = port ?? (await freePort());
  const texts = Object.entries(bindings).map(([name, value]) => `(name = ${capnpText(name)}, text = ${capnpText(value)})`);
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .tabrelay), (name = "internet", network = (allow = ["public", "private", "local"])) ],
  sockets = [ (name = "http", address = "127.0.0.1:${listen}", http = (), service = "main") ],
);
const tabrelay :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js"), (name = "quickjs.wasm", wasm = embed "quickjs.wasm") ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  bindings = [ ${texts.join(", ")} ],
  globalOutbound = "internet",
);
`,
  );
  let output = "";
  const child = spawn(workerdBinary(), ["serve", join(dir, "config.capnp")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.setEncoding("utf8").on("data", (chunk) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = `http://127.0.0.1:${listen}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`workerd exited (${child.exitCode}) before it served:\n${output.slice(-2000)}`);
    }
    if (
      await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`workerd did not serve ${url}/health within ${timeoutMs / 1000} s:\n${output.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { url, pid: child.pid, output: () => output, stop };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const at = process.argv.indexOf("--port");
  const port = at > 0 ? Number(process.argv[at + 1]) : 8787;
  const bindings = Object.fromEntries(
    Object.entries(process.env).filter(([name, value]) => value !== undefined && /^(TABRELAY_|BROWSERBASE_|KERNEL_|AWS_)/.test(name)),
  );
  const worker = await startWorkerd({ bindings, port });
  process.stderr.write(`tabrelay Worker (workerd) serving ${worker.url}/mcp; Ctrl-C stops it\n`);
  let shown = 0;
  setInterval(() => {
    const text = worker.output();
    if (text.length > shown) process.stdout.write(text.slice(shown));
    shown = text.length;
  }, 200);
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void worker.stop().then(() => process.exit(0)));
}

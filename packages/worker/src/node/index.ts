// The stateless app as a Vercel-style Node function: `export default` a fetch handler (Request -> Response) over
// the process environment. The same app as the Workers entry; on Node the DevTools socket is `ws` (Node 20 has no
// global WebSocket), the in-page scripts and the ranking are read from the installed packages.
import { nodeCdpScripts, nodeCdpSocket, nodeRanking } from "@tabrelay/broker";
import { createApp } from "../app.js";
import { inProcessSandbox } from "../sandbox.js";
import type { Platform, WorkerEnv } from "../env.js";

/** Node's process, where this module runs (the package type-checks without Node's types: its core is for any runtime). */
declare const process: { env: Record<string, string | undefined> };

export interface NodeHandlerOptions {
  /** The bindings (default: process.env, read once on the first request). */
  env?: WorkerEnv;
  /** Where log and audit lines go (default: console). */
  write?: (line: string) => void;
}

/** A fetch handler for Node's HTTP server, Vercel's Node runtime or any Request -> Response host. */
export function createNodeHandler(options: NodeHandlerOptions = {}): (request: Request) => Promise<Response> {
  // Programs run on this process as on a Worker (the same in-process sandbox: QuickJS, every budget inside it).
  const platform: Platform = {
    socket: nodeCdpSocket,
    scripts: nodeCdpScripts,
    ranking: nodeRanking(),
    sandbox: inProcessSandbox(),
    ...(options.write ? { write: options.write } : {}),
  };
  const app = createApp(platform);
  const env: WorkerEnv = options.env ?? pick(process.env);
  return async (request) => app.fetch(request, env);
}

function pick(source: Record<string, string | undefined>): WorkerEnv {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) if (value !== undefined && /^(TABRELAY_|BROWSERBASE_|KERNEL_|AWS_)/.test(name)) env[name] = value;
  return env;
}

/** Vercel's Node runtime calls the default export with a web Request. */
export default createNodeHandler();

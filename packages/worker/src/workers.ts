// The Cloudflare Workers entry (module syntax): the stateless app over the runtime's own WebSocket, with the in-page
// scripts, the top-sites ranking and QuickJS's wasm carried in the bundle (build.mjs). workerd runs it locally (test/worker/worker.test.ts).
import { parseRankingCsv } from "@tabrelay/broker/core";
import { inpage, topSites, webmcp } from "tabrelay:assets";
import quickjs from "tabrelay:quickjs-wasm";
import { createApp } from "./app.js";
import type { Platform, WorkerEnv } from "./env.js";
import { inProcessSandbox } from "./sandbox.js";

const platform: Platform = {
  socket: (url) => new WebSocket(url),
  scripts: { inpage: async () => inpage, webmcp: async () => webmcp },
  ranking: parseRankingCsv(topSites),
  sandbox: inProcessSandbox(quickjs),
};

const app = createApp(platform);

export default {
  fetch(request: Request, env: WorkerEnv, ctx: Parameters<typeof app.fetch>[2]): Response | Promise<Response> {
    return app.fetch(request, env, ctx);
  },
};

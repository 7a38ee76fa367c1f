// A local server that plays a hosted browser provider's HTTP API (Browserbase's or Kernel's, as documented: see
// src/launch/providers.ts), records the requests tabrelay sends and answers what the test says. Shared by
// test/drivers/providers.test.ts (the provider client) and test/tools/sessionsProviders.test.ts (browser_start on a provider).
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Reply {
  status: number;
  body?: unknown;
}

export interface FakeApi {
  origin: string;
  requests: Recorded[];
  onCreate: (req: Recorded) => Reply;
  /** Every other POST and DELETE (the release). */
  onRelease: (req: Recorded) => Reply;
  /** GETs (Browserbase's live-view debug URLs); 404 unless the test says otherwise. */
  onGet: (req: Recorded) => Reply;
  close(): Promise<void>;
}

export async function startFakeApi(): Promise<FakeApi> {
  const api: FakeApi = {
    origin: "",
    requests: [],
    onCreate: () => ({ status: 500 }),
    onRelease: () => ({ status: 200, body: {} }),
    onGet: () => ({ status: 404, body: { message: "not found" } }),
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const recorded: Recorded = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      api.requests.push(recorded);
      const isCreate = recorded.method === "POST" && (recorded.path === "/v1/sessions" || recorded.path === "/browsers");
      const reply = isCreate ? api.onCreate(recorded) : recorded.method === "GET" ? api.onGet(recorded) : api.onRelease(recorded);
      if (reply.body === undefined) {
        res.writeHead(reply.status);
        res.end();
      } else {
        res.writeHead(reply.status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(reply.body));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  api.origin = `http://127.0.0.1:${port}`;
  api.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return api;
}

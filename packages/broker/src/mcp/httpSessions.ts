// Streamable HTTP MCP sessions for the Node broker: one MCP server per session (mcp/adapter.ts createMcpServer), each
// bound to the user who opened it, capped in all and per client, expired when idle; in a cluster, shared through the
// cluster's session directory (tools/clusterLink.ts), so that a session opened on one broker goes on on any other.
import { endSessionLeases } from "../gate/enforce.js";
import { readLimited } from "../http/body.js";
import type { Tool, ToolContext } from "../tools/tool.js";
import { DEFAULT_PRINCIPAL, type Principal } from "../users/principal.js";
import { jsonWhenWhole } from "./jsonWhenWhole.js";
import { adoptSession, createMcpServer, initializingClient, sessionTransport, type DynamicTools, type SessionTransport } from "./adapter.js";

/** How many HTTP sessions the broker keeps, and for how long an unused one lives. */
export interface SessionLimits {
  /** A session with no call in flight and no open GET stream expires after this long without a request. */
  idleMs: number;
  max: number;
  /** Per client: its clientInfo.name and bearer token. */
  maxPerClient: number;
}

interface HttpSession {
  transport: SessionTransport;
  /** The user whose token opened the session: only their token may use it. */
  user: Principal;
  client: string;
  clientKey: string;
  lastUsed: number;
  /** When the cluster's copy was last kept alive (tools/clusterLink.ts SessionDirectory.touch). */
  touched: number;
  /** Calls (tools/call, prompts/get) still running. */
  calls: number;
  /** GET (server-to-client) streams open. */
  streams: number;
}

/** The largest POST body read, by the adapter and by the transport alike. */
const BODY_LIMIT = 4 * 1024 * 1024;

/**
 * Streamable HTTP sessions over web-standard Request -> Response (the SDK's web-standard transport), one MCP
 * server per session, as the SDK expects. Nothing here needs a socket: the door checks ran before, in the HTTP app.
 * A session in use (a call in flight, an open GET stream, or a request within the idle time) is never closed to
 * make room: idle ones expire, and a new session beyond a cap is refused with the cap and what to do.
 */
export class HttpSessions {
  readonly #sessions = new Map<string, HttpSession>();
  readonly #ctx: ToolContext;
  readonly #tools: readonly Tool[];
  readonly #limits: SessionLimits;
  #closingAll = false;

  readonly #dynamic: DynamicTools | undefined;

  constructor(ctx: ToolContext, tools: readonly Tool[], limits: SessionLimits = { idleMs: 30 * 60_000, max: 64, maxPerClient: 16 }, dynamic?: DynamicTools) {
    this.#ctx = ctx;
    this.#tools = tools;
    this.#limits = limits;
    this.#dynamic = dynamic;
  }

  /** Open sessions, once the idle ones expired. */
  get size(): number {
    this.#expireIdle();
    return this.#sessions.size;
  }

  /** One request of `user` (who passed the door checks). */
  async handle(req: Request, user: Principal = DEFAULT_PRINCIPAL): Promise<Response> {
    this.#expireIdle();
    const sessionId = req.headers.get("mcp-session-id");
    const found = sessionId ? this.#sessions.get(sessionId) : undefined;
    // Another user's session id is as unknown as a made-up one: a session is its user's, whoever learns its id.
    const existing = found && found.user.user === user.user ? found : undefined;
    if (existing) return this.#use(existing, req);
    if (sessionId) {
      // A cluster's session opened on another broker: taken up here, as its user's (tools/clusterLink.ts).
      const adopted = await this.#adopt(sessionId, user);
      if (adopted) return this.#use(adopted, req);
      return jsonRpcError(404, "Session not found: it expired or the broker restarted; initialize a new session");
    }
    if (req.method !== "POST") return jsonRpcError(400, "No session: send an initialize request first (POST /mcp)");
    const raw = await readLimited(req, BODY_LIMIT);
    if (raw === undefined) return jsonRpcError(413, `the request is over ${BODY_LIMIT / 1024 / 1024} MB; send a smaller one`);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return jsonRpcError(400, "Parse error: the body is not JSON; send an initialize request first (POST /mcp)", -32700);
    }
    const client = initializingClient(body);
    if (client === undefined) return jsonRpcError(400, "No session: send an initialize request first (POST /mcp), without an Mcp-Session-Id header");
    const id = typeof body === "object" && body !== null ? Reflect.get(body, "id") : undefined;
    const requestId = typeof id === "string" || typeof id === "number" ? id : null;
    // Per user, not per bearer: a client whose OAuth access tokens rotate is still one client.
    const clientKey = `${user.user}\n${client}`;
    const refusal = this.#admit(client, clientKey);
    if (refusal) return jsonRpcError(refusal.status, refusal.message, -32000, requestId);
    const session = await this.#open(user, client);
    return this.#use(session, req, body);
  }

  /**
   * A session's transport and server. New (`adopt` absent): its id comes with the initialize answer, and a cluster
   * learns it then. Adopted: a session another broker of the cluster opened, carried on here under the same id.
   */
  async #open(user: Principal, client: string, adopt?: string): Promise<HttpSession> {
    const cluster = this.#ctx.cluster;
    const session: HttpSession = {
      transport: sessionTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: async (sid) => {
          this.#sessions.set(sid, session);
          // Redis away: the session still works, on this broker (a request reaching another one gets 404 and the
          // client opens a new session); /ready says the cluster is not ready meanwhile.
          await cluster?.sessions.save(sid, { user, client }, this.#limits.idleMs).catch(() => undefined);
        },
        // DELETE /mcp: the session ends on every broker, not only here.
        onsessionclosed: async (sid) => {
          await cluster?.sessions.end(sid).catch(() => undefined);
        },
        maxRequestBodySize: BODY_LIMIT,
      }),
      user,
      client,
      clientKey: `${user.user}\n${client}`,
      lastUsed: Date.now(),
      touched: Date.now(),
      calls: 0,
      streams: 0,
    };
    if (adopt) adoptSession(session.transport, adopt);
    session.transport.onclose = () => {
      const sid = session.transport.sessionId;
      if (sid && this.#sessions.get(sid) === session) this.#sessions.delete(sid);
      // The session ended (DELETE /mcp, or expired): its leases end and the tabs it opened close. A broker
      // shutting down leaves them open: the agents did not end their sessions. In a cluster a session idle here may
      // live on elsewhere: its leases end when it ends (DELETE, announced to every broker) or expires in Redis.
      if (sid && !this.#closingAll && !cluster) endSessionLeases(this.#ctx, sid);
    };
    const server = createMcpServer(
      this.#ctx,
      this.#tools,
      this.#dynamic,
      {
        begin: () => session.calls++,
        end: () => {
          session.calls--;
          session.lastUsed = Date.now();
        },
      },
      user,
      client,
    );
    await server.connect(session.transport);
    if (adopt) this.#sessions.set(adopt, session);
    return session;
  }

  /** A session of the cluster's directory, of this user, taken up here; undefined when there is none. */
  async #adopt(sessionId: string, user: Principal): Promise<HttpSession | undefined> {
    const cluster = this.#ctx.cluster;
    if (!cluster) return undefined;
    const shared = await cluster.sessions.find(sessionId).catch(() => undefined);
    // Another user's session id is as unknown here as on the broker that opened it.
    if (!shared || shared.user.user !== user.user) return undefined;
    return this.#sessions.get(sessionId) ?? (await this.#open(shared.user, shared.client, sessionId));
  }

  /** A session ended on another broker of the cluster (DELETE there): dropped here, its leases ended. */
  endShared(sessionId: string): void {
    const local = this.#sessions.get(sessionId);
    if (local) {
      this.#sessions.delete(sessionId);
      void local.transport.close();
    }
    endSessionLeases(this.#ctx, sessionId);
  }

  /** Closes every session (their streams end; a call still running is aborted and its answer is lost). */
  async closeAll(): Promise<void> {
    this.#closingAll = true;
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(all.map((s) => s.transport.close()));
  }

  /** Idle sessions first make room; a session in use never does. */
  #admit(client: string, clientKey: string): { status: 429 | 503; message: string } | undefined {
    const idleMinutes = formatMinutes(this.#limits.idleMs);
    const mine = [...this.#sessions.values()].filter((s) => s.clientKey === clientKey).length;
    if (mine >= this.#limits.maxPerClient) {
      return {
        status: 429,
        message:
          `tabrelay: client ${JSON.stringify(client)} already has ${mine} open MCP sessions, the most one client may have (mcp.max_sessions_per_client = ${this.#limits.maxPerClient}). ` +
          `Close the sessions it no longer uses (DELETE /mcp with their Mcp-Session-Id header; an SDK client: transport.terminateSession()), or wait: a session unused for ${idleMinutes} (mcp.session_idle_minutes) expires`,
      };
    }
    if (this.#sessions.size >= this.#limits.max) {
      return {
        status: 503,
        message:
          `tabrelay: the broker already has ${this.#sessions.size} open MCP sessions (mcp.max_sessions = ${this.#limits.max}), all in use within the last ${idleMinutes}; none was closed to make room. ` +
          `Close the sessions no longer used (DELETE /mcp with their Mcp-Session-Id header), retry once idle ones expire (mcp.session_idle_minutes), or raise mcp.max_sessions`,
      };
    }
    return undefined;
  }

  #expireIdle(): void {
    const cutoff = Date.now() - this.#limits.idleMs;
    for (const [sid, s] of this.#sessions) {
      if (s.calls === 0 && s.streams === 0 && s.lastUsed < cutoff) {
        this.#sessions.delete(sid);
        void s.transport.close();
      }
    }
  }

  /**
   * Hands the request to the session's transport. A call counts the session in use while it runs (createMcpServer's
   * InUse), a GET stream until it ends: the one response watched to its end, rather than every call's.
   */
  async #use(session: HttpSession, req: Request, parsedBody?: unknown): Promise<Response> {
    session.lastUsed = Date.now();
    // The cluster's copy lives another idle period (at most every 10 s a session).
    const cluster = this.#ctx.cluster;
    const sid = session.transport.sessionId;
    if (cluster && sid && session.lastUsed - session.touched > 10_000) {
      session.touched = session.lastUsed;
      void cluster.sessions.touch(sid, this.#limits.idleMs).catch(() => undefined);
    }
    if (req.method !== "GET") {
      const read = parsedBody === undefined && req.method === "POST" ? await jsonBody(req) : { req, parsedBody };
      const answer = await session.transport.handleRequest(read.req, read.parsedBody === undefined ? undefined : { parsedBody: read.parsedBody });
      return jsonWhenWhole(answer);
    }
    session.streams++;
    let response: Response;
    try {
      response = await session.transport.handleRequest(req);
    } catch (error) {
      session.streams--;
      throw error;
    }
    return whenBodyEnds(response, () => {
      session.streams--;
      session.lastUsed = Date.now();
    });
  }
}

/**
 * A POST's JSON, read here rather than by the transport, which reads request.body: on @hono/node-server that builds a
 * whole Request and two web streams for every call, where text() takes the bytes as they came. Only a body of
 * declared length within the limit is read here; one that is not JSON goes on as text, and any other (chunked, too
 * large) as sent, so the transport's answers to them stay its own.
 */
async function jsonBody(req: Request): Promise<{ req: Request; parsedBody?: unknown }> {
  const length = Number(req.headers.get("content-length") ?? Number.NaN);
  if (!Number.isSafeInteger(length) || length > BODY_LIMIT) return { req };
  const text = await req.text();
  try {
    return { req, parsedBody: JSON.parse(text) };
  } catch {
    return { req: new Request(req.url, { method: req.method, headers: req.headers, body: text }) };
  }
}

/** The same response, calling `done` once its body was read to the end or cancelled (the client went away). */
function whenBodyEnds(response: Response, done: () => void): Response {
  const source = response.body;
  if (!source) {
    done();
    return response;
  }
  let finished = false;
  const finish = () => {
    if (!finished) {
      finished = true;
      done();
    }
  };
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          finish();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

function formatMinutes(ms: number): string {
  const minutes = ms / 60_000;
  return minutes >= 1 && Number.isInteger(minutes) ? `${minutes} minute${minutes === 1 ? "" : "s"}` : `${Math.round(ms / 1000)} s`;
}

function jsonRpcError(status: number, message: string, code = -32000, id: string | number | null = null): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id }), { status, headers: { "Content-Type": "application/json" } });
}

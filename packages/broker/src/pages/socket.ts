// The /page WebSocket's door: a page is let in only with a page token (the subprotocol bearer.<token>, echoed back;
// never a query string) minted for its own Origin, which must be on pages.allowed_origins, and while its origin has
// fewer than 20 connections for the token's user (whose agents alone see the page's tools). Every refusal is an
// HTTP answer to the upgrade (no unauthenticated socket ever opens) and an audit record.
import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { PAGE_TOKEN_PROTOCOL_PREFIX } from "@tabrelay/page/wire";
import type { AuditSink } from "../audit/auditLog.js";
import type { Logger } from "../util/log.js";
import { PageConnection } from "./connection.js";
import { PAGE_LIMITS } from "./offer.js";
import type { PageToolRegistry } from "./registry.js";
import { verifyPageToken } from "./tokens.js";

const USED =
  "the page token was already used: a page token opens one connection; fetch a fresh one for each (the library's token option takes a function it calls on every connect)";

/** How long a /page handshake waits for the cluster's word on its token. */
const CLAIM_TIMEOUT_MS = 3000;

const tooMany = (origin: string): Verdict => ({
  ok: false,
  status: "429 Too Many Requests",
  origin,
  reason: `${origin} already has ${PAGE_LIMITS.connectionsPerOrigin} page connections, the most tabrelay takes from one origin for one user`,
});

type Admitted = { ok: true; origin: string; owner: string; token: string; expiresAt: number };
type Verdict = Admitted | { ok: false; status: string; reason: string; origin?: string };

/** A tool result may be up to 1 MiB of JSON; frames up to this size arrive and are judged, bigger ones end the socket. */
const MAX_FRAME_BYTES = 8 * 1024 * 1024;

export interface PageSocketOptions {
  registry: PageToolRegistry;
  tokenKey: Buffer;
  /** pages.allowed_origins, exact origins. */
  allowedOrigins: () => readonly string[];
  audit: AuditSink;
  log: Logger;
}

export class PageSocketServer {
  readonly #wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    handleProtocols: (protocols) => [...protocols].find((p) => p.startsWith(PAGE_TOKEN_PROTOCOL_PREFIX)) ?? false,
  });
  readonly #options: PageSocketOptions;
  /**
   * Tokens that opened a connection, until they expire: a page token opens one connection. A token a page's scripts
   * can read (a third-party script of the app's) would otherwise let another program connect as that origin, with a
   * forged Origin header, and answer for its tools.
   */
  readonly #used = new Map<string, number>();
  #claim: ((tokenHash: string, ttlMs: number) => Promise<boolean>) | undefined;

  constructor(options: PageSocketOptions) {
    this.#options = options;
  }

  /**
   * In a cluster: a token is claimed in Redis too, so that it opens one connection on all the brokers together, not
   * one on each (they share the key tokens are signed with). Set by Pages.useCluster.
   */
  claimTokens(claim: (tokenHash: string, ttlMs: number) => Promise<boolean>): void {
    this.#claim = claim;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    void this.#upgrade(req, socket, head);
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const started = Date.now();
    // Node's HTTP server leaves an upgraded socket without an error listener, and ws adds its own only once it takes
    // the socket: a client that resets it meanwhile (while the cluster is asked about its token) must not crash the
    // broker.
    const onError = () => socket.destroy();
    socket.on("error", onError);
    let verdict = this.#admit(req);
    if (verdict.ok && this.#claim) {
      verdict = await this.#claimed(verdict);
      if (socket.destroyed) return; // the client left; its token stays used
      // The origin may have gained connections while Redis answered.
      if (verdict.ok && !this.#options.registry.admits(verdict.origin, verdict.owner)) verdict = tooMany(verdict.origin);
    }
    if (!verdict.ok) {
      this.#options.audit.record({
        time: started,
        tool: "page_connect",
        decision: "refused",
        durationMs: 0,
        ...(verdict.origin ? { origin: verdict.origin } : {}),
        code: "unauthorized",
        detail: JSON.stringify({ reason: verdict.reason }),
      });
      this.#options.log.warn(`page: refused a /page connection${verdict.origin ? ` from ${verdict.origin}` : ""}: ${verdict.reason}`);
      socket.end(`HTTP/1.1 ${verdict.status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${verdict.reason}\n`);
      return;
    }
    const { origin, owner } = verdict;
    socket.off("error", onError);
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const { registry, log } = this.#options;
      const connection = new PageConnection(ws, origin, owner, {
        changed: (c) => registry.update(c),
        closed: (c) => {
          registry.update(c);
          log.info(`page: ${origin} disconnected`);
        },
        log: (message) => log.warn(message),
        refused: (c, lines) =>
          this.#options.audit.record({
            time: Date.now(),
            tool: "page_offer",
            decision: "refused",
            durationMs: 0,
            origin: c.origin,
            detail: JSON.stringify({ refused: lines.slice(0, 20).map((l) => l.slice(0, 300)) }),
          }),
      });
      registry.add(connection);
      this.#options.audit.record({ time: started, tool: "page_connect", decision: "allowed", durationMs: Date.now() - started, origin });
      log.info(`page: ${origin} connected`);
      void connection.start();
    });
  }

  close(): void {
    for (const client of this.#wss.clients) client.terminate();
    this.#wss.close();
  }

  #admit(req: IncomingMessage): Verdict {
    const origin = req.headers.origin;
    if (!origin) return { ok: false, status: "403 Forbidden", reason: "no Origin header: /page takes connections from web pages on pages.allowed_origins" };
    if (!this.#options.allowedOrigins().includes(origin)) {
      return {
        ok: false,
        status: "403 Forbidden",
        origin: origin.slice(0, 200),
        reason: `the origin ${origin.slice(0, 200)} is not on pages.allowed_origins; the user adds it to config.yaml to let its pages offer tools`,
      };
    }
    const offered = String(req.headers["sec-websocket-protocol"] ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p.startsWith(PAGE_TOKEN_PROTOCOL_PREFIX));
    const token = offered[0]?.slice(PAGE_TOKEN_PROTOCOL_PREFIX.length);
    if (!token || offered.length > 1)
      return {
        ok: false,
        status: "401 Unauthorized",
        origin,
        reason: "a page token is required, as the one WebSocket subprotocol bearer.<token> (mint one with POST /page-tokens or tabrelay page-token)",
      };
    const check = verifyPageToken(this.#options.tokenKey, token);
    if (!check.ok) return { ok: false, status: "401 Unauthorized", origin, reason: `the page token is refused: ${check.reason}` };
    if (check.origin !== origin)
      return { ok: false, status: "403 Forbidden", origin, reason: `the page token was minted for ${check.origin.slice(0, 200)}, not for ${origin}` };
    if (!this.#options.registry.admits(origin, check.owner)) return tooMany(origin);
    const now = Date.now();
    for (const [used, expiresAt] of this.#used) if (expiresAt <= now) this.#used.delete(used);
    if (this.#used.has(token)) {
      return { ok: false, status: "401 Unauthorized", origin, reason: USED };
    }
    this.#used.set(token, check.expiresAt);
    return { ok: true, origin, owner: check.owner, token, expiresAt: check.expiresAt };
  }

  /** The cluster's word on an admitted token: used on another broker already, or not. */
  async #claimed(admitted: Admitted): Promise<Verdict> {
    const { origin } = admitted;
    let timer: NodeJS.Timeout | undefined;
    try {
      const hash = createHash("sha256").update(admitted.token).digest("base64url");
      const late = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer from Redis within ${CLAIM_TIMEOUT_MS / 1000} s`)), CLAIM_TIMEOUT_MS)),
      );
      if (await Promise.race([this.#claim!(hash, Math.max(1000, admitted.expiresAt - Date.now())), late])) return admitted;
      return { ok: false, status: "401 Unauthorized", origin, reason: USED };
    } catch (error) {
      return {
        ok: false,
        status: "503 Service Unavailable",
        origin,
        reason: `the cluster could not say whether this page token was used on another broker (${error instanceof Error ? error.message : String(error)}); fetch a fresh token and connect again`,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

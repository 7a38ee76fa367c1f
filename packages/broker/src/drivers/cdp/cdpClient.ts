// A minimal Chrome DevTools Protocol client over one WebSocket to the browser endpoint
// (ws://host:port/devtools/browser/<id>). Flat sessions only: every page, iframe or worker session
// travels on the same socket, tagged with its sessionId (Target.attachToTarget / setAutoAttach with
// flatten: true). Calls never throw: they resolve with a value or a failure. When the socket closes,
// every call in flight fails at once.
//
// The endpoint URL is a credential (whoever holds it drives the browser): it is never logged, and it is
// scrubbed from every message this module produces.
//
// The socket is the WHATWG WebSocket API (CdpSocket), made by a factory the host passes: the Node broker passes its
// own (nodeSocket.ts), which skips a message past the size cap and says so (`oversize`) instead of closing: that one
// call fails (too_large) or that one event is dropped, and the connection lives. A Workers-style runtime uses its own
// WebSocket, whose cap closes the socket (a stateless host's connection lasts one request).
//
// Commands and events are typed with the protocol's own map (devtools-protocol, types only): `send` checks a
// command's params and types its result, `on` types an event's params. Those types describe what Chromium
// sends; this module trusts the browser's JSON to match them (the one place it does), and the driver still
// parses with zod what comes from the page (in-page script answers, evaluated values).
import type { ProtocolMapping } from "devtools-protocol/types/protocol-mapping.js";

export type CdpFailure =
  /** The socket is closed (browser gone, or closed by us); nothing more will be answered. */
  | { kind: "disconnected"; message: string }
  /** The session the call was sent to detached (its tab or frame went away) before answering. */
  | { kind: "detached"; message: string }
  | { kind: "timeout"; message: string }
  /** The browser answered with a protocol error (code, message), e.g. "No frame for given id found". */
  | { kind: "protocol"; message: string; code: number }
  /** The browser's answer was longer than the socket's cap: skipped, the connection lives. */
  | { kind: "too_large"; message: string; bytes: number };

export type CdpResult<T> = { ok: true; value: T } | { ok: false; error: CdpFailure };

type Commands = ProtocolMapping.Commands;
type Events = ProtocolMapping.Events;

/** A command's name, e.g. "Page.navigate". */
export type CdpMethod = keyof Commands;
/** An event's name, e.g. "Page.frameNavigated". */
export type CdpEvent = keyof Events;
/** What a parameterless command is sent. */
type NoParams = Record<string, never>;
type ParamsIn<T> = T extends [] ? NoParams : T extends [infer P] ? P : T extends [(infer P)?] ? NonNullable<P> : never;
/** A command's params, e.g. `{ url: string; ... }` for Page.navigate. */
export type CdpParams<M extends CdpMethod> = ParamsIn<Commands[M]["paramsType"]>;
/** A command's result object (`void` for commands answering `{}`). */
export type CdpReturn<M extends CdpMethod> = Commands[M]["returnType"];
/** Commands whose params may be left out (none required by the protocol). */
type OptionalParamsMethod = { [M in CdpMethod]: Commands[M]["paramsType"] extends [unknown] ? never : M }[CdpMethod];
/** An event's params. */
export type CdpEventParams<E extends CdpEvent> = Events[E] extends [infer P] ? P : NoParams;

/** An event's params and the session it came from (undefined: the browser session). */
export type CdpListener<E extends CdpEvent> = (params: CdpEventParams<E>, sessionId: string | undefined) => void;
type RawListener = (params: Record<string, unknown>, sessionId: string | undefined) => void;

/** A message the socket skipped for its size: its first and last bytes (UTF-8, maybe cut mid-character) and length. */
export interface CdpOversize {
  head: string;
  tail: string;
  bytes: number;
}

/**
 * The part of the WHATWG WebSocket API the client uses: ws's WebSocket and a runtime's global one both have it.
 * Events: `message` carries `data` (a string for a text frame), `close` its `code` and `reason`.
 */
export interface CdpSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
  /** A message past maxPayload, skipped (nodeSocket.ts); a runtime's WebSocket never sends this event. */
  addEventListener(type: "oversize", listener: (event: CdpOversize) => void): void;
}

/**
 * Opens a socket to a DevTools endpoint. `maxPayload` is the largest message to accept from the browser: past it the
 * Node socket skips the message and sends `oversize` (a runtime's own WebSocket has its own cap and ignores it).
 */
export type CdpSocketFactory = (url: string, options: { maxPayload: number }) => CdpSocket;

export interface CdpClientOptions {
  /** Default deadline of a call; a call may pass its own. */
  timeoutMs: number;
  /** Largest message accepted from the browser; a bigger one is skipped (its call fails too_large). */
  maxPayload?: number;
  connectTimeoutMs?: number;
  /** How to open the socket; default: the runtime's global WebSocket, where there is one. */
  socket?: CdpSocketFactory;
}

export interface SendOptions {
  /** Overrides the client's default deadline for this call. */
  timeoutMs?: number;
}

interface Pending {
  method: string;
  sessionId: string | undefined;
  settle: (result: CdpResult<Record<string, unknown>>) => void;
}

/** 128 MiB: far above the bridge's 32 MiB result cap (a full-page screenshot fits); past it a message is skipped. */
export const DEFAULT_MAX_PAYLOAD = 128 * 1024 * 1024;
const BROWSER_KEY = "";
const OPEN = 1;
/** The runtime's own WebSocket (browsers, Workers, Node 22+), when it has one. */
function globalSocket(): CdpSocketFactory | undefined {
  if (typeof globalThis.WebSocket !== "function") return undefined;
  const Socket = globalThis.WebSocket;
  return (url) => new Socket(url);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class CdpClient {
  readonly #ws: CdpSocket;
  readonly #timeoutMs: number;
  readonly #maxPayload: number;
  readonly #pending = new Map<number, Pending>();
  /** session key ("" for the browser session) -> method -> listeners */
  readonly #listeners = new Map<string, Map<string, Set<RawListener>>>();
  readonly #anyListeners = new Set<(method: string, params: Record<string, unknown>, sessionId: string | undefined) => void>();
  readonly #closeListeners = new Set<(reason: string) => void>();
  readonly #oversizeListeners = new Set<(method: string, sessionId: string | undefined, bytes: number) => void>();
  #nextId = 1;
  #closed = false;
  #closeReason = "";

  private constructor(ws: CdpSocket, timeoutMs: number, maxPayload: number) {
    this.#ws = ws;
    this.#timeoutMs = timeoutMs;
    this.#maxPayload = maxPayload;
  }

  /** Opens the socket. The failure message never contains the endpoint. */
  static connect(endpoint: string, options: CdpClientOptions): Promise<CdpResult<CdpClient>> {
    const scrub = scrubber(endpoint);
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      return Promise.resolve({ ok: false, error: { kind: "disconnected", message: "the DevTools endpoint is not a valid URL" } });
    }
    if (url.protocol !== "ws:" && url.protocol !== "wss:") {
      return Promise.resolve({ ok: false, error: { kind: "disconnected", message: "the DevTools endpoint must be a ws:// or wss:// URL" } });
    }
    const open = options.socket ?? globalSocket();
    if (!open) {
      return Promise.resolve({
        ok: false,
        error: {
          kind: "disconnected",
          message: "cannot open the DevTools socket: this runtime has no global WebSocket and no socket factory was passed (CdpBrowserOptions.socket)",
        },
      });
    }
    return new Promise((resolve) => {
      let ws: CdpSocket;
      try {
        ws = open(endpoint, { maxPayload: options.maxPayload ?? DEFAULT_MAX_PAYLOAD });
      } catch (error) {
        resolve({ ok: false, error: { kind: "disconnected", message: `cannot open the DevTools socket: ${scrub(errorText(error))}` } });
        return;
      }
      // The socket's listeners are added once (the API has no removal the factory must offer): until it opens they
      // settle the connect, then they serve the client.
      let client: CdpClient | undefined;
      let settled = false;
      const fail = (message: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        try {
          ws.close();
        } catch {
          // closing a socket that never opened
        }
        resolve({ ok: false, error: { kind: "disconnected", message: `cannot connect to the browser's DevTools endpoint: ${scrub(message)}` } });
      };
      const timer = setTimeout(() => fail("Opening handshake has timed out"), options.connectTimeoutMs ?? 10_000);
      ws.addEventListener("open", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        client = new CdpClient(ws, options.timeoutMs, options.maxPayload ?? DEFAULT_MAX_PAYLOAD);
        resolve({ ok: true, value: client });
      });
      ws.addEventListener("message", (event) => {
        if (client) client.#onMessage(event.data);
      });
      ws.addEventListener("close", ({ code, reason }) => {
        if (!client) return fail(`closed during the handshake (${code})`);
        client.#onClose(code === 1009 ? "a DevTools message exceeded the size cap" : `socket closed (${code}${reason.length ? ` ${scrub(reason)}` : ""})`);
      });
      ws.addEventListener("oversize", (event) => {
        if (client) client.#onOversize(event);
      });
      // After the open, errors are followed by close; the close handler is where calls fail.
      ws.addEventListener("error", (event) => {
        if (!client) fail(eventMessage(event));
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  get closeReason(): string {
    return this.#closeReason;
  }

  /**
   * Calls `method` on the browser session, or on `sessionId` (a flat session); resolves with its result
   * object or a failure, never rejects.
   */
  send<M extends OptionalParamsMethod>(method: M, params?: CdpParams<M>, sessionId?: string, options?: SendOptions): Promise<CdpResult<CdpReturn<M>>>;
  send<M extends CdpMethod>(method: M, params: CdpParams<M>, sessionId?: string, options?: SendOptions): Promise<CdpResult<CdpReturn<M>>>;
  send(method: CdpMethod, params: object = {}, sessionId?: string, options: SendOptions = {}): Promise<CdpResult<unknown>> {
    if (this.#closed) return Promise.resolve(this.#disconnected());
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => settle({ ok: false, error: { kind: "timeout", message: `the browser did not answer ${method} within ${timeoutMs} ms` } }),
        timeoutMs,
      );
      const settle = (result: CdpResult<Record<string, unknown>>) => {
        if (!this.#pending.delete(id)) return;
        clearTimeout(timer);
        resolve(result);
      };
      this.#pending.set(id, { method, sessionId, settle });
      const frame = JSON.stringify(sessionId === undefined ? { id, method, params } : { id, method, params, sessionId });
      // A socket past open drops what it is sent: the call fails now rather than at its deadline.
      if (this.#ws.readyState !== OPEN) return settle(this.#disconnected());
      try {
        this.#ws.send(frame);
      } catch {
        settle(this.#disconnected());
      }
    });
  }

  /**
   * Subscribes to `method` events of one session (undefined: the browser session). Listeners of a session
   * are dropped when it detaches. Returns the unsubscribe function.
   */
  on<E extends CdpEvent>(method: E, listener: CdpListener<E>, sessionId?: string): () => void {
    // The parsing boundary: an event's JSON params are taken to be what the protocol says they are.
    const raw: RawListener = (params, from) => listener(params as CdpEventParams<E>, from);
    const key = sessionId ?? BROWSER_KEY;
    let byMethod = this.#listeners.get(key);
    if (!byMethod) {
      byMethod = new Map();
      this.#listeners.set(key, byMethod);
    }
    let set = byMethod.get(method);
    if (!set) {
      set = new Set();
      byMethod.set(method, set);
    }
    set.add(raw);
    return () => {
      set.delete(raw);
    };
  }

  /** Every event of every session. */
  onAny(listener: (method: string, params: Record<string, unknown>, sessionId: string | undefined) => void): () => void {
    this.#anyListeners.add(listener);
    return () => {
      this.#anyListeners.delete(listener);
    };
  }

  /**
   * Events skipped for their size (the method and session read off the message's edges): their params are lost, but a
   * listener can still act (dismiss a dialog whose text was too long to carry).
   */
  onOversize(listener: (method: string, sessionId: string | undefined, bytes: number) => void): () => void {
    this.#oversizeListeners.add(listener);
    return () => {
      this.#oversizeListeners.delete(listener);
    };
  }

  onClose(listener: (reason: string) => void): () => void {
    if (this.#closed) {
      queueMicrotask(() => listener(this.#closeReason));
      return () => undefined;
    }
    this.#closeListeners.add(listener);
    return () => {
      this.#closeListeners.delete(listener);
    };
  }

  /** Closes the socket; calls in flight fail now with "disconnected". */
  close(reason = "closed by tabrelay"): void {
    this.#onClose(reason);
    try {
      this.#ws.close(1000);
    } catch {
      // already closed
    }
  }

  #onMessage(data: unknown): void {
    // Binary frames are not DevTools messages.
    if (typeof data !== "string") return;
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    if (!isRecord(message)) return;
    const sessionId = typeof message["sessionId"] === "string" ? message["sessionId"] : undefined;
    const id = message["id"];
    if (typeof id === "number") {
      const pending = this.#pending.get(id);
      if (!pending) return;
      const error = message["error"];
      if (isRecord(error)) {
        const code = typeof error["code"] === "number" ? error["code"] : 0;
        const text = typeof error["message"] === "string" ? error["message"] : "unknown error";
        const data = typeof error["data"] === "string" ? `: ${error["data"]}` : "";
        pending.settle({ ok: false, error: { kind: "protocol", code, message: `${pending.method}: ${text}${data}` } });
      } else {
        const result = message["result"];
        pending.settle({ ok: true, value: isRecord(result) ? result : {} });
      }
      return;
    }
    const method = message["method"];
    if (typeof method !== "string") return;
    const params = isRecord(message["params"]) ? message["params"] : {};
    for (const listener of [...this.#anyListeners]) safely(() => listener(method, params, sessionId));
    const listeners = this.#listeners.get(sessionId ?? BROWSER_KEY)?.get(method);
    if (listeners) for (const listener of [...listeners]) safely(() => listener(params, sessionId));
    // A detached session answers nothing more: fail its calls now and forget its listeners.
    if (method === "Target.detachedFromTarget" && typeof params["sessionId"] === "string") this.#dropSession(params["sessionId"]);
  }

  /**
   * A skipped message. Chrome writes a message's members in a fixed order: an answer starts {"id":N, an event
   * {"method":"X", and a session's message ends ,"sessionId":"S"}.
   */
  #onOversize({ head, tail, bytes }: { head: string; tail: string; bytes: number }): void {
    const size = `${Math.round(bytes / 1048576)} MiB`;
    const id = /^\{"id":(\d+)[,}]/.exec(head)?.[1];
    if (id !== undefined) {
      const pending = this.#pending.get(Number(id));
      pending?.settle({
        ok: false,
        error: {
          kind: "too_large",
          bytes,
          message: `${pending.method}: the browser's answer is ${size}, more than the ${Math.round(this.#maxPayload / 1048576)} MiB the DevTools link takes`,
        },
      });
      return;
    }
    const method = /^\{"method":"([A-Za-z]+\.[A-Za-z]+)"/.exec(head)?.[1];
    if (method === undefined) return;
    const sessionId = /,"sessionId":"([^"\\]{1,64})"\}$/.exec(tail)?.[1];
    for (const listener of [...this.#oversizeListeners]) safely(() => listener(method, sessionId, bytes));
  }

  #dropSession(sessionId: string): void {
    this.#listeners.delete(sessionId);
    for (const pending of [...this.#pending.values()]) {
      if (pending.sessionId === sessionId)
        pending.settle({ ok: false, error: { kind: "detached", message: `${pending.method}: the target detached before answering` } });
    }
  }

  #onClose(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeReason = reason;
    for (const pending of [...this.#pending.values()]) pending.settle(this.#disconnected());
    this.#listeners.clear();
    this.#anyListeners.clear();
    for (const listener of [...this.#closeListeners]) safely(() => listener(reason));
    this.#closeListeners.clear();
    this.#oversizeListeners.clear();
  }

  #disconnected(): { ok: false; error: CdpFailure } {
    return { ok: false, error: { kind: "disconnected", message: `the DevTools connection is closed (${this.#closeReason || "closed"})` } };
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What a socket's error event says: ws's carries the error's message; a runtime's plain Event says nothing more. */
function eventMessage(event: unknown): string {
  const message: unknown = typeof event === "object" && event !== null ? Reflect.get(event, "message") : undefined;
  return typeof message === "string" && message ? message : "the socket failed";
}

/** A listener that throws must not break dispatch to the others, nor the socket. */
function safely(run: () => void): void {
  try {
    run();
  } catch {
    // listeners own their errors
  }
}

/** Removes the endpoint (and its secret path) from a message. */
function scrubber(endpoint: string): (text: string) => string {
  let path = "";
  try {
    path = new URL(endpoint).pathname;
  } catch {
    // not a URL: only the whole string is scrubbed
  }
  return (text) => {
    let out = text.split(endpoint).join("<devtools endpoint>");
    if (path.length > 1) out = out.split(path).join("/<devtools path>");
    return out;
  };
}

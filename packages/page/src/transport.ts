/**
 * The raw transport: one WebSocket to tabrelay's `/page` endpoint, dialled again after every drop with jittered
 * exponential backoff (capped at 30 s). Text frames in, text frames out; it knows nothing of MCP. Use it directly
 * only to speak the wire yourself; {@link createServer} in the package's main entry builds on it.
 *
 * @example
 * import { createTransport } from "@tabrelay/page/transport";
 * const transport = createTransport({
 *   endpoint: "ws://127.0.0.1:8765/page",
 *   createSocket: async ({ endpoint }) => new WebSocket(endpoint, ["bearer." + (await fetchPageToken())]),
 *   onMessage: (text) => console.log("from the broker:", text),
 * });
 * transport.start();
 */

/** The part of the browser's `WebSocket` the transport uses (a `ws` socket in Node fits too). */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "close" | "error", listener: (event: unknown) => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
}

/** What {@link CreateSocket} is told: where to dial, and how many attempts in a row have failed before this one. */
export interface SocketRequest {
  endpoint: string;
  /** 0 for the first attempt after start or after a connection that was open; 1, 2, ... while attempts keep failing. */
  attempt: number;
}

/**
 * Makes the socket for one (re)connect: called every time, so a short-lived token can be fetched fresh.
 *
 * @example
 * const createSocket: CreateSocket = async ({ endpoint }) => {
 *   const { token } = await (await fetch("/api/tabrelay-token")).json(); // your backend mints it (POST /page-tokens)
 *   return new WebSocket(endpoint, ["bearer." + token]);
 * };
 */
export type CreateSocket = (request: SocketRequest) => SocketLike | Promise<SocketLike>;

export interface Backoff {
  /** First retry delay before jitter, ms (default 250). */
  initialMs?: number;
  /** Cap, ms (default 30,000). */
  maxMs?: number;
}

/** Why the socket is down and when the next attempt is. */
export interface DropInfo {
  code?: number;
  reason?: string;
  error?: unknown;
  retryInMs: number;
}

export interface TransportOptions {
  endpoint: string;
  /** Default: `new WebSocket(endpoint)`, with no token (a broker refuses it unless the page is otherwise trusted). */
  createSocket?: CreateSocket;
  backoff?: Backoff;
  onOpen?(): void;
  onMessage(text: string): void;
  onDrop?(info: DropInfo): void;
}

export interface Transport {
  /** Starts dialling; idempotent. */
  start(): void;
  /** Sends one frame; false when the socket is not open (the frame is dropped, not queued). */
  send(text: string): boolean;
  /** Stops for good: closes the socket and dials no more. */
  close(): void;
  readonly connected: boolean;
}

const OPEN = 1;

/** The delay before retry `attempt` (1-based): a random point in the upper half of min(max, initial * 2^(attempt - 1)). */
export function retryDelay(attempt: number, backoff: Backoff = {}, random: () => number = Math.random): number {
  const initial = backoff.initialMs ?? 250;
  const max = backoff.maxMs ?? 30_000;
  const ceiling = Math.min(max, initial * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * A WebSocket that reconnects by itself.
 *
 * @example
 * const transport = createTransport({ endpoint, createSocket, onMessage: handle, onOpen: () => console.log("up") });
 * transport.start();
 * transport.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }));
 */
export function createTransport(options: TransportOptions): Transport {
  const createSocket: CreateSocket = options.createSocket ?? (({ endpoint }) => new WebSocket(endpoint));
  let socket: SocketLike | undefined;
  let started = false;
  let stopped = false;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const drop = (info: Omit<DropInfo, "retryInMs">, wasOpen: boolean): void => {
    socket = undefined;
    if (stopped) return;
    if (wasOpen) failures = 0;
    failures += 1;
    const retryInMs = retryDelay(failures, options.backoff);
    options.onDrop?.({ ...info, retryInMs });
    timer = setTimeout(dial, retryInMs);
  };

  const dial = async (): Promise<void> => {
    timer = undefined;
    if (stopped) return;
    let made: SocketLike;
    try {
      made = await createSocket({ endpoint: options.endpoint, attempt: failures });
    } catch (error) {
      drop({ error }, false);
      return;
    }
    if (stopped) {
      made.close(1000, "closed");
      return;
    }
    socket = made;
    let open = false;
    let ended = false;
    made.addEventListener("open", () => {
      if (socket !== made) return;
      open = true;
      options.onOpen?.();
    });
    made.addEventListener("message", (event) => {
      if (socket === made && typeof event.data === "string") options.onMessage(event.data);
    });
    const end = (info: Omit<DropInfo, "retryInMs">): void => {
      if (ended) return;
      ended = true;
      if (socket === made) drop(info, open);
    };
    made.addEventListener("close", (event) => {
      const { code, reason } = (event ?? {}) as { code?: number; reason?: string };
      end({ code, reason });
    });
    made.addEventListener("error", (error) => {
      // A browser fires close after error; a socket that never opens may fire only error.
      if (made.readyState !== OPEN) setTimeout(() => end({ error }), 0);
    });
  };

  return {
    start() {
      if (started || stopped) return;
      started = true;
      void dial();
    },
    send(text) {
      if (!socket || socket.readyState !== OPEN) return false;
      socket.send(text);
      return true;
    },
    close() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      const current = socket;
      socket = undefined;
      current?.close(1000, "closed");
    },
    get connected() {
      return socket !== undefined && socket.readyState === OPEN;
    },
  };
}

// `tabrelay stdio`'s forwarder: the agent's MCP messages (one per stdin line) to a broker's /mcp over Streamable
// HTTP and back, with a session that outlives the broker. When the broker goes away and comes back (or another one
// takes the port), the relay proves the new listener knows the token (POST /auth/proof) before sending it
// anything, opens a new session by replaying the agent's own initialize, and carries on: the agent never has to
// initialize again. A call that never reached a broker (refused connection, a session the broker no longer knows)
// is sent again once the broker is back; one cut off while it ran is answered with an error saying so, and that a
// retry will work. Plain fetch, no MCP SDK: the relay must know the fate of each message, which the SDK's client
// transport does not tell.
import { dialUrl } from "@tabrelay/protocol";
import { BrokerNotProven, BrokerUnreachable, checkBroker } from "./brokerProof.js";
import type { JsonRpcMessage } from "./stdioLines.js";

export interface RelayOptions {
  /** The broker's /mcp URL. */
  mcpUrl: string;
  token: string;
  /** A message for the agent (stdout). */
  send(message: JsonRpcMessage): void;
  /** A line for the agent's log (stderr). */
  log(line: string): void;
  /**
   * Nothing listens at the broker's address: may start a broker (resolving once it might answer). `lostForMs` is
   * undefined before the relay first reached a broker, else how long the broker has been gone.
   */
  noBroker?(lostForMs: number | undefined): Promise<void>;
  /** A broker proved itself and the relay (re)connected to it. */
  onConnected?(): void;
  /** How long a call waits for a broker that went away to come back before it is answered with an error. */
  holdMs?: number;
}

type Id = string | number;

/** Marks the relay's own requests (the replayed initialize), whose answers are not the agent's. */
const OWN_ID = "tabrelay-relay-";

export class Relay {
  readonly #o: RelayOptions;
  readonly #url: URL;
  readonly #base: string;
  readonly #holdMs: number;
  #session: string | undefined;
  #protocol: string | undefined;
  /** The agent's initialize, once a broker accepted it (replayed on every new session), and whether it sent notifications/initialized. */
  #init: { id: Id; params: unknown } | undefined;
  #initialized = false;
  #events: AbortController | undefined;
  #reconnecting: Promise<void> | undefined;
  #lostBecause = "";
  /** Requests waiting for the broker to come back, in order. */
  #held: { message: JsonRpcMessage; timer: ReturnType<typeof setTimeout> }[] = [];
  readonly #own = new Map<string, (message: JsonRpcMessage) => void>();
  readonly #inFlight = new Set<AbortController>();
  #ownCount = 0;
  #closed = false;
  /** Messages reach the broker in the agent's order: each POST starts once the one before has its answer's headers. */
  #turn: Promise<void> = Promise.resolve();

  constructor(options: RelayOptions) {
    this.#o = options;
    // The name `localhost` is never dialled (it resolves to ::1 too, where another program may hold the port): the
    // address the broker proved itself for is the one every message goes to.
    this.#url = new URL(dialUrl(options.mcpUrl));
    this.#base = this.#url.origin;
    this.#holdMs = options.holdMs ?? 10_000;
  }

  /**
   * Reaches a broker that proves it knows the token, starting one through `noBroker` when nothing listens.
   * Throws BrokerNotProven (nothing was sent) or BrokerUnreachable.
   */
  async connect(): Promise<void> {
    try {
      await checkBroker(this.#base, this.#o.token);
    } catch (error) {
      if (!(error instanceof BrokerUnreachable && error.refused && this.#o.noBroker)) throw error;
      await this.#o.noBroker(undefined);
      await checkBroker(this.#base, this.#o.token, 5_000);
    }
    this.#o.onConnected?.();
  }

  /** A message from the agent. */
  receive(message: JsonRpcMessage): void {
    if (this.#closed) return;
    const method = typeof message["method"] === "string" ? message["method"] : undefined;
    const id = idOf(message);
    if (method === "notifications/initialized") this.#initialized = true;
    if (this.#reconnecting) {
      if (method !== undefined && id !== undefined) this.#hold(message);
      else if (method === "notifications/cancelled") this.#dropHeld(cancelledId(message));
      // Other notifications and answers to the old broker's requests have nowhere to go; initialized is replayed.
      return;
    }
    void this.#deliver(message);
  }

  /** Resolves once no call is in flight or waiting for the broker (or after `timeoutMs`). */
  async settled(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.#inFlight.size > 0 || this.#held.length > 0 || this.#reconnecting) && Date.now() < deadline) await sleep(50);
  }

  /** The agent is gone: ends the session on the broker too (best effort, briefly). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#events?.abort();
    for (const c of this.#inFlight) c.abort();
    for (const h of this.#held.splice(0)) clearTimeout(h.timer);
    if (this.#session && !this.#reconnecting) {
      await fetch(this.#url, { method: "DELETE", headers: this.#headers(), signal: AbortSignal.timeout(1_000), redirect: "error" }).then(
        (r) => r.body?.cancel(),
        () => undefined,
      );
    }
  }

  #headers(): Record<string, string> {
    return {
      Authorization: `Bearer ${this.#o.token}`,
      Accept: "application/json, text/event-stream",
      "Content-Type": "application/json",
      ...(this.#session ? { "Mcp-Session-Id": this.#session } : {}),
      ...(this.#protocol ? { "Mcp-Protocol-Version": this.#protocol } : {}),
    };
  }

  /** POSTs one message and hands on what comes back; decides what a failure means for it. */
  async #deliver(message: JsonRpcMessage): Promise<void> {
    const id = idOf(message);
    const isRequest = id !== undefined && typeof message["method"] === "string";
    const isInitialize = message["method"] === "initialize";
    const abort = new AbortController();
    this.#inFlight.add(abort);
    let answered = false;
    const previous = this.#turn;
    let next: () => void = () => undefined;
    this.#turn = new Promise((resolve) => (next = resolve));
    try {
      await previous;
      if (this.#reconnecting) {
        // The broker went away while this waited its turn.
        if (isRequest) this.#hold(message);
        return;
      }
      let response: Response;
      try {
        response = await fetch(this.#url, { method: "POST", headers: this.#headers(), body: JSON.stringify(message), signal: abort.signal, redirect: "error" });
      } catch (error) {
        if (this.#closed) return;
        if (neverArrived(error)) {
          // Nothing listens: the message reached no broker, so it is safe to send again once one is back.
          if (isRequest) this.#hold(message);
          this.#lost(causeOf(error));
        } else {
          if (isRequest) this.#answerLost(id, causeOf(error));
          this.#lost(causeOf(error));
        }
        return;
      }
      if (isInitialize) this.#session = response.headers.get("mcp-session-id") ?? this.#session;
      next();
      if (response.status === 404 && this.#session && !isInitialize) {
        // The broker does not know this session (it restarted): the message was not handled.
        await response.body?.cancel();
        if (isRequest) this.#hold(message);
        this.#lost("the broker no longer knows this session: it restarted");
        return;
      }
      if (response.status === 202) {
        await response.body?.cancel();
        if (message["method"] === "notifications/initialized") void this.#openEvents();
        return;
      }
      if (!response.ok) {
        const text = await response.text().catch(() => "");
        if (isRequest) this.#o.send(errorAnswer(id, brokerError(response.status, text)));
        return;
      }
      answered = await this.#readAnswer(response, (m) => {
        if (isRequest && idOf(m) === id && !("method" in m)) {
          if (isInitialize && "result" in m) {
            this.#protocolFrom(m);
            this.#init = { id, params: message["params"] };
          }
          return true;
        }
        return false;
      });
      if (isRequest && !answered && !this.#closed) {
        this.#answerLost(id, "the broker's answer stream ended without an answer");
        this.#lost("the broker's answer stream ended early");
      }
    } catch (error) {
      if (this.#closed) return;
      if (isRequest && !answered) this.#answerLost(id, causeOf(error));
      this.#lost(causeOf(error));
    } finally {
      next();
      this.#inFlight.delete(abort);
    }
  }

  /** Passes on every message of a POST's answer (JSON or an SSE stream); true once `isAnswer` held for one. */
  async #readAnswer(response: Response, isAnswer: (m: JsonRpcMessage) => boolean): Promise<boolean> {
    let answered = false;
    const onMessage = (m: JsonRpcMessage) => {
      if (isAnswer(m)) answered = true;
      this.#fromBroker(m);
    };
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      if (response.body) await readEvents(response.body, onMessage);
    } else {
      const body: unknown = await response.json().catch(() => undefined);
      for (const m of Array.isArray(body) ? body : [body]) if (isMessage(m)) onMessage(m);
    }
    return answered;
  }

  #fromBroker(message: JsonRpcMessage): void {
    const id = idOf(message);
    if (typeof id === "string" && id.startsWith(OWN_ID) && !("method" in message)) {
      this.#own.get(id)?.(message);
      return;
    }
    if (!this.#closed) this.#o.send(message);
  }

  #protocolFrom(answer: JsonRpcMessage): void {
    const result = answer["result"];
    const version = typeof result === "object" && result !== null ? Reflect.get(result, "protocolVersion") : undefined;
    if (typeof version === "string") this.#protocol = version;
  }

  /**
   * The session's GET stream: the broker's own messages, and the sign that it went away. Resolves once it is open
   * ("open"), or with why not; while open, its end starts a reconnect.
   */
  async #openEvents(): Promise<"open" | "gone" | "failed"> {
    this.#events?.abort();
    const abort = new AbortController();
    this.#events = abort;
    let response: Response;
    try {
      response = await fetch(this.#url, {
        method: "GET",
        headers: { ...this.#headers(), Accept: "text/event-stream" },
        signal: abort.signal,
        redirect: "error",
      });
    } catch {
      return "failed";
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return "gone";
    }
    if (response.status === 409) {
      // The broker still holds the previous stream (its end has not reached it yet): the session is alive.
      await response.body?.cancel();
      setTimeout(() => {
        if (this.#events === abort && !this.#closed) void this.#openEvents();
      }, 500);
      return "open";
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      // 405: a broker without GET streams; calls still work, and a lost broker shows on the next call.
      return response.status === 405 ? "open" : "failed";
    }
    const body = response.body;
    void readEvents(body, (m) => this.#fromBroker(m)).then(
      () => {
        if (this.#events === abort && !abort.signal.aborted) this.#lost("the broker closed the session's event stream");
      },
      (error: unknown) => {
        if (this.#events === abort && !abort.signal.aborted) this.#lost(causeOf(error));
      },
    );
    return "open";
  }

  /** Something suggests the broker went away: hold new calls and reconnect, once. */
  #lost(cause: string): void {
    if (this.#reconnecting || this.#closed) return;
    this.#lostBecause = cause;
    this.#o.log(`tabrelay: lost the broker at ${this.#base} (${cause}); reconnecting`);
    this.#events?.abort();
    this.#events = undefined;
    this.#reconnecting = this.#reconnect().finally(() => {
      this.#reconnecting = undefined;
      const held = this.#held.splice(0);
      for (const h of held) {
        clearTimeout(h.timer);
        if (!this.#closed) void this.#deliver(h.message);
      }
    });
  }

  async #reconnect(): Promise<void> {
    const since = Date.now();
    let delay = 100;
    let said = "";
    for (let attempt = 0; !this.#closed; attempt++) {
      if (attempt > 0) {
        await sleep(delay);
        delay = Math.min(delay * 2, 1_000);
      }
      try {
        // Every reconnect first: the listener proves it knows the token before it gets any.
        await checkBroker(this.#base, this.#o.token, 3_000);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.#lostBecause = reason;
        if (reason !== said) this.#o.log(`tabrelay: ${reason}${error instanceof BrokerNotProven ? "" : "; still trying"}`);
        said = reason;
        if (error instanceof BrokerUnreachable && error.refused && this.#o.noBroker) {
          await this.#o.noBroker(Date.now() - since).catch((e: unknown) => this.#o.log(`tabrelay: ${e instanceof Error ? e.message : String(e)}`));
        }
        continue;
      }
      // The same broker after a blip still knows the session; a new one does not.
      if (this.#session) {
        const events = await this.#openEvents();
        if (events === "open") break;
        if (events === "failed") continue;
      }
      this.#session = undefined;
      this.#protocol = undefined;
      if (!this.#init) break;
      try {
        await this.#replayInitialize(this.#init.params);
        break;
      } catch (error) {
        this.#lostBecause = error instanceof Error ? error.message : String(error);
        this.#o.log(`tabrelay: could not open a new session on the broker: ${this.#lostBecause}`);
      }
    }
    if (this.#closed) return;
    this.#o.log(`tabrelay: reconnected to the broker at ${this.#base} after ${((Date.now() - since) / 1000).toFixed(1)} s`);
    this.#o.onConnected?.();
  }

  /** A new session for the agent, with the agent's own initialize params; the broker's answer stays here. */
  async #replayInitialize(params: unknown): Promise<void> {
    const id = `${OWN_ID}${++this.#ownCount}`;
    let answer: JsonRpcMessage | undefined;
    this.#own.set(id, (m) => (answer = m));
    try {
      const response = await fetch(this.#url, {
        method: "POST",
        headers: this.#headers(),
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params }),
        signal: AbortSignal.timeout(10_000),
        redirect: "error",
      });
      const session = response.headers.get("mcp-session-id");
      if (!response.ok) throw new Error(brokerError(response.status, await response.text().catch(() => "")).message);
      await this.#readAnswer(response, () => false);
      if (!answer || !session) throw new Error("the broker did not answer initialize");
      if ("error" in answer) throw new Error(`the broker refused initialize: ${JSON.stringify(answer["error"])}`);
      this.#session = session;
      this.#protocolFrom(answer);
    } finally {
      this.#own.delete(id);
    }
    if (this.#initialized) {
      const response = await fetch(this.#url, {
        method: "POST",
        headers: this.#headers(),
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
        signal: AbortSignal.timeout(10_000),
        redirect: "error",
      });
      await response.body?.cancel();
      await this.#openEvents();
    }
  }

  #hold(message: JsonRpcMessage): void {
    const id = idOf(message);
    const entry = {
      message,
      timer: setTimeout(() => {
        this.#held = this.#held.filter((h) => h !== entry);
        if (id !== undefined && !this.#closed) {
          this.#o.send(
            errorAnswer(id, {
              code: -32000,
              message: `tabrelay: the broker at ${this.#base} went away and has not come back within ${Math.round(this.#holdMs / 1000)} s (${this.#lostBecause}); this call was not sent, so nothing was done. tabrelay stdio keeps reconnecting by itself: retry the call in a moment`,
              data: { code: "broker_unreachable" },
            }),
          );
        }
      }, this.#holdMs),
    };
    this.#held.push(entry);
  }

  #dropHeld(id: Id | undefined): void {
    if (id === undefined) return;
    const kept = this.#held.filter((h) => idOf(h.message) !== id);
    for (const h of this.#held) if (!kept.includes(h)) clearTimeout(h.timer);
    this.#held = kept;
  }

  #answerLost(id: Id, cause: string): void {
    this.#o.send(
      errorAnswer(id, {
        code: -32000,
        message: `tabrelay: the connection to the broker at ${this.#base} was lost while this call ran (${cause}); whether it took effect is unknown. tabrelay stdio reconnects by itself: retry the call (after an action, look at the page first)`,
        data: { code: "broker_lost" },
      }),
    );
  }
}

/** Reads an SSE stream, handing on each event's data parsed as a JSON-RPC message. Rejects when the stream breaks. */
async function readEvents(body: ReadableStream<Uint8Array>, onMessage: (m: JsonRpcMessage) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data: string[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
      if (line === "") {
        if (data.length > 0) {
          const parsed: unknown = parseJson(data.join("\n"));
          if (isMessage(parsed)) onMessage(parsed);
        }
        data = [];
      } else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isMessage(value: unknown): value is JsonRpcMessage {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function idOf(message: JsonRpcMessage): Id | undefined {
  const id = message["id"];
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

function cancelledId(message: JsonRpcMessage): Id | undefined {
  const params = message["params"];
  const id = typeof params === "object" && params !== null ? Reflect.get(params, "requestId") : undefined;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

function errorAnswer(id: Id, error: { code: number; message: string; data?: unknown }): JsonRpcMessage {
  return { jsonrpc: "2.0", id, error };
}

/** A broker's HTTP refusal as a JSON-RPC error: its own JSON-RPC error when it sent one. */
function brokerError(status: number, text: string): { code: number; message: string } {
  const body = parseJson(text);
  const error = typeof body === "object" && body !== null ? Reflect.get(body, "error") : undefined;
  const message = typeof error === "object" && error !== null ? Reflect.get(error, "message") : undefined;
  const code = typeof error === "object" && error !== null ? Reflect.get(error, "code") : undefined;
  return {
    code: typeof code === "number" ? code : -32000,
    message: `tabrelay: the broker refused this message (HTTP ${status}): ${typeof message === "string" ? message : text.trim().slice(0, 500) || "no reason given"}`,
  };
}

/** The request never reached a listener (so it cannot have been handled). */
function neverArrived(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return typeof cause === "object" && cause !== null && Reflect.get(cause, "code") === "ECONNREFUSED";
}

function causeOf(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

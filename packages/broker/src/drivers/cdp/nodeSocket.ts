// The CDP driver's socket on Node: a WebSocket client (RFC 6455) over node:net and node:tls, as the WHATWG API the
// client speaks (cdpClient.ts CdpSocket). Node-only: the runtime-neutral core never imports it (scripts/check-deps.mjs).
//
// Its own rather than `ws` for one behaviour: a message longer than maxPayload is skipped as it streams in, never
// buffered, and reported as an `oversize` event carrying its first and last bytes, so that the client fails the one
// call it answered (or drops the one event) and the connection lives on. A page can make Chrome send a message of
// any size (console.log of a 140 MB string with Runtime on, an alert's text, a tool's answer); `ws` closes the socket
// with 1009 there, and that dropped the browser for every session. Only what the DevTools endpoint needs is here: no
// extensions (permessage-deflate is never offered), no redirects, text and binary messages, ping and close.
import { createHash, randomBytes } from "node:crypto";
import { connect as tcpConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { CdpOversize, CdpSocket, CdpSocketFactory } from "./cdpClient.js";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** How much of an oversize message is kept to say what it was: its start (the id or method) and end (the session). */
const EDGE_BYTES = 512;
const MAX_HANDSHAKE_BYTES = 16 * 1024;
const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

type Listeners = {
  open: () => void;
  message: (event: { data: unknown }) => void;
  oversize: (event: CdpOversize) => void;
  close: (event: { code: number; reason: string }) => void;
  error: (event: unknown) => void;
};

interface Frame {
  fin: boolean;
  opcode: number;
  remaining: number;
  /** A control frame's payload (at most 125 bytes). */
  control?: Buffer[];
}

interface Message {
  binary: boolean;
  bytes: number;
  /** The payload so far; undefined once it passed maxPayload and is being skipped. */
  parts: Buffer[] | undefined;
  head: Buffer;
  tail: Buffer;
}

class NodeCdpSocket implements CdpSocket {
  readonly #maxPayload: number;
  readonly #listeners: { [K in keyof Listeners]: Array<Listeners[K]> } = { open: [], message: [], oversize: [], close: [], error: [] };
  readonly #socket: Socket;
  readonly #key = randomBytes(16).toString("base64");
  #state = CONNECTING;
  #handshake: Buffer | undefined = Buffer.alloc(0);
  readonly #queue: Buffer[] = [];
  #queued = 0;
  #frame: Frame | undefined;
  #message: Message | undefined;
  #closeCode = 1006;
  #closeReason = "";
  #closeSent = false;
  #closedEmitted = false;

  constructor(url: string, maxPayload: number) {
    this.#maxPayload = maxPayload;
    const target = new URL(url);
    const secure = target.protocol === "wss:";
    const host = target.hostname.replace(/^\[|\]$/g, "");
    const port = Number(target.port) || (secure ? 443 : 80);
    this.#socket = secure ? tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }), ALPNProtocols: ["http/1.1"] }) : tcpConnect({ host, port });
    this.#socket.setNoDelay(true);
    this.#socket.once(secure ? "secureConnect" : "connect", () => this.#socket.write(this.#request(target)));
    this.#socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#socket.on("error", (error: Error) => this.#emit("error", { message: error.message, error }));
    this.#socket.on("close", () => this.#onSocketClosed());
  }

  get readyState(): number {
    return this.#state;
  }

  send(data: string): void {
    if (this.#state !== OPEN) throw new Error("the WebSocket is not open");
    this.#socket.write(frame(1, Buffer.from(data, "utf8")));
  }

  close(code = 1000, reason = ""): void {
    if (this.#state === CLOSED || this.#state === CLOSING) return;
    if (this.#state === CONNECTING) {
      this.#state = CLOSED;
      this.#socket.destroy();
      return;
    }
    this.#state = CLOSING;
    this.#sendClose(code, reason);
    // A browser that does not finish the closing handshake must not keep the process alive.
    setTimeout(() => this.#socket.destroy(), 1000).unref();
  }

  addEventListener<K extends keyof Listeners>(type: K, listener: Listeners[K]): void {
    this.#listeners[type].push(listener);
  }

  #emit<K extends keyof Listeners>(type: K, ...event: Parameters<Listeners[K]>): void {
    for (const listener of [...this.#listeners[type]]) (listener as (...args: unknown[]) => void)(...event);
  }

  #request(target: URL): string {
    const lines = [
      `GET ${target.pathname || "/"}${target.search} HTTP/1.1`,
      `Host: ${target.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${this.#key}`,
      "Sec-WebSocket-Version: 13",
    ];
    // A hosted browser's credentials in the URL (wss://user:secret@host/...), as Basic authorization.
    if (target.username || target.password) {
      const credentials = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
      lines.push(`Authorization: Basic ${Buffer.from(credentials).toString("base64")}`);
    }
    return `${lines.join("\r\n")}\r\n\r\n`;
  }

  #onData(chunk: Buffer): void {
    if (this.#handshake) {
      const received: Buffer = Buffer.concat([this.#handshake, chunk]);
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) {
        if (received.length > MAX_HANDSHAKE_BYTES) this.#fail("the server's handshake answer is too long");
        else this.#handshake = received;
        return;
      }
      this.#handshake = undefined;
      const problem = this.#checkHandshake(received.subarray(0, end).toString("latin1"));
      if (problem) return this.#fail(problem);
      this.#state = OPEN;
      this.#emit("open");
      chunk = received.subarray(end + 4);
      if (chunk.length === 0) return;
    }
    if (this.#state === CLOSED) return;
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    this.#pump();
  }

  #checkHandshake(head: string): string | undefined {
    const [status = "", ...fields] = head.split("\r\n");
    const code = /^HTTP\/1\.1 (\d{3})/.exec(status)?.[1];
    if (code !== "101") return `Unexpected server response: ${code ?? status.slice(0, 40)}`;
    const headers = new Map(fields.map((line) => [line.slice(0, line.indexOf(":")).trim().toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
    const accept = createHash("sha1")
      .update(this.#key + GUID)
      .digest("base64");
    if (headers.get("upgrade")?.toLowerCase() !== "websocket") return "the server did not upgrade to WebSocket";
    if (headers.get("sec-websocket-accept") !== accept) return "the server's Sec-WebSocket-Accept is wrong";
    if (headers.has("sec-websocket-extensions")) return "the server chose an extension that was not offered";
    return undefined;
  }

  /** Frames out of what has arrived; a payload is consumed as it comes, so a skipped message is never held. */
  #pump(): void {
    while (this.#state === OPEN || this.#state === CLOSING) {
      if (!this.#frame) {
        const header = this.#readHeader();
        if (!header) return;
        this.#frame = header;
      }
      const current = this.#frame;
      while (current.remaining > 0 && this.#queued > 0) {
        const first = this.#queue[0]!;
        const n = Math.min(first.length, current.remaining);
        const piece = n === first.length ? this.#queue.shift()! : first.subarray(0, n);
        if (n < first.length) this.#queue[0] = first.subarray(n);
        this.#queued -= n;
        current.remaining -= n;
        if (current.control) current.control.push(piece);
        else this.#payload(piece);
      }
      if (current.remaining > 0) return;
      this.#frame = undefined;
      this.#endFrame(current);
    }
  }

  #readHeader(): Frame | undefined {
    if (this.#queued < 2) return undefined;
    const start = this.#peek(2);
    const length7 = start[1]! & 0x7f;
    const size = 2 + (length7 === 126 ? 2 : length7 === 127 ? 8 : 0);
    if (this.#queued < size) return undefined;
    const header = this.#take(size);
    const fin = (header[0]! & 0x80) !== 0;
    const opcode = header[0]! & 0x0f;
    if ((header[0]! & 0x70) !== 0) return this.#fail("a frame with reserved bits set", 1002);
    if ((header[1]! & 0x80) !== 0) return this.#fail("a masked frame from the server", 1002);
    let length = length7;
    if (length7 === 126) length = header.readUInt16BE(2);
    else if (length7 === 127) {
      const long = header.readBigUInt64BE(2);
      if (long > BigInt(Number.MAX_SAFE_INTEGER)) return this.#fail("a frame longer than 2^53 bytes", 1009);
      length = Number(long);
    }
    if (opcode >= 8) {
      if (!fin || length > 125) return this.#fail("a fragmented or long control frame", 1002);
      if (opcode !== 8 && opcode !== 9 && opcode !== 10) return this.#fail(`an unknown control frame (opcode ${opcode})`, 1002);
      return { fin, opcode, remaining: length, control: [] };
    }
    if (opcode === 0) {
      if (!this.#message) return this.#fail("a continuation frame outside a message", 1002);
    } else if (opcode === 1 || opcode === 2) {
      if (this.#message) return this.#fail("a new message inside a fragmented one", 1002);
      this.#message = { binary: opcode === 2, bytes: 0, parts: [], head: Buffer.alloc(0), tail: Buffer.alloc(0) };
    } else return this.#fail(`an unknown frame (opcode ${opcode})`, 1002);
    return { fin, opcode, remaining: length };
  }

  #payload(piece: Buffer): void {
    const message = this.#message!;
    message.bytes += piece.length;
    if (message.parts) {
      message.parts.push(piece);
      if (message.bytes <= this.#maxPayload) return;
      // Past the cap: keep its edges only, and skip the rest as it arrives.
      message.head = firstBytes(message.parts, EDGE_BYTES);
      message.tail = lastBytes(message.parts, EDGE_BYTES);
      message.parts = undefined;
      return;
    }
    message.tail = lastBytes([message.tail, piece], EDGE_BYTES);
  }

  #endFrame(current: Frame): void {
    if (current.control) return this.#control(current.opcode, Buffer.concat(current.control));
    if (!current.fin) return;
    const message = this.#message!;
    this.#message = undefined;
    if (this.#state !== OPEN) return;
    if (message.parts) {
      const data = Buffer.concat(message.parts);
      this.#emit("message", { data: message.binary ? data : data.toString("utf8") });
    } else {
      this.#emit("oversize", { head: message.head.toString("utf8"), tail: message.tail.toString("utf8"), bytes: message.bytes });
    }
  }

  #control(opcode: number, payload: Buffer): void {
    if (opcode === 9) {
      if (this.#state === OPEN) this.#socket.write(frame(10, payload));
      return;
    }
    if (opcode !== 8) return;
    this.#closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
    this.#closeReason = payload.subarray(2).toString("utf8");
    if (!this.#closeSent) this.#sendClose(this.#closeCode === 1005 ? 1000 : this.#closeCode, "");
    this.#state = CLOSING;
    this.#socket.end();
  }

  #sendClose(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    const body = Buffer.alloc(2 + Buffer.byteLength(reason));
    body.writeUInt16BE(code, 0);
    body.write(reason, 2);
    this.#socket.write(frame(8, body));
  }

  /** A protocol failure: the connection ends (the browser broke the protocol, or this is not a DevTools endpoint). */
  #fail(message: string, code = 1002): undefined {
    this.#emit("error", { message });
    if (this.#state === OPEN) this.#sendClose(code, "");
    this.#closeCode = code === 1002 || code === 1009 ? 1006 : code;
    this.#socket.destroy();
    return undefined;
  }

  #onSocketClosed(): void {
    this.#state = CLOSED;
    if (this.#closedEmitted) return;
    this.#closedEmitted = true;
    this.#emit("close", { code: this.#closeCode, reason: this.#closeReason });
  }

  /** The first n queued bytes in one buffer (joining chunks only as far as a header spans them). */
  #peek(n: number): Buffer {
    while (this.#queue[0]!.length < n) this.#queue.splice(0, 2, Buffer.concat([this.#queue[0]!, this.#queue[1]!]));
    return this.#queue[0]!.subarray(0, n);
  }

  #take(n: number): Buffer {
    const out = this.#peek(n);
    const first = this.#queue[0]!;
    if (first.length === n) this.#queue.shift();
    else this.#queue[0] = first.subarray(n);
    this.#queued -= n;
    return out;
  }
}

/** The first `n` bytes of `parts`, copied (the parts are let go). */
function firstBytes(parts: Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let held = 0;
  for (const part of parts) {
    if (held >= n) break;
    out.push(part.subarray(0, n - held));
    held += Math.min(part.length, n - held);
  }
  return Buffer.concat(out);
}

/** The last `n` bytes of `parts`, copied. */
function lastBytes(parts: Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let held = 0;
  for (let i = parts.length - 1; i >= 0 && held < n; i--) {
    out.unshift(parts[i]!.subarray(-(n - held)));
    held += Math.min(parts[i]!.length, n - held);
  }
  return Buffer.concat(out);
}

/** One client frame: FIN set, masked with a fresh key (RFC 6455 5.3). */
function frame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  const extended = length < 126 ? 0 : length < 65536 ? 2 : 8;
  const out = Buffer.allocUnsafe(2 + extended + 4 + length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | (extended === 0 ? length : extended === 2 ? 126 : 127);
  if (extended === 2) out.writeUInt16BE(length, 2);
  else if (extended === 8) out.writeBigUInt64BE(BigInt(length), 2);
  const maskAt = 2 + extended;
  randomBytes(4).copy(out, maskAt);
  for (let i = 0; i < length; i++) out[maskAt + 4 + i] = payload[i]! ^ out[maskAt + (i & 3)]!;
  return out;
}

export const nodeCdpSocket: CdpSocketFactory = (url, { maxPayload }) => new NodeCdpSocket(url, maxPayload);

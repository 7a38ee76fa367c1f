/**
 * The proofs both ends of a tabrelay link exchange before trusting each other, and the keys that authenticate every
 * frame after them. One definition, run by the broker (Node) and the extension (a service worker), with WebCrypto
 * only, so the two can never disagree.
 *
 * A secret never crosses the wire. Each side picks a fresh 256-bit nonce; each proves it knows the shared secret with
 * an HMAC-SHA256 over both nonces and the endpoint the browser dialled (scheme, host and port, canonicalised:
 * `canonicalEndpoint`), under a key derived for its own role, so a proof one side sent can never be replayed as the
 * other side's, nor a proof made for one address accepted at another: a relay listening elsewhere that forwards the
 * real broker's proof forwards a proof for the broker's address, not its own. The broker proves itself first: the
 * browser sends nothing that depends on the secret to a listener that has not proved it. After the proofs, every frame
 * in each direction carries an HMAC under a per-connection key (`frameKeys`) over its sequence number and its text,
 * so nothing can be injected, changed, dropped or replayed on the socket. Secrets are tabrelay's 192-bit random
 * tokens (env tokens are checked for entropy), so a proof gives nothing to an offline guesser.
 *
 * @example
 * const browserNonce = newNonce();               // browser -> broker in `hello`, with the endpoint it dialled
 * const endpoint = canonicalEndpoint("ws://127.0.0.1:9333/bridge"); // "http://127.0.0.1:9333"
 * const brokerNonce = newNonce();                // broker -> browser in `challenge`, with the endpoint it proves for and:
 * const fromBroker = await bridgeProof(secret, "broker", { browserNonce, brokerNonce, browserId, endpoint });
 * // the browser checks the endpoint is the one it dialled and the proof with proofsEqual, then answers with its own:
 * const fromBrowser = await bridgeProof(secret, "browser", { browserNonce, brokerNonce, browserId, endpoint });
 * const keys = await frameKeys(secret, { browserNonce, brokerNonce, browserId, endpoint });
 * const out = await FrameSealer.create(keys["browser>broker"]); // seal(json, send): send("<mac>.<seq>.<json>" as bytes)
 */

/** Who is proving. Keys are derived per role: a broker's proof is never a valid browser proof. */
export type ProofRole = "broker" | "browser";

/**
 * A team broker's pairing codes are `<pairing id>.<secret>` (`p_` + 12 lowercase letters and digits, a dot, the
 * secret); the whole code is the key. The browser names the id in `hello` so the broker knows which user's key to
 * prove with; a code without one is the broker's own (single user).
 */
export const PAIRING_ID_PATTERN = /^p_[a-z0-9]{12}$/;

/** The pairing id a code names, or undefined for a code without one. */
export function pairingIdOf(code: string): string | undefined {
  const dot = code.indexOf(".");
  return dot > 0 && PAIRING_ID_PATTERN.test(code.slice(0, dot)) ? code.slice(0, dot) : undefined;
}

export interface BridgeTranscript {
  browserNonce: string;
  brokerNonce: string;
  browserId: string;
  /** The endpoint the browser dialled, canonical (`canonicalEndpoint`): what the broker proves it is. */
  endpoint: string;
}

/** base64url of 32 random bytes (43 characters). */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A fresh 256-bit nonce, base64url. */
export function newNonce(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The proof over a `/bridge` handshake that `role` knows the pairing secret. */
export function bridgeProof(secret: string, role: ProofRole, transcript: BridgeTranscript): Promise<string> {
  return proof(secret, `bridge/${role}`, transcriptText(transcript));
}

function transcriptText(t: BridgeTranscript): string {
  return `${t.browserNonce}.${t.brokerNonce}.${t.browserId}.${t.endpoint}`;
}

/**
 * The broker's proof that it knows the MCP token, over a client's nonce and the endpoint it proves it is
 * (`POST /auth/proof`): tabrelay's own clients (the stdio forwarder, the launcher's handover) check it, and that the
 * endpoint is the one they dialled, before they send the token anywhere.
 */
export function mcpBrokerProof(token: string, clientNonce: string, endpoint: string): Promise<string> {
  return proof(token, "mcp/broker", `${clientNonce}.${endpoint}`);
}

/**
 * `scheme://host:port` of a broker URL (ws, wss, http or https; any path): ws and http are one scheme (`http`), wss and
 * https another (`https`), the port always written, the host lower-case, `localhost` the IPv4 loopback address
 * (tabrelay's clients dial that, never the name: see `dialUrl`), an IPv4-mapped IPv6 address its IPv4 form. Undefined
 * for anything else. Both ends bind their proofs to this form.
 *
 * @example canonicalEndpoint("ws://localhost:9333/bridge") // "http://127.0.0.1:9333"
 * @example canonicalEndpoint("wss://Broker.example/bridge") // "https://broker.example:443"
 */
export function canonicalEndpoint(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(dialUrl(value));
  } catch {
    return undefined;
  }
  const tls = url.protocol === "wss:" || url.protocol === "https:";
  if (!tls && url.protocol !== "ws:" && url.protocol !== "http:") return undefined;
  const port = url.port || (tls ? "443" : "80");
  return `${tls ? "https" : "http"}://${url.hostname}:${port}`;
}

/**
 * The endpoint of a socket's own side (`socket.localAddress`, `socket.localPort`): what the broker bound and the
 * connection reached, which no header can rewrite. The broker does no TLS itself, so the scheme is `http`.
 */
export function socketEndpoint(address: string, port: number): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  const host = mapped?.[1] ?? address.toLowerCase();
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * What a broker proves it is, given the endpoint the client says it dialled and the broker's own side of the socket:
 * the client's endpoint when this broker can be it, else the broker's own (which the client then refuses). A loopback
 * endpoint is only ever this broker's if the connection reached exactly it: a relay on another loopback address or
 * port dials the broker from there, so a claim for the relay's address gets a proof for the broker's. A TLS endpoint
 * (a reverse proxy in front of the broker) is taken as claimed: TLS itself binds it to the name, no relay can answer
 * for it without the certificate. So is a plain endpoint off this machine (`--unsafe-plain-ws`, said to be in the
 * clear): no local program can be dialled at it.
 */
export function provenEndpoint(claimed: unknown, own: string): string {
  const endpoint = typeof claimed === "string" && claimed.length < 300 ? canonicalEndpoint(claimed) : undefined;
  if (!endpoint || endpoint === own) return own;
  const url = new URL(endpoint);
  if (url.protocol === "https:" || !isLoopbackHostname(url.hostname)) return endpoint;
  return own;
}

/**
 * The URL with the host `localhost` replaced by 127.0.0.1. tabrelay's clients never dial the name: it resolves to
 * ::1 as well, where another program may listen on the same port and take the connection.
 *
 * @example dialUrl("ws://localhost:9333/bridge") // "ws://127.0.0.1:9333/bridge"
 */
export function dialUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (url.hostname !== "localhost") return value;
  url.hostname = "127.0.0.1";
  return url.href.endsWith("/") && !value.endsWith("/") ? url.href.slice(0, -1) : url.href;
}

/** 127.0.0.0/8, ::1 (bracketed or not) and `localhost`. */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** An imported HMAC key (WebCrypto's CryptoKey, named without the DOM library). */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** The two directions of a /bridge socket; each has its own frame key and sequence. */
export type FrameDirection = "browser>broker" | "broker>browser";

/**
 * The per-connection keys that authenticate every frame after the proofs, one per direction, derived from the pairing
 * secret and the whole transcript (both nonces, the browser, the endpoint): raw 32 bytes each.
 */
export async function frameKeys(secret: string, transcript: BridgeTranscript): Promise<Record<FrameDirection, Uint8Array<ArrayBuffer>>> {
  const base = await hmac(new TextEncoder().encode(secret), `tabrelay/${PROOF_VERSION}/bridge/frames`);
  const text = transcriptText(transcript);
  return { "browser>broker": await hmac(base, `browser>broker.${text}`), "broker>browser": await hmac(base, `broker>browser.${text}`) };
}

/** Characters of a frame MAC (base64url of 32 bytes). A sealed frame is `<mac>.<seq>.<json>`. */
export const FRAME_MAC_CHARS = 43;

/**
 * Seals the frames of one direction (WebCrypto): `<mac>.<seq>.<json>` as UTF-8 bytes, the MAC an HMAC-SHA256 under that
 * direction's key over `<seq>.<json>`, seq counting from 0. Bytes, to be sent as a binary WebSocket message: the text is
 * encoded once, for the MAC, rather than again by the socket (a few-MB page costs its encoding twice otherwise). `send`
 * is called in the order `seal` was, whatever the time each MAC takes.
 */
export class FrameSealer {
  readonly #key: HmacKey;
  #seq = 0;
  #tail: Promise<void> = Promise.resolve();

  private constructor(key: HmacKey) {
    this.#key = key;
  }

  static async create(key: Uint8Array<ArrayBuffer>): Promise<FrameSealer> {
    return new FrameSealer(await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]));
  }

  /** Seals `json` and hands the sealed bytes to `send`, after every frame sealed before it. */
  seal(json: string, send: (sealed: Uint8Array<ArrayBuffer>) => void): Promise<void> {
    const encoder = new TextEncoder();
    const prefix = encoder.encode(`${this.#seq++}.`);
    const text = encoder.encode(json);
    const sealed = new Uint8Array(FRAME_MAC_CHARS + 1 + prefix.length + text.length);
    sealed[FRAME_MAC_CHARS] = 46; // "."
    sealed.set(prefix, FRAME_MAC_CHARS + 1);
    sealed.set(text, FRAME_MAC_CHARS + 1 + prefix.length);
    const mac = crypto.subtle.sign("HMAC", this.#key, sealed.subarray(FRAME_MAC_CHARS + 1));
    this.#tail = this.#tail.then(async () => {
      encoder.encodeInto(base64url(new Uint8Array(await mac)), sealed);
      send(sealed);
    });
    return this.#tail;
  }
}

/**
 * Opens the sealed frames of one direction (WebCrypto), in the order they arrived: the JSON text, or undefined for a
 * frame that is not sealed, has a wrong MAC, or is not the next in sequence (replayed, dropped or reordered). A caller
 * closes the socket on undefined: nothing after it can be trusted.
 */
export class FrameOpener {
  readonly #key: HmacKey;
  #seq = 0;
  #tail: Promise<unknown> = Promise.resolve();

  private constructor(key: HmacKey) {
    this.#key = key;
  }

  static async create(key: Uint8Array<ArrayBuffer>): Promise<FrameOpener> {
    return new FrameOpener(await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]));
  }

  open(sealed: string): Promise<string | undefined> {
    const expected = this.#seq++;
    const next = this.#tail.then(() => this.#open(sealed, expected));
    this.#tail = next;
    return next;
  }

  async #open(sealed: string, expected: number): Promise<string | undefined> {
    const prefix = `${expected}.`;
    if (sealed.charCodeAt(FRAME_MAC_CHARS) !== 46 || !sealed.startsWith(prefix, FRAME_MAC_CHARS + 1)) return undefined;
    const mac = fromBase64url(sealed.slice(0, FRAME_MAC_CHARS));
    if (!mac) return undefined;
    const body = sealed.slice(FRAME_MAC_CHARS + 1);
    if (!(await crypto.subtle.verify("HMAC", this.#key, mac, new TextEncoder().encode(body)))) return undefined;
    return body.slice(prefix.length);
  }
}

/** Compares two proofs in time that depends only on their length. */
export function proofsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** In every key's derivation label: keys of another protocol version never match. */
const PROOF_VERSION = 4;

async function proof(secret: string, purpose: string, message: string): Promise<string> {
  const key = await hmac(new TextEncoder().encode(secret), `tabrelay/${PROOF_VERSION}/${purpose}`);
  return base64url(await hmac(key, message));
}

async function hmac(keyBytes: Uint8Array<ArrayBuffer>, message: string): Promise<Uint8Array<ArrayBuffer>> {
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

import { utf8Bytes } from "./bytes.js";
import { constantTimeEqual, sha256 } from "./sha256.js";

/** Constant-time string comparison (hashing first makes lengths equal). */
export function safeEqual(a: string, b: string): boolean {
  return constantTimeEqual(sha256(utf8Bytes(a)), sha256(utf8Bytes(b)));
}

/** The rule for tokens tabrelay does not generate itself (environment, hand-written files); docs/safety.md. */
export const MIN_TOKEN_BITS = 128;
export const TOKEN_ADVICE = "generate one with: openssl rand -hex 32 (or unset the variable and tabrelay generates and stores one)";

/**
 * An estimate of a token's strength, as a floor against obvious mistakes (it cannot tell a random token from
 * a well-disguised phrase): the length of its shortest repeating unit times log2 of the alphabet its character
 * classes span (hex digits 16, digits 10, lower case 26, upper case 26, anything else 33 more).
 * `openssl rand -hex 16` (32 hex digits) is 128 bits; `aaaaaaaaaaaaaaaa` is 75 and `abab...` counts as `ab`.
 */
export function estimatedTokenBits(token: string): number {
  const chars = [...token];
  const unit = shortestPeriod(chars);
  let alphabet: number;
  if (/^[0-9]+$/.test(token)) alphabet = 10;
  else if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) alphabet = 16;
  else alphabet = (/[0-9]/.test(token) ? 10 : 0) + (/[a-z]/.test(token) ? 26 : 0) + (/[A-Z]/.test(token) ? 26 : 0) + (/[^0-9a-zA-Z]/.test(token) ? 33 : 0);
  return alphabet <= 1 ? 0 : unit * Math.log2(alphabet);
}

function shortestPeriod(chars: string[]): number {
  const n = chars.length;
  for (let period = 1; period <= n / 2; period++) {
    if (n % period !== 0) continue;
    if (chars.every((c, i) => c === chars[i % period])) return period;
  }
  return n;
}

/** Why a token is too weak to use, or undefined: >= 128 bits by the estimate above and >= 8 different characters. */
export function weakTokenReason(token: string): string | undefined {
  const distinct = new Set(token).size;
  if (distinct < 8) return `it uses only ${distinct} different character${distinct === 1 ? "" : "s"} (at least 8 are needed)`;
  const bits = Math.floor(estimatedTokenBits(token));
  if (bits < MIN_TOKEN_BITS)
    return `it carries about ${bits} bits by its length and alphabet (at least ${MIN_TOKEN_BITS} are needed, e.g. 32 hex digits or 22 letters and digits)`;
  return undefined;
}

/** What a secret is, as its redaction marker names it: `[redacted: cdp endpoint]`. */
export type SecretKind = "mcp token" | "dashboard token" | "pairing token" | "cdp endpoint" | "provider key" | "provider session" | "model key" | "secret";

/** Anything that removes secrets from a text: the registry, or a stand-in in unit tests. */
export interface Redactor {
  redact(text: string): string;
}

/** Where secrets are registered and redacted: the registry, as code that holds it by interface sees it. */
export interface SecretSink extends Redactor {
  register(secret: string | undefined, kind: SecretKind): void;
}

/** Secrets shorter than this are not searched for: too likely to match ordinary words. */
const MIN_SECRET_LENGTH = 8;
/** A URL path segment at least this long is taken to carry a credential (a DevTools GUID, a JWT). */
const MIN_SECRET_SEGMENT = 16;
/** A registered host and port (with or without its scheme), as credentialParts gives it. */
const HOST_PORT = /^(?:[a-z]+:\/\/)?[^/?#@\s]+:\d{1,5}$/i;

/**
 * The broker's one list of secrets: every exit (tool results, audit records, log lines, the dashboard's API)
 * redacts through it. A secret is registered with its kind; its URL-encoded forms are searched for too, and for
 * a URL its credential-bearing parts (password, query values, long path segments such as the DevTools GUID of
 * a `ws://…/devtools/browser/<id>` endpoint, and for an `http://host:port` DevTools address its host and port).
 * Secrets are never unregistered: an endpoint whose browser detached may still open that browser.
 *
 * @example
 * const secrets = new SecretRegistry();
 * secrets.register("ws://127.0.0.1:9222/devtools/browser/6a1c…", "cdp endpoint");
 * secrets.redact("cannot open ws://127.0.0.1:9222/devtools/browser/6a1c…"); // "cannot open [redacted: cdp endpoint]"
 */
export class SecretRegistry implements SecretSink {
  /** Every searched form of every secret (percent escapes in upper case), with the kind of the secret it came from. */
  readonly #needles = new Map<string, SecretKind>();
  #pattern: RegExp | undefined;

  /** A registry holding these secrets, all of one kind. */
  static of(secrets: Iterable<string | undefined>, kind: SecretKind): SecretRegistry {
    const registry = new SecretRegistry();
    for (const secret of secrets) registry.register(secret, kind);
    return registry;
  }

  /** Adds a secret (ignored when empty or shorter than 8 characters). The first kind given to a text is kept. */
  register(secret: string | undefined, kind: SecretKind): void {
    if (!secret) return;
    let added = false;
    for (const part of [secret, ...credentialParts(secret)]) {
      for (const form of encodings(part).map(upperEscapes)) {
        if (form.length < MIN_SECRET_LENGTH || this.#needles.has(form) || PRODUCT_WORDS.has(form.toLowerCase())) continue;
        this.#needles.set(form, kind);
        added = true;
      }
    }
    if (added) this.#pattern = undefined;
  }

  /** Whether this exact text was registered (as a secret or one of its searched forms). */
  has(text: string): boolean {
    return this.#needles.has(upperEscapes(text));
  }

  /** The text with every registered secret (and its searched forms) replaced by `[redacted: <kind>]`. */
  redact(text: string): string {
    if (this.#needles.size === 0 || text.length < MIN_SECRET_LENGTH) return text;
    this.#pattern ??= this.#compile();
    return text.replace(this.#pattern, (found) => `[redacted: ${this.#needles.get(upperEscapes(found)) ?? "secret"}]`);
  }

  /** A copy of a JSON-like value with every string in it (keys included) redacted. */
  redactValue<T>(value: T): T {
    return deepRedact(value, this);
  }

  #compile(): RegExp {
    // Longest first, so that a secret inside a longer one does not leave the rest of the longer one behind;
    // percent escapes match in either case (%2f as %2F); a host and port never matches the start of a longer
    // port (127.0.0.1:9222 is not 127.0.0.1:92221).
    const sources = [...this.#needles.keys()]
      .sort((a, b) => b.length - a.length)
      .map((needle) => {
        const source = escapeRegExp(needle).replace(/%([0-9A-F])([0-9A-F])/g, (_m, a: string, b: string) => `%${hexClass(a)}${hexClass(b)}`);
        return HOST_PORT.test(needle) ? `${source}(?!\\d)` : source;
      });
    return new RegExp(sources.join("|"), "g");
  }
}

function deepRedact<T>(value: T, redactor: Redactor): T;
function deepRedact(value: unknown, redactor: Redactor): unknown {
  if (typeof value === "string") return redactor.redact(value);
  if (Array.isArray(value)) return value.map((item: unknown) => deepRedact(item, redactor));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[redactor.redact(key)] = deepRedact(item, redactor);
    return out;
  }
  return value;
}

/**
 * The secret as written, URL-encoded once and twice (a URL inside a URL's query), percent-decoded, and as a page's
 * text reads once converted to Markdown: turndown escapes `_` (and `*`, `` ` ``, `[`, `]`, `\`), so a `trt_` or
 * `trd_` token quoted by a page would otherwise go out as `trt\_…`, which no other form matches.
 */
function encodings(secret: string): string[] {
  const once = encodeURIComponent(secret);
  let decoded = secret;
  try {
    decoded = decodeURIComponent(secret);
  } catch {
    // not percent-encoded text
  }
  return [secret, once, encodeURIComponent(once), encodeURI(secret), decoded, secret.replace(/[\\*_`[\]]/g, "\\$&")];
}

/**
 * Words the product itself prints (commands, the data dir, engine names): redacting one would mangle every message
 * that names it ("start one with `[redacted: secret] launch`"), so none is ever a searched form, whatever a user
 * chose as a password or a database name.
 */
const PRODUCT_WORDS = new Set(["tabrelay", "postgres", "postgresql", "localhost", "password", "username"]);
/** A URL's user name carries a credential only without a password, and only when it looks like a token. */
const MIN_USERNAME_TOKEN_BITS = 64;

/**
 * The parts of a URL that carry a credential on their own. The password does; the user name is an account's name
 * (postgres://tabrelay:PW@...), not a secret, unless it is the only credential and looks like one
 * (wss://<api key>@host/...).
 */
function credentialParts(value: string): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [];
  }
  const tokenUser = url.password === "" && estimatedTokenBits(decodeURIComponent(url.username)) >= MIN_USERNAME_TOKEN_BITS;
  const parts = [tokenUser ? url.username : "", url.password, url.search.slice(1), ...url.searchParams.values()];
  const segments = url.pathname.split("/").filter((s) => s.length >= MIN_SECRET_SEGMENT);
  // Everything from the first secret segment on: `/devtools/browser/<id>` without its host.
  const firstSecret = segments[0];
  if (firstSecret !== undefined) parts.push(url.pathname, url.pathname.slice(url.pathname.indexOf(firstSecret)), ...segments);
  // A DevTools HTTP address (http://127.0.0.1:9222) is a credential as a whole: its /json/version names the socket.
  // So is the host and port of a loopback ws:// endpoint, for the same reason.
  const web = url.protocol === "http:" || url.protocol === "https:";
  if (url.port !== "" && ((web && url.pathname === "/") || (!web && isLoopbackHost(url.hostname)))) parts.push(url.host, `${url.protocol}//${url.host}`);
  return parts.filter((part) => part.length >= MIN_SECRET_LENGTH);
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

function hexClass(digit: string): string {
  return /[A-F]/.test(digit) ? `[${digit}${digit.toLowerCase()}]` : digit;
}

function upperEscapes(text: string): string {
  return text.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
}

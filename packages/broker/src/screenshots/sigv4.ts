// Screenshots in an S3 (or S3-protocol) bucket without the AWS SDK, for hosts that have only fetch and Web Crypto
// (the Workers entry): the PNG is PUT with a Signature Version 4 Authorization header, and the link handed back is a
// presigned GET (query-string SigV4), valid for the configured time (at most 7 days). Objects are not deleted here:
// give the bucket (or prefix) a lifecycle rule. The signing follows AWS's documented SigV4 steps (canonical request,
// string to sign, the derived key); test/sigv4.test.ts checks it against the AWS SDK's own signer for the same inputs.
import { bytesToHex, randomHex, utf8Bytes } from "../util/bytes.js";
import { sha256Hex } from "../util/sha256.js";
import type { ScreenshotMeta, ScreenshotStore, StoredImage } from "./store.js";

export interface PresignedS3Options {
  bucket: string;
  region: string;
  /** An S3-protocol endpoint (default https://s3.<region>.amazonaws.com). */
  endpoint?: string;
  /** bucket in the path (endpoint/bucket/key) rather than the host (bucket.endpoint/key); default: path style off AWS. */
  forcePathStyle?: boolean;
  prefix?: string;
  ttlMs: number;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  fetchImpl?: typeof fetch;
  now?: () => number;
}

const MAX_TTL_MS = 7 * 24 * 3600 * 1000;
const ALGORITHM = "AWS4-HMAC-SHA256";

export class PresignedS3Store implements ScreenshotStore {
  readonly #opts: PresignedS3Options;
  readonly #now: () => number;
  readonly #fetch: typeof fetch;
  #closed = false;

  constructor(opts: PresignedS3Options) {
    if (opts.bucket === "") throw new Error("screenshot bucket must not be empty");
    if (!Number.isFinite(opts.ttlMs) || opts.ttlMs < 1000 || opts.ttlMs > MAX_TTL_MS)
      throw new Error(`screenshot ttl must be between 1 s and ${MAX_TTL_MS / 1000} s, got ${opts.ttlMs} ms`);
    this.#opts = { ...opts };
    this.#now = opts.now ?? Date.now;
    const fetchImpl = opts.fetchImpl ?? fetch;
    this.#fetch = (input, init) => fetchImpl(input, init);
  }

  async put(png: Uint8Array, meta: ScreenshotMeta): Promise<StoredImage> {
    if (this.#closed) throw new Error("screenshot store is closed");
    const id = randomHex(16);
    const key = `${this.#opts.prefix ?? ""}${id}.png`;
    const url = this.objectUrl(key);
    const headers: Record<string, string> = {
      "content-type": "image/png",
      "cache-control": "private, no-store",
      // The page URL stays out: it may carry tokens, and metadata comes back with every GET.
      "x-amz-meta-width": String(meta.width),
      "x-amz-meta-height": String(meta.height),
      "x-amz-meta-captured-at": String(meta.capturedAt),
    };
    const signed = await this.signRequest("PUT", url, headers, sha256Hex(png), new Date(this.#now()));
    const body = new Uint8Array(new ArrayBuffer(png.length));
    body.set(png);
    const response = await this.#fetch(url.href, { method: "PUT", headers: signed, body, redirect: "manual" });
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      const code = /<Code>([^<]{1,80})<\/Code>/.exec(text)?.[1];
      throw new Error(`the bucket refused the screenshot (HTTP ${response.status}${code ? ` ${code}` : ""}); check screenshots.s3 and the credentials`);
    }
    const signedAt = this.#now();
    const expiresIn = Math.floor(this.#opts.ttlMs / 1000);
    return { id, url: await this.presignGet(key, expiresIn, new Date(signedAt)), expiresAt: signedAt + expiresIn * 1000, bytes: png.length };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  /** The object's URL: virtual-hosted on AWS, path style on another endpoint unless forcePathStyle says otherwise. */
  objectUrl(key: string): URL {
    const { bucket, region, endpoint } = this.#opts;
    const base = new URL(endpoint ?? `https://s3.${region}.amazonaws.com`);
    const pathStyle = this.#opts.forcePathStyle ?? endpoint !== undefined;
    const path = `/${key.split("/").map(encodeRfc3986).join("/")}`;
    if (pathStyle) return new URL(`${base.origin}${base.pathname.replace(/\/+$/, "")}/${encodeRfc3986(bucket)}${path}`);
    return new URL(`${base.protocol}//${bucket}.${base.host}${path}`);
  }

  /** A GET of `key` presigned for `expiresIn` seconds from `date`. */
  presignGet(key: string, expiresIn: number, date: Date): Promise<string> {
    return this.presign("GET", this.objectUrl(key), expiresIn, date);
  }

  /** A request presigned in its query string (SigV4, UNSIGNED-PAYLOAD, only host signed); the URL's own query is kept. */
  async presign(method: string, url: URL, expiresIn: number, date: Date): Promise<string> {
    const { amzDate, scope } = this.#scope(date);
    const { accessKeyId, sessionToken } = this.#opts.credentials;
    const query: Array<[string, string]> = [
      ...url.searchParams.entries(),
      ["X-Amz-Algorithm", ALGORITHM],
      ["X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD"],
      ["X-Amz-Credential", `${accessKeyId}/${scope}`],
      ["X-Amz-Date", amzDate],
      ["X-Amz-Expires", String(expiresIn)],
      ...(sessionToken ? ([["X-Amz-Security-Token", sessionToken]] as Array<[string, string]>) : []),
      ["X-Amz-SignedHeaders", "host"],
    ];
    const canonicalQuery = canonicalQueryString(query);
    const canonical = [method, url.pathname, canonicalQuery, `host:${url.host}\n`, "host", "UNSIGNED-PAYLOAD"].join("\n");
    const signature = await this.#signature(canonical, date);
    return `${url.origin}${url.pathname}?${canonicalQuery}&X-Amz-Signature=${signature}`;
  }

  /** The headers of a request signed with an Authorization header (the payload's SHA-256 in x-amz-content-sha256). */
  async signRequest(method: string, url: URL, headers: Record<string, string>, payloadSha256: string, date: Date): Promise<Record<string, string>> {
    const { amzDate, scope } = this.#scope(date);
    const { accessKeyId, sessionToken } = this.#opts.credentials;
    const all: Record<string, string> = {
      ...lowerCased(headers),
      host: url.host,
      "x-amz-content-sha256": payloadSha256,
      "x-amz-date": amzDate,
      ...(sessionToken ? { "x-amz-security-token": sessionToken } : {}),
    };
    const names = Object.keys(all).sort();
    const canonicalHeaders = names.map((n) => `${n}:${(all[n] ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
    const signedHeaders = names.join(";");
    const canonicalQuery = canonicalQueryString([...url.searchParams.entries()]);
    const canonical = [method, url.pathname, canonicalQuery, canonicalHeaders, signedHeaders, payloadSha256].join("\n");
    const signature = await this.#signature(canonical, date);
    const { host: _host, ...sent } = all;
    return { ...sent, authorization: `${ALGORITHM} Credential=${accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}` };
  }

  #scope(date: Date): { amzDate: string; scope: string } {
    const amzDate = date
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d{3}/, "");
    return { amzDate, scope: `${amzDate.slice(0, 8)}/${this.#opts.region}/s3/aws4_request` };
  }

  async #signature(canonicalRequest: string, date: Date): Promise<string> {
    const { amzDate, scope } = this.#scope(date);
    const toSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join("\n");
    let key: Uint8Array = utf8Bytes(`AWS4${this.#opts.credentials.secretAccessKey}`);
    for (const part of [amzDate.slice(0, 8), this.#opts.region, "s3", "aws4_request"]) key = await hmac(key, part);
    return bytesToHex(await hmac(key, toSign));
  }
}

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
  const raw = new Uint8Array(new ArrayBuffer(key.length));
  raw.set(key);
  const imported = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const data = utf8Bytes(message);
  const buffer = new Uint8Array(new ArrayBuffer(data.length));
  buffer.set(data);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, buffer));
}

/** RFC 3986 percent-encoding, as SigV4 wants it (encodeURIComponent leaves !'()* unescaped). */
function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalQueryString(pairs: ReadonlyArray<readonly [string, string]>): string {
  return pairs
    .map(([k, v]) => [encodeRfc3986(k), encodeRfc3986(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

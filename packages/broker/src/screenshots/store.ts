// Where screenshots go so a tool result can carry a short-lived link instead of base64: files in a private
// directory served by the broker under HMAC-signed, expiring URLs (a named user's bound to that user: see link.ts),
// or an S3 bucket with presigned GETs.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { readFile, unlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { DEFAULT_USER_ID } from "../users/principal.js";
import { noSuchScreenshot, SHOT_HEADERS, SHOT_OWNER_PARAM, SHOTS_PATH, shotRefusal } from "./link.js";

export { SHOTS_PATH } from "./link.js";

export interface StoredImage {
  id: string;
  url: string;
  /** Epoch milliseconds after which `url` no longer works. */
  expiresAt: number;
  bytes: number;
  /** Set when `url` works only with this user's own token as well (a local link of a named user). */
  owner?: string;
}

export interface ScreenshotMeta {
  width: number;
  height: number;
  pageUrl: string;
  /** Epoch milliseconds. */
  capturedAt: number;
  /** The user whose call took it (users/principal.ts). */
  owner?: string;
}

export interface ScreenshotStore {
  /** Stores `png` and resolves with its link once the link serves it (the local store's file may still be being written). */
  put(png: Uint8Array, meta: ScreenshotMeta): Promise<StoredImage>;
  close(): Promise<void>;
}

export interface LocalScreenshotStoreOptions {
  dir: string;
  /** The broker's own origin, e.g. `http://127.0.0.1:9333`; asked at each put, so it may be resolved after listen. */
  publicBaseUrl: () => string;
  /** HMAC-SHA256 key for the links, at least 32 bytes. */
  key: Buffer;
  ttlMs: number;
  quotaBytes: number;
  now?: () => number;
}

export interface S3ScreenshotStoreOptions {
  bucket: string;
  region: string;
  endpoint?: string;
  forcePathStyle?: boolean;
  /** Prepended to each object key, e.g. `tabrelay/`. */
  prefix?: string;
  ttlMs: number;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** The clock presigned URLs are signed with. */
  now?: () => number;
}

const MIN_KEY_BYTES = 32;
const SWEEP_INTERVAL_MS = 60_000;
/** SigV4 presigned URLs live at most 7 days. */
const S3_MAX_TTL_MS = 7 * 24 * 3600 * 1000;
const ID_RE = /^[0-9a-f]{32}$/;
const FILE_RE = /^([0-9a-f]{32})\.png$/;
const SIG_RE = /^[0-9a-f]{64}$/;
const EXP_RE = /^[0-9]{1,15}$/;

function newId(): string {
  return randomBytes(16).toString("hex");
}

function checkTtl(ttlMs: number, max: number): void {
  if (!Number.isFinite(ttlMs) || ttlMs < 1000 || ttlMs > max) throw new Error(`screenshot ttl must be between 1 s and ${max / 1000} s, got ${ttlMs} ms`);
}

interface Entry {
  bytes: number;
  expiresAt: number;
}

/**
 * Screenshots as files in `dir` (0700; files 0600), named by a 128-bit random id and served by `handle` at
 * `GET /shots/<id>.png?exp=<epoch s>&sig=<hex HMAC-SHA256(key, id + "." + exp)>`, or for a named user's
 * `...?exp=<epoch s>&u=<user id>&sig=<hex HMAC-SHA256(key, id + "." + exp + "." + user id)>` (the HTTP door lets
 * only that user's token through, link.ts). Expired files are deleted on each put and every minute; the oldest are
 * evicted to keep the directory within `quotaBytes`.
 * A put answers as soon as its link is signed: the file is written behind it, and until it is on disk the link is
 * served from memory, so a link fetched at once gets the whole image. When a write fails, that link stops working and
 * the next put waits for its own write, so its caller is told.
 */
export class LocalScreenshotStore implements ScreenshotStore {
  readonly #dir: string;
  readonly #publicBaseUrl: () => string;
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #quotaBytes: number;
  readonly #now: () => number;
  /** Stored files, oldest first (Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();
  #totalBytes = 0;
  /** Images linked whose file is still being written, by id. */
  readonly #unwritten = new Map<string, Uint8Array>();
  /** The last write failed: the next put waits for its own. */
  #writeFailed = false;
  /** Puts and sweeps run one at a time, so quota accounting never interleaves. */
  #queue: Promise<unknown> = Promise.resolve();
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(opts: LocalScreenshotStoreOptions) {
    if (opts.key.length < MIN_KEY_BYTES) throw new Error(`screenshot link key must be at least ${MIN_KEY_BYTES} bytes`);
    checkTtl(opts.ttlMs, Number.MAX_SAFE_INTEGER);
    if (!Number.isFinite(opts.quotaBytes) || opts.quotaBytes <= 0) throw new Error(`screenshot quota must be > 0 bytes, got ${opts.quotaBytes}`);
    this.#dir = opts.dir;
    this.#publicBaseUrl = opts.publicBaseUrl;
    this.#key = Buffer.from(opts.key);
    this.#ttlMs = opts.ttlMs;
    this.#quotaBytes = opts.quotaBytes;
    this.#now = opts.now ?? Date.now;

    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    chmodSync(this.#dir, 0o700);
    this.#adoptExisting();
    this.#timer = setInterval(() => void this.#enqueue(() => this.#sweep()).catch(() => undefined), SWEEP_INTERVAL_MS);
    this.#timer.unref();
  }

  async put(png: Uint8Array, meta: ScreenshotMeta): Promise<StoredImage> {
    if (this.#closed) throw new Error("screenshot store is closed");
    if (png.length > this.#quotaBytes) throw new Error(`screenshot of ${png.length} bytes exceeds the whole quota of ${this.#quotaBytes} bytes`);
    const id = newId();
    const storedAt = this.#now();
    const exp = Math.floor((storedAt + this.#ttlMs) / 1000);
    const entry: Entry = { bytes: png.length, expiresAt: exp * 1000 };
    this.#unwritten.set(id, png);
    const written = this.#enqueue(() => this.#write(id, png, storedAt, entry)).finally(() => this.#unwritten.delete(id));
    void written.then(
      () => (this.#writeFailed = false),
      () => (this.#writeFailed = true),
    );
    if (this.#writeFailed) await written;
    const base = this.#publicBaseUrl().replace(/\/+$/, "");
    const owner = meta.owner !== undefined && meta.owner !== DEFAULT_USER_ID ? meta.owner : undefined;
    const named = owner === undefined ? "" : `&${SHOT_OWNER_PARAM}=${encodeURIComponent(owner)}`;
    const url = `${base}${SHOTS_PATH}${id}.png?exp=${exp}${named}&sig=${this.#sign(id, exp, owner).toString("hex")}`;
    return { id, url, expiresAt: entry.expiresAt, bytes: entry.bytes, ...(owner === undefined ? {} : { owner }) };
  }

  /** Resolves once every image put so far is on disk (or its write failed). */
  async settled(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  async #write(id: string, png: Uint8Array, storedAt: number, entry: Entry): Promise<void> {
    await this.#sweep();
    for (const [oldId, old] of this.#entries) {
      if (this.#totalBytes + png.length <= this.#quotaBytes) break;
      await this.#remove(oldId, old);
    }
    try {
      await writeFile(this.#file(id), png, { mode: 0o600, flag: "wx" });
      // The mtime is the store's clock, so a later run orders and expires this file as this one would.
      await utimes(this.#file(id), new Date(storedAt), new Date(storedAt));
    } catch (error) {
      await unlink(this.#file(id)).catch(() => undefined);
      throw error;
    }
    this.#entries.set(id, entry);
    this.#totalBytes += entry.bytes;
  }

  /**
   * Serves `/shots/...`; undefined for any other path (the caller answers it). A link that does not check out is
   * answered as one to no screenshot: whether it was made up, altered or another user's is not told.
   */
  handle(req: Request): Promise<Response> | undefined {
    const url = new URL(req.url);
    if (!url.pathname.startsWith(SHOTS_PATH)) return undefined;
    if (req.method !== "GET" && req.method !== "HEAD") return Promise.resolve(shotRefusal(405, "method not allowed", { Allow: "GET, HEAD" }));
    const id = FILE_RE.exec(url.pathname.slice(SHOTS_PATH.length))?.[1];
    if (id === undefined) return Promise.resolve(noSuchScreenshot());
    const exp = url.searchParams.get("exp") ?? "";
    const sig = url.searchParams.get("sig") ?? "";
    const owner = url.searchParams.get(SHOT_OWNER_PARAM) ?? undefined;
    if (!EXP_RE.test(exp) || !SIG_RE.test(sig) || !timingSafeEqual(Buffer.from(sig, "hex"), this.#sign(id, Number(exp), owner))) {
      return Promise.resolve(noSuchScreenshot());
    }
    if (this.#now() >= Number(exp) * 1000) return Promise.resolve(shotRefusal(410, "link expired"));
    return this.#serve(id, req.method === "HEAD");
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#queue.catch(() => undefined);
  }

  async #serve(id: string, headOnly: boolean): Promise<Response> {
    let body = this.#unwritten.get(id);
    try {
      body ??= await readFile(this.#file(id));
    } catch {
      return noSuchScreenshot();
    }
    return new Response(headOnly ? null : new Uint8Array(body), {
      status: 200,
      headers: { ...SHOT_HEADERS, "Content-Type": "image/png", "Content-Length": String(body.length) },
    });
  }

  /** The implicit user's links sign id and expiry; a named user's sign their id too. */
  #sign(id: string, exp: number, owner?: string): Buffer {
    return createHmac("sha256", this.#key)
      .update(owner === undefined ? `${id}.${exp}` : `${id}.${exp}.${owner}`)
      .digest();
  }

  #file(id: string): string {
    if (!ID_RE.test(id)) throw new Error("bad screenshot id");
    return join(this.#dir, `${id}.png`);
  }

  #enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #sweep(): Promise<void> {
    const now = this.#now();
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt <= now) await this.#remove(id, entry);
    }
  }

  async #remove(id: string, entry: Entry): Promise<void> {
    this.#entries.delete(id);
    this.#totalBytes -= entry.bytes;
    await unlink(this.#file(id)).catch((error: unknown) => {
      if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) throw error;
    });
  }

  /** Files left by an earlier run count towards the quota and expire `ttl` after their mtime (set at put). */
  #adoptExisting(): void {
    const found: Array<{ id: string; mtimeMs: number; bytes: number }> = [];
    for (const name of readdirSync(this.#dir)) {
      const id = FILE_RE.exec(name)?.[1];
      if (id === undefined) continue;
      const stat = statSync(join(this.#dir, name));
      // mtimeMs is a float that can land just under the millisecond that was set.
      if (stat.isFile()) found.push({ id, mtimeMs: Math.round(stat.mtimeMs), bytes: stat.size });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const file of found) {
      this.#entries.set(file.id, { bytes: file.bytes, expiresAt: Math.floor((file.mtimeMs + this.#ttlMs) / 1000) * 1000 });
      this.#totalBytes += file.bytes;
    }
  }
}

interface S3Runtime {
  client: S3Client;
  put(key: string, png: Uint8Array, meta: ScreenshotMeta): Promise<void>;
  presign(key: string, expiresIn: number, signingDate: Date): Promise<string>;
}

/**
 * Screenshots as objects in an S3 (or S3-protocol) bucket, linked by a presigned GET valid for `ttlMs`
 * (at most 7 days). The AWS SDK is loaded on the first put, so a broker without S3 never loads it.
 * Objects are not deleted here: give the bucket (or `prefix`) a lifecycle rule that expires them.
 */
export class S3ScreenshotStore implements ScreenshotStore {
  readonly #opts: S3ScreenshotStoreOptions;
  readonly #now: () => number;
  #runtime: Promise<S3Runtime> | undefined;
  #closed = false;

  constructor(opts: S3ScreenshotStoreOptions) {
    if (opts.bucket === "") throw new Error("screenshot bucket must not be empty");
    checkTtl(opts.ttlMs, S3_MAX_TTL_MS);
    this.#opts = { ...opts };
    this.#now = opts.now ?? Date.now;
  }

  async put(png: Uint8Array, meta: ScreenshotMeta): Promise<StoredImage> {
    if (this.#closed) throw new Error("screenshot store is closed");
    const runtime = await this.#load();
    const id = newId();
    const key = `${this.#opts.prefix ?? ""}${id}.png`;
    await runtime.put(key, png, meta);
    const signedAt = this.#now();
    const expiresIn = Math.floor(this.#opts.ttlMs / 1000);
    const url = await runtime.presign(key, expiresIn, new Date(signedAt));
    return { id, url, expiresAt: signedAt + expiresIn * 1000, bytes: png.length };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const runtime = this.#runtime;
    this.#runtime = undefined;
    if (runtime) (await runtime.catch(() => undefined))?.client.destroy();
  }

  #load(): Promise<S3Runtime> {
    if (this.#runtime) return this.#runtime;
    const created = this.#create();
    this.#runtime = created;
    // A failed load (SDK missing, bad options) is retried on the next put rather than cached.
    void created.catch(() => {
      if (this.#runtime === created) this.#runtime = undefined;
    });
    return created;
  }

  async #create(): Promise<S3Runtime> {
    const [{ S3Client, PutObjectCommand, GetObjectCommand }, { getSignedUrl }] = await Promise.all([
      import("@aws-sdk/client-s3"),
      import("@aws-sdk/s3-request-presigner"),
    ]).catch((error: unknown) => {
      // The tabrelay package leaves the AWS SDK out (an optional peer): only this store needs it.
      if (error && typeof error === "object" && Reflect.get(error, "code") === "ERR_MODULE_NOT_FOUND") {
        throw new Error(
          "the S3 screenshot store (screenshots.store: s3) needs the AWS SDK beside tabrelay: npm install @aws-sdk/client-s3@3 @aws-sdk/s3-request-presigner@3 where tabrelay is installed",
        );
      }
      throw error;
    });
    const { bucket, region, endpoint, forcePathStyle, credentials } = this.#opts;
    const client = new S3Client({
      region,
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(forcePathStyle === undefined ? {} : { forcePathStyle }),
      ...(credentials === undefined ? {} : { credentials }),
      // S3-protocol servers other than AWS often reject the default flexible checksums on PutObject.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    return {
      client,
      async put(key, png, meta) {
        await client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: png,
            ContentType: "image/png",
            ContentLength: png.length,
            CacheControl: "private, no-store",
            // The page URL stays out: it may carry tokens, and metadata comes back with every GET.
            Metadata: { width: String(meta.width), height: String(meta.height), "captured-at": String(meta.capturedAt) },
          }),
        );
      },
      presign: (key, expiresIn, signingDate) => getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn, signingDate }),
    };
  }
}

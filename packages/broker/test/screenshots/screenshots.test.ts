// The screenshot store: PNG validation on bytes built here, the local store over real HTTP, and the S3 store
// against a local S3-protocol server (s3rver).
import { createHmac, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { getRequestListener } from "@hono/node-server";
import S3rver from "s3rver";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { crc32, validatePng } from "../../src/screenshots/png.js";
import { LocalScreenshotStore, S3ScreenshotStore, type ScreenshotMeta, type ScreenshotStore } from "../../src/screenshots/store.js";

// ---------------------------------------------------------------------------------------------------------
// PNG bytes, built with a CRC written independently of the one under test (bitwise, no table).

function referenceCrc(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(referenceCrc(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

interface PngSpec {
  width?: number;
  height?: number;
  bitDepth?: number;
  colourType?: number;
  extra?: Buffer[];
}

function ihdr(width: number, height: number, bitDepth: number, colourType: number): Buffer {
  const data = Buffer.alloc(13);
  data.writeUInt32BE(width, 0);
  data.writeUInt32BE(height, 4);
  data.writeUInt8(bitDepth, 8);
  data.writeUInt8(colourType, 9);
  return chunk("IHDR", data);
}

/** A real, decodable PNG: rows of random pixels with filter byte 0, deflated. */
function makePng({ width = 4, height = 3, bitDepth = 8, colourType = 6, extra = [] }: PngSpec = {}): Buffer {
  const rowBytes = Math.ceil((width * (CHANNELS[colourType] ?? 4) * bitDepth) / 8);
  const raw = Buffer.concat(Array.from({ length: height }, () => Buffer.concat([Buffer.from([0]), randomBytes(rowBytes)])));
  const plte = colourType === 3 ? [chunk("PLTE", randomBytes(3 * 2 ** Math.min(bitDepth, 8)))] : [];
  return Buffer.concat([SIGNATURE, ihdr(width, height, bitDepth, colourType), ...plte, ...extra, chunk("IDAT", deflateSync(raw)), chunk("IEND")]);
}

const LIMITS = { maxBytes: 1_000_000, maxPixels: 10_000 };

function refusal(bytes: Buffer, limits = LIMITS): string {
  const result = validatePng(bytes, limits);
  if (result.ok) throw new Error("expected the image to be refused");
  expect(result.code).toBe("invalid_image");
  return result.message;
}

describe("crc32", () => {
  it("matches the standard check value and an independent implementation", () => {
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
    const data = randomBytes(4096);
    expect(crc32(data)).toBe(referenceCrc(data));
    expect(crc32(data, 100, 200)).toBe(referenceCrc(data.subarray(100, 200)));
  });
});

describe("validatePng accepts", () => {
  it("an RGBA PNG and reports its size", () => {
    expect(validatePng(makePng({ width: 7, height: 5 }), LIMITS)).toEqual({ ok: true, width: 7, height: 5 });
  });

  it.each([
    [0, 1],
    [0, 16],
    [2, 8],
    [2, 16],
    [3, 1],
    [3, 8],
    [4, 8],
    [6, 16],
  ])("colour type %i with bit depth %i", (colourType, bitDepth) => {
    expect(validatePng(makePng({ colourType, bitDepth }), LIMITS)).toMatchObject({ ok: true });
  });

  it("ancillary chunks, several IDATs, and an image exactly at both limits", () => {
    const png = makePng({ width: 100, height: 100, extra: [chunk("tEXt", Buffer.from("Software\0test")), chunk("IDAT", Buffer.alloc(0))] });
    expect(validatePng(png, { maxBytes: png.length, maxPixels: 10_000 })).toEqual({ ok: true, width: 100, height: 100 });
  });
});

describe("validatePng refuses", () => {
  it("a bad signature", () => {
    const png = makePng();
    png[1] = 0x51;
    expect(refusal(png)).toMatch(/signature/);
  });

  it("an empty buffer and a bare signature", () => {
    expect(refusal(Buffer.alloc(0))).toMatch(/signature/);
    expect(refusal(SIGNATURE)).toMatch(/truncated/);
  });

  it("a PNG truncated anywhere", () => {
    const png = makePng();
    for (let length = 1; length < png.length; length++) {
      expect(refusal(png.subarray(0, length)), `cut at ${length}`).toMatch(/signature|truncated|no IEND|IHDR CRC/);
    }
  });

  it("a wrong IHDR CRC", () => {
    const png = makePng();
    png[8 + 8 + 13] = (png[8 + 8 + 13] ?? 0) ^ 0xff;
    expect(refusal(png)).toBe("IHDR CRC mismatch");
  });

  it("IHDR contents changed after the CRC was computed", () => {
    const png = makePng({ width: 4 });
    png.writeUInt32BE(5000, 16);
    expect(refusal(png)).toBe("IHDR CRC mismatch");
  });

  it("an IHDR that is not first or not 13 bytes long", () => {
    const png = makePng();
    const swapped = Buffer.concat([SIGNATURE, chunk("tEXt", Buffer.from("a\0b")), png.subarray(8)]);
    expect(refusal(swapped)).toMatch(/first chunk is "tEXt", not IHDR/);
    const long = Buffer.concat([SIGNATURE, chunk("IHDR", Buffer.alloc(14, 1)), png.subarray(8 + 25)]);
    expect(refusal(long)).toMatch(/IHDR length is 14/);
  });

  it("zero width or zero height", () => {
    expect(refusal(makePng({ width: 0, height: 3 }))).toMatch(/0x3.*must be > 0/);
    expect(refusal(makePng({ width: 3, height: 0 }))).toMatch(/3x0.*must be > 0/);
  });

  it("too many pixels, without decompressing anything", () => {
    expect(refusal(makePng({ width: 101, height: 100 }))).toMatch(/10100 pixels, over the limit of 10000/);
    // A header claiming 2^31-1 square with a tiny body: refused on the header alone.
    const bomb = Buffer.concat([SIGNATURE, ihdr(0x7fffffff, 0x7fffffff, 8, 6), chunk("IDAT", deflateSync(Buffer.alloc(10))), chunk("IEND")]);
    expect(refusal(bomb)).toMatch(/over the limit of 10000/);
  });

  it("too many bytes", () => {
    const png = makePng();
    expect(refusal(png, { maxBytes: png.length - 1, maxPixels: 10_000 })).toMatch(new RegExp(`${png.length} bytes, over the limit of ${png.length - 1}`));
  });

  it("a file without IEND", () => {
    const png = makePng();
    expect(refusal(png.subarray(0, png.length - 12))).toMatch(/no IEND/);
  });

  it("data after IEND", () => {
    expect(refusal(Buffer.concat([makePng(), Buffer.from("<script>")]))).toMatch(/8 bytes of data after IEND/);
  });

  it("no IDAT", () => {
    expect(refusal(Buffer.concat([SIGNATURE, ihdr(4, 3, 8, 6), chunk("IEND")]))).toMatch(/no IDAT/);
  });

  it("a chunk whose length runs past the end", () => {
    const png = makePng();
    const idatAt = 8 + 25;
    png.writeUInt32BE(0x7ffffff0, idatAt);
    expect(refusal(png)).toMatch(/chunk IDAT .* runs past the end/);
  });

  it.each([
    [2, 4],
    [3, 16],
    [4, 1],
    [6, 4],
    [0, 3],
    [1, 8],
    [5, 8],
    [7, 8],
  ])("colour type %i with bit depth %i", (colourType, bitDepth) => {
    expect(refusal(makePng({ colourType, bitDepth }))).toMatch(/colour type/);
  });

  it("a JPEG", () => {
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from("JFIF\0"), randomBytes(200), Buffer.from([0xff, 0xd9])]);
    expect(refusal(jpeg)).toMatch(/not a PNG/);
  });

  it("an HTML file named .png", () => {
    expect(refusal(Buffer.from("<!doctype html><html><script>alert(1)</script></html>"))).toMatch(/not a PNG/);
  });

  it("a PNG signature followed by HTML", () => {
    const polyglot = Buffer.concat([SIGNATURE, Buffer.from("<html><body><script>alert(document.cookie)</script></body></html>")]);
    expect(validatePng(polyglot, LIMITS).ok).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Local store over real HTTP.

const META: ScreenshotMeta = { width: 4, height: 3, pageUrl: "https://docs.test/", capturedAt: 1_767_323_045_678 };
const T0 = 1_767_323_045_678;
const TTL = 300_000;

const dirs: string[] = [];
const stores: ScreenshotStore[] = [];
const servers: Server[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tabrelay-shots-"));
  dirs.push(dir);
  return dir;
}

afterEach(async () => {
  vi.useRealTimers();
  for (const store of stores.splice(0)) await store.close();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Harness {
  store: LocalScreenshotStore;
  dir: string;
  key: Buffer;
  base: string;
  clock: { now: number };
}

async function harness(opts: { quotaBytes?: number; ttlMs?: number; dir?: string; key?: Buffer } = {}): Promise<Harness> {
  const dir = opts.dir ?? join(tempDir(), "shots");
  const key = opts.key ?? randomBytes(32);
  const clock = { now: T0 };
  let base = "";
  const store = new LocalScreenshotStore({
    dir,
    key,
    ttlMs: opts.ttlMs ?? TTL,
    quotaBytes: opts.quotaBytes ?? 10_000_000,
    publicBaseUrl: () => base,
    now: () => clock.now,
  });
  stores.push(store);
  const server = createServer(
    getRequestListener(async (req) => (await store.handle(req)) ?? new Response("not mine", { status: 418 }), { overrideGlobalObjects: false }),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address: AddressInfo | string | null = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  base = `http://127.0.0.1:${address.port}`;
  return { store, dir, key, base, clock };
}

function sign(key: Buffer, id: string, exp: number): string {
  return createHmac("sha256", key).update(`${id}.${exp}`).digest("hex");
}

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

describe("LocalScreenshotStore", () => {
  it("links to the image over HTTP with exactly the safe headers", async () => {
    const { store, dir, key, base } = await harness();
    const png = makePng();
    const stored = await store.put(png, META);

    const exp = Math.floor((T0 + TTL) / 1000);
    expect(stored.id).toMatch(/^[0-9a-f]{32}$/);
    expect(stored).toEqual({
      id: stored.id,
      bytes: png.length,
      expiresAt: exp * 1000,
      url: `${base}/shots/${stored.id}.png?exp=${exp}&sig=${sign(key, stored.id, exp)}`,
    });

    const res = await fetch(stored.url, { headers: { Origin: "https://evil.test" } });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'");
    expect(res.headers.get("content-length")).toBe(String(png.length));
    expect(res.headers.has("access-control-allow-origin")).toBe(false);
    expect(res.headers.has("access-control-allow-credentials")).toBe(false);

    await store.settled();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([`${stored.id}.png`]);
    expect(statSync(join(dir, `${stored.id}.png`)).mode & 0o777).toBe(0o600);
  });

  it("serves an image in full the moment its link is handed out, while its file is written, and from the file after", async () => {
    const { store, dir } = await harness();
    const pngs = Array.from({ length: 5 }, (_, i) => makePng({ width: 40 + i, height: 40 }));
    // Put one after another and fetch each at once: the later ones' files wait behind the earlier ones' writes.
    const stored = [];
    for (const png of pngs) stored.push(await store.put(png, META));
    const early = await Promise.all(stored.map(async (s) => Buffer.from(await (await fetch(s.url)).arrayBuffer())));
    early.forEach((body, i) => expect(body.equals(pngs[i] ?? Buffer.alloc(0)), `image ${i}`).toBe(true));
    await store.settled();
    expect(readdirSync(dir).sort()).toEqual(stored.map((s) => `${s.id}.png`).sort());
    for (const [i, s] of stored.entries()) expect(Buffer.from(await (await fetch(s.url)).arrayBuffer()).equals(pngs[i] ?? Buffer.alloc(0))).toBe(true);
  });

  it("a write that failed is told to the next put, and the store recovers once it can write", async () => {
    const { store, dir } = await harness();
    rmSync(dir, { recursive: true });
    const lost = await store.put(makePng(), META);
    await store.settled();
    expect((await fetch(lost.url)).status).toBe(404);
    await expect(store.put(makePng(), META)).rejects.toThrow(/ENOENT/);
    mkdirSync(dir, { mode: 0o700 });
    const png = makePng();
    const again = await store.put(png, META);
    expect(Buffer.from(await (await fetch(again.url)).arrayBuffer()).equals(png)).toBe(true);
  });

  it("answers HEAD with the headers and no body", async () => {
    const { store } = await harness();
    const png = makePng();
    const res = await fetch((await store.put(png, META)).url, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("content-length")).toBe(String(png.length));
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it("gives every image a different id", async () => {
    const { store } = await harness();
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await store.put(makePng(), META)).id);
    expect(ids.size).toBe(20);
  });

  it("answers a tampered, missing or borrowed signature as a link to nothing (404)", async () => {
    const { store, base } = await harness();
    const a = await store.put(makePng(), META);
    const b = await store.put(makePng(), META);
    const url = new URL(a.url);
    const sig = url.searchParams.get("sig") ?? "";
    const exp = Number(url.searchParams.get("exp"));
    const flipped = `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`;
    const variants = [
      `${base}/shots/${a.id}.png?exp=${exp}&sig=${flipped}`,
      `${base}/shots/${a.id}.png?exp=${exp}&sig=${sig.toUpperCase()}`,
      `${base}/shots/${a.id}.png?exp=${exp}&sig=${sig.slice(0, 32)}`,
      `${base}/shots/${a.id}.png?exp=${exp}`,
      `${base}/shots/${a.id}.png?sig=${sig}`,
      `${base}/shots/${a.id}.png`,
      `${base}/shots/${a.id}.png?exp=${exp + 3600}&sig=${sig}`,
      `${base}/shots/${b.id}.png?exp=${exp}&sig=${sig}`,
    ];
    for (const variant of variants) {
      const res = await fetch(variant);
      expect(res.status, variant).toBe(404);
      expect(await res.text(), variant).toBe("no such screenshot\n");
      expect(res.headers.has("access-control-allow-origin")).toBe(false);
    }
    expect((await fetch(a.url)).status).toBe(200);
  });

  it("binds a named user's link to them: the user is in the link and its signature, and cannot be changed or dropped", async () => {
    const { store, key } = await harness();
    const stored = await store.put(makePng(), { ...META, owner: "u_ann" });
    const url = new URL(stored.url);
    expect(stored.owner).toBe("u_ann");
    expect(url.searchParams.get("u")).toBe("u_ann");
    expect(url.searchParams.get("sig")).toBe(
      createHmac("sha256", key)
        .update(`${stored.id}.${url.searchParams.get("exp")}.u_ann`)
        .digest("hex"),
    );
    expect((await fetch(stored.url)).status).toBe(200); // the user check is the HTTP door's (httpApp.test.ts)
    for (const variant of [stored.url.replace("u=u_ann", "u=u_ben"), stored.url.replace("&u=u_ann", ""), stored.url.replace("u=u_ann", "u=")]) {
      expect((await fetch(variant)).status, variant).toBe(404);
    }
    // The implicit user's links name no user, as before.
    const own = await store.put(makePng(), { ...META, owner: "default" });
    expect(new URL(own.url).searchParams.has("u")).toBe(false);
    expect(own.owner).toBeUndefined();
  });

  it("answers 410 once the link has expired", async () => {
    const { store, clock } = await harness();
    const stored = await store.put(makePng(), META);
    clock.now = stored.expiresAt - 1;
    expect((await fetch(stored.url)).status).toBe(200);
    clock.now = stored.expiresAt;
    expect((await fetch(stored.url)).status).toBe(410);
  });

  it("answers 404 for a validly signed unknown id and for a malformed path", async () => {
    const { key, base } = await harness();
    const id = randomBytes(16).toString("hex");
    const exp = Math.floor((T0 + TTL) / 1000);
    expect((await fetch(`${base}/shots/${id}.png?exp=${exp}&sig=${sign(key, id, exp)}`)).status).toBe(404);
    const traversal = "..%2f..%2fetc%2fpasswd";
    expect((await fetch(`${base}/shots/${traversal}.png?exp=${exp}&sig=${sign(key, traversal, exp)}`)).status).toBe(404);
    expect((await fetch(`${base}/shots/`)).status).toBe(404);
  });

  it("answers 405 to any method but GET and HEAD", async () => {
    const { store } = await harness();
    const stored = await store.put(makePng(), META);
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const res = await fetch(stored.url, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
    }
    expect((await fetch(stored.url)).status).toBe(200);
  });

  it("leaves other paths to the caller", async () => {
    const { base } = await harness();
    expect((await fetch(`${base}/mcp`)).status).toBe(418);
    expect((await fetch(`${base}/shots`)).status).toBe(418);
    expect((await fetch(`${base}/shotsx/a.png`)).status).toBe(418);
  });

  it("evicts the oldest images to stay within the quota", async () => {
    const size = makePng().length;
    const { store, dir } = await harness({ quotaBytes: size * 3 + size / 2 });
    const stored = [];
    for (let i = 0; i < 5; i++) stored.push(await store.put(makePng(), META));
    await store.settled();
    expect(dirBytes(dir)).toBeLessThanOrEqual(size * 3 + size / 2);
    expect(readdirSync(dir).sort()).toEqual(
      stored
        .slice(2)
        .map((s) => `${s.id}.png`)
        .sort(),
    );
    expect((await fetch(stored[0]?.url ?? "")).status).toBe(404);
    expect((await fetch(stored[1]?.url ?? "")).status).toBe(404);
    expect((await fetch(stored[4]?.url ?? "")).status).toBe(200);
  });

  it("keeps to the quota when puts run concurrently", async () => {
    // One image put 8 times: random pixel data deflates to sizes a few bytes apart, and the quota is exact.
    const png = makePng();
    const size = png.length;
    const { store, dir } = await harness({ quotaBytes: size * 2 });
    await Promise.all(Array.from({ length: 8 }, () => store.put(png, META)));
    await store.settled();
    expect(dirBytes(dir)).toBeLessThanOrEqual(size * 2);
    expect(readdirSync(dir)).toHaveLength(2);
  });

  it("refuses an image larger than the whole quota", async () => {
    const small = makePng();
    const { store, dir } = await harness({ quotaBytes: small.length * 2 });
    await store.put(small, META);
    await expect(store.put(makePng({ width: 60, height: 60 }), META)).rejects.toThrow(/exceeds the whole quota/);
    await store.settled();
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it("deletes expired files on put", async () => {
    const { store, dir, clock } = await harness();
    const old = await store.put(makePng(), META);
    clock.now = old.expiresAt;
    const fresh = await store.put(makePng(), META);
    await store.settled();
    expect(readdirSync(dir)).toEqual([`${fresh.id}.png`]);
  });

  it("deletes expired files every minute, and stops on close", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const { store, dir, clock } = await harness();
    const stored = await store.put(makePng(), META);
    const file = join(dir, `${stored.id}.png`);
    await store.settled();
    expect(vi.getTimerCount()).toBe(1);

    clock.now = stored.expiresAt;
    vi.advanceTimersByTime(59_999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(file)).toBe(true);
    vi.advanceTimersByTime(1);
    await vi.waitFor(() => expect(existsSync(file)).toBe(false));

    await store.close();
    expect(vi.getTimerCount()).toBe(0);
    await expect(store.put(makePng(), META)).rejects.toThrow(/closed/);
  });

  it("adopts files left by an earlier run: links still work and count towards the quota", async () => {
    const dir = join(tempDir(), "shots");
    const key = randomBytes(32);
    // One image for every put: random PNGs differ in size by a few bytes, and the quota is exactly two of them.
    const png = makePng();
    const size = png.length;
    const first = await harness({ dir, key, quotaBytes: size * 2 });
    const a = await first.store.put(png, META);
    first.clock.now += 1000;
    const b = await first.store.put(png, META);
    await first.store.close();
    expect(Math.round(statSync(join(dir, `${b.id}.png`)).mtimeMs)).toBe(T0 + 1000);

    const second = await harness({ dir, key, quotaBytes: size * 2 });
    second.clock.now = T0 + 2000;
    const relink = (url: string) => url.replace(first.base, second.base);
    expect((await fetch(relink(b.url))).status).toBe(200);
    await second.store.put(png, META);
    await second.store.settled();
    expect(readdirSync(dir)).toHaveLength(2);
    expect((await fetch(relink(a.url))).status).toBe(404);
  });

  it("expires files left by an earlier run ttl after they were written", async () => {
    const dir = join(tempDir(), "shots");
    const key = randomBytes(32);
    const first = await harness({ dir, key });
    const old = await first.store.put(makePng(), META);
    await first.store.close();

    const second = await harness({ dir, key });
    second.clock.now = old.expiresAt;
    const fresh = await second.store.put(makePng(), META);
    await second.store.settled();
    expect(readdirSync(dir)).toEqual([`${fresh.id}.png`]);
  });

  it("refuses a short key", () => {
    expect(() => new LocalScreenshotStore({ dir: tempDir(), key: randomBytes(31), ttlMs: TTL, quotaBytes: 1000, publicBaseUrl: () => "" })).toThrow(
      /at least 32 bytes/,
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// S3 store against s3rver on 127.0.0.1. s3rver checks presigned URL expiry but not SigV4 signatures, so
// signature tampering is not tested here.

describe("S3ScreenshotStore", () => {
  const BUCKET = "tabrelay-shots";
  let s3: S3rver;
  let endpoint = "";
  let s3Dir = "";

  beforeAll(async () => {
    s3Dir = mkdtempSync(join(tmpdir(), "tabrelay-s3rver-"));
    s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
    const { port } = await s3.run();
    endpoint = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await s3.close();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  function s3Store(now?: () => number): S3ScreenshotStore {
    const store = new S3ScreenshotStore({
      bucket: BUCKET,
      region: "us-east-1",
      endpoint,
      forcePathStyle: true,
      prefix: "shots/",
      ttlMs: 60_000,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
      ...(now ? { now } : {}),
    });
    stores.push(store);
    return store;
  }

  it("puts the image and links to it with a presigned GET", async () => {
    const store = s3Store();
    const png = makePng({ width: 30, height: 20 });
    const before = Date.now();
    const stored = await store.put(png, META);

    expect(stored.id).toMatch(/^[0-9a-f]{32}$/);
    expect(stored.bytes).toBe(png.length);
    expect(stored.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(stored.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
    const url = new URL(stored.url);
    expect(url.origin).toBe(endpoint);
    expect(url.pathname).toBe(`/${BUCKET}/shots/${stored.id}.png`);
    expect(url.searchParams.get("X-Amz-Expires")).toBe("60");
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);

    const res = await fetch(stored.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
  });

  it("a presigned URL stops working once expired", async () => {
    const store = s3Store(() => Date.now() - 3_600_000);
    const stored = await store.put(makePng(), META);
    expect(stored.expiresAt).toBeLessThan(Date.now());
    const res = await fetch(stored.url);
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/Request has expired/);
  });

  it("refuses a TTL beyond the 7-day SigV4 limit", () => {
    expect(() => new S3ScreenshotStore({ bucket: BUCKET, region: "us-east-1", ttlMs: 8 * 24 * 3600 * 1000 })).toThrow(/ttl/);
  });
});

// The SDK-free S3 store (screenshots/sigv4.ts, what the Workers entry stores screenshots with): its signatures are the
// AWS SDK's own for the same request, key, region and time (s3rver does not check signatures, so the SDK is the
// reference), and against s3rver the PNG is stored and its presigned link serves it, with the same metadata.
import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PresignedS3Store } from "../../src/screenshots/sigv4.js";

/** The hash the SDK's signer is given on Node (SHA-256, or HMAC-SHA256 with a secret), over node:crypto. */
class NodeSha256 {
  readonly #hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash = secret === undefined ? createHash("sha256") : createHmac("sha256", bytesOf(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

function bytesOf(data: string | ArrayBuffer | ArrayBufferView): string | Buffer {
  if (typeof data === "string") return data;
  return data instanceof ArrayBuffer ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
const when = new Date("2026-11-30T12:34:56Z");

describe("SigV4 as the AWS SDK signs", () => {
  for (const place of [
    { name: "AWS, virtual-hosted", region: "eu-west-1", endpoint: undefined, forcePathStyle: undefined },
    { name: "an S3-protocol endpoint, path style", region: "us-east-1", endpoint: "http://127.0.0.1:4569", forcePathStyle: true },
  ]) {
    it(`a presigned GET is byte for byte the SDK's (${place.name}), key with spaces and unicode`, async () => {
      const key = "shots/a b+c/ñ (1)*.png";
      // As the Node store builds its client: no flexible checksums (S3-protocol servers other than AWS refuse them).
      const client = new S3Client({
        region: place.region,
        credentials,
        responseChecksumValidation: "WHEN_REQUIRED",
        requestChecksumCalculation: "WHEN_REQUIRED",
        ...(place.endpoint ? { endpoint: place.endpoint } : {}),
        ...(place.forcePathStyle ? { forcePathStyle: true } : {}),
      });
      const sdk = new URL(await getSignedUrl(client, new GetObjectCommand({ Bucket: "my-bucket", Key: key }), { expiresIn: 900, signingDate: when }));
      const store = new PresignedS3Store({
        bucket: "my-bucket",
        region: place.region,
        ...(place.endpoint ? { endpoint: place.endpoint } : {}),
        ...(place.forcePathStyle ? { forcePathStyle: true } : {}),
        ttlMs: 900_000,
        credentials,
      });
      // The SDK adds its operation name (x-id) to the query: signed like any other parameter.
      const url = store.objectUrl(key);
      url.searchParams.set("x-id", "GetObject");
      const ours = new URL(await store.presign("GET", url, 900, when));
      expect(ours.origin + ours.pathname).toBe(sdk.origin + sdk.pathname);
      expect(Object.fromEntries(ours.searchParams)).toEqual(Object.fromEntries(sdk.searchParams));
      client.destroy();
    });
  }

  it("a PUT's Authorization header is the SDK's for the same headers and payload", async () => {
    const body = new TextEncoder().encode("not really a png");
    const store = new PresignedS3Store({
      bucket: "my-bucket",
      region: "us-east-1",
      endpoint: "http://127.0.0.1:4569",
      forcePathStyle: true,
      ttlMs: 60_000,
      credentials,
    });
    const url = store.objectUrl("shots/x.png");
    const { sha256Hex } = await import("../../src/util/sha256.js");
    const ours = await store.signRequest("PUT", url, { "Content-Type": "image/png", "x-amz-meta-width": "3" }, sha256Hex(body), when);
    // The SDK's signer on the same request.
    const { SignatureV4 } = await import("@smithy/signature-v4");
    const signer = new SignatureV4({ service: "s3", region: "us-east-1", credentials, sha256: NodeSha256, uriEscapePath: false });
    const signed = await signer.sign(
      {
        method: "PUT",
        protocol: url.protocol,
        hostname: url.hostname,
        port: Number(url.port),
        path: url.pathname,
        query: {},
        headers: { host: url.host, "content-type": "image/png", "x-amz-meta-width": "3", "x-amz-content-sha256": sha256Hex(body) },
        body,
      },
      { signingDate: when },
    );
    expect(ours["authorization"]).toBe(signed.headers["authorization"]);
  });
});

describe("PresignedS3Store against s3rver", () => {
  const BUCKET = "tabrelay-shots";
  let s3: S3rver;
  let endpoint = "";
  let dir = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tabrelay-s3rver-"));
    s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
    const { port } = await s3.run();
    endpoint = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await s3.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("stores the PNG with its size and time but not the page URL, and the link serves it until it expires", async () => {
    const store = new PresignedS3Store({
      bucket: BUCKET,
      region: "us-east-1",
      endpoint,
      prefix: "shots/",
      ttlMs: 60_000,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    });
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
    const stored = await store.put(png, { width: 30, height: 20, pageUrl: "https://example.test/?token=secret", capturedAt: 1_700_000_000_000 });
    const url = new URL(stored.url);
    expect(url.pathname).toBe(`/${BUCKET}/shots/${stored.id}.png`);
    expect(url.searchParams.get("X-Amz-Expires")).toBe("60");
    const got = await fetch(stored.url);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect(got.headers.get("x-amz-meta-width")).toBe("30");
    expect(got.headers.get("x-amz-meta-captured-at")).toBe("1700000000000");
    expect([...got.headers.keys()].some((h) => h.includes("page"))).toBe(false);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(png);
    // Signed an hour ago for a minute: expired.
    const old = await store.presignGet(`shots/${stored.id}.png`, 60, new Date(Date.now() - 3_600_000));
    expect((await fetch(old)).status).toBe(403);
  });

  it("a bucket that refuses the PUT is an error naming the status and what to check", async () => {
    const store = new PresignedS3Store({
      bucket: "no-such-bucket",
      region: "us-east-1",
      endpoint,
      ttlMs: 60_000,
      credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    });
    await expect(store.put(new Uint8Array([1, 2, 3]), { width: 1, height: 1, pageUrl: "https://example.test/", capturedAt: 0 })).rejects.toThrow(
      /the bucket refused the screenshot \(HTTP 404 NoSuchBucket\); check screenshots\.s3/,
    );
  });
});

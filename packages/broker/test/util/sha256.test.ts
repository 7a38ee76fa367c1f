import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { base64ToBytes, bytesToBase64, bytesToHex, randomHex, readUint32, utf8Bytes } from "../../src/util/bytes.js";
import { constantTimeEqual, sha256, sha256Hex } from "../../src/util/sha256.js";
import { safeEqual } from "../../src/util/secrets.js";

describe("sha256 (util/sha256.ts)", () => {
  it("gives NIST's digests (FIPS 180-2 examples and the empty string)", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect(sha256Hex("a".repeat(1_000_000))).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("agrees with node:crypto at every length around the padding boundaries, and on non-ASCII text", () => {
    for (let length = 0; length <= 200; length++) {
      const bytes = randomBytes(length);
      expect(sha256Hex(bytes), `length ${length}`).toBe(createHash("sha256").update(bytes).digest("hex"));
    }
    const text = "naïve — 日本語 🙂";
    expect(sha256Hex(text)).toBe(createHash("sha256").update(text).digest("hex"));
  });

  it("hashes a view into a larger buffer by its own bytes only", () => {
    const whole = randomBytes(300);
    const view = new Uint8Array(whole.buffer, whole.byteOffset + 17, 130);
    expect(bytesToHex(sha256(view))).toBe(createHash("sha256").update(whole.subarray(17, 147)).digest("hex"));
  });

  it("compares in constant time: equal, different, different lengths", () => {
    expect(constantTimeEqual(utf8Bytes("secret"), utf8Bytes("secret"))).toBe(true);
    expect(constantTimeEqual(utf8Bytes("secret"), utf8Bytes("secreT"))).toBe(false);
    expect(constantTimeEqual(utf8Bytes("secret"), utf8Bytes("secret2"))).toBe(false);
    expect(safeEqual("a-token", "a-token")).toBe(true);
    expect(safeEqual("a-token", "a-tokeN")).toBe(false);
    expect(safeEqual("a-token", "")).toBe(false);
  });
});

describe("bytes (util/bytes.ts)", () => {
  it("encodes base64 as Buffer does, across the chunk size", () => {
    for (const length of [0, 1, 2, 3, 4, 24_575, 24_576, 24_577, 100_003]) {
      const bytes = randomBytes(length);
      expect(bytesToBase64(bytes), `length ${length}`).toBe(bytes.toString("base64"));
    }
  });

  it("decodes base64 as Buffer does: padded or not, with whitespace, across the chunk size", () => {
    for (const length of [0, 1, 2, 3, 4, 5, 24_575, 24_576, 24_577, 100_003]) {
      const bytes = randomBytes(length);
      const text = bytes.toString("base64");
      expect(Buffer.from(base64ToBytes(text) ?? []).equals(bytes), `length ${length}`).toBe(true);
      expect(Buffer.from(base64ToBytes(text.replace(/=+$/, "")) ?? []).equals(bytes), `unpadded ${length}`).toBe(true);
    }
    expect(Buffer.from(base64ToBytes("aGVs\nbG8g d29y\r\nbGQ=") ?? []).toString()).toBe("hello world");
    expect(Buffer.from(base64ToBytes("QQ=") ?? []).toString()).toBe("A");
  });

  it("refuses what is not base64, and drops a last character that completes no byte, as Buffer does", () => {
    expect(base64ToBytes("not base64!")).toBeUndefined();
    expect(Buffer.from(base64ToBytes("QUJDR") ?? []).equals(Buffer.from("QUJDR", "base64"))).toBe(true);
    expect(base64ToBytes("QU=JD")).toBeUndefined(); // padding in the middle
    expect(base64ToBytes("QUJD-_")).toBeUndefined(); // base64url is another alphabet
  });

  it("decodes a multi-MB screenshot quickly", () => {
    const bytes = randomBytes(12 * 1024 * 1024);
    const text = bytes.toString("base64");
    const started = performance.now();
    const decoded = base64ToBytes(text);
    const encoded = bytesToBase64(decoded ?? new Uint8Array());
    const elapsed = performance.now() - started;
    expect(encoded).toBe(text);
    // ~0.1-0.4 s for both on a two-core machine (cold). The bound is for a quadratic decoder (minutes at 12 MB), not a
    // measure of this one: how much faster it is than the 2 s of btoa over spread argument lists is bench material.
    expect(elapsed).toBeLessThan(10_000);
  });

  it("writes hex, random hex and big-endian integers", () => {
    expect(bytesToHex(new Uint8Array([0, 1, 0xab, 0xff]))).toBe("0001abff");
    expect(randomHex(6)).toMatch(/^[0-9a-f]{12}$/);
    expect(randomHex(6)).not.toBe(randomHex(6));
    expect(readUint32(new Uint8Array([9, 0x89, 0x50, 0x4e, 0x47]), 1)).toBe(0x89504e47);
  });
});

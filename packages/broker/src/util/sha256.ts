// SHA-256 (FIPS 180-4) over bytes, synchronous: Web Crypto's digest is async only, and its callers (the token
// comparison on every request, a program's audit hash) are synchronous. Tested against NIST's vectors
// (test/sha256.test.ts).
import { bytesToHex, utf8Bytes } from "./bytes.js";

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74,
  0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d,
  0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e,
  0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
  0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/** The 32-byte digest. */
export function sha256(message: Uint8Array): Uint8Array {
  const h = new Uint32Array(INITIAL);
  const w = new Uint32Array(64);
  // Whole blocks are read from the message in place; only the tail and the padding are copied.
  const whole = message.length - (message.length % 64);
  const input = new DataView(message.buffer, message.byteOffset, message.byteLength);
  for (let at = 0; at < whole; at += 64) compress(h, w, input, at);
  const tailLength = message.length - whole;
  const tail = new Uint8Array(tailLength < 56 ? 64 : 128);
  tail.set(message.subarray(whole));
  tail[tailLength] = 0x80;
  const end = new DataView(tail.buffer);
  // The length in bits, as a 64-bit big-endian integer (two halves: bit lengths pass 2^32 at 512 MiB).
  end.setUint32(tail.length - 8, Math.floor(message.length / 0x20000000));
  end.setUint32(tail.length - 4, (message.length * 8) >>> 0);
  for (let at = 0; at < tail.length; at += 64) compress(h, w, end, at);
  const out = new Uint8Array(32);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) view.setUint32(i * 4, h[i] ?? 0);
  return out;
}

/** The digest of a string's UTF-8 bytes (or of bytes), as 64 hex digits. */
export function sha256Hex(data: string | Uint8Array): string {
  return bytesToHex(sha256(typeof data === "string" ? utf8Bytes(data) : data));
}

function compress(h: Uint32Array, w: Uint32Array, block: DataView, at: number): void {
  for (let t = 0; t < 16; t++) w[t] = block.getUint32(at + t * 4);
  for (let t = 16; t < 64; t++) {
    const w15 = w[t - 15] ?? 0;
    const w2 = w[t - 2] ?? 0;
    const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
    w[t] = (w[t - 16] ?? 0) + s0 + (w[t - 7] ?? 0) + s1;
  }
  let a = h[0] ?? 0;
  let b = h[1] ?? 0;
  let c = h[2] ?? 0;
  let d = h[3] ?? 0;
  let e = h[4] ?? 0;
  let f = h[5] ?? 0;
  let g = h[6] ?? 0;
  let hh = h[7] ?? 0;
  for (let t = 0; t < 64; t++) {
    const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + (K[t] ?? 0) + (w[t] ?? 0)) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    hh = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0] ?? 0) + a;
  h[1] = (h[1] ?? 0) + b;
  h[2] = (h[2] ?? 0) + c;
  h[3] = (h[3] ?? 0) + d;
  h[4] = (h[4] ?? 0) + e;
  h[5] = (h[5] ?? 0) + f;
  h[6] = (h[6] ?? 0) + g;
  h[7] = (h[7] ?? 0) + hh;
}

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}

/** Whether two byte strings are equal, in time that depends on their length only (not on where they differ). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

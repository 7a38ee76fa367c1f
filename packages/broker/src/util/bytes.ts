// Bytes without Node's Buffer (the core also runs on Workers-style runtimes: DESIGN.md, "Boundaries that must
// hold"): UTF-8, base64 and hex over Uint8Array, and random ids from Web Crypto (global on Node 20 too).

const encoder = new TextEncoder();

export function utf8Bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const CODES = utf8Bytes(ALPHABET);
/** Character code -> its 6 bits; -1 for every character outside the alphabet. */
const VALUES = new Int8Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;
const ascii = new TextDecoder();

// Both directions are table-driven loops into a typed array: a multi-MB screenshot is neither built one string
// character at a time nor spread into an argument list (btoa(String.fromCharCode(...)) took seconds for 12 MiB).

export function bytesToBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  for (let i = 0; i < whole; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out[o] = CODES[n >>> 18] ?? 0;
    out[o + 1] = CODES[(n >>> 12) & 63] ?? 0;
    out[o + 2] = CODES[(n >>> 6) & 63] ?? 0;
    out[o + 3] = CODES[n & 63] ?? 0;
    o += 4;
  }
  if (whole < bytes.length) {
    const n = ((bytes[whole] ?? 0) << 16) | ((bytes[whole + 1] ?? 0) << 8);
    out[o] = CODES[n >>> 18] ?? 0;
    out[o + 1] = CODES[(n >>> 12) & 63] ?? 0;
    out[o + 2] = bytes.length - whole === 2 ? (CODES[(n >>> 6) & 63] ?? 0) : 0x3d;
    out[o + 3] = 0x3d;
  }
  return ascii.decode(out);
}

/**
 * Decodes base64 as Node's Buffer does: ASCII whitespace is ignored, the trailing `=` padding is optional, and a last
 * character that completes no byte is dropped. Undefined when a character is outside the alphabet (`=` included,
 * but for the padding).
 */
export function base64ToBytes(text: string): Uint8Array | undefined {
  const compact = /[\t\n\f\r ]/.test(text) ? text.replace(/[\t\n\f\r ]+/g, "") : text;
  let length = compact.length;
  if (compact.charCodeAt(length - 1) === 0x3d) length--;
  if (compact.charCodeAt(length - 1) === 0x3d) length--;
  // The characters as bytes in one native pass (a non-ASCII one becomes bytes outside the alphabet), then table lookups.
  const chars = new Uint8Array(length);
  if (encoder.encodeInto(length === compact.length ? compact : compact.slice(0, length), chars).read !== length) return undefined;
  const tail = length % 4;
  const out = new Uint8Array(Math.floor((length * 3) / 4));
  const whole = length - tail;
  let o = 0;
  for (let i = 0; i < whole; i += 4) {
    const a = VALUES[chars[i] ?? 0] ?? -1;
    const b = VALUES[chars[i + 1] ?? 0] ?? -1;
    const c = VALUES[chars[i + 2] ?? 0] ?? -1;
    const d = VALUES[chars[i + 3] ?? 0] ?? -1;
    if ((a | b | c | d) < 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o] = n >>> 16;
    out[o + 1] = (n >>> 8) & 0xff;
    out[o + 2] = n & 0xff;
    o += 3;
  }
  if (tail === 1 && (VALUES[chars[whole] ?? 0] ?? -1) < 0) return undefined;
  if (tail > 1) {
    const a = VALUES[chars[whole] ?? 0] ?? -1;
    const b = VALUES[chars[whole + 1] ?? 0] ?? -1;
    const c = tail === 3 ? (VALUES[chars[whole + 2] ?? 0] ?? -1) : 0;
    if ((a | b | c) < 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6);
    out[o] = n >>> 16;
    if (tail === 3) out[o + 1] = (n >>> 8) & 0xff;
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function bytesToHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += HEX[byte];
  return out;
}

/** `count` random bytes as hex (2 x count characters): nonces and ids. */
export function randomHex(count: number): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(count)));
}

/** Big-endian unsigned 32-bit integer at `offset` (PNG headers). */
export function readUint32(bytes: Uint8Array, offset: number): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(offset);
}

/** Bytes `start`..`end` as Latin-1 text (PNG chunk types). */
export function latin1(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}

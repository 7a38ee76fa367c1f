// Validation of a PNG that came from the browser, before it is stored or linked: structure and limits only,
// the image data is not decoded. Deny on anything unexpected.
import { latin1, readUint32 } from "../util/bytes.js";

export type PngCheck = { ok: true; width: number; height: number } | { ok: false; code: "invalid_image"; message: string };

export interface PngLimits {
  maxBytes: number;
  maxPixels: number;
}

const SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Length, type and CRC around each chunk's data. */
const CHUNK_OVERHEAD = 12;
const IHDR_LENGTH = 13;
/** Signature, IHDR, IEND: the least a PNG can be (an IDAT is required on top). */
const MIN_LENGTH = SIGNATURE.length + (CHUNK_OVERHEAD + IHDR_LENGTH) + CHUNK_OVERHEAD;
/** PNG caps width, height and chunk lengths at 2^31 - 1. */
const PNG_INT_MAX = 0x7fffffff;

/** Allowed bit depths per colour type (PNG spec, 11.2.2). */
const BIT_DEPTHS: ReadonlyMap<number, readonly number[]> = new Map([
  [0, [1, 2, 4, 8, 16]], // greyscale
  [2, [8, 16]], // truecolour
  [3, [1, 2, 4, 8]], // indexed
  [4, [8, 16]], // greyscale + alpha
  [6, [8, 16]], // truecolour + alpha
]);

const CRC_TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (ISO 3309 / ITU-T V.42, as PNG and zlib use it). node:zlib only has crc32 from Node 22 on. */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = (CRC_TABLE[(c ^ (bytes[i] ?? 0)) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function invalid(message: string): PngCheck {
  return { ok: false, code: "invalid_image", message };
}

function chunkType(bytes: Uint8Array, offset: number): string {
  return latin1(bytes, offset, offset + 4);
}

/**
 * Checks that `bytes` is one well-formed PNG within `limits`: the signature, a first IHDR chunk of length
 * 13 with a correct CRC, a non-zero size within `maxPixels`, a valid bit depth / colour type pair, an
 * unbroken chain of chunks with at least one IDAT, and an IEND that ends the file. Chunk CRCs other than
 * IHDR's and IEND's are not checked (a decoder would; nothing here decodes).
 */
export function validatePng(bytes: Uint8Array, limits: PngLimits): PngCheck {
  if (bytes.length > limits.maxBytes) return invalid(`image is ${bytes.length} bytes, over the limit of ${limits.maxBytes}`);
  if (bytes.length < SIGNATURE.length || SIGNATURE.some((byte, i) => bytes[i] !== byte)) {
    return invalid("not a PNG: the 8-byte PNG signature is missing");
  }
  if (bytes.length < MIN_LENGTH) return invalid(`PNG truncated: ${bytes.length} bytes is too short to hold IHDR and IEND`);

  const ihdr = SIGNATURE.length;
  if (chunkType(bytes, ihdr + 4) !== "IHDR") return invalid(`the first chunk is ${JSON.stringify(chunkType(bytes, ihdr + 4))}, not IHDR`);
  const ihdrLength = readUint32(bytes, ihdr);
  if (ihdrLength !== IHDR_LENGTH) return invalid(`IHDR length is ${ihdrLength}, not 13`);
  const ihdrCrc = readUint32(bytes, ihdr + 8 + IHDR_LENGTH);
  if (crc32(bytes, ihdr + 4, ihdr + 8 + IHDR_LENGTH) !== ihdrCrc) return invalid("IHDR CRC mismatch");

  const width = readUint32(bytes, ihdr + 8);
  const height = readUint32(bytes, ihdr + 12);
  const bitDepth = bytes[ihdr + 16] ?? 0;
  const colourType = bytes[ihdr + 17] ?? 0;
  const compression = bytes[ihdr + 18] ?? 0;
  const filter = bytes[ihdr + 19] ?? 0;
  const interlace = bytes[ihdr + 20] ?? 0;
  if (width === 0 || height === 0) return invalid(`image size ${width}x${height}: width and height must be > 0`);
  if (width > PNG_INT_MAX || height > PNG_INT_MAX) return invalid(`image size ${width}x${height} exceeds the PNG maximum`);
  if (width * height > limits.maxPixels) {
    return invalid(`image is ${width}x${height} = ${width * height} pixels, over the limit of ${limits.maxPixels}`);
  }
  const depths = BIT_DEPTHS.get(colourType);
  if (!depths) return invalid(`IHDR colour type ${colourType} does not exist`);
  if (!depths.includes(bitDepth)) return invalid(`IHDR bit depth ${bitDepth} is not allowed with colour type ${colourType}`);
  if (compression !== 0) return invalid(`IHDR compression method ${compression} is not 0`);
  if (filter !== 0) return invalid(`IHDR filter method ${filter} is not 0`);
  if (interlace > 1) return invalid(`IHDR interlace method ${interlace} is not 0 or 1`);

  let offset = ihdr + CHUNK_OVERHEAD + IHDR_LENGTH;
  let sawIdat = false;
  while (offset + CHUNK_OVERHEAD <= bytes.length) {
    const length = readUint32(bytes, offset);
    const type = chunkType(bytes, offset + 4);
    if (!/^[A-Za-z]{4}$/.test(type)) return invalid(`chunk at byte ${offset} has an invalid type`);
    if (length > PNG_INT_MAX || offset + CHUNK_OVERHEAD + length > bytes.length) {
      return invalid(`PNG truncated: chunk ${type} at byte ${offset} runs past the end of the file`);
    }
    const end = offset + CHUNK_OVERHEAD + length;
    if (type === "IHDR") return invalid("a second IHDR chunk");
    if (type === "IDAT") sawIdat = true;
    if (type === "IEND") {
      if (length !== 0) return invalid(`IEND length is ${length}, not 0`);
      if (crc32(bytes, offset + 4, offset + 8) !== readUint32(bytes, offset + 8)) return invalid("IEND CRC mismatch");
      if (!sawIdat) return invalid("no IDAT chunk before IEND");
      if (end !== bytes.length) return invalid(`${bytes.length - end} bytes of data after IEND`);
      return { ok: true, width, height };
    }
    offset = end;
  }
  return invalid(offset === bytes.length ? "no IEND chunk: the file ends without one" : "PNG truncated: the file ends inside a chunk header");
}

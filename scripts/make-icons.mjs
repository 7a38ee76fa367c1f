#!/usr/bin/env node
// Draws the extension's icons (packages/extension/static/icons/icon-{16,32,48,128}.png, the sizes Chrome and the
// Chrome Web Store ask for) from one description in code, so they can be redrawn without an image editor:
// a rounded square in the product's blue holding a white browser tab with an arrow leaving it (the browser relays
// to the agent). Anti-aliased by drawing 4x4 samples per pixel. Run after changing the drawing; commit the PNGs.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { crc32, deflateSync } from "node:zlib";

const out = fileURLToPath(new URL("../packages/extension/static/icons/", import.meta.url));
const SIZES = [16, 32, 48, 128];
const SAMPLES = 4;
const BLUE = [31, 94, 214];
const WHITE = [255, 255, 255];

/** The colour at (x, y) in a unit square (0..1), or undefined where the icon is transparent. */
function colourAt(x, y) {
  if (!inRoundedRect(x, y, 0.02, 0.02, 0.98, 0.98, 0.22)) return undefined;
  // The tab: a white body with a raised tab on its top left.
  const inBody = inRoundedRect(x, y, 0.2, 0.34, 0.8, 0.8, 0.06);
  const inTab = inRoundedRect(x, y, 0.2, 0.24, 0.5, 0.4, 0.05);
  // The arrow inside the body, in blue: a shaft and a head pointing right.
  const inShaft = x >= 0.32 && x <= 0.56 && Math.abs(y - 0.57) <= 0.045;
  const inHead = x >= 0.52 && x <= 0.7 && Math.abs(y - 0.57) <= (0.7 - x) * 0.75;
  if ((inBody || inTab) && !(inShaft || inHead)) return WHITE;
  return BLUE;
}

function inRoundedRect(x, y, left, top, right, bottom, radius) {
  if (x < left || x > right || y < top || y > bottom) return false;
  const cx = Math.min(Math.max(x, left + radius), right - radius);
  const cy = Math.min(Math.max(y, top + radius), bottom - radius);
  return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2;
}

function png(size) {
  const rows = [];
  for (let py = 0; py < size; py++) {
    const row = Buffer.alloc(1 + size * 4); // filter byte 0 (none), then RGBA
    for (let px = 0; px < size; px++) {
      let r = 0,
        g = 0,
        b = 0,
        a = 0;
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const c = colourAt((px + (sx + 0.5) / SAMPLES) / size, (py + (sy + 0.5) / SAMPLES) / size);
          if (c) {
            r += c[0];
            g += c[1];
            b += c[2];
            a += 1;
          }
        }
      }
      const at = 1 + px * 4;
      if (a > 0) row.set([Math.round(r / a), Math.round(g / a), Math.round(b / a), Math.round((255 * a) / SAMPLES ** 2)], at);
    }
    rows.push(row);
  }
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits per channel, RGBA, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

mkdirSync(out, { recursive: true });
for (const size of SIZES) writeFileSync(join(out, `icon-${size}.png`), png(size));
console.log(`icons: ${SIZES.map((s) => `icon-${s}.png`).join(", ")} in ${out}`);

// A zip archive of a folder, written with Node alone (a clean machine may have no `zip`): deflated entries, sorted
// by path, every time stamp the same (1980-01-01), so that the same files always make the same bytes. Enough for
// what a browser's extension store takes; no zip64 (under 4 GiB and 65,535 entries, checked).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";

const DOS_DATE = (0 << 9) | (1 << 5) | 1; // 1980-01-01
const DOS_TIME = 0;

/** Every file under `dir` but dotfiles (build stamps), as [path inside the archive with forward slashes, absolute path], sorted. */
function filesUnder(dir, root = dir) {
  return readdirSync(dir)
    .filter((name) => !name.startsWith("."))
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path, root) : [[relative(root, path).split(sep).join("/"), path]];
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Writes `zipPath` holding every file under `dir` (paths relative to it); `transform(name, bytes)` may replace a
 * file's bytes on the way in (the extension's manifest loses its `key`).
 */
export function zipFolder(dir, zipPath, transform = (_name, bytes) => bytes) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  const entries = filesUnder(dir);
  if (entries.length > 0xffff) throw new Error(`zip: ${entries.length} files is more than a zip without zip64 holds`);
  for (const [name, path] of entries) {
    const data = transform(name, readFileSync(path));
    const packed = deflateRawSync(data, { level: 9 });
    const nameBytes = Buffer.from(name, "utf8");
    const crc = crc32(data) >>> 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by: Unix, 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  if (offset + directory.length > 0xffffffff) throw new Error("zip: more than 4 GiB is more than a zip without zip64 holds");
  writeFileSync(zipPath, Buffer.concat([...locals, directory, end]));
  return entries.map(([name]) => name);
}

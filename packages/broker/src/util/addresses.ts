// IP addresses and CIDR ranges, as 16 bytes (IPv4 as IPv4-mapped IPv6): parsed strictly, written canonically.

/** Why a mcp.trusted_proxies entry is not an address or range, or undefined when it is one. */
export function rangeProblem(entry: string): string | undefined {
  return parseRange(entry) ? undefined : `${JSON.stringify(entry)} is not an IP address or a CIDR range (like 10.0.0.2 or 10.0.0.0/24 or fd00::/8)`;
}

/** An IP address in one form whatever way it was written (IPv4-mapped IPv6 as IPv4, IPv6 per RFC 5952), or undefined. */
export function canonicalAddress(text: string): string | undefined {
  const bytes = parseAddress(text);
  return bytes === undefined ? undefined : formatAddress(bytes);
}

/** The /64 an IPv6 address is in (one client may hold all of it), or the IPv4 address itself; canonical. */
export function addressBlock(text: string): string | undefined {
  const bytes = parseAddress(text);
  if (bytes === undefined) return undefined;
  if (isMappedV4(bytes)) return formatAddress(bytes);
  const block = new Uint8Array(16);
  block.set(bytes.subarray(0, 8));
  return `${formatAddress(block)}/64`;
}

export interface Range {
  bytes: Uint8Array;
  bits: number;
}

export function parseRange(entry: string): Range | undefined {
  const [address, prefix, extra] = entry.trim().split("/");
  if (address === undefined || extra !== undefined) return undefined;
  const bytes = parseAddress(address);
  if (!bytes) return undefined;
  const v4 = isMappedV4(bytes) && !address.includes(":");
  const max = v4 ? 32 : 128;
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return undefined;
  const bits = prefix === undefined ? max : Number(prefix);
  if (bits > max) return undefined;
  return { bytes, bits: v4 ? bits + 96 : bits };
}

export function inRange(bytes: Uint8Array, range: Range): boolean {
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((range.bytes[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function isMappedV4(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
}

function parseV4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.map(Number);
}

export function parseAddress(text: string): Uint8Array | undefined {
  const v4 = parseV4(text);
  if (v4) return Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...v4]);
  // Zone ids (fe80::1%eth0) and brackets are not addresses a client is counted by.
  if (!/^[0-9a-fA-F:.]+$/.test(text) || text.length > 45) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  // An embedded IPv4 address may only end the address (::ffff:1.2.3.4), never precede "::".
  const groups = (half: string, last: boolean): number[] | undefined => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (const [i, part] of parts.entries()) {
      if (last && i === parts.length - 1 && part.includes(".")) {
        const tail = parseV4(part);
        if (!tail) return undefined;
        out.push((tail[0]! << 8) | tail[1]!, (tail[2]! << 8) | tail[3]!);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) out.push(parseInt(part, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1]!, true) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...new Array<number>(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 0xff;
  });
  return bytes;
}

function formatAddress(bytes: Uint8Array): string {
  if (isMappedV4(bytes)) return [...bytes.subarray(12)].join(".");
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[i * 2]! << 8) | bytes[i * 2 + 1]!);
  // RFC 5952: the longest run of two or more zero groups (the first of equals) becomes "::"; lower-case hex.
  let best = { at: -1, length: 0 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length && j - i >= 2) best = { at: i, length: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(":");
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.length).join(":")}`;
}

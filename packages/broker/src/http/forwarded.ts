// Where a request really came from, and what the browser used to reach the broker: one rule for the door (/mcp's
// Origin check) and the dashboard (Origin check, cookies, the login throttle's client address).
// A load balancer's X-Forwarded-Proto, X-Forwarded-Host and X-Real-IP are believed only when the TCP peer is one of
// `mcp.trusted_proxies` (addresses or CIDR ranges). The Host header does not decide it: any client that reaches a
// broker's port can send the public name as Host, and with it, before this rule, its own X-Real-IP (to dodge the
// login throttle, or to get another address held back) and its own scheme.
// No node: import: the door runs in the runtime-neutral core.
import type { Logger } from "../util/log.js";

/** A request as the broker takes it: what the browser used, and the client's address. */
export interface Arrival {
  /** Whether the peer is a trusted proxy, so that its forwarded headers were believed. */
  proxied: boolean;
  /** The browser used https (the proxy's X-Forwarded-Proto). */
  tls: boolean;
  /** The host (and port) the browser used: the proxy's X-Forwarded-Host when it names the Host's host, else the Host. */
  host: string;
  /** `${scheme}://${host}`: the origin a page the broker served has. */
  origin: string;
  /** The client's address in canonical form (the proxy's X-Real-IP, else the peer's), or undefined when unknown. */
  client: string | undefined;
}

export class Forwarding {
  readonly #trusted: Range[];
  readonly #log: Logger | undefined;
  #warned = false;

  /** `trusted`: mcp.trusted_proxies, already validated (rangeProblem). */
  constructor(trusted: readonly string[], log?: Logger) {
    this.#trusted = trusted.map((entry) => {
      const range = parseRange(entry);
      if (!range) throw new Error(`mcp.trusted_proxies: ${rangeProblem(entry) ?? entry}`);
      return range;
    });
    this.#log = log;
  }

  /** Whether `address` (a peer's, as Node gives it) is a trusted proxy. */
  trusts(address: string | undefined): boolean {
    const bytes = address === undefined ? undefined : parseAddress(withoutZone(address));
    return bytes !== undefined && this.#trusted.some((range) => inRange(bytes, range));
  }

  /** `host`: the Host header, already checked to name this broker, lower-cased. */
  arrival(headers: Headers, peerAddress: string | undefined, host: string): Arrival {
    const peer = peerAddress === undefined ? undefined : canonicalAddress(withoutZone(peerAddress));
    if (!this.trusts(peerAddress)) {
      if (!this.#warned && (headers.has("x-forwarded-proto") || headers.has("x-real-ip"))) {
        this.#warned = true;
        this.#log?.warn(`http: forwarded headers from ${peer ?? "an unknown peer"} were ignored: it is not in mcp.trusted_proxies (add your load balancer's address there, and only it)`);
      }
      return { proxied: false, tls: false, host, origin: `http://${host}`, client: peer };
    }
    const tls = firstValue(headers.get("x-forwarded-proto"))?.toLowerCase() === "https";
    const forwardedHost = firstValue(headers.get("x-forwarded-host"))?.toLowerCase();
    // Only its port is taken: nginx passes Host without the port it listens on; another host name is not believed.
    const shown = forwardedHost && hostName(forwardedHost) === hostName(host) ? forwardedHost : host;
    const realIp = headers.get("x-real-ip");
    const client = (realIp === null ? undefined : canonicalAddress(realIp.trim())) ?? peer;
    return { proxied: true, tls, host: shown, origin: `${tls ? "https" : "http"}://${shown}`, client };
  }
}

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

// ---- addresses, as 16 bytes (IPv4 as IPv4-mapped IPv6) ----

interface Range {
  bytes: Uint8Array;
  bits: number;
}

/** A link-local peer's address as Node gives it carries its interface (fe80::1%eth0): the address is what counts. */
function withoutZone(address: string): string {
  const at = address.indexOf("%");
  return at < 0 ? address : address.slice(0, at);
}

function firstValue(value: string | null): string | undefined {
  return value?.split(",")[0]?.trim() || undefined;
}

function hostName(host: string): string {
  return host.replace(/:\d+$/, "");
}

function parseRange(entry: string): Range | undefined {
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

function inRange(bytes: Uint8Array, range: Range): boolean {
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

function parseAddress(text: string): Uint8Array | undefined {
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
  for (let i = 0; i < 8; ) {
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

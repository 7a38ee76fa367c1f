// Where a request really came from, and what the browser used to reach the broker: one rule for the door (/mcp's
// Origin check) and the dashboard (Origin check, cookies, the login throttle's client address).
// A load balancer's X-Forwarded-Proto, X-Forwarded-Host and X-Real-IP are believed only when the TCP peer is one of
// `mcp.trusted_proxies` (addresses or CIDR ranges). The Host header does not decide it: any client that reaches a
// broker's port can send the public name as Host, and with it, before this rule, its own X-Real-IP (to dodge the
// login throttle, or to get another address held back) and its own scheme.
// No node: import: the door runs in the runtime-neutral core.
import { canonicalAddress, inRange, parseAddress, parseRange, rangeProblem, type Range } from "../util/addresses.js";
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
        this.#log?.warn(
          `http: forwarded headers from ${peer ?? "an unknown peer"} were ignored: it is not in mcp.trusted_proxies (add your load balancer's address there, and only it)`,
        );
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

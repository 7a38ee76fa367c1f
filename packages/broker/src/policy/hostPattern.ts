// Host keys in config, shared by the read and the write policy so both read "shop.example:8443" alike.
import { canonicalizeHost, isIpHost, type CanonicalUrl } from "./canonicalUrl.js";

/** A host key from config: "example.com", "*.example.com", "127.0.0.1:8080", "[::1]:3000". */
export interface HostPattern {
  host: string;
  /** Undefined: any port. Otherwise the decimal port, defaults included ("443"). */
  port: string | undefined;
  subdomains: boolean;
  isIp: boolean;
}

/**
 * Parses a host key. `where` names the config location for error messages.
 * With `subdomainsAlways` (deny entries) the host always covers its subdomains.
 */
export function parseHostKey(rawKey: unknown, where: string, subdomainsAlways: boolean): HostPattern {
  const expected = `expected a host such as "example.com", "*.example.com", "127.0.0.1:8080" or "[::1]:3000"`;
  if (typeof rawKey !== "string") throw new Error(`${where}: the host must be a string (${expected})`);
  const key = rawKey.trim();
  const bad = (why: string): Error => new Error(`${where}: ${JSON.stringify(rawKey)} ${why} (${expected})`);

  let rest = key;
  let wildcard = false;
  if (rest.startsWith("*.")) {
    wildcard = true;
    rest = rest.slice(2);
  }

  let hostText = rest;
  let portText: string | undefined;
  if (rest.startsWith("[")) {
    const m = /^(\[[^\]]*\])(?::(\d+))?$/.exec(rest);
    if (m === null) throw bad("is not a valid IPv6 literal");
    hostText = m[1] ?? "";
    portText = m[2];
  } else {
    const colons = rest.split(":").length - 1;
    if (colons === 1) {
      const m = /^([^:]*):(\d+)$/.exec(rest);
      if (m === null) throw bad("has an invalid port");
      hostText = m[1] ?? "";
      portText = m[2];
    }
    // More than one colon: a bare IPv6 literal such as "::1" (no port possible).
  }

  let port: string | undefined;
  if (portText !== undefined) {
    const n = Number(portText);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw bad("has a port outside 1-65535");
    port = String(n);
  }

  const host = canonicalizeHost(hostText);
  if (host === undefined) throw bad("is not a valid host name");
  const isIp = isIpHost(host);
  if (wildcard && isIp) throw bad('uses "*." with an IP address');
  return { host, port, subdomains: wildcard || subdomainsAlways, isIp };
}

export function effectivePort(url: CanonicalUrl): string {
  if (url.port !== "") return url.port;
  return url.protocol === "https:" ? "443" : "80";
}

export function hostMatches(pattern: HostPattern, url: CanonicalUrl): boolean {
  if (pattern.port !== undefined && pattern.port !== effectivePort(url)) return false;
  if (url.host === pattern.host) return true;
  return pattern.subdomains && !pattern.isIp && !url.isIp && url.host.endsWith(`.${pattern.host}`);
}

export function describeHost(pattern: HostPattern, subdomainWording: string): string {
  const hosts = pattern.subdomains ? `${pattern.host} ${subdomainWording}` : pattern.host;
  return pattern.port === undefined ? `${hosts} (any port)` : `${hosts} (port ${pattern.port} only)`;
}

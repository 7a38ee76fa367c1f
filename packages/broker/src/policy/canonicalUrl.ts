/**
 * Canonical form of URLs and host names for the read policy.
 *
 * Everything goes through the WHATWG URL parser (the same algorithm the browser
 * uses), so the policy judges exactly the host the browser would load:
 * lower case, IDNA/punycode, `\` treated as `/`, numeric IPv4 forms such as
 * "2130706433" or "0x7f.1" turned into dotted quads, IPv6 compressed and
 * bracketed. On top of that we strip userinfo and a single trailing dot, and
 * refuse host names with characters that cannot appear in a DNS name.
 */

export type CanonicalUrl = {
  href: string;
  protocol: "http:" | "https:" | string;
  /** Canonical hostname without port; IPv6 in brackets ("[::1]"). */
  host: string;
  /** "" for the scheme's default port. */
  port: string;
  /** pathname + search (no fragment), e.g. "/guide/x?y=1". */
  pathAndQuery: string;
  isIp: boolean;
};

/** Why a URL could not be canonicalised; used by the read policy to name the rule. */
export type CanonicalUrlFailureKind = "invalid" | "scheme";

export type CanonicalUrlResult =
  | { ok: true; url: CanonicalUrl }
  | { ok: false; kind: CanonicalUrlFailureKind; reason: string };

const READABLE_PROTOCOLS: ReadonlySet<string> = new Set(["http:", "https:"]);

/** Labels of letters, digits, "-" and "_" separated by single dots (after IDNA, so ASCII only). */
const DNS_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/;
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;

/** Validates and finishes a hostname produced by the WHATWG parser. */
function finishHostname(hostname: string): { host: string; isIp: boolean } | undefined {
  const host = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
  if (host === "") return undefined;
  if (IPV6.test(host)) return { host, isIp: true };
  if (IPV4.test(host)) return { host, isIp: true };
  if (!DNS_NAME.test(host)) return undefined;
  return { host, isIp: false };
}

/**
 * Canonicalises a URL, keeping the failure kind (invalid URL vs unreadable scheme).
 * Never throws.
 */
export function canonicalizeUrlDetailed(raw: string): CanonicalUrlResult {
  if (typeof raw !== "string" || raw.trim() === "") {
    return { ok: false, kind: "invalid", reason: "the URL is empty" };
  }
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return {
      ok: false,
      kind: "invalid",
      reason: "it is not a valid absolute URL (expected something like https://example.com/page)",
    };
  }
  if (!READABLE_PROTOCOLS.has(parsed.protocol)) {
    return {
      ok: false,
      kind: "scheme",
      reason: `the ${JSON.stringify(parsed.protocol)} scheme cannot be read; only http: and https: URLs are readable`,
    };
  }
  const finished = finishHostname(parsed.hostname);
  if (finished === undefined) {
    return {
      ok: false,
      kind: "invalid",
      reason: "its host name is not a valid DNS name or IP address",
    };
  }
  parsed.username = "";
  parsed.password = "";
  if (finished.host !== parsed.hostname) parsed.hostname = finished.host;
  return {
    ok: true,
    url: {
      href: parsed.href,
      protocol: parsed.protocol,
      host: finished.host,
      port: parsed.port,
      pathAndQuery: parsed.pathname + parsed.search,
      isIp: finished.isIp,
    },
  };
}

/** Canonicalises an http(s) URL. Never throws; any other scheme or unparseable input is a failure. */
export function canonicalizeUrl(raw: string): { ok: true; url: CanonicalUrl } | { ok: false; reason: string } {
  const result = canonicalizeUrlDetailed(raw);
  return result.ok ? result : { ok: false, reason: result.reason };
}

/**
 * Canonicalises a bare host name from configuration or a ranking file
 * ("DOCS.Example.com." -> "docs.example.com", "bücher.example" -> "xn--bcher-kva.example",
 * "::1" or "[0::1]" -> "[::1]", "2130706433" -> "127.0.0.1").
 * Returns undefined for anything that is not just a host: ports, paths, userinfo,
 * wildcards, spaces, or characters not valid in a DNS name.
 */
export function canonicalizeHost(raw: string): string | undefined {
  if (typeof raw !== "string") return undefined;
  let text = raw.trim();
  if (text === "" || /[\s/\\@?#%*]/.test(text)) return undefined;
  if (text.includes(":")) {
    // Only an IPv6 literal may contain colons (a port is not part of a host).
    if (!text.startsWith("[")) text = `[${text}]`;
    if (!text.endsWith("]")) return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(`https://${text}/`);
  } catch {
    return undefined;
  }
  if (
    parsed.username !== "" ||
    parsed.password !== "" ||
    parsed.port !== "" ||
    parsed.pathname !== "/" ||
    parsed.search !== "" ||
    parsed.hash !== ""
  ) {
    return undefined;
  }
  return finishHostname(parsed.hostname)?.host;
}

/** True for a canonical host that is an IPv4 or IPv6 literal. */
export function isIpHost(host: string): boolean {
  return IPV4.test(host) || IPV6.test(host);
}

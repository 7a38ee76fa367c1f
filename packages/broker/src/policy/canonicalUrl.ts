/**
 * Canonical form of URLs and host names for the read policy.
 *
 * Everything goes through the WHATWG URL parser (the same algorithm the browser
 * uses), so the policy judges exactly the host the browser would load:
 * lower case, IDNA/punycode, `\` treated as `/`, numeric IPv4 forms such as
 * "2130706433" or "0x7f.1" turned into dotted quads, IPv6 compressed and
 * bracketed. On top of that we strip userinfo and a single trailing dot, and
 * refuse host names with characters that cannot appear in a DNS name.
 *
 * Paths are judged as the server will see them. The WHATWG parser resolves dot segments (also "%2e") and
 * turns "\" into "/", but leaves other percent-encoding alone (Chrome sends "/%61ccount" as it stands), and
 * servers decode "%61" to "a". So the path is normalised as RFC 3986 section 6.2.2 says (percent-encoded
 * ALPHA, DIGIT, "-", ".", "_", "~" decoded, other escapes in upper case, dot segments removed after
 * decoding), and that form is both what the policy judges and what the tools send the browser. What stays ambiguous (an encoded "/"
 * or "\", double encoding, ";" parameters, overlong UTF-8, IIS "%u" escapes, "//", case) is spelled out as
 * the readings common servers make of it: a deny rule is tested against every reading, an allow rule must
 * allow every reading. A path holding an encoded NUL or other control character in any reading is refused.
 */

export type CanonicalUrl = {
  href: string;
  protocol: "http:" | "https:" | string;
  /** Canonical hostname without port; IPv6 in brackets ("[::1]"). */
  host: string;
  /** "" for the scheme's default port. */
  port: string;
  /** Normalised pathname + search (no fragment), e.g. "/guide/x?y=1": what the browser requests. */
  pathAndQuery: string;
  /** Other ways common servers read the path (same query), each different from pathAndQuery. */
  readings: readonly PathReading[];
  /**
   * Every form a deny rule's path pattern is tested against: pathAndQuery, the readings, and each of them
   * with the path in lower case (servers such as IIS and Express ignore case in paths).
   */
  denyForms: readonly string[];
  isIp: boolean;
};

/** How a server may read a path: the path + query it would serve, and who reads it so (for messages). */
export interface PathReading {
  pathAndQuery: string;
  /** e.g. "a server that decodes the path before resolving it (nginx, many frameworks)". */
  reader: string;
  /** What in the URL makes the reading differ, e.g. 'an encoded "/" (%2F)'. */
  because: string;
}

/** Why a URL could not be canonicalised; used by the read policy to name the rule. */
export type CanonicalUrlFailureKind = "invalid" | "scheme" | "ambiguous";

export type CanonicalUrlResult =
  | { ok: true; url: CanonicalUrl }
  /** An "ambiguous" URL still carries its canonical form, so the deny list can be tested against it. */
  | { ok: false; kind: CanonicalUrlFailureKind; reason: string; url?: CanonicalUrl };

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
  const path = removeDotSegments(normalizePercent(parsed.pathname));
  const query = normalizePercent(parsed.search);
  const readings = serverReadings(path, query);
  const href = `${parsed.protocol}//${parsed.host}${path}${query}${parsed.hash}`;
  const pathAndQuery = path + query;
  const denyForms = new Set<string>();
  for (const form of [pathAndQuery, ...readings.map((r) => r.pathAndQuery)]) {
    denyForms.add(form);
    const formPath = form.slice(0, form.length - query.length);
    denyForms.add(formPath.toLowerCase() + query);
  }
  const url: CanonicalUrl = {
    href,
    protocol: parsed.protocol,
    host: finished.host,
    port: parsed.port,
    pathAndQuery,
    readings,
    denyForms: [...denyForms],
    isIp: finished.isIp,
  };
  const control = [path, ...readings.map((r) => r.pathAndQuery.slice(0, r.pathAndQuery.length - query.length))].find((p) => CONTROL.test(p));
  if (control !== undefined) {
    return {
      ok: false,
      kind: "ambiguous",
      reason: `its path ${JSON.stringify(shortened(path))} holds ${/\u0000/.test(control) ? "an encoded NUL (%00)" : "an encoded control character"} once decoded, which servers treat in different ways (some cut the path there); tabrelay refuses it rather than guess`,
      url,
    };
  }
  return { ok: true, url };
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const UNRESERVED = /[A-Za-z0-9\-._~]/;

function shortened(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * RFC 3986 section 6.2.2.2: percent-encoded unreserved characters decoded, the other escapes' hex digits in
 * upper case. Anything else (a "%" not followed by two hex digits included) is left as it is.
 */
export function normalizePercent(text: string): string {
  return text.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/** RFC 3986 section 5.2.4 for an absolute path ("/a/b/../c" -> "/a/c"); "//" is kept. */
export function removeDotSegments(path: string): string {
  const input = path.split("/");
  const out: string[] = [];
  for (let i = 1; i < input.length; i++) {
    const segment = input[i] ?? "";
    const last = i === input.length - 1;
    if (segment === "." || segment === "..") {
      if (segment === "..") out.pop();
      if (last) out.push("");
      continue;
    }
    out.push(segment);
  }
  return `/${out.join("/")}`;
}

/**
 * Decodes every escape once, as a lenient server does: "%XX" bytes read as UTF-8 that also accepts overlong
 * forms ("%C0%AF" is "/"), invalid bytes as U+FFFD, IIS's "%uXXXX" as that code unit.
 */
function decodeOnce(text: string): string {
  if (!text.includes("%")) return text;
  const utf8 = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let last = 0;
  for (const match of text.matchAll(/%([0-9A-Fa-f]{2})|%[uU]([0-9A-Fa-f]{4})/g)) {
    chunks.push(utf8.encode(text.slice(last, match.index)));
    const byte = match[1];
    chunks.push(byte !== undefined ? Uint8Array.of(Number.parseInt(byte, 16)) : utf8.encode(String.fromCharCode(Number.parseInt(match[2] ?? "", 16))));
    last = match.index + match[0].length;
  }
  chunks.push(utf8.encode(text.slice(last)));
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  try {
    // Well-formed UTF-8 (which excludes overlong forms) decodes as it is.
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return lenientUtf8(bytes);
  }
}

function lenientUtf8(bytes: Uint8Array): string {
  let out = "";
  const cont = (k: number) => {
    const b = bytes[k];
    return b !== undefined && (b & 0xc0) === 0x80 ? b & 0x3f : undefined;
  };
  for (let i = 0; i < bytes.length;) {
    const b0 = bytes[i] ?? 0;
    const length = b0 < 0x80 ? 1 : b0 >= 0xc0 && b0 < 0xe0 ? 2 : b0 >= 0xe0 && b0 < 0xf0 ? 3 : b0 >= 0xf0 && b0 < 0xf8 ? 4 : 0;
    if (length === 1) {
      out += String.fromCharCode(b0);
      i += 1;
      continue;
    }
    let codePoint = length === 0 ? undefined : b0 & (0x7f >> length);
    for (let k = 1; k < length && codePoint !== undefined; k++) {
      const bits = cont(i + k);
      codePoint = bits === undefined ? undefined : (codePoint << 6) | bits;
    }
    if (codePoint === undefined || codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) {
      out += "\ufffd";
      i += 1;
      continue;
    }
    out += String.fromCodePoint(codePoint);
    i += length;
  }
  return out;
}

function withoutParameters(path: string): string {
  return path
    .split("/")
    .map((segment) => segment.split(";")[0] ?? "")
    .join("/");
}

function windowsTrimmed(path: string): string {
  return path
    .split("/")
    .map((segment) => {
      const trimmed = segment.replace(/[. ]+$/, "");
      // Windows keeps "." and ".." and reads ".. " or "..." as one of them.
      if (trimmed !== "") return trimmed;
      return segment.startsWith("..") ? ".." : segment.startsWith(".") ? "." : "";
    })
    .join("/");
}

const mergeSlashes = (path: string) => path.replace(/\/{2,}/g, "/");
const backslashes = (path: string) => path.replace(/\\/g, "/");

/** The features of a normalised path that make servers read it in different ways, for messages. */
function ambiguities(path: string): string[] {
  const found: string[] = [];
  if (/%2F/.test(path)) found.push('an encoded "/" (%2F)');
  if (/%5C/.test(path)) found.push('an encoded "\\" (%5C)');
  if (/%25[0-9A-Fa-f]{2}|%25[uU][0-9A-Fa-f]{4}/.test(path)) found.push("double encoding (%25 followed by an escape)");
  if (/%[uU][0-9A-Fa-f]{4}/.test(path)) found.push('an IIS "%u" escape');
  if (/%[C-F][0-9A-F]/.test(path) && decodeOnce(path).includes("\ufffd")) found.push("percent-encoded bytes that are not valid UTF-8");
  else if (/%C[01]|%E0%[89]|%F0%8/.test(path)) found.push("an overlong UTF-8 sequence");
  if (path.includes(";")) found.push('";" path parameters');
  if (path.includes("//")) found.push('an empty path segment ("//")');
  if (/[. ]\/|%20(?:\/|$)|\.$/.test(path)) found.push("a segment ending in a dot or space");
  if (/%E[EF]%B[C-F]|%EF%BD|%E2%80%A4|%EF%BC/.test(path)) found.push("Unicode compatibility characters");
  return found;
}

/**
 * How common servers read a normalised path, when not as it stands:
 * - Tomcat and Jetty drop ";" parameters from each segment before resolving ("/guide/..;/admin" is "/admin");
 * - nginx, Node servers and many frameworks decode the path and then resolve it ("/guide/..%2Fadmin" is
 *   "/admin"; "\" and "//" fold to "/");
 * - the most lenient (old IIS and its filesystem) decode until nothing is left to decode, fold Unicode
 *   compatibility characters (NFKC: "ａ" is "a", "／" is "/"), drop ";" parameters and trailing dots and spaces.
 */
function serverReadings(path: string, query: string): PathReading[] {
  const seen = new Set<string>([path]);
  const readings: PathReading[] = [];
  const because = ambiguities(path).join(", ") || "its encoding";
  const add = (readingPath: string, reader: string) => {
    if (seen.has(readingPath)) return;
    seen.add(readingPath);
    readings.push({ pathAndQuery: readingPath + query, reader, because });
  };
  add(removeDotSegments(withoutParameters(path)), 'a server that drops ";" parameters from path segments (Tomcat, Jetty)');
  add(
    removeDotSegments(mergeSlashes(backslashes(decodeOnce(path)))),
    "a server that decodes the path before resolving it (nginx, Node servers, many frameworks)",
  );
  let decoded = path;
  for (let round = 0; round < 4; round++) {
    const next = decodeOnce(decoded);
    if (next === decoded) break;
    decoded = next;
  }
  add(
    removeDotSegments(mergeSlashes(windowsTrimmed(withoutParameters(backslashes(decoded.normalize("NFKC")))))),
    'a lenient server (one that decodes twice, folds Unicode look-alikes, drops ";" parameters and trailing dots, as old IIS did)',
  );
  return readings;
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
  if (parsed.username !== "" || parsed.password !== "" || parsed.port !== "" || parsed.pathname !== "/" || parsed.search !== "" || parsed.hash !== "") {
    return undefined;
  }
  return finishHostname(parsed.hostname)?.host;
}

/** True for a canonical host that is an IPv4 or IPv6 literal. */
export function isIpHost(host: string): boolean {
  return IPV4.test(host) || IPV6.test(host);
}

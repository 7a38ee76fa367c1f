// Edits of config.yaml that `tabrelay policy allow-read` and `tabrelay policy grant` make: on the YAML document, so
// every comment and the rest of the file stay as the person wrote them; the result is validated like the file
// itself before anyone writes it (the caller does: parseConfigText + compileSettings).
import { isMap, isSeq, parseDocument, type Document } from "yaml";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";

export type GrantKind = "click" | "type" | "upload" | "keys";

export interface Edited {
  text: string;
  /** What changed, for a person: `added "docs.example": ["^/guide/"] under policy.read.allow`. */
  said: string;
}

/**
 * Adds a host (with a path, as a regex anchored at its start) under policy.read.allow. A path already readable
 * there changes nothing. `target` is `HOST[:PORT][/PATH]`.
 */
export function allowRead(text: string, target: string): Edited {
  const slash = target.indexOf("/");
  const host = (slash < 0 ? target : target.slice(0, slash)).trim().toLowerCase();
  if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:]+\](:\d{1,5})?$/.test(host)) {
    throw new Error(`${JSON.stringify(host)} is not a host name (HOST, HOST:PORT or *.HOST, then an optional /PATH)`);
  }
  refuseSuffixWildcard(host);
  // The path as the policy sees it: a URL's own (dot segments resolved, spaces and the like percent-encoded), so the
  // pattern matches what a browser requests, never a spelling no URL has.
  const path = slash < 0 ? "" : canonicalPath(target.slice(slash));
  const pattern = path === "" || path === "/" ? ".*" : `^${escapeRegex(path)}`;
  const doc = parseDocument(text);
  const at = ["policy", "read", "allow", host];
  const existing = doc.getIn(at, true);
  const paths = isSeq(existing) ? existing.items.map((item) => String((item as { value?: unknown }).value ?? item)) : [];
  if (paths.includes(pattern) || paths.includes(".*")) {
    return { text, said: `${JSON.stringify(host)} is readable at ${path || "every path"} already (policy.read.allow)` };
  }
  setIn(doc, at, [...paths, pattern]);
  return { text: doc.toString(), said: `added ${JSON.stringify(host)}: ${JSON.stringify([...paths, pattern])} under policy.read.allow` };
}

/**
 * Sets policy.write.KIND[HOST] to { label } ({ keys, label } for keys); an earlier grant for that host is replaced and
 * named. With `user`, the grant is that user's alone: users.USER.policy.write.KIND[HOST].
 */
export function grantWrite(text: string, kind: GrantKind, host: string, label: string, keys?: string, user?: string): Edited {
  const name = host.trim().toLowerCase();
  if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/.test(name)) throw new Error(`${JSON.stringify(host)} is not a host name (HOST, HOST:PORT or *.HOST)`);
  if (kind === "keys" && keys === undefined) throw new Error('a keys grant needs --keys REGEX, the key combos allowed (e.g. "^Enter$")');
  refuseSuffixWildcard(name);
  const doc = parseDocument(text);
  const at = [...(user === undefined ? [] : ["users", user]), "policy", "write", kind, name];
  const before: unknown = doc.getIn(at);
  const grant = kind === "keys" ? { keys, label } : { label };
  setIn(doc, at, grant);
  const was = before === undefined ? "" : ` (it replaced ${JSON.stringify(toJs(before))})`;
  const where = user === undefined ? "policy" : `users.${user}.policy`;
  return { text: doc.toString(), said: `set ${where}.write.${kind}[${JSON.stringify(name)}] to ${JSON.stringify(grant)}${was}` };
}

function setIn(doc: Document, path: string[], value: unknown): void {
  // A file of comments only (the template) has no map yet: make one, the comments stay above it.
  if (!isMap(doc.contents)) doc.contents = doc.createNode({});
  doc.setIn(path, doc.createNode(value));
}

function toJs(value: unknown): unknown {
  return value && typeof value === "object" && "toJSON" in value && typeof value.toJSON === "function" ? value.toJSON() : value;
}

/**
 * A wildcard over a bare top-level domain (`*.com`, `*.uk`) is every site under it: a one-word command must not
 * open that. (A person who means it can still write it in the file.)
 */
function refuseSuffixWildcard(host: string): void {
  if (/^\*\.[a-z0-9-]+(:\d+)?$/.test(host)) {
    throw new Error(
      `${JSON.stringify(host)} is every site under .${host.slice(2).replace(/:\d+$/, "")}; name the site (${JSON.stringify(`*.example${host.slice(1)}`)} for it and its subdomains)`,
    );
  }
}

/** The path as the read policy canonicalizes a URL's (policy/canonicalUrl.ts): the one reading of it. */
function canonicalPath(path: string): string {
  const url = canonicalizeUrl(`http://host.invalid${path.startsWith("/") ? "" : "/"}${path}`);
  if (!url.ok) throw new Error(`${JSON.stringify(path)} is not a URL path: ${url.reason}`);
  return url.url.pathAndQuery;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// Edits of config.yaml that `tabrelay policy allow-read` and `tabrelay policy grant` make, and the dashboard's policy
// section (dashboard/policyApi.ts): on the YAML document, so every comment and the rest of the file stay as the person
// wrote them; the result is validated like the file itself before anyone writes it (the caller does: editFile.ts).
import { isMap, isScalar, isSeq, parseDocument, type Document } from "yaml";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import { parseHostKey, type HostPattern } from "../policy/hostPattern.js";
import { exactOrigin } from "../policy/pageToolPolicy.js";
import { compileRegex } from "../policy/text.js";

export type GrantKind = "click" | "type" | "upload" | "keys";

export interface Edited {
  text: string;
  /** What changed, for a person: `added "docs.example": ["^/guide/"] under policy.read.allow`. */
  said: string;
  /** The key it changed, as the dashboard shows it: `policy.read.allow["docs.example"]`. */
  key?: string;
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
  const key = `policy.read.allow[${JSON.stringify(host)}]`;
  if (paths.includes(pattern) || paths.includes(".*")) {
    return { text, said: `${JSON.stringify(host)} is readable at ${path || "every path"} already (policy.read.allow)`, key };
  }
  setIn(doc, at, [...paths, pattern]);
  return { text: doc.toString(), said: `added ${JSON.stringify(host)}: ${JSON.stringify([...paths, pattern])} under policy.read.allow`, key };
}

/** Sets policy.write.KIND[HOST] to { label } ({ keys, label } for keys); an earlier grant for that host is replaced and named. */
export function grantWrite(text: string, kind: GrantKind, host: string, label: string, keys?: string): Edited {
  const name = host.trim().toLowerCase();
  if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/.test(name)) throw new Error(`${JSON.stringify(host)} is not a host name (HOST, HOST:PORT or *.HOST)`);
  if (kind === "keys" && keys === undefined) throw new Error('a keys grant needs --keys REGEX, the key combos allowed (e.g. "^Enter$")');
  refuseSuffixWildcard(name);
  const doc = parseDocument(text);
  const at = ["policy", "write", kind, name];
  const before: unknown = doc.getIn(at);
  const grant = kind === "keys" ? { keys, label } : { label };
  setIn(doc, at, grant);
  const was = before === undefined ? "" : ` (it replaced ${JSON.stringify(toJs(before))})`;
  return { text: doc.toString(), said: `set policy.write.${kind}[${JSON.stringify(name)}] to ${JSON.stringify(grant)}${was}` };
}

/** A label or a page tool's name as a grant takes it: a regex a person wrote, or a text to match exactly and only. */
export type Pattern = { regex: string } | { exact: string };

/**
 * The regex that matches `text` and nothing else once a grant spans it over the whole label: every character RE2 reads
 * as syntax is escaped, so a page's label such as `.*` or `Buy|Delete` grants exactly that label.
 */
export function exactPattern(text: string): string {
  return `^${escapeRegex(text)}$`;
}

/**
 * Lets agents act on the elements of HOST whose label matches `label` (the dashboard's grant). A host without a KIND
 * grant gets { label } ({ keys, label } for keys); a host with one keeps it and takes the label as one more
 * alternative, so nothing it allowed is lost (grantWrite, the command's, replaces). A keys grant pairs its keys with
 * its label: one with other keys is refused rather than merged, which would allow either keys on either label.
 */
export function addWriteGrant(text: string, kind: GrantKind, host: string, label: Pattern, keys?: string, user?: string): Edited {
  const name = hostKey(host);
  refuseSuffixWildcard(name);
  const wanted = patternText(label, "label");
  if (kind === "keys" && keys === "") throw new Error('a keys grant needs the key combos allowed, a regex (e.g. "^Enter$")');
  const doc = parseDocument(text);
  // With `user`, the grant is that user's alone (users.USER.policy.write), as a team user's answer to a question.
  const section = [...(user === undefined ? [] : ["users", user]), "policy", "write", kind];
  const key = keyIn(doc, section, (written) => sameHost(written, name)) ?? name;
  const where = `${section.join(".")}[${JSON.stringify(key)}]`;
  return addPattern(doc, text, [...section, key], where, "label", label, wanted, (before) => {
    if (before === undefined) {
      if (kind !== "keys") return { label: wanted };
      if (keys === undefined) throw new Error('a keys grant needs the key combos allowed, a regex (e.g. "^Enter$")');
      return { keys, label: wanted };
    }
    if (kind === "keys" && keys !== undefined && keys !== before["keys"]) {
      throw new Error(
        `${where} allows the keys ${JSON.stringify(before["keys"])} already, and a keys grant pairs its keys with its label: adding ${JSON.stringify(keys)} there would allow either keys on either label; remove the entry first, or edit it in config.yaml`,
      );
    }
    return undefined;
  });
}

/**
 * Lets agents call the page tools of ORIGIN whose name matches `tools` (policy.write.page_tools): an origin without a
 * grant gets { tools }; one with a grant keeps it and takes the pattern as one more alternative.
 */
export function allowPageTools(text: string, origin: string, tools: Pattern): Edited {
  const exact = exactOrigin(origin, "the origin");
  const wanted = patternText(tools, "tools");
  const doc = parseDocument(text);
  const key = keyIn(doc, ["policy", "write", "page_tools"], (written) => sameOrigin(written, exact)) ?? exact;
  const where = `policy.write.page_tools[${JSON.stringify(key)}]`;
  return addPattern(doc, text, ["policy", "write", "page_tools", key], where, "tools", tools, wanted, (before) =>
    before === undefined ? { tools: wanted } : undefined,
  );
}

/**
 * Adds { host, path } to policy.deny: refused to read and to write for every agent whatever the grants, the host and
 * its subdomains, at paths (with the query) matching `path`, a regex; every path when it is empty.
 */
export function denyEntry(text: string, host: string, path: string): Edited {
  const name = hostKey(host, true);
  const entry = { host: name, path: path.trim() === "" ? ".*" : path };
  const doc = parseDocument(text);
  const list = doc.getIn(["policy", "deny"], true);
  if (list !== undefined && !isSeq(list)) throw new Error("policy.deny is not a list in config.yaml; fix it there first");
  const entries = isSeq(list) ? list.items.map(toJs) : [];
  if (entries.some((e) => isRecord(e) && String(e["host"]).toLowerCase() === name && (e["path"] ?? ".*") === entry.path)) {
    return { text, said: `policy.deny has ${JSON.stringify(entry)} already`, key: "policy.deny" };
  }
  if (isSeq(list)) list.add(doc.createNode(entry));
  else setIn(doc, ["policy", "deny"], [entry]);
  return { text: doc.toString(), said: `added ${JSON.stringify(entry)} to policy.deny`, key: `policy.deny[${entries.length}]` };
}

/**
 * Adds HOST to policy.ask.write (a write no grant allows there is asked of the user rather than refused) or to
 * policy.ask.read (a read outside the allowlist there is asked). A host there already changes nothing.
 */
export function askAbout(text: string, host: string, list: "read" | "write" = "write"): Edited {
  const name = hostKey(host);
  refuseSuffixWildcard(name);
  const doc = parseDocument(text);
  const key = `policy.ask.${list}`;
  const seq = doc.getIn(["policy", "ask", list], true);
  if (seq !== undefined && !isSeq(seq)) throw new Error(`${key} is not a list in config.yaml; fix it there first`);
  const hosts = isSeq(seq) ? seq.items.map((item) => String(toJs(item))) : [];
  if (hosts.some((h) => sameHost(h, name))) return { text, said: `${JSON.stringify(name)} is on ${key} already`, key };
  if (isSeq(seq)) seq.add(doc.createNode(name));
  else setIn(doc, ["policy", "ask", list], [name]);
  const what = list === "write" ? "a write without a grant there is asked of you" : "a read of it outside the allowlist is asked of you";
  return { text: doc.toString(), said: `added ${JSON.stringify(name)} to ${key} (${what})`, key };
}

/** An entry of the policy section that the dashboard lists, and removes: a host's read paths, a deny entry, a grant, an ask. */
export type PolicyEntry =
  | { section: "read.allow"; host: string }
  | { section: "deny"; host: string; path: string }
  | { section: "write"; kind: string; host: string }
  | { section: "page_tools"; origin: string }
  | { section: "ask.write"; host: string }
  | { section: "ask.read"; host: string };

export interface ListedEntry {
  entry: PolicyEntry;
  /** Where it is: `policy.write.click["shop.example"]`, `policy.deny[0]`. */
  key: string;
  value: unknown;
}

const WRITE_SECTIONS: readonly string[] = ["click", "type", "keys", "upload", "eval"];

/** The entries of config.yaml's policy section as written (keys as spelled there, paths and labels as regexes), in file order. */
export function policyEntries(text: string): ListedEntry[] {
  const policy = toJs(parseDocument(text).get("policy"));
  if (!isRecord(policy)) return [];
  const listed: ListedEntry[] = [];
  const read = policy["read"];
  const allow = isRecord(read) ? read["allow"] : undefined;
  for (const [host, paths] of Object.entries(isRecord(allow) ? allow : {})) {
    listed.push({ entry: { section: "read.allow", host }, key: `policy.read.allow[${JSON.stringify(host)}]`, value: paths });
  }
  const deny = policy["deny"];
  for (const [i, e] of (Array.isArray(deny) ? deny : []).entries()) {
    if (isRecord(e) && typeof e["host"] === "string") {
      listed.push({ entry: { section: "deny", host: e["host"], path: typeof e["path"] === "string" ? e["path"] : "" }, key: `policy.deny[${i}]`, value: e });
    }
  }
  const ask = policy["ask"];
  for (const list of ["write", "read"] as const) {
    const asked = isRecord(ask) ? ask[list] : undefined;
    for (const [i, host] of (Array.isArray(asked) ? asked : []).entries()) {
      if (typeof host === "string") listed.push({ entry: { section: `ask.${list}`, host }, key: `policy.ask.${list}[${i}]`, value: host });
    }
  }
  const write = policy["write"];
  for (const [kind, hosts] of Object.entries(isRecord(write) ? write : {})) {
    if (!isRecord(hosts) || (kind !== "page_tools" && !WRITE_SECTIONS.includes(kind))) continue;
    for (const [host, grant] of Object.entries(hosts)) {
      listed.push({
        entry: kind === "page_tools" ? { section: "page_tools", origin: host } : { section: "write", kind, host },
        key: `policy.write.${kind}[${JSON.stringify(host)}]`,
        value: grant,
      });
    }
  }
  return listed;
}

/** Removes one entry policyEntries listed; one that is not in the file (any more) is refused, naming it. */
export function removeEntry(text: string, entry: PolicyEntry): Edited {
  const doc = parseDocument(text);
  const gone = (what: string) => new Error(`${what} is not in config.yaml (any more); reload the dashboard to see the policy as it is now`);
  if (entry.section === "deny") {
    const list = doc.getIn(["policy", "deny"], true);
    const items = isSeq(list) ? list.items.map(toJs) : [];
    const index = items.findIndex((e) => isRecord(e) && e["host"] === entry.host && (typeof e["path"] === "string" ? e["path"] : "") === entry.path);
    if (index < 0 || !isSeq(list)) throw gone(`the deny entry ${JSON.stringify(entry.host)} ${JSON.stringify(entry.path)}`);
    list.delete(index);
    return { text: doc.toString(), said: `removed ${JSON.stringify(items[index])} from policy.deny`, key: `policy.deny[${index}]` };
  }
  if (entry.section === "ask.write" || entry.section === "ask.read") {
    const list = entry.section === "ask.write" ? "write" : "read";
    const seq = doc.getIn(["policy", "ask", list], true);
    const items = isSeq(seq) ? seq.items.map((item) => toJs(item)) : [];
    const index = items.findIndex((h) => h === entry.host);
    if (index < 0 || !isSeq(seq)) throw gone(`${JSON.stringify(entry.host)} on policy.ask.${list}`);
    seq.delete(index);
    return {
      text: doc.toString(),
      said: `removed ${JSON.stringify(entry.host)} from policy.ask.${list} (refused there again, not asked)`,
      key: `policy.ask.${list}[${index}]`,
    };
  }
  if (entry.section === "write" && !WRITE_SECTIONS.includes(entry.kind)) throw new Error(`${JSON.stringify(entry.kind)} is not a kind of write grant`);
  const path =
    entry.section === "read.allow"
      ? ["policy", "read", "allow", entry.host]
      : entry.section === "write"
        ? ["policy", "write", entry.kind, entry.host]
        : ["policy", "write", "page_tools", entry.origin];
  const key = `${path.slice(0, -1).join(".")}[${JSON.stringify(path[path.length - 1])}]`;
  if (!doc.hasIn(path)) throw gone(key);
  const was = toJs(doc.getIn(path));
  doc.deleteIn(path);
  return { text: doc.toString(), said: `removed ${key} (it was ${JSON.stringify(was)})`, key };
}

/**
 * One more pattern at `at`.`field` (a grant's label, a page-tool grant's tools): `fresh` says the new entry when there
 * is none (and may refuse an existing one); an existing pattern that covers it already is left as it is.
 */
function addPattern(
  doc: Document,
  text: string,
  at: string[],
  where: string,
  field: "label" | "tools",
  pattern: Pattern,
  wanted: string,
  fresh: (before: Record<string, unknown> | undefined) => Record<string, unknown> | undefined,
): Edited {
  const before = toJs(doc.getIn(at));
  if (before !== undefined && !isRecord(before)) throw new Error(`${where} is not a map in config.yaml; fix it there first`);
  const created = fresh(before);
  if (before === undefined && created !== undefined) {
    setIn(doc, at, created);
    return { text: doc.toString(), said: `added ${where}: ${JSON.stringify(created)}`, key: where };
  }
  const old = before?.[field];
  if (typeof old !== "string") throw new Error(`${where} has no ${field} in config.yaml; fix it there first`);
  const said = "exact" in pattern ? JSON.stringify(pattern.exact) : `the pattern ${JSON.stringify(wanted)}`;
  if (covers(old, pattern)) return { text, said: `${where}.${field} ${JSON.stringify(old)} matches ${said} already`, key: `${where}.${field}` };
  const joined = `${grouped(old)}|${grouped(wanted)}`;
  // The scalar itself changes, so it keeps its quotes and its comment.
  const scalar = doc.getIn([...at, field], true);
  if (isScalar(scalar)) scalar.value = joined;
  else setIn(doc, [...at, field], joined);
  return {
    text: doc.toString(),
    said: `set ${where}.${field} to ${JSON.stringify(joined)}: it was ${JSON.stringify(old)}, and now takes ${said} too`,
    key: `${where}.${field}`,
  };
}

function patternText(pattern: Pattern, what: string): string {
  if ("exact" in pattern) {
    // An empty label is every unlabeled element of the host: no narrow grant.
    if (pattern.exact.trim() === "") throw new Error(`an exact ${what} cannot be empty`);
    return exactPattern(pattern.exact);
  }
  if (pattern.regex === "") throw new Error(`the ${what} regex is empty; write ".*" if every ${what} is meant`);
  return pattern.regex;
}

/** Whether `old` (a grant's whole-label regex) allows the pattern already: an exact text it matches, or the same regex. */
function covers(old: string, pattern: Pattern): boolean {
  if ("regex" in pattern) return old === pattern.regex;
  try {
    return compileRegex(old, "", "", { full: true }).test(pattern.exact);
  } catch {
    return false;
  }
}

/**
 * A regex as one alternative of `a|b`. Whole on its own, only a bare flag group ("(?i)") could reach past it into
 * the next alternative (RE2 applies it to the rest of the group): such a regex is put in a group of its own.
 */
function grouped(regex: string): string {
  return /\(\?[a-zA-Z-]+\)/.test(regex) ? `(?:${regex})` : regex;
}

/** A host key as the dashboard's forms take it (HOST, HOST:PORT, *.HOST, an IP, [IPv6]:PORT), lower-cased and parsed as the policy will. */
function hostKey(host: string, deny = false): string {
  const name = host.trim().toLowerCase();
  if (!/^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/.test(name)) {
    throw new Error(`${JSON.stringify(host)} is not a host name (HOST, HOST:PORT or *.HOST)`);
  }
  parseHostKey(name, JSON.stringify(name), deny);
  return name;
}

function sameHost(written: string, name: string): boolean {
  const a = hostPattern(written);
  const b = hostPattern(name);
  return a !== undefined && b !== undefined && a.host === b.host && a.port === b.port && a.subdomains === b.subdomains;
}

function hostPattern(key: string): HostPattern | undefined {
  try {
    return parseHostKey(key, "", false);
  } catch {
    return undefined;
  }
}

function sameOrigin(written: string, origin: string): boolean {
  try {
    return exactOrigin(written, "") === origin;
  } catch {
    return false;
  }
}

/** The key of the map at `path` that `same` picks (a host spelled another way in the file), if any. */
function keyIn(doc: Document, path: string[], same: (written: string) => boolean): string | undefined {
  const map = doc.getIn(path, true);
  if (!isMap(map)) return undefined;
  for (const pair of map.items) {
    const key: unknown = isScalar(pair.key) ? pair.key.value : pair.key;
    if (typeof key === "string" && same(key)) return key;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
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

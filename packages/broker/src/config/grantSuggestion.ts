// What the dashboard's activity list offers under a refused call (issue 27 §1): the grant that would have allowed it,
// as narrow as the call (the host of the refused URL, never a wildcard; the element's exact label; the one page tool),
// or why there is none. A pure function of the call's audit record; the fields it returns are a policy edit the
// dashboard previews and saves through the same edits as `tabrelay policy` (dashboard/policyApi.ts, edit.ts).
// What a page chose (a label, a tool's name) goes into the edit as an exact text, which edit.ts escapes: a label such
// as ".*" or "Buy|Delete" is granted as that label and no other, and a name the record holds cut short is offered nothing.
import { normalizeLabel } from "../policy/decoy.js";
import { parseHostKey } from "../policy/hostPattern.js";

/** The audit record's fields a suggestion reads (audit/auditLog.ts AuditRecord). */
export interface RefusedCall {
  tool: string;
  decision: string;
  origin?: string | undefined;
  target?: string | undefined;
  code?: string | undefined;
  rule?: string | undefined;
}

/** The policy in force now, as the suggestion asks it (the dashboard answers through the gate, for the call's user). */
export interface PolicyNow {
  /** Whether the read policy allows the URL. */
  readable(url: string): boolean;
  /**
   * The rule by which the write policy refuses a click, fill or upload (by its grant's kind) on a plain element labelled
   * `label` in the page at `url` itself (not in a frame); undefined when it allows it.
   */
  refusal(kind: "click" | "type" | "upload", url: string, label: string): string | undefined;
}

/** A grant to offer (its words, and the edit's form fields for POST /dashboard/api/policy), or why there is none. */
export type GrantSuggestion = { offer: string; key: string; fields: Record<string, string> } | { none: string };

type LabelKind = "click" | "type" | "upload" | "keys";

/** The grant each write tool needs when no grant exists at all; press_key's depends on the key, which the record does not hold. */
const TOOL_KIND: Readonly<Record<string, LabelKind>> = {
  click: "click",
  set_checked: "click",
  select_option: "click",
  drag: "click",
  fill: "type",
  upload: "upload",
};

const WORDS: Readonly<Record<LabelKind, string>> = {
  click: "Allow clicking",
  type: "Allow typing into",
  upload: "Allow uploading files to",
  keys: "Allow the keys its grant names on",
};

/** Read refusals a grant for the host answers: it is not readable at all (or, a top site, not over http or another port). */
const READ_GRANTABLE: ReadonlySet<string> = new Set([
  "default: not in allowlist",
  "default: IP literal not in allowlist",
  "top_sites: default port only",
  "default: https only",
]);

/** A page tool's name as pages/offer.ts accepts it. */
const PAGE_TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Records that are not an agent's call (a page's own navigation or download that the network rules stopped) get none. */
const NOT_CALLS: ReadonlySet<string> = new Set(["navigation", "download", "config", "policy"]);

/**
 * The grant that would have allowed a refused call, or why there is none; undefined for a record that is not a refused
 * call. `now` is the policy in force: what it allows now was not what refused the call (a redirect went elsewhere,
 * the element was in a frame of another host, or the grant came since), and gets no offer.
 */
export function suggestGrant(call: RefusedCall, now: PolicyNow): GrantSuggestion | undefined {
  if (call.decision !== "refused" || NOT_CALLS.has(call.tool)) return undefined;
  const rule = call.rule ?? "";
  if (rule.startsWith("deny[")) {
    return {
      none: `A deny entry refused it (${rule}): policy.deny wins over every grant, so no grant would allow it. Remove the entry if it should not hold.`,
    };
  }
  if (call.code === "policy_denied") return readGrant(call, rule, now);
  if (call.code !== "write_denied") return undefined;
  if (rule.startsWith("policy.write.page_tools[")) return pageToolGrant(call, rule);
  return writeGrant(call, rule, now);
}

function readGrant(call: RefusedCall, rule: string, now: PolicyNow): GrantSuggestion {
  const host = hostOfOrigin(call.origin);
  if (/^read\.allow\[.*\]: path not allowed$/.test(rule)) {
    return {
      none: `${host ?? "The host"} is readable at some paths only (${rule.replace(/: path not allowed$/, "")}), and the record does not hold the path refused: add a path to that entry if it should be readable.`,
    };
  }
  if (!READ_GRANTABLE.has(rule)) return { none: `No narrow grant answers this refusal (${rule || "no rule recorded"}).` };
  if (host === undefined || call.origin === undefined) return { none: "The record holds no http(s) address to allow." };
  // The record holds the address the call asked for: one readable now was not what was refused (a redirect or a
  // frame went elsewhere; the call's message says where).
  if (now.readable(`${call.origin}/`))
    return { none: `${host} is readable now: what was refused was another address (a redirect, or a page of a path not allowed).` };
  return { offer: `Allow reading ${host}`, key: `policy.read.allow[${JSON.stringify(host)}]`, fields: { action: "allow-read", target: host } };
}

function writeGrant(call: RefusedCall, rule: string, now: PolicyNow): GrantSuggestion {
  if (/^(element|activation|submit|option): /.test(rule)) {
    return { none: `The element's state refused it (${rule}), whatever the grants: no grant would allow it.` };
  }
  const missing = /^default: no write\.(click|type|keys|upload|eval) grant$/.exec(rule)?.[1];
  const unmatched = /^write\.(click|type|keys|upload)\[("(?:[^"\\]|\\.)*")\]\.label$/.exec(rule);
  let kind: string | undefined;
  if (missing !== undefined) kind = missing;
  else if (unmatched !== null) kind = unmatched[1];
  else if (rule === "default: no write grants") kind = TOOL_KIND[call.tool];
  // A key press is judged as typing in the field (its label is the record's), or as the keys grant's label; an Enter
  // that submits is also a click on the form's button, whose label the record does not hold.
  const pressed = missing === "type" || unmatched?.[1] === "type" || unmatched?.[1] === "keys";
  if (call.tool === "press_key" && !pressed) {
    return { none: "Which grant a key needs depends on the key (and an Enter that submits on the form's button), which the record does not hold." };
  }
  if (kind === "eval") return { none: "An eval grant lets programs run any code in the host's pages: add it in config.yaml if that is meant." };
  if (kind !== "click" && kind !== "type" && kind !== "upload" && kind !== "keys") {
    return { none: `No narrow grant answers this refusal (${rule || "no rule recorded"}).` };
  }
  let host = hostOfOrigin(call.origin);
  if (host === undefined) return { none: "The record holds no http(s) address to grant on." };
  if (unmatched !== null) {
    // The grant that judged the label is for this very host: the label joins it, under its key as the file spells it
    // (a new key for the host and this port would stand before it and leave its other labels out). One for more
    // hosts (a wildcard) or for a frame's host is the person's to widen.
    const key: unknown = JSON.parse(unmatched[2] ?? '""');
    if (typeof key !== "string" || !sameHost(key, host)) {
      return { none: `The grant that judged the label is ${rule.replace(/\.label$/, "")}, not one for ${host} alone: add the label to it if that is meant.` };
    }
    host = key.toLowerCase();
  } else if (kind === "keys") {
    return { none: "A keys grant names the keys allowed, and the record does not hold the key pressed." };
  }
  const label = labelOf(call.target);
  if (label === undefined) return { none: "The record does not hold the element's whole name, so there is no exact label to grant." };
  if (label === "") return { none: "The element has no name: a grant for it would be one for every unnamed element of the host." };
  if (kind !== "keys") {
    // Asked of the page itself: a grant here must be what was missing, not one for a frame of another host.
    const refusal = now.refusal(kind, `${call.origin ?? ""}/`, label);
    if (refusal === undefined)
      return { none: `«${label}» on ${host} is allowed now: what was refused was in a frame of another host, or the grant came since.` };
    const lacking = refusal === "default: no write grants" || refusal === `default: no write.${kind} grant`;
    if (unmatched === null && !lacking) {
      // The call lacked a grant the page's host has: the element was in a frame of another host (which the record does
      // not hold), or the grant came since. A call made again says which, and is offered what it lacks.
      return { none: `${host} has a write.${kind} grant now (${refusal}): what lacked one was a frame of another host, or it came since; call again to see.` };
    }
  }
  const where = `policy.write.${kind}[${JSON.stringify(host)}]`;
  return { offer: `${WORDS[kind]} «${label}» on ${host}`, key: `${where}.label`, fields: { action: "grant", kind, host, exact: label } };
}

function pageToolGrant(call: RefusedCall, rule: string): GrantSuggestion {
  const origin = call.origin ?? "";
  const name = call.target?.startsWith("page tool ") ? call.target.slice("page tool ".length) : "";
  if (rule !== `policy.write.page_tools[${JSON.stringify(origin)}]` || !PAGE_TOOL_NAME.test(name)) {
    return { none: "The record does not name the page tool and its origin exactly, so there is no narrow grant to offer." };
  }
  return {
    offer: `Allow this page's tool «${name}» of ${origin}`,
    key: `${rule}.tools`,
    fields: { action: "page-tool", origin, exact: name },
  };
}

/**
 * The element's name from the record's target (tools/act.ts: the role, a space, the name as JSON), as the write policy
 * compares it (normalised); undefined when it is not there whole (the record caps its fields: a cut name is no name).
 * A `"` inside the name is escaped in its JSON, so the last ` "` of the target is where the name begins.
 */
function labelOf(target: string | undefined): string | undefined {
  if (target === undefined) return undefined;
  const start = target.lastIndexOf(' "');
  if (start < 0) return undefined;
  const json = target.slice(start + 1);
  let name: unknown;
  try {
    name = JSON.parse(json);
  } catch {
    return undefined;
  }
  return typeof name === "string" && JSON.stringify(name) === json ? normalizeLabel(name) : undefined;
}

/** The host key of an http(s) origin as the policies write it: the host, with its port when it is not the default. */
function hostOfOrigin(origin: string | undefined): string | undefined {
  if (origin === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return undefined;
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "" || url.origin !== origin) return undefined;
  return url.port === "" ? url.hostname : `${url.hostname}:${url.port}`;
}

/** Whether a grant's host key names exactly this host (any port, or this one), not its subdomains. */
function sameHost(key: string, host: string): boolean {
  try {
    const grant = parseHostKey(key, "", false);
    const mine = parseHostKey(host, "", false);
    return !grant.subdomains && grant.host === mine.host && (grant.port === undefined || grant.port === mine.port);
  } catch {
    return false;
  }
}

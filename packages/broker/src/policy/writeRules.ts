// The write policy's rules as config states them: the grants (policy.write.click / type / keys / upload / eval) and deny list,
// compiled and validated once, and the lookup of the grant that covers a URL (see writePolicy.ts).
import type { ActionKind } from "@tabrelay/protocol";
import { canonicalizeUrlDetailed, type CanonicalUrl } from "./canonicalUrl.js";
import { describeHost, hostMatches, parseHostKey, type HostPattern } from "./hostPattern.js";
import { compileRegex, shown, type ConfigPattern } from "./text.js";

type LabelGrant = { label: string };
type KeysGrant = { keys: string; label: string };

export interface WritePolicyInput {
  deny: { host: string; path: string }[];
  /** How refusals name where the config lives ("config.yaml"; on a stateless host "the TABRELAY_CONFIG binding"). */
  configName?: string;
  write: {
    click?: Record<string, LabelGrant>;
    type?: Record<string, LabelGrant>;
    keys?: Record<string, KeysGrant>;
    upload?: Record<string, LabelGrant>;
    /** No settings: the host may run code (code mode's browse.eval) in its pages. */
    eval?: Record<string, Record<string, never>>;
  };
}

/**
 * A write verdict. A refusal that only the absence of a grant caused, and that the narrowest grant (the page's exact
 * host, the element's literal label) would lift with every other check passing, carries that grant as `ask`: the
 * user may be asked for this one write (policy.ask.write). A refusal for any other reason (a deny entry, a scheme,
 * facts the page could not give, a disabled or decoy element, something else the action would reach, an element in
 * another site's frame) has none.
 */
export type WriteDecision =
  | { ok: true; rule: string }
  | {
      ok: false;
      code: "write_denied";
      rule: string;
      message: string;
      /** Inside the policy: the grant kind whose absence refused it (CompiledWritePolicy.check turns it into `ask`). */
      askable?: GrantKind;
      /** The narrow grant that would allow exactly this write (the user may be asked for it: policy.ask). */
      ask?: AskGrant;
    };

/** policy.write.KIND[host] = { label }: the exact host, and the element's own label (and name) as literals. */
export interface AskGrant {
  kind: "click" | "type" | "upload";
  host: string;
  label: string;
}

export type GrantKind = "click" | "type" | "keys" | "upload" | "eval";
export type WriteAction = Exclude<ActionKind, "hover" | "scroll" | "highlight">;

export const GRANT_KINDS: readonly GrantKind[] = ["click", "type", "keys", "upload", "eval"];

export const KIND_ACTIONS: Readonly<Record<GrantKind, string>> = {
  click: "click, check and select, and the form submission an Enter causes",
  type: "fill, Tab and text-entry keys in a field",
  keys: "key chords, Escape, Enter that submits no form, and keys on elements that are not text fields",
  upload: "setting the files of a file input (code mode's browse.upload)",
  eval: "running an expression in the page (code mode's browse.eval)",
};

export const CONFIG_FILE = "config.yaml";

interface DenyRule {
  rawPath: string;
  pattern: HostPattern;
  path: ConfigPattern;
  rule: string;
}

export interface Grant {
  kind: GrantKind;
  /** The key as written in config, for messages. */
  key: string;
  pattern: HostPattern;
  /** The regex as written in config. */
  labelSource: string;
  /** The same regex, required to span the whole text. */
  label: ConfigPattern;
  /** keys grants: the key combo regex as written, and anchored. */
  keysSource?: string;
  keys?: ConfigPattern;
  /** policy.write.click["shop.example"] */
  where: string;
  /** Where the config lives, as refusals name it (WritePolicyInput.configName). */
  configName: string;
  /** write.click["shop.example"] */
  rule: string;
}

export interface WriteRules {
  /** Where the config lives, as refusals name it. */
  configName: string;
  denyRules: readonly DenyRule[];
  grants: Readonly<Record<GrantKind, readonly Grant[]>>;
  anyGrant: boolean;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Orders grants covering the same URL: exact host > wildcard, longer host > shorter, port > any port. */
function specificity(grant: Grant, url: CanonicalUrl): number {
  const exact = url.host === grant.pattern.host ? 1 : 0;
  const port = grant.pattern.port === undefined ? 0 : 1;
  return exact * 1_000_000 + grant.pattern.host.length * 2 + port;
}

export function hostOf(url: CanonicalUrl): string {
  return url.port === "" ? url.host : `${url.host}:${url.port}`;
}

function patternKey(pattern: HostPattern): string {
  return `${pattern.subdomains ? "*." : ""}${pattern.host}:${pattern.port ?? "*"}`;
}

export function refuse(subject: string, cause: string, rule: string, next: string): WriteDecision {
  return {
    ok: false,
    code: "write_denied",
    rule,
    message: `write_denied: ${subject} is not allowed: ${cause} (rule: ${rule}). ${next}`,
  };
}

/** A refusal a grant of `kind` would lift (see WriteDecision). */
export function askable(decision: WriteDecision, kind: GrantKind): WriteDecision {
  return decision.ok ? decision : { ...decision, askable: kind };
}

/**
 * Compiles and validates the policy section of the config: deny rules and grants, frozen. Throws an Error naming
 * the config key on a bad host key, bad regex or bad value.
 */
export function compileWriteRules(input: WritePolicyInput): WriteRules {
  if (!isRecord(input)) throw new Error("policy: expected an object with deny and write");
  const configName = input.configName ?? CONFIG_FILE;
  if (!Array.isArray(input.deny)) throw new Error("policy.deny: expected a list of { host, path } entries");
  // YAML turns "write:" with nothing under it into null: that is the default, no grants.
  const write: unknown = input.write ?? {};
  if (!isRecord(write)) {
    throw new Error(
      'policy.write: expected a map with "click", "type", "keys", "upload" and/or "eval", e.g. click: { "shop.example": { label: "^Add to cart$" } }',
    );
  }
  for (const key of Object.keys(write)) {
    if (!GRANT_KINDS.some((kind) => kind === key)) {
      throw new Error(
        `policy.write.${key}: unknown write kind (expected "click" for click/check/select/drag, "type" for fill and text-entry keys, "keys" for other keys, "upload" for file inputs, or "eval" for running expressions in pages)`,
      );
    }
  }

  const denyRules: DenyRule[] = input.deny.map((entry: unknown, index) => {
    const where = `policy.deny[${index}]`;
    if (!isRecord(entry)) throw new Error(`${where}: expected { host, path }`);
    const pattern = parseHostKey(entry.host, `${where}.host`, true);
    const path = compileRegex(entry.path, `${where}.path`, "a path pattern");
    const rawPath = String(entry.path);
    return Object.freeze({ rawPath, pattern: Object.freeze(pattern), path, rule: `deny[${index}] ${String(entry.host)} ${rawPath}` });
  });

  const grants: Record<GrantKind, readonly Grant[]> = { click: [], type: [], keys: [], upload: [], eval: [] };
  for (const kind of GRANT_KINDS) {
    const section = write[kind] ?? {};
    const shape =
      kind === "keys"
        ? '{ keys: regex, label: regex }, e.g. "mail.example": { keys: "^Control\\+Enter$", label: "^Message body$" }'
        : kind === "eval"
          ? '{} (no settings), e.g. "app.example": {}'
          : '{ label: regex }, e.g. "shop.example": { label: "^Add to cart$" }';
    if (!isRecord(section)) {
      throw new Error(`policy.write.${kind}: expected a map of host -> ${shape}`);
    }
    const settings = kind === "keys" ? ["keys", "label"] : kind === "eval" ? [] : ["label"];
    const seen = new Map<string, string>();
    const list: Grant[] = [];
    for (const [key, value] of Object.entries(section)) {
      const where = `policy.write.${kind}[${JSON.stringify(key)}]`;
      const pattern = parseHostKey(key, where, false);
      const same = seen.get(patternKey(pattern));
      if (same !== undefined) {
        throw new Error(`${where}: names the same host as ${JSON.stringify(same)}; merge the two entries`);
      }
      seen.set(patternKey(pattern), key);
      if (!isRecord(value))
        throw new Error(
          `${where}: expected ${kind === "keys" ? "{ keys: regex, label: regex }" : kind === "eval" ? "{} (an eval grant has no settings)" : '{ label: regex } (use { label: ".*" } for any label)'}`,
        );
      for (const field of Object.keys(value)) {
        if (settings.length === 0) throw new Error(`${where}.${field}: unknown setting (an eval grant has none: write ${JSON.stringify(key)}: {})`);
        if (!settings.includes(field))
          throw new Error(
            `${where}.${field}: unknown setting (only ${settings.map((f) => `"${f}"`).join(" and ")} ${settings.length > 1 ? "are" : "is"} supported)`,
          );
      }
      let keysSource: string | undefined;
      let keys: ConfigPattern | undefined;
      if (kind === "keys") {
        if (value.keys === undefined) {
          throw new Error(
            `${where}.keys: missing: the regex of the key combos this grant allows, as tabrelay names them (e.g. "^Enter$", "^(Control|Meta)\\+Enter$")`,
          );
        }
        keys = compileRegex(value.keys, `${where}.keys`, "the keys setting", { full: true });
        keysSource = String(value.keys);
      }
      // An eval grant judges no element: its label is never read.
      const labelSource = kind === "eval" ? ".*" : value.label;
      const label = compileRegex(labelSource, `${where}.label`, "the label", { full: true });
      list.push(
        Object.freeze({
          kind,
          key,
          pattern: Object.freeze(pattern),
          labelSource: String(labelSource),
          label,
          ...(keys !== undefined && keysSource !== undefined ? { keys, keysSource } : {}),
          where: `policy.write.${kind}[${JSON.stringify(key)}]`,
          configName,
          rule: `write.${kind}[${JSON.stringify(key)}]`,
        }),
      );
    }
    grants[kind] = Object.freeze(list);
  }
  Object.freeze(grants);
  Object.freeze(denyRules);
  const anyGrant = GRANT_KINDS.some((kind) => grants[kind].length > 0);
  return Object.freeze({ configName, denyRules, grants, anyGrant });
}

/** The grant of `kind` that decides for `url`: the most specific host key that covers it. */
export function bestGrant(rules: WriteRules, kind: GrantKind, url: CanonicalUrl): Grant | undefined {
  let best: Grant | undefined;
  for (const grant of rules.grants[kind]) {
    if (!hostMatches(grant.pattern, url)) continue;
    if (best === undefined || specificity(grant, url) > specificity(best, url)) best = grant;
  }
  return best;
}

export function exampleKey(url: CanonicalUrl | undefined): string {
  return url === undefined ? "the site's host" : JSON.stringify(hostOf(url));
}

/** Checks one URL (the tab's or the frame's): scheme, deny list, grant. */
function grantForUrl(
  rules: WriteRules,
  kind: GrantKind,
  raw: string,
  role: "page" | "frame",
  subject: string,
  why?: string,
): { ok: true; grant: Grant } | { ok: false; decision: WriteDecision } {
  const whose = role === "page" ? "the page URL" : "the URL of the frame the element is in";
  const parsed = canonicalizeUrlDetailed(raw);
  if (!parsed.ok) {
    if (parsed.kind === "scheme") {
      return {
        ok: false,
        decision: refuse(
          subject,
          `${whose} ${shown(String(raw))} is not http(s): ${parsed.reason}`,
          "default: http and https only",
          "Writes are only possible on http:// and https:// pages; no configuration allows other schemes.",
        ),
      };
    }
    return {
      ok: false,
      decision: refuse(
        subject,
        `${whose} ${shown(String(raw))} cannot be judged: ${parsed.reason}`,
        "default: invalid URL",
        "Take a new snapshot once the page has finished loading, then try again.",
      ),
    };
  }
  const url = parsed.url;
  for (const rule of rules.denyRules) {
    if (hostMatches(rule.pattern, url) && url.denyForms.some((form) => rule.path.test(form))) {
      return {
        ok: false,
        decision: refuse(
          subject,
          `${whose} ${url.href} is on the user's deny list (${describeHost(rule.pattern, "and its subdomains")}, paths matching /${rule.rawPath}/), which wins over any write grant`,
          rule.rule,
          `Do not retry or look for another route to it; only the user can change policy.deny in ${rules.configName}.`,
        ),
      };
    }
  }
  const grant = bestGrant(rules, kind, url);
  if (grant !== undefined) return { ok: true, grant };

  const host = hostOf(url);
  const others = GRANT_KINDS.filter((k) => k !== kind)
    .map((k) => bestGrant(rules, k, url))
    .filter((g): g is Grant => g !== undefined);
  const reason = why === undefined ? "" : `${why}; `;
  const cause =
    others.length > 0
      ? `${reason}${host} (${whose}) has ${others.map((g) => `a write.${g.kind} grant (${g.rule}, for ${KIND_ACTIONS[g.kind]})`).join(" and ")} but no write.${kind} grant (needed for ${KIND_ACTIONS[kind]})`
      : `${reason}${host} (${whose}) has no policy.write.${kind} grant${role === "frame" ? " (elements inside frames need a grant for the frame's host as well as the page's)" : ""}`;
  return {
    ok: false,
    decision: askable(
      refuse(
        subject,
        cause,
        `default: no write.${kind} grant`,
        `Ask the user to add ${exampleKey(url)} under policy.write.${kind} in ${rules.configName} if this action is intended.`,
      ),
      kind,
    ),
  };
}

/** The page's grant and the frame's grant of one kind, or the refusal. */
export function grantsFor(
  rules: WriteRules,
  kind: GrantKind,
  tabUrl: string,
  frameUrl: string,
  subject: string,
  why?: string,
): { page: Grant; frame: Grant } | WriteDecision {
  const page = grantForUrl(rules, kind, tabUrl, "page", subject, why);
  if (!page.ok) return page.decision;
  const frame = grantForUrl(rules, kind, frameUrl, "frame", subject, why);
  if (!frame.ok) return frame.decision;
  return { page: page.grant, frame: frame.grant };
}

export function ruleOf(pair: { page: Grant; frame: Grant }): string {
  return pair.page === pair.frame ? pair.frame.rule : `${pair.page.rule} + ${pair.frame.rule}`;
}

export function isPair(value: { page: Grant; frame: Grant } | WriteDecision): value is { page: Grant; frame: Grant } {
  return "page" in value && "frame" in value;
}

/** Human-readable lines for docs and the dashboard. */
export function describeWriteRules(rules: WriteRules): readonly string[] {
  const { denyRules, grants, anyGrant } = rules;
  const lines: string[] = [];
  lines.push(
    "Writes are refused unless granted: click, check and select need a write.click grant; fill, Tab and text-entry keys in a field a write.type grant; an Enter that submits a form also the write.click grant for the form's default button; other keys (chords, Escape, Enter outside a form, keys on non-text elements) a write.keys grant. Code mode's drag needs the write.click grant for the element grabbed, its upload a write.upload grant for the file input, its eval a write.eval grant for the host. Hover, scroll and highlight need no grant.",
  );
  lines.push("Only http:// and https:// pages can be written to; elements inside frames need a grant for the frame's host too.");
  for (const rule of denyRules) {
    lines.push(`${rule.rule}: never written to: ${describeHost(rule.pattern, "and its subdomains")}, paths matching /${rule.rawPath}/`);
  }
  if (!anyGrant) {
    lines.push("No write grants: every state-changing action is refused (tabrelay is read-only by default).");
  }
  for (const kind of GRANT_KINDS) {
    for (const grant of grants[kind]) {
      lines.push(
        kind === "eval"
          ? `${grant.rule}: programs may run expressions in pages of ${describeHost(grant.pattern, "and its subdomains")} (browse.eval)`
          : kind === "keys"
            ? `${grant.rule}: key combos fully matching /${grant.keysSource ?? ""}/ allowed on ${describeHost(grant.pattern, "and its subdomains")} on elements whose visible text and accessible name fully match /${grant.labelSource}/`
            : `${grant.rule}: ${KIND_ACTIONS[kind]} are allowed on ${describeHost(grant.pattern, "and its subdomains")} for controls whose visible text and accessible name fully match /${grant.labelSource}/`,
      );
    }
  }
  lines.push(
    "Always refused: hidden or covered elements, disabled controls (a disabled fieldset or optgroup, inert and aria-disabled included), labels whose rendered text disagrees with their DOM text, filling non-editable elements, elements whose text or attributes address AI agents or read like instructions, and clicks or Enter presses that reach a hidden, disabled or ungranted control (a label's control, an enclosing link, a form's default button).",
  );
  Object.freeze(lines);
  return lines;
}

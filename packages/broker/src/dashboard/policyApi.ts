// The dashboard's policy editor (issue 27 §1): an admin changes config.yaml's policy section from the page, through
// the same edits as `tabrelay policy` (config/edit.ts: on the YAML document, comments kept) and the same write
// (config/editFile.ts: validated as a start would validate it, written in one step); the running broker applies it
// within a second (config/reload.ts), as it applies any change to the file. A change is previewed first: nothing is
// written, and the answer says the change in words, names its key, and carries the hash of the file it was made on.
// A second request with that hash saves it, so what the person confirmed is what is written, and a file that changed
// in between is refused. Each save, and each one refused, is audited with the admin's name. dashboard.ts lets only
// an admin's session here, with its CSRF token and the Origin check of every dashboard POST.
import type { ActionKind, ElementFacts } from "@tabrelay/protocol";
import type { AuditLog } from "../audit/auditLog.js";
import type { BrokerConfig } from "../config/config.js";
import {
  addWriteGrant,
  allowPageTools,
  askAbout,
  allowRead,
  denyEntry,
  policyEntries,
  removeEntry,
  type Edited,
  type ListedEntry,
  type Pattern,
  type PolicyEntry,
} from "../config/edit.js";
import { editConfigFile } from "../config/editFile.js";
import { readOwnFile } from "../config/fileSafety.js";
import { suggestGrant, type GrantSuggestion, type PolicyNow } from "../config/grantSuggestion.js";
import { configFor } from "../config/userPolicies.js";
import { gateNavigation } from "../gate/decisions.js";
import { DEFAULT_USER_ID, type Principal } from "../users/principal.js";
import type { Logger } from "../util/log.js";
import type { SecretRegistry } from "../util/secrets.js";
import { sha256Hex } from "../util/sha256.js";
import { sendJson } from "./http.js";

export interface PolicyApiDeps {
  config: BrokerConfig;
  audit: AuditLog;
  log: Logger;
  secrets: SecretRegistry;
}

/** One change the form asks for: what it is, in words for the audit record should it be refused, and the edit. */
interface Change {
  asked: string;
  edit: (text: string) => Edited;
}

const LABEL_KINDS = ["click", "type", "upload", "keys"] as const;

/** POST /dashboard/api/policy: previews (preview=1) or saves (base=the preview's hash) one change of the policy. */
export function policyEdit(deps: PolicyApiDeps, form: URLSearchParams, principal: Principal): Response {
  const json = (status: number, value: unknown) => sendJson(status, deps.secrets.redactValue(value));
  const change = changeOf(form);
  if (typeof change === "string") return json(400, { error: change });
  const preview = form.get("preview") === "1";
  const base = form.get("base") ?? "";
  if (!preview && base === "") return json(400, { error: "preview the change first (preview=1); a save names the file it was previewed on (base)" });
  let seen = "";
  let stale = false;
  const started = Date.now();
  let done: Edited;
  try {
    done = editConfigFile(
      deps.config,
      (text) => {
        seen = sha256Hex(text);
        if (!preview && seen !== base) {
          stale = true;
          throw new Error("config.yaml changed since this change was previewed; preview it again to see what it would do now");
        }
        return change.edit(text);
      },
      { dryRun: preview },
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A change that does not validate is recorded as a broken file is; one made on a file changed since, as refused.
    if (!preview)
      record(deps, principal, { target: change.asked, decision: "refused", ...(stale ? {} : { code: "config_invalid" }), started, detail: { error: message } });
    return json(stale ? 409 : 400, { error: message });
  }
  const changed = sha256Hex(done.text) !== seen;
  const answer = { changed, said: done.said, key: done.key ?? null };
  if (preview) return json(200, { preview: true, ...answer, base: seen });
  if (changed) {
    deps.log.info(`dashboard: ${principal.name} changed the policy in ${deps.config.configPath}: ${done.said}`);
    record(deps, principal, { target: done.said, decision: "allowed", started, detail: { key: done.key } });
  }
  return json(200, { saved: changed, ...answer });
}

/**
 * A grant the person confirmed in the extension's popup (browserDoor.ts): the broker's own offer for one refused call
 * of theirs, recomputed here from the audit record (never the browser's words), written without a second preview (the
 * popup showed the offer and its key before the person confirmed it), and audited as through the extension.
 */
export function applyOffer(
  deps: Omit<PolicyApiDeps, "secrets">,
  fields: Record<string, string>,
  principal: Principal,
  base: string,
): { ok: true; said: string } | { ok: false; error: string } {
  const change = changeOf(new URLSearchParams(fields));
  if (typeof change === "string") return { ok: false, error: change };
  const started = Date.now();
  try {
    // What the person confirmed was shown on the file as it was then (configHash): a file changed since is refused.
    const done = editConfigFile(deps.config, (text) => {
      if (sha256Hex(text) !== base) throw new Error("config.yaml changed since the popup showed this offer; look at the popup again");
      return change.edit(text);
    });
    deps.log.info(`extension: ${principal.name} changed the policy in ${deps.config.configPath}: ${done.said}`);
    record(deps, principal, { target: done.said, decision: "allowed", started, detail: { key: done.key } }, "extension");
    return { ok: true, said: done.said };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    record(deps, principal, { target: change.asked, decision: "refused", code: "config_invalid", started, detail: { error: message } }, "extension");
    return { ok: false, error: message };
  }
}

/** The hash of config.yaml as it is now (what an offer is made on), or "" when it cannot be read. */
export function configHash(config: Pick<BrokerConfig, "configPath">): string {
  const read = readOwnFile(config.configPath, "config");
  return read.ok ? sha256Hex(read.value ?? "") : "";
}

/** The entries of the policy section an admin may remove, as the file holds them (or why the file cannot be read). */
export function policyView(config: Pick<BrokerConfig, "configPath">): { entries: ListedEntry[] } | { error: string } {
  const read = readOwnFile(config.configPath, "config");
  if (!read.ok) return { error: read.message };
  try {
    return { entries: policyEntries(read.value ?? "") };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** A record of the audit stream with the grant that would have allowed it, when it is a refused call (config/grantSuggestion.ts). */
export function withSuggestion(config: BrokerConfig, record: { id: number }): object {
  const suggestion = suggestionFor(config, record);
  return suggestion === undefined ? record : { ...record, suggestion };
}

/** The grant that would have allowed a refused call (or why there is none); undefined for any other record. */
export function suggestionFor(config: BrokerConfig, record: object): GrantSuggestion | undefined {
  const text = (key: string): string | undefined => {
    const value: unknown = Reflect.get(record, key);
    return typeof value === "string" ? value : undefined;
  };
  const tool = text("tool");
  const decision = text("decision");
  if (tool === undefined || decision === undefined) return undefined;
  return suggestGrant(
    { tool, decision, origin: text("origin"), target: text("target"), code: text("code"), rule: text("rule") },
    policyNow(configFor(config, text("user"))),
  );
}

const ACTIONS: Readonly<Record<"click" | "type" | "upload", ActionKind>> = { click: "click", type: "fill", upload: "upload" };

/**
 * The policy the call's user is held to now (the base, narrowed by their own section), as a suggestion asks it. The
 * write question is asked of the write policy alone, about a plain element (visible, enabled, labelled `label`) in
 * the page itself: whether this host's grant is what the call lacked, never a verdict on a call.
 */
function policyNow(config: Pick<BrokerConfig, "policy" | "writePolicy">): PolicyNow {
  return {
    readable: (url) => gateNavigation(config.policy, url).ok,
    refusal: (kind, url, label) => {
      const element: ElementFacts = {
        ref: "",
        role: "button",
        name: label,
        visibleText: label,
        attributeText: "",
        tag: "input",
        disabled: false,
        editable: true,
        frameUrl: url,
        activates: [],
      };
      const decision = config.writePolicy.check(ACTIONS[kind], url, element);
      return decision.ok ? undefined : decision.rule;
    },
  };
}

/** Who changed the policy, and what: the implicit user's record names no user, as every record of theirs. */
function record(
  deps: Omit<PolicyApiDeps, "secrets">,
  principal: Principal,
  what: { target: string; decision: "allowed" | "refused"; code?: string; started: number; detail: Record<string, unknown> },
  client: "dashboard" | "extension" = "dashboard",
): void {
  deps.audit.record({
    time: what.started,
    tool: "policy",
    client,
    ...(principal.user !== DEFAULT_USER_ID ? { user: principal.name } : {}),
    target: what.target,
    decision: what.decision,
    ...(what.code ? { code: what.code } : {}),
    durationMs: Date.now() - what.started,
    detail: JSON.stringify({ file: deps.config.configPath, ...what.detail }),
  });
}

/** The change a form asks for, or what is wrong with it. Hosts are trimmed; regexes and labels are taken as sent. */
function changeOf(form: URLSearchParams): Change | string {
  const field = (name: string) => form.get(name) ?? "";
  const host = field("host").trim();
  switch (field("action")) {
    case "allow-read": {
      const target = field("target").trim();
      if (target === "") return "pass target: the host to read (HOST, HOST:PORT or *.HOST), with an optional /PATH";
      return { asked: `allow reading ${target}`, edit: (text) => allowRead(text, target) };
    }
    case "deny": {
      if (host === "") return "pass host: the host to refuse (it and its subdomains), and path: a regex (empty for every path)";
      const path = field("path");
      return { asked: `deny ${host} ${path || ".*"}`, edit: (text) => denyEntry(text, host, path) };
    }
    case "grant": {
      const kind = LABEL_KINDS.find((k) => k === field("kind"));
      if (kind === undefined) return `pass kind: click, type, upload or keys, not ${JSON.stringify(field("kind"))}`;
      if (host === "") return "pass host: the host whose elements the grant is for";
      const label = patternOf(form, "label");
      if (typeof label === "string") return label;
      const keys = form.has("keys") && field("keys") !== "" ? field("keys") : undefined;
      return { asked: `grant ${kind} on ${host} for ${JSON.stringify(label)}`, edit: (text) => addWriteGrant(text, kind, host, label, keys) };
    }
    case "page-tool": {
      const origin = field("origin").trim();
      if (origin === "") return "pass origin: the page's origin (https://app.example)";
      const tools = patternOf(form, "tools");
      if (typeof tools === "string") return tools;
      return { asked: `grant the page tools ${JSON.stringify(tools)} of ${origin}`, edit: (text) => allowPageTools(text, origin, tools) };
    }
    case "ask": {
      const list = field("list") === "read" ? "read" : "write";
      if (host === "") return "pass host: the site where you are asked (HOST, HOST:PORT or *.HOST), and list: write or read";
      return { asked: `ask about ${list}s on ${host}`, edit: (text) => askAbout(text, host, list) };
    }
    case "remove":
      return removal(form);
  }
  return `pass action: allow-read, deny, grant, page-tool, ask or remove, not ${JSON.stringify(field("action"))}`;
}

/** A regex a person typed (`label`, `tools`), or a page's text to match exactly (`exact`, the activity list's offers). */
function patternOf(form: URLSearchParams, name: "label" | "tools"): Pattern | string {
  const regex = form.get(name) ?? "";
  const exact = form.get("exact") ?? "";
  if (regex !== "" && exact !== "") return `pass ${name} (a regex) or exact (a text matched as it is), not both`;
  if (exact !== "") return { exact };
  if (regex !== "") return { regex };
  return `pass ${name}: a regex the whole ${name === "label" ? "label" : "tool name"} must match (anchor it: "^Add to cart$")`;
}

function removal(form: URLSearchParams): Change | string {
  const field = (name: string) => form.get(name) ?? "";
  const section = field("section");
  let entry: PolicyEntry;
  if (section === "read.allow") entry = { section, host: field("host") };
  else if (section === "deny") entry = { section, host: field("host"), path: field("path") };
  else if (section === "write") entry = { section, kind: field("kind"), host: field("host") };
  else if (section === "page_tools") entry = { section, origin: field("origin") };
  else if (section === "ask.write" || section === "ask.read") entry = { section, host: field("host") };
  else return `pass section: read.allow, deny, write, page_tools, ask.write or ask.read, not ${JSON.stringify(section)}`;
  return { asked: `remove ${JSON.stringify(entry)}`, edit: (text) => removeEntry(text, entry) };
}

// A write the policy refused for want of a grant, on a site of policy.ask: the question put to the user, and what
// their answer does to the call. The verdict stays the policy's (policy/writePolicy.ts says which refusals a grant
// would lift); the answer only ever lets this one call pass, or writes the narrow grant the question showed.
import type { ActionKind, ElementFacts } from "@tabrelay/protocol";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import { normalizeLabel } from "../policy/decoy.js";
import { hostOf, type AskGrant } from "../policy/writeRules.js";
import { TabrelayError } from "../util/errors.js";
import { cleanLine } from "../util/pageText.js";
import type { Principal } from "../users/principal.js";
import { OPEN_PER_USER, describeAction, type AskDesk, type Question } from "./asks.js";

/** Who asks: the call's user and client, the call's end, and where its waiting is told (progress notifications). */
export interface Asking {
  user: Principal;
  client: string;
  signal: AbortSignal;
  waiting?: (waitedMs: number, totalMs: number, message: string) => void;
  /**
   * Asks through the agent's own MCP client (an elicitation), where the client supports it: resolves with the user's
   * answer there, or undefined when they dismissed it. Used only with policy.ask.elicit.
   */
  elicit?: (message: string, signal: AbortSignal) => Promise<"once" | "deny" | undefined>;
}

export interface WriteInQuestion {
  action: ActionKind;
  facts: ElementFacts;
  /** The narrow grant the policy says would allow exactly this write (the refusal's `ask`). */
  grant: AskGrant;
  tab: { url: string; tabId: number; browserId: string };
  keys?: string;
  /** The action's value (the text typed, the option, the files as JSON), shown in the question. */
  value?: string;
  /** Outlines the element in the tab while the user decides. */
  highlight?: () => void;
}

/** How much of a page's (or an agent's) words a question shows: enough to recognise, never enough to push the site out. */
const SHOWN = { label: 80, role: 30, value: 80, client: 60, url: 200 } as const;

/** Asks the user about one write; returns the rule the call passes under, or throws the answer's refusal. */
export async function askWrite(desk: AskDesk, timeoutMs: number, asking: Asking, write: WriteInQuestion, useElicitation = false): Promise<string> {
  const url = canonicalizeUrl(write.tab.url);
  const { grant, facts } = write;
  const label = shown(normalizeLabel(facts.visibleText || facts.name), SHOWN.label);
  const name = shown(normalizeLabel(facts.name), SHOWN.label);
  // A role is the page's attribute as much as the label: a word of ARIA's, or "element".
  const role = /^[a-z][a-z-]{0,29}$/.test(facts.role) ? facts.role : "element";
  const value = valueInWords(write.action, write.value, facts);
  const about: Omit<Question, "id" | "askedAt" | "expiresAt"> = {
    user: asking.user.user,
    userName: asking.user.name,
    client: shown(asking.client, SHOWN.client),
    action: write.action,
    ...(write.keys !== undefined ? { keys: shown(write.keys, 40) } : {}),
    role,
    label,
    ...(name !== "" && name !== label ? { name } : {}),
    ...(value ? { value } : {}),
    // The tab's own site, as the person knows it.
    host: url.ok ? hostOf(url.url) : grant.host,
    url: url.ok ? url.url.href : write.tab.url,
    browserId: write.tab.browserId,
    tabId: write.tab.tabId,
    grant,
  };
  return await putQuestion(desk, timeoutMs, asking, about, useElicitation, "write_denied", write.highlight);
}

/** What the user may be asked about a read: a site the read policy refuses only for want of an allow entry. */
export const READ_ASKABLE: ReadonlySet<string> = new Set([
  "default: not in allowlist",
  "default: IP literal not in allowlist",
  "top_sites: default port only",
  "default: https only",
]);

/**
 * Asks the user whether the agent may read `url` (policy.ask.read), for the tab `tabId` of `browserId` (undefined: a
 * tab about to be opened for it). Returns the host allowed; throws the answer's refusal.
 */
export async function askRead(
  desk: AskDesk,
  timeoutMs: number,
  asking: Asking,
  read: { url: string; browserId: string; tabId: number | undefined; grantable: boolean },
  useElicitation = false,
): Promise<string> {
  const url = canonicalizeUrl(read.url);
  if (!url.ok) throw new TabrelayError("policy_denied", `${read.url} is not a URL tabrelay can read: ${url.reason}`, "default: invalid URL");
  const host = hostOf(url.url);
  const about: Omit<Question, "id" | "askedAt" | "expiresAt"> = {
    user: asking.user.user,
    userName: asking.user.name,
    client: shown(asking.client, SHOWN.client),
    action: "read",
    role: "page",
    label: shown(url.url.href, SHOWN.url),
    host,
    url: url.url.href,
    browserId: read.browserId,
    tabId: read.tabId ?? -1,
    ...(read.grantable ? { grant: { kind: "read" as const, host } } : {}),
  };
  await putQuestion(desk, timeoutMs, asking, about, useElicitation, "policy_denied");
  return host;
}

/** Puts the question, waits for the answer (telling the waiting call), and turns the answer into the call's fate. */
async function putQuestion(
  desk: AskDesk,
  timeoutMs: number,
  asking: Asking,
  about: Omit<Question, "id" | "askedAt" | "expiresAt">,
  useElicitation: boolean,
  refused: "write_denied" | "policy_denied",
  highlight?: () => void,
): Promise<string> {
  const policyKey = refused === "write_denied" ? "policy.ask.write" : "policy.ask.read";
  const write = { highlight };
  // For the model too: the page's words are quoted as page text, and the site named last as in its other messages.
  const said = `${describeAction(about)} on ${about.host}`;
  write.highlight?.();
  // One more place to ask (policy.ask.elicit): the agent's client, whose answer is one more door's; closed once any
  // answer came.
  const elicitation = new AbortController();
  const elicit = useElicitation && asking.elicit;
  const outcome = await desk.ask(about, timeoutMs, asking.signal, (waited, question) => {
    if (waited === 0 && elicit) {
      void elicit(
        `tabrelay asks: may ${question.client} ${describeAction(question)} ${"on " + question.host}? (page: ${question.url})`,
        elicitation.signal,
      ).then(
        (answer) => (answer ? desk.answer(question.id, answer, { via: "elicitation", who: question.client, admin: false }) : undefined),
        () => undefined,
      );
    }
    const left = Math.max(0, Math.round((question.expiresAt - question.askedAt - waited) / 1000));
    asking.waiting?.(waited, timeoutMs, `waiting for the user to answer: may ${about.client} ${said}? (${left} s left)`);
    // The outline fades: drawn again while the question is open.
    if (waited > 0) write.highlight?.();
  });
  elicitation.abort();
  switch (outcome.answer) {
    case "once":
    case "always":
      return `${policyKey}: the user answered ${outcome.answer === "once" ? "allow once" : "always"} (${outcome.by.via})`;
    case "deny":
      throw new TabrelayError(
        refused,
        `${refused}: the user declined: ${said} (asked under ${policyKey}, answered in the ${outcome.by.via}). Do not retry it or look for another way to do it; tell the user what you wanted to do`,
        `${policyKey}: the user declined`,
      );
    case "timeout":
      throw new TabrelayError(
        "ask_timeout",
        `ask_timeout: tabrelay asked the user whether ${about.client} may ${said}, and no answer came within ${Math.round(timeoutMs / 1000)} s (policy.ask.timeout_s); nothing was done. Tell the user what you wanted to do, and retry when they are there to answer`,
        `${policyKey}: no answer in time`,
      );
    case "busy":
      throw new TabrelayError(
        refused,
        `${refused}: ${said} needs the user's answer (${policyKey}), and a question about this tab, or ${OPEN_PER_USER} questions in all, are waiting for them already; nothing was done. Wait for those answers before asking again`,
        `${policyKey}: questions waiting`,
      );
    case "withdrawn":
      if (outcome.reason === "stop") {
        throw new TabrelayError(
          "tab_taken_back",
          `tab_taken_back: the user took tab ${about.tabId} back (Stop in the tabrelay popup) while asked whether you may ${said}; nothing was done. Do not use that tab again`,
          "the user took the tab back",
        );
      }
      throw new TabrelayError(
        outcome.reason === "tab" ? "no_such_tab" : "browser_disconnected",
        `the ${outcome.reason === "tab" ? "tab closed" : "browser went away"} while the user was asked whether you may ${said}; nothing was done`,
        `${policyKey}: withdrawn`,
      );
    case "cancelled":
      throw new TabrelayError("cancelled", "the call was cancelled while the user was being asked; nothing was done", `${policyKey}: cancelled`);
  }
}

/**
 * The page's (or the agent's) words as a question shows them, to the person and to the model alike: one line, nothing
 * hidden, no envelope marker (cleanLine), «» unable to close the quote, capped.
 */
function shown(text: string, max: number): string {
  const chars = Array.from(cleanLine(text).replace(/«/g, "‹").replace(/»/g, "›"));
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
}

/** What the action puts into the page, so the person sees it before allowing it: the text, the option, the files. */
function valueInWords(action: ActionKind, value: string | undefined, facts: ElementFacts): string | undefined {
  if (action === "fill" && value !== undefined) return `typing «${shown(value, SHOWN.value)}»`;
  if (action === "select") {
    const option = facts.option ? normalizeLabel(facts.option.visibleText || facts.option.name) : value;
    return option === undefined ? undefined : `choosing «${shown(option, SHOWN.value)}»`;
  }
  if (action === "upload" && value !== undefined) {
    try {
      const files: unknown = JSON.parse(value);
      const names = Array.isArray(files) ? files.map((f: unknown) => (f && typeof f === "object" ? String(Reflect.get(f, "name") ?? "?") : "?")) : [];
      return `uploading «${shown(names.join(", ") || "no file", SHOWN.value)}»`;
    } catch {
      return "uploading files";
    }
  }
  return undefined;
}

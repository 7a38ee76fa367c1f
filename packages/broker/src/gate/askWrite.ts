// A write the policy refused for want of a grant, on a site of policy.ask: the question put to the user, and what
// their answer does to the call. The verdict stays the policy's (policy/writePolicy.ts says which refusals a grant
// would lift); the answer only ever lets this one call pass, or writes the narrow grant the question showed.
import type { ActionKind, ElementFacts } from "@tabrelay/protocol";
import { canonicalizeUrl } from "../policy/canonicalUrl.js";
import { normalizeLabel } from "../policy/decoy.js";
import { hostOf, type AskGrant } from "../policy/writeRules.js";
import { TabrelayError } from "../util/errors.js";
import { PAGE_TEXT_MAX, pageText } from "../util/pageText.js";
import type { Principal } from "../users/principal.js";
import { describeQuestion, type AskDesk, type Question } from "./asks.js";

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
  /** Outlines the element in the tab while the user decides. */
  highlight?: () => void;
}

/** Asks the user about one write; returns the rule the call passes under, or throws the answer's refusal. */
export async function askWrite(desk: AskDesk, timeoutMs: number, asking: Asking, write: WriteInQuestion, useElicitation = false): Promise<string> {
  const url = canonicalizeUrl(write.tab.url);
  const label = normalizeLabel(write.facts.visibleText || write.facts.name);
  const { grant } = write;
  const about: Omit<Question, "id" | "askedAt" | "expiresAt"> = {
    user: asking.user.user,
    userName: asking.user.name,
    client: asking.client,
    action: write.action,
    ...(write.keys !== undefined ? { keys: write.keys } : {}),
    role: write.facts.role,
    label,
    // The tab's own site, as the person knows it (the grant's key may be a wider one it joins: *.shop.example).
    host: url.ok ? hostOf(url.url) : grant.host,
    url: url.ok ? url.url.href : write.tab.url,
    browserId: write.tab.browserId,
    tabId: write.tab.tabId,
    grant,
  };
  // For the model: the label is the page's words, quoted as page text; the rest is tabrelay's.
  const what = about.action === "press" && about.keys ? `press ${pageText(about.keys, 40)} in` : about.action;
  const said = `${what} ${about.role} ${pageText(label, PAGE_TEXT_MAX.name)} on ${about.host}`;
  write.highlight?.();
  // One more place to ask (policy.ask.elicit): the agent's client, whose answer is one more door's; closed once any
  // answer came.
  const elicitation = new AbortController();
  const elicit = useElicitation && asking.elicit;
  const outcome = await desk.ask(about, timeoutMs, asking.signal, (waited, question) => {
    if (waited === 0 && elicit) {
      void elicit(`tabrelay asks: may ${asking.client} ${describeQuestion(question)}? (page: ${question.url})`, elicitation.signal).then(
        (answer) => (answer ? desk.answer(question.id, answer, { via: "elicitation", who: asking.client }) : undefined),
        () => undefined,
      );
    }
    const left = Math.max(0, Math.round((question.expiresAt - question.askedAt - waited) / 1000));
    asking.waiting?.(waited, timeoutMs, `waiting for the user to answer: may ${asking.client} ${said}? (${left} s left)`);
    // The outline fades: drawn again while the question is open.
    if (waited > 0) write.highlight?.();
  });
  elicitation.abort();
  switch (outcome.answer) {
    case "once":
    case "always":
      return `policy.ask.write: the user answered ${outcome.answer === "once" ? "allow once" : "always"} (${outcome.by.via})`;
    case "deny":
      throw new TabrelayError(
        "write_denied",
        `write_denied: the user declined: ${said} (asked under policy.ask.write, answered in the ${outcome.by.via}). Do not retry it or look for another way to do it; tell the user what you wanted to do`,
        "policy.ask.write: the user declined",
      );
    case "timeout":
      throw new TabrelayError(
        "ask_timeout",
        `ask_timeout: tabrelay asked the user whether ${asking.client} may ${said}, and no answer came within ${Math.round(timeoutMs / 1000)} s (policy.ask.timeout_s); nothing was done. Tell the user what you wanted to do, and retry when they are there to answer`,
        "policy.ask.write: no answer in time",
      );
    case "cancelled":
      throw new TabrelayError("cancelled", "the call was cancelled while the user was being asked; nothing was done", "policy.ask.write: cancelled");
  }
}

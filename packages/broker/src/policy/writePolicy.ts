/**
 * The write policy: which state-changing actions an agent may perform in the user's browser.
 * Default: none at all (tabrelay is read-only until the user grants writes in config.yaml).
 *
 * Every action passes check() in the broker at dispatch time, with the tab's committed URL and the
 * facts the page reported about the target element. Order of evaluation (the first rule that
 * decides wins):
 *   1. hover and scroll change nothing: allowed without a grant       ("read-only action")
 *   2. no policy.write grants at all                                   (refused, the default)
 *   3. the element facts must be well-formed                           (else refused)
 *   4. the tab URL, then the element's frame URL, each:
 *        must parse and use http: or https:                            (else refused)
 *        policy.deny (host and its subdomains + path regex)            (refused, always)
 *        a policy.write.<kind> grant for its host (+port)              (else refused)
 *      click, check and select need a "click" grant; fill and text-entry keys a "type" grant; other
 *      keys a "keys" grant (see "Keys" below).
 *   5. element state: hidden, covered, decoy aimed at AI agents, effectively disabled, a rendered
 *      label that disagrees with its DOM text, not editable (fill)     (refused, whatever the grant)
 *   6. the label regex of the grant for the element's own frame host must fully match both the
 *      normalised visible text and the normalised accessible name     (else refused); the page's
 *      host only needs a grant of the same kind (step 4)
 *   7. what the action reaches besides the element, each judged like a target of its own (visible,
 *      not disabled, no decoy, no label conflict, label matching the click grant):
 *        click, check: every element HTML activation reaches (a label's control, an enclosing link or
 *          button, and what those reach in turn);
 *        press Enter that submits a form: the form's default button (or, with none, the form's
 *          accessible name), under the click grant: submitting is clicking that button;
 *        select: the option chosen must not be disabled or hidden.
 *
 * Keys (press_key). The page receives synthetic key events, which do nothing by themselves; tabrelay
 * emulates only Tab (focus) and Enter's implicit submission. So:
 *   - Tab, Shift+Tab anywhere, and text-entry keys in an editable field (one character, Space,
 *     Backspace, Delete, arrows, Home, End, PageUp, PageDown, with or without Shift): "type" grant.
 *   - Enter (or Shift+Enter) in a single-line field whose form it submits: the "type" grant for the
 *     field and the "click" grant for the default button (step 7).
 *   - everything else is a command only the page's script gives meaning to, and needs a "keys" grant
 *     whose keys regex fully matches the normalised combo ("Control+Enter") and whose label regex
 *     matches the element: chords with Control, Alt or Meta, Enter that submits no form (a text
 *     area, contenteditable, a button, a form with two fields and no button), Escape, and any key on
 *     an element that is not editable (site shortcuts such as "#" or "e" in a mail app).
 *
 * Host keys work like policy.read.allow: "shop.example" is that host on any port,
 * "shop.example:8443" that port only, "*.shop.example" the host and its subdomains. When several
 * keys cover a host, the most specific one decides (exact host over wildcard, longer wildcard over
 * shorter, explicit port over any port), so a specific key can narrow a broad one.
 *
 * Pure functions, deny on failure: check() never throws. The compiled policy is frozen and holds
 * no reference to its input, so nothing a page says can change a grant after compilation.
 *
 * Here: the order of evaluation. writeRules.ts compiles the grants and deny list and finds the grant for a
 * URL (step 4); writeTarget.ts judges the element and what the action reaches (steps 3, 5-7); writeKeys.ts
 * holds the key gate and the press rules; decoy.ts label normalisation and the decoy test.
 */

import type { ActionKind, ElementFacts } from "@tabrelay/protocol";
import { canonicalizeUrlDetailed } from "./canonicalUrl.js";
import { normalizeLabel } from "./decoy.js";
import { errorText, shown } from "./text.js";
import { evaluatePress } from "./writeKeys.js";
import {
  compileWriteRules,
  describeWriteRules,
  askable,
  bestGrant,
  exampleKey,
  grantsFor,
  hostOf,
  isPair,
  refuse,
  ruleOf,
  type AskGrant,
  type GrantKind,
  type WriteAction,
  type WriteDecision,
  type WritePolicyInput,
} from "./writeRules.js";
import { describeTarget, elementState, judgeReached, labelMismatch, malformedFacts, VERB } from "./writeTarget.js";

export { looksLikeDecoy, normalizeLabel } from "./decoy.js";
export { keyGate } from "./writeKeys.js";
export type { WriteDecision, WritePolicyInput } from "./writeRules.js";

export interface CompiledWritePolicy {
  check(action: ActionKind, tabUrl: string, facts: ElementFacts): WriteDecision;
  /** Running an expression in the top document at `tabUrl` (code mode's eval): a write.eval grant for its host. */
  checkEval(tabUrl: string): WriteDecision;
  /** False only for hover, scroll and highlight; true for every other (including unknown) action. */
  isStateChanging(action: ActionKind): boolean;
  /** Human-readable lines for docs and the dashboard. */
  describe(): string[];
}

/** The grant an action needs before its key is looked at (press may need "keys" or "click" as well: evaluatePress). */
const GRANT_KIND: Readonly<Record<WriteAction, GrantKind>> = {
  click: "click",
  check: "click",
  select: "click",
  fill: "type",
  press: "type",
  // A drag presses on the element as a click does: the click grant for its label.
  drag: "click",
  upload: "upload",
};

const READ_ONLY_ACTIONS: ReadonlySet<string> = new Set(["hover", "scroll", "highlight"]);
const ALL_ACTIONS: ReadonlySet<string> = new Set(["click", "fill", "select", "check", "press", "hover", "scroll", "drag", "upload", "highlight"]);

function isActionKind(action: unknown): action is ActionKind {
  return typeof action === "string" && ALL_ACTIONS.has(action);
}

function isWriteAction(action: ActionKind): action is WriteAction {
  return !READ_ONLY_ACTIONS.has(action);
}

/**
 * Compiles the policy section of the config into a checker. A missing or empty `write` section
 * grants nothing. Throws an Error naming the config key on a bad host key, bad regex or bad value.
 */
export function compileWritePolicy(input: WritePolicyInput, options: { asking?: boolean } = {}): CompiledWritePolicy {
  const rules = compileWriteRules(input);
  const asking = options.asking ?? true;

  /**
   * A refusal the absence of a grant caused is askable when the narrowest grant would allow exactly this write, every
   * other check included (judged by this policy with that grant added): "allow once" is then that grant for one call,
   * "always" that grant written. Anything else the narrow grant would not lift stays a plain refusal.
   */
  function withAsk(decision: WriteDecision, action: ActionKind, tabUrl: string, facts: ElementFacts): WriteDecision {
    if (decision.ok || decision.askable === undefined) return decision;
    const { askable: kind, ...refusal } = decision;
    if (!asking || (kind !== "click" && kind !== "type" && kind !== "upload")) return refusal;
    const tab = canonicalizeUrlDetailed(tabUrl);
    const label = narrowLabel(facts);
    if (!tab.ok || label === undefined) return refusal;
    // Where a grant of the kind already decides for this page (its label did not match), the label joins it, as the
    // dashboard's grant does (config/edit.ts addWriteGrant): a new key more specific than it would shadow what it allows.
    const deciding = bestGrant(rules, kind, tab.url);
    const grant: AskGrant = { kind, host: deciding?.key ?? hostOf(tab.url), label };
    const write = input.write ?? {};
    const joined = deciding ? `(?:${deciding.labelSource})|(?:${label})` : label;
    const lifted = compileWritePolicy(
      { ...input, write: { ...write, [kind]: { ...(write[kind] ?? {}), [grant.host]: { label: joined } } } },
      { asking: false },
    );
    return lifted.check(action, tabUrl, facts).ok ? { ...refusal, ask: grant } : refusal;
  }

  function evaluate(action: ActionKind, tabUrl: string, facts: ElementFacts): WriteDecision {
    if (!isActionKind(action)) {
      return refuse(
        `the action ${shown(String(action), 40)}`,
        "it is not a known action",
        "default: unknown action",
        "Use one of click, check, select, fill, press, drag, upload, hover, scroll or highlight.",
      );
    }
    if (!isWriteAction(action)) return { ok: true, rule: "read-only action" };
    const kind = GRANT_KIND[action];

    const factsProblem = malformedFacts(facts, action);
    const tab = canonicalizeUrlDetailed(tabUrl);
    const onWhere = `on ${tab.ok ? hostOf(tab.url) : "this page"}`;
    const target = factsProblem === undefined ? describeTarget(facts) : "the element";
    const subject = `${VERB[action]} ${target} ${onWhere}`;

    if (!rules.anyGrant) {
      const none = refuse(
        subject,
        "tabrelay is read-only by default and no policy.write grants are configured",
        "default: no write grants",
        `Ask the user to add ${exampleKey(tab.ok ? tab.url : undefined)} under policy.write.${kind} in ${rules.configName} if this action is intended.`,
      );
      return factsProblem === undefined ? askable(none, kind) : none;
    }
    if (factsProblem !== undefined) {
      return refuse(subject, factsProblem, "default: invalid element facts", "Take a new snapshot and try again.");
    }
    if (action === "press") return evaluatePress(rules, facts, tabUrl, onWhere);

    const pair = grantsFor(rules, kind, tabUrl, facts.frameUrl, subject);
    if (!isPair(pair)) return pair;
    const state = elementState(action, facts, subject, onWhere);
    if (state !== undefined) return state;
    // The page's host must grant this kind of action at all; the label rule that decides is the one of
    // the host the element lives on (a payment frame's "Pay now" is judged by the frame's grant).
    const mismatch = labelMismatch(pair.frame, facts.visibleText, facts.name, subject);
    if (mismatch !== undefined) return mismatch;
    if (action === "click" || action === "check") {
      for (const reached of facts.activates ?? []) {
        const refused = judgeReached(reached, "activation", pair.frame, subject, onWhere, action);
        if (refused !== undefined) return refused;
      }
    }
    if (action === "select" && facts.option !== undefined) {
      const refused = judgeReached(facts.option, "option", undefined, subject, onWhere, action);
      if (refused !== undefined) return refused;
    }
    return { ok: true, rule: ruleOf(pair) };
  }

  function evaluateEval(tabUrl: string): WriteDecision {
    const tab = canonicalizeUrlDetailed(tabUrl);
    const subject = `running an expression in the page on ${tab.ok ? hostOf(tab.url) : "this page"}`;
    if (!rules.anyGrant) {
      return refuse(
        subject,
        "tabrelay is read-only by default and no policy.write grants are configured",
        "default: no write grants",
        `Ask the user to add ${exampleKey(tab.ok ? tab.url : undefined)}: {} under policy.write.eval in ${rules.configName} if this is intended.`,
      );
    }
    const pair = grantsFor(rules, "eval", tabUrl, tabUrl, subject);
    return isPair(pair) ? { ok: true, rule: pair.page.rule } : pair;
  }

  const lines = describeWriteRules(rules);

  const compiled: CompiledWritePolicy = {
    check(action: ActionKind, tabUrl: string, facts: ElementFacts): WriteDecision {
      try {
        return withAsk(evaluate(action, tabUrl, facts), action, tabUrl, facts);
      } catch (error) {
        return refuse("the action", `the write policy check failed (${errorText(error)})`, "default: policy error", "Report this to the user.");
      }
    },
    checkEval(tabUrl: string): WriteDecision {
      try {
        return evaluateEval(tabUrl);
      } catch (error) {
        return refuse("running an expression", `the write policy check failed (${errorText(error)})`, "default: policy error", "Report this to the user.");
      }
    },
    isStateChanging(action: ActionKind): boolean {
      return !READ_ONLY_ACTIONS.has(action);
    },
    describe(): string[] {
      return [...lines];
    },
  };
  return Object.freeze(compiled);
}

/**
 * A label regex matching this element's visible text and accessible name literally (a grant's label must match both:
 * writeTarget.ts); undefined when either is empty (nothing narrow to grant).
 */
function narrowLabel(facts: ElementFacts): string | undefined {
  if (typeof facts.visibleText !== "string" || typeof facts.name !== "string") return undefined;
  const labels = [...new Set([normalizeLabel(facts.visibleText), normalizeLabel(facts.name)])];
  if (labels.some((l) => l === "")) return undefined;
  const literal = labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return literal.length === 1 ? `^${literal[0]}$` : `^(?:${literal.join("|")})$`;
}

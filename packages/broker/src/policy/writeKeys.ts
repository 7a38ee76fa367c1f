// The key gate and the press rules (see "Keys" in writePolicy.ts): which grant a key press needs, and the
// check of a press_key, including the form an Enter submits.
import type { ElementFacts } from "@tabrelay/protocol";
import { shown } from "./text.js";
import { grantsFor, isPair, refuse, ruleOf, type WriteDecision, type WriteRules } from "./writeRules.js";
import { describeReached, describeTarget, elementState, judgeReached, labelMismatch } from "./writeTarget.js";

const CHORD_MODIFIERS: ReadonlySet<string> = new Set(["Control", "Alt", "Meta"]);
const TEXT_ENTRY_KEYS: ReadonlySet<string> = new Set([
  "Space",
  "Backspace",
  "Delete",
  "ArrowUp",
  "ArrowDown",
  "ArrowLeft",
  "ArrowRight",
  "Home",
  "End",
  "PageUp",
  "PageDown",
]);

/**
 * Which gate a key press passes (see "Keys" in writePolicy.ts): "type", "submit" (type for the field plus click
 * for what Enter submits) or "keys", with the reason shown when a keys grant is needed.
 */
export function keyGate(
  key: string,
  facts: Pick<ElementFacts, "editable" | "submits" | "noSubmit">,
): { gate: "type" | "submit" } | { gate: "keys"; why: string } {
  const parts = key.split("+");
  const main = parts.pop() ?? "";
  const chord = parts.filter((m) => CHORD_MODIFIERS.has(m));
  if (chord.length > 0) return { gate: "keys", why: `${key} is a key chord (with ${chord.join(" and ")}), which only the page's script gives a meaning to` };
  if (main === "Tab") return { gate: "type" };
  if (main === "Enter") {
    if (facts.submits !== undefined) return { gate: "submit" };
    return {
      gate: "keys",
      why: `Enter here submits no form (${facts.noSubmit ?? "the page did not say why"}), so only the page's script decides what it does`,
    };
  }
  if (main === "Escape") return { gate: "keys", why: "Escape types nothing; pages use it to close, cancel or discard" };
  // A control character (ESC, NUL...) is not typed text: pages read its key code (27 is Escape's).
  if ([...main].length === 1 && /[\u0000-\u001f\u007f-\u009f]/.test(main)) {
    return {
      gate: "keys",
      why: `U+${main.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")} is a control character, which types nothing; pages read it as a key code (27 is Escape's)`,
    };
  }
  const textEntry = [...main].length === 1 || TEXT_ENTRY_KEYS.has(main);
  if (textEntry && facts.editable === true) return { gate: "type" };
  if (textEntry) return { gate: "keys", why: `${key} on an element that is not a text field is a shortcut of the page's` };
  return { gate: "keys", why: `${key} is not a text-entry key` };
}

/** A press_key, judged by keyGate's gate: a keys grant, a type grant, or a type grant plus the click grant for what Enter submits. */
export function evaluatePress(rules: WriteRules, facts: ElementFacts, tabUrl: string, onWhere: string): WriteDecision {
  const key = String(facts.key);
  const subjectKey = `pressing ${shown(key, 40)} on ${describeTarget(facts)} ${onWhere}`;
  const gate = keyGate(key, facts);
  if (gate.gate === "keys") {
    const pair = grantsFor(rules, "keys", tabUrl, facts.frameUrl, subjectKey, gate.why);
    if (!isPair(pair)) return pair;
    const state = elementState("press", facts, subjectKey, onWhere);
    if (state !== undefined) return state;
    const keys = pair.frame.keys;
    if (keys === undefined || !keys.test(key)) {
      return refuse(
        subjectKey,
        `${gate.why}, and the key combo ${shown(key, 40)} does not match ${pair.frame.where}.keys ${pair.frame.keysSource ?? "(none)"}`,
        `${pair.frame.rule}.keys`,
        `Ask the user to extend the grant in ${rules.configName} if this key is intended.`,
      );
    }
    const mismatch = labelMismatch(pair.frame, facts.visibleText, facts.name, subjectKey, undefined, gate.why);
    if (mismatch !== undefined) return mismatch;
    return { ok: true, rule: ruleOf(pair) };
  }
  const typing = grantsFor(rules, "type", tabUrl, facts.frameUrl, subjectKey);
  if (!isPair(typing)) return typing;
  const state = elementState("press", facts, subjectKey, onWhere);
  if (state !== undefined) return state;
  const mismatch = labelMismatch(typing.frame, facts.visibleText, facts.name, subjectKey);
  if (mismatch !== undefined) return mismatch;
  if (gate.gate === "type" || facts.submits === undefined) return { ok: true, rule: ruleOf(typing) };

  // Enter submits the form: that is a click on its default button (or on the form itself when it has none).
  const submits = facts.submits;
  const target = submits.button ?? submits.form;
  const submitSubject = `submitting a form by pressing ${shown(key, 40)} in ${describeTarget(facts)} ${onWhere} (which clicks ${submits.button ? `its default button ${describeReached(submits.button)}` : "no button: the form has none"})`;
  const clicking = grantsFor(
    rules,
    "click",
    tabUrl,
    facts.frameUrl,
    submitSubject,
    "an Enter that submits a form counts as a click on the form's default button",
  );
  if (!isPair(clicking)) return clicking;
  const reached = judgeReached(target, "submit", clicking.frame, submitSubject, onWhere, "press");
  if (reached !== undefined) return reached;
  return { ok: true, rule: `${ruleOf(typing)} + ${ruleOf(clicking)}` };
}

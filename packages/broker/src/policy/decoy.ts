// Label normalisation and decoy detection: the form the write policy compares labels in, and the test for
// elements aimed at AI agents (also used by the reader to warn about withheld text).
import type { ElementFacts } from "@tabrelay/protocol";
import { shown } from "./text.js";

/**
 * Characters that render as nothing (or only reorder text) and so must not change what a label
 * "says": every Unicode format character (\p{Cf}: zero-width space/joiners U+200B-U+200D, word
 * joiner U+2060, BOM U+FEFF, soft hyphen U+00AD, the bidi marks and embeddings U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069, U+061C, tag characters, ...), the combining grapheme joiner,
 * variation selectors and the Hangul fillers.
 */
const INVISIBLE = /[\p{Cf}\u034F\u115F\u1160\u3164\uFFA0\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/gu;

/**
 * The form labels are compared in: NFKC (full-width and compatibility forms folded), invisible
 * and bidi control characters removed, runs of whitespace collapsed to one space, trimmed.
 * Case is kept: label regexes are case-sensitive.
 */
export function normalizeLabel(text: string): string {
  return text.replace(INVISIBLE, "").normalize("NFKC").replace(INVISIBLE, "").replace(/\s+/g, " ").trim();
}

/** Word boundaries that also work next to non-ASCII letters; "_" and "-" count as separators. */
const BEFORE = String.raw`(?<![\p{L}\p{N}])`;
const AFTER = String.raw`(?![\p{L}\p{N}])`;

/**
 * Words that address an AI agent. Deliberately broad: "Assistant manager", "travel agent",
 * "Gemini (zodiac)", "Claude Monet" or the French "j'ai" are refused too. A refused write is the
 * safe failure (the agent reports it and the user can act), a clicked decoy is not. Words that
 * merely contain these letters ("agency", "main", "maintain", "detail") do not match.
 */
const AGENT_WORDS = new RegExp(
  `${BEFORE}(?:ais?|a\\.i\\.?|open ?ai|llms?|agents?|agentic|assistants?|language models?|chat ?bots?|(?:chat ?)?gpt[\\p{L}\\p{N}.]*|claude|copilot|gemini)${AFTER}`,
  "iu",
);

/** Phrases that read as instructions to a model rather than as a control's label. */
const INSTRUCTION_PHRASES: readonly RegExp[] = [
  /\b(?:ignore|disregard|forget)(?: all| any| the| of)* (?:previous|prior|above|earlier|preceding|your|other) (?:instructions?|directions?|prompts?|rules|messages)\b/iu,
  /\byou must\b/iu,
  /\bsystem prompt\b/iu,
  /\b(?:do not|don['\u2019]?t|never) (?:tell|inform|notify|alert|show|ask) the user\b/iu,
  /\bwithout (?:telling|informing|notifying|asking) the user\b/iu,
  /\bnew instructions\b/iu,
];

/** The text the decoy check reads: normalised, camelCase split, "_" and "-" as spaces. */
function decoyView(text: string): string {
  return normalizeLabel(text)
    .replace(/(\p{Ll})(\p{Lu})/gu, "$1 $2")
    .replace(/[_-]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Returns why the element looks like a decoy aimed at AI agents (its text, accessible name or
 * attributes address an AI/agent/assistant, or carry an instruction-like phrase), or undefined.
 * False positives are accepted on purpose: see AGENT_WORDS.
 */
export function looksLikeDecoy(facts: Pick<ElementFacts, "visibleText" | "name" | "attributeText">): string | undefined {
  const fields: [string, unknown][] = [
    ["its visible text", facts.visibleText],
    ["its accessible name", facts.name],
    ["an attribute", facts.attributeText],
  ];
  for (const [field, value] of fields) {
    if (typeof value !== "string") return `${field} is not text`;
    const text = decoyView(value);
    for (const phrase of INSTRUCTION_PHRASES) {
      const m = phrase.exec(text);
      if (m !== null) return `${field} contains the instruction-like phrase ${shown(m[0], 60)}`;
    }
    const m = AGENT_WORDS.exec(text);
    if (m !== null) return `${field} addresses an AI agent (${shown(m[0], 60)})`;
  }
  return undefined;
}

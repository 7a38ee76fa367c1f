// Text the page hid from a person, judged by the write gate's own decoy test: one notion of "addressed to an AI
// agent" for clicks and for reading.
import { looksLikeDecoy } from "../policy/writePolicy.js";

/** True when the text addresses an AI agent / assistant or is worded as instructions to one. */
export function addressesAgents(text: string): boolean {
  return looksLikeDecoy({ visibleText: text, name: "", attributeText: "" }) !== undefined;
}

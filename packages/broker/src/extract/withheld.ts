// What a conversion withheld because the page does not show it to a person: counted, and tested for text that
// addresses AI agents (the write gate's decoy test), which the agent is told about but never shown.
import { addressesAgents } from "../gate/decoy.js";

export interface Withheld {
  /** Hidden elements (or elements whose own text is hidden) that held text. */
  elements: number;
  /** Characters of that text (whitespace collapsed). */
  chars: number;
  /** How many of those elements address an AI agent or read as instructions to one (the write gate's decoy test). */
  addressingAgents: number;
}

/** Withheld text looked at per element, and in all, for the AI-address test (a page can hide megabytes). */
const ADDRESS_CHECK_CHARS = 2_000;
const ADDRESS_CHECK_TOTAL = 200_000;

export class WithheldCount {
  elements = 0;
  chars = 0;
  addressingAgents = 0;
  #checked = 0;

  /** One withheld element's text; `beyond`: characters of it past `text` (a sample of a long text). */
  add(text: string, beyond = 0): void {
    const collapsed = text.replace(/\s+/g, " ").trim();
    if (collapsed === "" && beyond === 0) return;
    this.elements++;
    this.chars += collapsed.length + beyond;
    if (this.#checked >= ADDRESS_CHECK_TOTAL) return;
    const sample = collapsed.slice(0, ADDRESS_CHECK_CHARS);
    this.#checked += sample.length;
    if (addressesAgents(sample)) this.addressingAgents++;
  }

  value(): Withheld | undefined {
    return this.elements === 0 ? undefined : { elements: this.elements, chars: this.chars, addressingAgents: this.addressingAgents };
  }
}

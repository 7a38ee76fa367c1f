// The in-page script's API as the drivers call it, and the result and error values every call returns.
import type { ActEffects, ActionKind, ElementFacts, WireError } from "@tabrelay/protocol";
import type { ContentParams, ContentValue } from "./content.js";

export type InpageResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** With the action and its value, the facts also say what that action reaches (ElementFacts). */
export interface InspectArgs {
  ref: string;
  revision: string;
  action?: ActionKind;
  value?: string;
}

export interface InpageApi {
  version: number;
  snapshot(params: { revision: string; interactiveOnly: boolean; viewportOnly: boolean }): InpageResult<{ url: string; title: string; nodes: string; elapsedMs: number; capped?: boolean }>;
  inspect(params: InspectArgs): Promise<InpageResult<ElementFacts>>;
  act(params: InspectArgs & { action: ActionKind; expect?: string }): Promise<InpageResult<{ facts: ElementFacts; effects: ActEffects }>>;
  wait(params: { text?: string; textGone?: string; selector?: string; timeoutMs: number }): Promise<InpageResult<{ matched: string; elapsedMs: number }>>;
  rect(params: { ref: string; revision: string }): Promise<InpageResult<{ x: number; y: number; width: number; height: number }>>;
  /** For drivers without chrome.dom: hosts whose closed shadow root the driver should look up and adopt. */
  closedRootCandidates(): Element[] | undefined;
  adoptShadowRoots(hosts: unknown, roots: unknown[]): number;
  /** The document's HTML with what a person cannot see marked (content.ts). */
  content(params: ContentParams): InpageResult<ContentValue>;
}

export function fail(code: WireError["code"], message: string): { ok: false; error: WireError } {
  return { ok: false, error: { code, message } };
}

export class ActError extends Error {
  constructor(
    readonly code: WireError["code"],
    message: string,
  ) {
    super(message);
  }
}

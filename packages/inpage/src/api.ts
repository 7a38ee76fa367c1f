// The in-page script's API as the drivers call it (declared once, in the protocol), and the error helpers
// every call uses to answer.
import type { WireError } from "@tabrelay/protocol";

export type { InpageApi, InpageResult, InpageInspectArgs as InspectArgs } from "@tabrelay/protocol";

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

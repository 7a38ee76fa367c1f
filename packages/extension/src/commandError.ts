import type { ErrorCode } from "@tabrelay/protocol";

/** A command's failure with a wire error code: runCall sends it to the broker as it is. */
export class CommandError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** tabs.open: the tab it created before it failed, which the broker closes (WireError.tabId). */
    readonly tabId?: number,
  ) {
    super(message);
  }
}

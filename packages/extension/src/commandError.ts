import type { ErrorCode } from "@tabrelay/protocol";

/** A command's failure with a wire error code: runCall sends it to the broker as it is. */
export class CommandError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

import type { ErrorCode, Result, WireError } from "@tabrelay/protocol";

/** The one internal error class; tools throw it and the tool runner turns it into an isError result. */
export class TabrelayError extends Error {
  override readonly name = "TabrelayError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly rule?: string,
  ) {
    super(message);
  }

  static from(error: WireError): TabrelayError {
    return new TabrelayError(error.code, error.message);
  }
}

export function unwrap<T>(result: Result<T>): T {
  if (!result.ok) throw TabrelayError.from(result.error);
  return result.value;
}

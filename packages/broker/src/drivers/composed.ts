// Bridge methods the broker composes from a driver's own calls, once for both drivers: what a method does beyond
// the browser's mechanics lives here, and a driver only answers the primitive calls (driver.ts).
// - tabs.open: a tab whose open failed is closed again (the agent never learns its id).
import type { BridgeMethod, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import type { CallOptions } from "./driver.js";
import type { PendingCalls } from "./pendingCalls.js";

/** A driver's own call of a method, as the browser answers it (no composition). */
export type RawCall = <M extends BridgeMethod>(method: M, params: ParamsOf<M>, options?: CallOptions) => Promise<Result<ResultOf<M>>>;

type Composed = { [M in BridgeMethod]?: (params: ParamsOf<M>, options: CallOptions, raw: RawCall) => Promise<Result<ResultOf<M>>> };

const COMPOSED: Composed = {
  "tabs.open": async (params, options, raw) => {
    const opened = await raw("tabs.open", params, options);
    if (opened.ok || opened.error.tabId === undefined) return opened;
    const { tabId, ...error } = opened.error;
    await raw("tabs.close", { tabId });
    return { ok: false, error };
  },
};

/**
 * A driver's call(): a composed method runs here, as one call in flight of its own (its timeout and signal cover
 * every call it makes), over the driver's `raw` calls; any other method is the driver's raw call.
 */
export function serve<M extends BridgeMethod>(calls: PendingCalls, method: M, params: ParamsOf<M>, options: CallOptions & { timeoutMs: number }, raw: RawCall): Promise<Result<ResultOf<M>>> {
  const composed: Composed[M] = COMPOSED[method];
  return composed ? calls.run(method, options, () => composed(params, options, raw)) : raw(method, params, options);
}

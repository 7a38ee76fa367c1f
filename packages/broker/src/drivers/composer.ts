// What a composed bridge method (composed.ts, pageContent.ts) is handed: its driver's raw calls, and the parts of
// the driver it may use besides them. Apart from composed.ts so that the methods it composes from other modules
// (pageContent.ts) need not import the module that imports them.
import type { BridgeMethod, ParamsOf, Result, ResultOf } from "@tabrelay/protocol";
import type { CallOptions } from "./driver.js";
import type { DocumentStatus } from "./documentStatus.js";
import type { PendingCalls } from "./pendingCalls.js";
import type { TabView } from "./tabView.js";

/** A driver's own call of a method, as the browser answers it (no composition). */
export type RawCall = <M extends BridgeMethod>(method: M, params: ParamsOf<M>, options?: CallOptions) => Promise<Result<ResultOf<M>>>;

/** What a composed method may use of its driver besides its raw calls. */
export interface Composer {
  readonly calls: PendingCalls;
  /** Fed with the driver's events (observe) before the broker sees them. */
  readonly status: DocumentStatus;
  /** Fed likewise, and with the answers of tab calls: list_tabs is answered from it when the browser keeps it. */
  readonly tabView: TabView;
}

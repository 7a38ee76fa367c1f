// What one call's audit record says, collected as the call runs, and the record a write begins before its action is
// sent. The runner owns it (tools/runner.ts) and writes the record from it; a handler adds facts (ctx.record.note)
// and says when its action goes (ctx.record.dispatching); the gate's stage notes the tab and URL it hands over.

/** What the audit record of this call should say beyond tool, decision and duration. */
export interface AuditFacts {
  tab?: number;
  url?: string;
  target?: string;
  rule?: string;
  /** A code-mode run's id (browser_run's own record; its commands get it from the runner). */
  run?: string;
  /** What else the record says, as JSON (a run's program hash, status and usage). */
  detail?: string;
}

export class CallRecord {
  readonly facts: AuditFacts = {};
  readonly #beforeDispatch: (() => void) | undefined;
  #dispatched = false;

  /** `beforeDispatch` runs (and may throw, refusing the action) just before the action is sent: a write's begun record. */
  constructor(beforeDispatch?: () => void) {
    this.#beforeDispatch = beforeDispatch;
  }

  note(facts: AuditFacts): this {
    Object.assign(this.facts, facts);
    return this;
  }

  /** Right before the action is sent to the browser: a lost answer now means the outcome is unknown. Throws to refuse it. */
  dispatching(): void {
    this.#beforeDispatch?.();
    this.#dispatched = true;
  }

  get dispatched(): boolean {
    return this.#dispatched;
  }
}

// The broker is long-lived and mostly idle, but converting a page builds a whole DOM (tens of thousands of
// short-lived objects for a news page) that outlives the young generation and is garbage the moment the
// Markdown exists. Left alone, V8 lets that garbage pile up to its next old-generation limit, so a burst of
// reads leaves the process 10-20 MiB larger than it needs to be until the memory reducer runs seconds later.
//
// When the process runs with --expose-gc (bin/tabrelay.js sets it), heavy work asks for one background major
// collection right after it finishes. Without the flag (the broker embedded in tests, say) this does nothing.

type GcFunction = (options: { type: "major"; execution: "async" }) => unknown;

let scheduled = false;

/** After a large transient allocation: one asynchronous major GC on the next turn of the event loop. */
export function collectAfterHeavyWork(): void {
  const gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== "function" || scheduled) return;
  scheduled = true;
  // setImmediate is Node's; only Node has --expose-gc, but the module is the core's and must load anywhere.
  const later = typeof setImmediate === "function" ? setImmediate : (run: () => void) => setTimeout(run, 0);
  later(() => {
    scheduled = false;
    gc({ type: "major", execution: "async" });
  });
}

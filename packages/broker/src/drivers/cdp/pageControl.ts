// What code mode asks of a tab beyond the in-page script, over CDP: its viewport size (Emulation's device metrics
// override of that tab alone) and an expression evaluated in the top document's main world (Runtime.evaluate, which
// needs no Runtime.enable). The extension does the same with chrome.windows and chrome.scripting (extension/src/pageControl.ts).
import { EVAL_MAX_CHARS, type ResultOf } from "@tabrelay/protocol";
import { z } from "zod";
import { type CdpCore, DriverError, type Tab } from "./cdpCore.js";
import { checkScriptable } from "./inpage.js";

const size = z.object({ width: z.number(), height: z.number() });

export async function setViewport(core: CdpCore, tab: Tab & { sessionId: string }, width: number, height: number): Promise<ResultOf<"tabs.viewport">> {
  await core.must("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 0, mobile: false }, tab.sessionId);
  const measured = await core.must("Runtime.evaluate", { expression: "({ width: innerWidth, height: innerHeight })", returnByValue: true }, tab.sessionId);
  const parsed = size.safeParse(measured.result.value);
  if (!parsed.success) throw new DriverError("internal", "the page did not report its viewport size");
  return parsed.data;
}

/**
 * The page's own realm runs the expression (indirect eval: a script, its completion value), so the page's code can
 * see it and change what it answers; the answer is JSON text the broker parses as untrusted data.
 */
export const EVAL_WRAPPER = `async (expression, max) => {
  const value = await (0, eval)(expression);
  const kind = typeof value;
  if (value === undefined || kind === "function" || kind === "symbol" || kind === "bigint") return { unserializable: value === undefined ? "undefined" : kind };
  let json;
  try { json = JSON.stringify(value); } catch (error) { return { unserializable: "a value JSON cannot hold (" + String(error && error.message || error).slice(0, 200) + ")" }; }
  if (typeof json !== "string") return { unserializable: "a value JSON cannot hold" };
  if (json.length > max) return { unserializable: "JSON of " + json.length + " characters, over the " + max + " the answer may hold" };
  return { json };
}`;

const evalAnswer = z.object({ json: z.string().optional(), unserializable: z.string().optional() }).strict();

export async function evaluate(core: CdpCore, tab: Tab & { sessionId: string }, expression: string, timeoutMs: number): Promise<ResultOf<"page.eval">> {
  checkScriptable(tab);
  const call = `(${EVAL_WRAPPER})(${JSON.stringify(expression)}, ${EVAL_MAX_CHARS})`;
  const answer = await core.must(
    "Runtime.evaluate",
    { expression: call, awaitPromise: true, returnByValue: true, timeout: timeoutMs, userGesture: false },
    tab.sessionId,
    { timeoutMs: timeoutMs + 5000 },
  );
  if (answer.exceptionDetails) {
    const message = answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text;
    throw new DriverError("not_actionable", `the expression threw in the page: ${String(message).split("\n")[0]?.slice(0, 500)}`);
  }
  const parsed = evalAnswer.safeParse(answer.result.value);
  if (!parsed.success) throw new DriverError("internal", "the page's answer to eval was not understood");
  return {
    ...(parsed.data.json !== undefined ? { json: parsed.data.json } : {}),
    ...(parsed.data.unserializable !== undefined ? { unserializable: parsed.data.unserializable } : {}),
  };
}

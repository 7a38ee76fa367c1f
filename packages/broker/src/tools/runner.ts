import { ZodError } from "zod";
import { TabrelayError } from "../util/errors.js";
import { explainByDenial } from "./landing.js";
import { ToolResponse, type RenderedResult } from "./response.js";
import type { Tool, ToolContext } from "./tool.js";

const REFUSALS = new Set(["policy_denied", "write_denied"]);
const LOST = new Set(["browser_disconnected", "timeout"]);

/**
 * Runs one tool call; never throws. Failures become isError results naming the cause and the next step.
 * Every call leaves one audit record.
 */
export async function runTool(tool: Tool, ctx: ToolContext, args: unknown, signal: AbortSignal): Promise<RenderedResult> {
  const started = Date.now();
  const selector = args && typeof args === "object" ? Reflect.get(args, "browser") : undefined;
  const picked = ctx.registry.pick(typeof selector === "string" ? selector : undefined);
  const browserHint = picked.ok ? `${picked.value.info.label} (${picked.value.info.browserId})` : undefined;
  const response = new ToolResponse([ctx.config.mcpToken, ctx.config.pairingToken]);
  let result: RenderedResult;
  let code: string | undefined;
  let rule: string | undefined;
  try {
    await tool.run(ctx, args, response, signal);
    result = response.render();
  } catch (thrown) {
    // A page that went somewhere the read policy refuses while the call ran (a meta refresh, a script) leaves
    // the tab on an error page or blank: the call failed because of that, and says so.
    const error = thrown instanceof TabrelayError && picked.ok ? (explainByDenial(ctx, picked.value, response.auditFacts.tab, thrown) ?? thrown) : thrown;
    if (error instanceof TabrelayError) {
      code = error.code;
      rule = error.rule;
      result = response.renderError(error.code, error.message, error.rule);
    } else if (error instanceof ZodError) {
      code = "invalid_params";
      const detail = error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ");
      result = response.renderError("invalid_params", `${detail}; fix the arguments and call ${tool.name} again`);
    } else {
      code = "internal";
      ctx.log.error(`tool ${tool.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      result = response.renderError("internal", `tabrelay hit an unexpected error in ${tool.name}; retry once, and report it if it persists`);
    }
  }
  const facts = response.auditFacts;
  const decision =
    code === undefined ? "allowed" : REFUSALS.has(code) ? "refused" : response.dispatched && LOST.has(code) ? "outcome_unknown" : "failed";
  if (decision === "outcome_unknown") {
    result = {
      isError: true,
      text: `${result.text}\nThe action had been sent to the browser when it stopped answering, so whether it happened is unknown; it was not retried. Take a snapshot to see the page before doing anything else.`,
    };
  }
  ctx.audit.record({
    time: started,
    tool: tool.name,
    decision,
    durationMs: Date.now() - started,
    ...(browserHint ? { browser: browserHint } : {}),
    ...(facts.tab !== undefined ? { tab: facts.tab } : {}),
    ...(facts.url ? { origin: originOf(facts.url) } : {}),
    ...(facts.target ? { target: facts.target } : {}),
    ...((rule ?? facts.rule) ? { rule: rule ?? facts.rule } : {}),
    ...(code ? { code } : {}),
  });
  return result;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url.slice(0, 100);
  }
}

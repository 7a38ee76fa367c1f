import type { AuditRecord } from "../audit/auditLog.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import type { Caller } from "../gate/decisions.js";
import { explainByDenial } from "../gate/enforce.js";
import { leasingDriver, tabLeases } from "../gate/leases.js";
import { ToolResponse, type AuditFacts, type RenderedResult } from "./response.js";
import type { CallContext, Tool, ToolContext } from "./tool.js";

/** How a call is made: a command of a code-mode program carries the program's run id into its audit record. */
export interface RunOptions {
  run?: string;
}

const REFUSALS = new Set(["policy_denied", "write_denied", "audit_unavailable", "tab_leased"]);
const LOST = new Set(["browser_disconnected", "timeout"]);

/**
 * Runs one tool call; never throws. Failures become isError results naming the cause and the next step; arguments
 * the tool's schema refuses are one of them (invalid_params, from tools/args.ts).
 * Every call leaves one audit record, with the session's client name. A write tool's is written before the action is
 * sent (outcome_unknown) and completed after; when it cannot be written the action is refused with audit_unavailable
 * and never sent.
 * `session` is the MCP session the call comes from: its tabs are leased to it, and a tab another session holds is
 * refused (tab_leased) before the tool's handler runs.
 */
export async function runTool(tool: Tool, ctx: ToolContext, args: unknown, signal: AbortSignal, session?: Caller, options: RunOptions = {}): Promise<RenderedResult> {
  const started = Date.now();
  const selector = args && typeof args === "object" ? Reflect.get(args, "browser") : undefined;
  const picked = ctx.registry.pick(typeof selector === "string" ? selector : undefined);
  const browserHint = picked.ok ? `${picked.value.info.label} (${picked.value.info.browserId})` : undefined;
  const response = new ToolResponse(ctx.secrets);
  const leases = tabLeases(ctx.registry, ctx.config);
  const browser = picked.ok ? leasingDriver(picked.value, leases, session) : undefined;
  const callCtx: CallContext = {
    ...ctx,
    ...(session ? { session } : {}),
    browser: () => browser ?? unwrap(picked),
    leases: {
      use(tabId) {
        response.audit({ tab: tabId });
        const verdict = leases.use(unwrap(picked).info.browserId, tabId, session, Date.now());
        if (!verdict.ok) throw new TabrelayError(verdict.code, verdict.message, verdict.rule);
      },
      keep: (tabId) => leases.keep(unwrap(picked).info.browserId, tabId),
      visible: (tabs, askedAt) => leases.visible(unwrap(picked).info.browserId, tabs, session, Date.now(), askedAt),
    },
  };
  const client = { ...(session ? { client: session.client } : {}), ...(options.run ? { run: options.run } : {}) };
  let result: RenderedResult;
  let code: string | undefined;
  let rule: string | undefined;
  let begun: number | undefined;
  if (tool.kind === "write") {
    response.beforeDispatch(() => {
      const pre = ctx.audit.begin({ time: started, tool: tool.name, ...client, ...factFields(browserHint, response.auditFacts) });
      if (!pre.ok) {
        throw new TabrelayError(
          "audit_unavailable",
          `the audit log cannot be written (${pre.error}); tabrelay records every write before it runs, so this ${tool.name} was not sent to the browser. Tell the user to free disk space or fix the data dir (GET /health shows the audit status); reads still work; retry once /health says the audit log is ok`,
        );
      }
      begun = pre.id;
    });
  }
  try {
    await tool.run(callCtx, args, response, signal);
    result = response.render();
  } catch (thrown) {
    // A page that went somewhere the read policy refuses while the call ran (a meta refresh, a script) leaves
    // the tab on an error page or blank: the call failed because of that, and says so.
    const error = thrown instanceof TabrelayError && picked.ok ? (explainByDenial(ctx, picked.value, response.auditFacts.tab, thrown) ?? thrown) : thrown;
    if (error instanceof TabrelayError) {
      code = error.code;
      rule = error.rule;
      result = response.renderError(error.code, error.message, error.rule);
    } else {
      code = "internal";
      ctx.log.error(`tool ${tool.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      result = response.renderError("internal", `tabrelay hit an unexpected error in ${tool.name}; retry once, and report it if it persists`);
    }
  }
  // A call that ran to its end with a failed outcome (a program that threw) is audited with its code.
  if (code === undefined && result.isError && result.error) code = result.error.code;
  const facts = response.auditFacts;
  const decision =
    code === undefined ? "allowed" : REFUSALS.has(code) ? "refused" : response.dispatched && LOST.has(code) ? "outcome_unknown" : "failed";
  if (decision === "outcome_unknown") {
    result = {
      isError: true,
      text: `${result.text}\nThe action had been sent to the browser when it stopped answering, so whether it happened is unknown; it was not retried. Take a snapshot to see the page before doing anything else.`,
    };
  }
  const record: AuditRecord = {
    time: started,
    tool: tool.name,
    ...client,
    decision,
    durationMs: Date.now() - started,
    ...factFields(browserHint, { ...facts, ...(rule ? { rule } : {}) }),
    ...(code ? { code } : {}),
  };
  if (begun === undefined) ctx.audit.record(record);
  else ctx.audit.complete(begun, record);
  return result;
}

function factFields(browser: string | undefined, facts: AuditFacts) {
  return {
    ...(browser ? { browser } : {}),
    ...(facts.tab !== undefined ? { tab: facts.tab } : {}),
    ...(facts.url ? { origin: originOf(facts.url) } : {}),
    ...(facts.target ? { target: facts.target } : {}),
    ...(facts.rule ? { rule: facts.rule } : {}),
    ...(facts.run ? { run: facts.run } : {}),
    ...(facts.detail ? { detail: facts.detail } : {}),
  };
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url.slice(0, 100);
  }
}

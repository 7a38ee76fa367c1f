import type { AuditRecord } from "../audit/auditLog.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import type { Caller } from "../gate/decisions.js";
import { explainByDenial } from "../gate/enforce.js";
import { leasingDriver, tabLeases } from "../gate/leases.js";
import { callGate } from "../gate/stage.js";
import { CallRecord, type AuditFacts } from "./callRecord.js";
import { ToolResponse, type RenderedResult } from "./response.js";
import type { CallContext, Tool, ToolContext } from "./tool.js";
import { DEFAULT_PRINCIPAL, DEFAULT_USER_ID, type Principal } from "../users/principal.js";
import { configFor } from "../config/userPolicies.js";
import { ambiguousLabel, locate, type ForwardedCall } from "./clusterLink.js";
import { ambiguousBrowser, unknownBrowser } from "../drivers/registry.js";
import { IDEMPOTENCY_FIELD, keyOf, type CallOutcome, type Idempotency, type KeyedAnswer } from "./idempotency.js";
import type { ErrorCode } from "@tabrelay/protocol";

/** How a call is made: a command of a code-mode program carries the program's run id into its audit record. */
export interface RunOptions {
  run?: string;
  /** Who calls when there is no MCP session (a call forwarded from another broker, in-process tools). */
  user?: Principal;
  /** Told while the call waits for the user (policy.ask): the MCP adapter sends progress notifications. */
  progress?: Progress;
  /** The agent's client, where it takes elicitations: one more place to ask the user (policy.ask.elicit). */
  elicit?: Elicit;
}

/** An elicitation through the call's MCP client: the user's answer there, or undefined when dismissed. */
export type Elicit = (message: string, signal: AbortSignal) => Promise<"once" | "deny" | undefined>;

/** A call's progress, as MCP's notifications/progress carries it. */
export type Progress = (progress: number, total: number, message: string) => void;

const REFUSALS = new Set(["policy_denied", "write_denied", "audit_unavailable", "tab_leased", "ask_timeout", "tab_taken_back"]);
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
export async function runTool(
  tool: Tool,
  ctx: ToolContext,
  args: unknown,
  signal: AbortSignal,
  session?: Caller,
  options: RunOptions = {},
): Promise<RenderedResult> {
  const key = IDEMPOTENCY_FIELD in tool.input.shape ? keyOf(args) : undefined;
  if (key === undefined) return (await runWhere(tool, ctx, args, signal, session, options)).result;
  return runKeyed(key, ctx.idempotency, tool, ctx, args, signal, session, options);
}

/**
 * A call forwarded here by another broker of the cluster (cluster/cluster.ts) for a browser of this broker's: run
 * and audited here, as if it had come in here, with its caller's session and user.
 */
export function runForwarded(tool: Tool, ctx: ToolContext, call: ForwardedCall, signal: AbortSignal): Promise<CallOutcome> {
  const session = call.session ? { ...call.session, user: call.user } : undefined;
  return runOnce(tool, ctx, call.args, signal, session, { ...(call.run ? { run: call.run } : {}), user: call.user });
}

/** Here, or on the broker of the cluster holding the call's browser (which runs and audits it). */
function runWhere(tool: Tool, ctx: ToolContext, args: unknown, signal: AbortSignal, session: Caller | undefined, options: RunOptions): Promise<CallOutcome> {
  const cluster = ctx.cluster;
  if (cluster && tool.broker) {
    const user = session?.user ?? options.user ?? DEFAULT_PRINCIPAL;
    return cluster.forward(
      tool.broker,
      {
        tool: tool.name,
        args,
        user,
        ...(session ? { session: { session: session.session, client: session.client } } : {}),
        ...(options.run ? { run: options.run } : {}),
      },
      signal,
    );
  }
  if (cluster && "browser" in tool.input.shape) {
    const selector = args && typeof args === "object" ? Reflect.get(args, "browser") : undefined;
    const user = session?.user ?? options.user ?? DEFAULT_PRINCIPAL;
    // browser_run's "new" starts a browser here.
    const where =
      selector === "new" || (selector !== undefined && typeof selector !== "string")
        ? undefined
        : locate(
            ctx.registry.list(user.user).map((b) => b.info),
            cluster.remoteBrowsers(user.user),
            selector,
          );
    if (where) {
      const forwarded: ForwardedCall = {
        tool: tool.name,
        args,
        user,
        ...(session ? { session: { session: session.session, client: session.client } } : {}),
        ...(options.run ? { run: options.run } : {}),
      };
      return cluster.forward(where.broker, forwarded, signal, where.browserId);
    }
  }
  return runOnce(tool, ctx, args, signal, session, options);
}

/**
 * A write with an idempotency key (tools/idempotency.ts): runs once, or answers with the first call's outcome, an
 * idempotency_conflict, or a lost first call; each answer leaves its own audit record.
 */
async function runKeyed(
  key: string,
  keys: Idempotency | undefined,
  tool: Tool,
  ctx: ToolContext,
  args: unknown,
  signal: AbortSignal,
  session: Caller | undefined,
  options: RunOptions,
): Promise<RenderedResult> {
  const started = Date.now();
  const user = session?.user ?? options.user ?? DEFAULT_PRINCIPAL;
  const tab: unknown = args && typeof args === "object" ? Reflect.get(args, "tab") : undefined;
  const who = { ...callerFields(user, session, options), ...(typeof tab === "number" ? { tab } : {}) };
  const fail = (code: ErrorCode, message: string, decision: AuditRecord["decision"]): RenderedResult => {
    ctx.audit.record({
      time: started,
      tool: tool.name,
      ...who,
      decision,
      durationMs: Date.now() - started,
      code,
      detail: JSON.stringify({ idempotency_key: key }),
    });
    return new ToolResponse(ctx.secrets).renderError(code, message);
  };
  // A key nobody keeps would promise what is not done: refused (the stateless Worker keeps none).
  if (!keys)
    return fail(
      "invalid_params",
      `this server keeps no idempotency keys (it has no store), so ${tool.name} was not run; call it without idempotency_key`,
      "refused",
    );
  let answer: KeyedAnswer;
  try {
    answer = await keys.once(user.user, { session: session?.session ?? "", client: session?.client ?? who.client ?? "" }, key, tool.name, args, signal, () =>
      runWhere(tool, ctx, args, signal, session, options),
    );
  } catch (error) {
    ctx.log.error(`idempotency store: ${error instanceof Error ? error.message : String(error)}`);
    return fail(
      "internal",
      `the store that remembers idempotency keys could not be reached, so this ${tool.name} was not sent to the browser; retry with the same key once GET /health is ok`,
      "failed",
    );
  }
  const first = (at: number) => new Date(at).toISOString();
  switch (answer.kind) {
    case "ran":
      return answer.outcome.result;
    case "foreign":
      return fail(
        "idempotency_conflict",
        `this idempotency_key belongs to another session (client ${JSON.stringify(answer.client)}, first used at ${first(answer.firstAt)}); nothing was run, and that call's outcome is that session's. Use a key of your own (a new one) for this action`,
        "refused",
      );
    case "replayed": {
      ctx.audit.record({
        time: started,
        tool: tool.name,
        ...who,
        decision: "allowed",
        durationMs: Date.now() - started,
        detail: JSON.stringify({ idempotency_key: key, replay_of: first(answer.firstAt), ...(answer.unknown ? { outcome: "unknown" } : {}) }),
      });
      const said = answer.unknown
        ? `(A retry: the first call with this idempotency_key, at ${first(answer.firstAt)}, ended with its outcome unknown, as above; it is not run again. Take a snapshot to see the page; use a new key to act again.)`
        : `(A retry: this is the outcome of the first call with this idempotency_key, at ${first(answer.firstAt)}; nothing was sent to the browser now.)`;
      return { ...answer.result, text: `${answer.result.text}\n${said}` };
    }
    case "conflict":
      return fail(
        "idempotency_conflict",
        `this idempotency_key was first used at ${first(answer.firstAt)} for ${answer.firstTool === tool.name ? `${tool.name} with other arguments` : answer.firstTool}; nothing was run. Use a new key for a new action, or resend the first call's exact arguments to get its outcome`,
        "refused",
      );
    case "lost":
      return fail(
        "browser_disconnected",
        `the first call with this idempotency_key (at ${first(answer.firstAt)}) ran on a broker that stopped before it answered, so whether it happened is unknown; it is not run again. Take a snapshot to see the page; use a new key to act again`,
        "outcome_unknown",
      );
    case "cancelled":
      return fail(
        "cancelled",
        "the call was cancelled while the first call with this idempotency_key still ran; nothing ran for this one: retry with the same key for the first call's outcome",
        "failed",
      );
  }
}

async function runOnce(tool: Tool, ctx: ToolContext, args: unknown, signal: AbortSignal, session?: Caller, options: RunOptions = {}): Promise<CallOutcome> {
  const started = Date.now();
  const selector = args && typeof args === "object" ? Reflect.get(args, "browser") : undefined;
  const user = session?.user ?? options.user ?? DEFAULT_PRINCIPAL;
  let picked = ctx.registry.pick(typeof selector === "string" ? selector : undefined, user.user);
  // The browser `tabrelay start` launched is still on its way: the call waits for it rather than fail.
  if (!picked.ok && picked.error.code === "not_connected") {
    await ctx.registry.arrival(signal);
    picked = ctx.registry.pick(typeof selector === "string" ? selector : undefined, user.user);
  }
  // In a cluster no browser here is not no browser: with the user's browsers on other brokers, a selector that
  // matched none of them (runWhere) is unknown_browser, as on the broker holding them.
  if (
    !picked.ok &&
    picked.error.code === "not_connected" &&
    typeof selector === "string" &&
    selector &&
    (ctx.cluster?.remoteBrowsers(user.user).length ?? 0) > 0
  )
    picked = unknownBrowser(selector);
  // A label carried by browsers on several brokers names none of them, here as on every broker.
  if (
    picked.ok &&
    ctx.cluster &&
    typeof selector === "string" &&
    ambiguousLabel(
      ctx.registry.list(user.user).map((b) => b.info),
      ctx.cluster.remoteBrowsers(user.user),
      selector,
    )
  )
    picked = ambiguousBrowser(selector);
  const browserHint = picked.ok ? `${picked.value.info.label} (${picked.value.info.browserId})` : undefined;
  const response = new ToolResponse(ctx.secrets);
  const client = callerFields(user, session, options);
  // A write's record is begun just before its action is sent, with what the call knew then; without it, no action.
  let begun: number | undefined;
  const record = new CallRecord(
    tool.kind === "write"
      ? () => {
          const pre = ctx.audit.begin({ time: started, tool: tool.name, ...client, ...factFields(browserHint, record.facts) });
          if (!pre.ok) {
            throw new TabrelayError(
              "audit_unavailable",
              `the audit log cannot be written (${pre.error}); tabrelay records every write before it runs, so this ${tool.name} was not sent to the browser. Tell the user to free disk space or fix the data dir (GET /health shows the audit status); reads still work; retry once /health says the audit log is ok`,
            );
          }
          begun = pre.id;
        }
      : undefined,
  );
  const leases = tabLeases(ctx.registry, ctx.config);
  const browser = picked.ok ? leasingDriver(picked.value, leases, session) : undefined;
  const useTab = (browserId: string, tabId: number): void => {
    record.note({ tab: tabId });
    const verdict = leases.use(browserId, tabId, session, Date.now());
    if (!verdict.ok) throw new TabrelayError(verdict.code, verdict.message, verdict.rule);
  };
  // The user's own policy where config `users:` gives them one (config/userPolicies.ts); the base otherwise.
  const config = configFor(ctx.config, user.name);
  const callBrowser = () => browser ?? unwrap(picked);
  // The user is asked only for a call an agent made through a session (its client named in the question).
  const asking = session
    ? {
        user,
        client: session.client,
        signal,
        ...(options.progress ? { waiting: (waited: number, total: number, message: string) => options.progress?.(waited, total, message) } : {}),
        ...(options.elicit ? { elicit: options.elicit } : {}),
      }
    : undefined;
  const gate = callGate({ ctx: { ...ctx, config }, browser: callBrowser, useTab, facts: (f) => record.note(f), ...(asking ? { asking } : {}) });
  const { registry: _registry, denials: _denials, ...services } = ctx;
  const callCtx: CallContext = {
    ...services,
    config,
    ...(session ? { session } : {}),
    user,
    gate,
    record,
    browser: callBrowser,
    browsers: () => ctx.registry.list(user.user).map((b) => b.info),
    runTool: (other, otherArgs, otherSignal, otherOptions = {}) =>
      runTool(other, ctx, otherArgs, otherSignal, session, {
        ...otherOptions,
        user,
        ...(options.progress ? { progress: options.progress } : {}),
        ...(options.elicit ? { elicit: options.elicit } : {}),
      }),
    leases: {
      use: (tabId) => useTab(unwrap(picked).info.browserId, tabId),
      useOn: useTab,
      keep: (tabId) => leases.keep(unwrap(picked).info.browserId, tabId),
      visible: (tabs, askedAt) => leases.visible(unwrap(picked).info.browserId, tabs, session, Date.now(), askedAt),
    },
  };
  let result: RenderedResult;
  let code: string | undefined;
  let rule: string | undefined;
  try {
    await tool.run(callCtx, args, response, signal);
    result = response.render();
  } catch (thrown) {
    // A page that went somewhere the read policy refuses while the call ran (a meta refresh, a script) leaves
    // the tab on an error page or blank: the call failed because of that, and says so.
    const error =
      thrown instanceof TabrelayError && picked.ok ? (explainByDenial({ ...ctx, config }, picked.value, record.facts.tab, thrown) ?? thrown) : thrown;
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
  const facts = record.facts;
  const decision = code === undefined ? "allowed" : REFUSALS.has(code) ? "refused" : record.dispatched && LOST.has(code) ? "outcome_unknown" : "failed";
  if (decision === "outcome_unknown") {
    result = {
      isError: true,
      text: `${result.text}\nThe action had been sent to the browser when it stopped answering, so whether it happened is unknown; it was not retried. Take a snapshot to see the page before doing anything else.`,
    };
  }
  const written: AuditRecord = {
    time: started,
    tool: tool.name,
    ...client,
    decision,
    durationMs: Date.now() - started,
    ...factFields(browserHint, { ...facts, ...(rule ? { rule } : {}) }),
    ...(code ? { code } : {}),
  };
  if (begun === undefined) {
    if (ctx.audit.recordSoon) ctx.audit.recordSoon(written);
    else ctx.audit.record(written);
  } else ctx.audit.complete(begun, written);
  return { result, dispatched: record.dispatched, unknown: decision === "outcome_unknown" };
}

/** Who made a call, as its audit record says it. The implicit user's records name no user: a single-user broker's log reads as it always did. */
function callerFields(user: Principal, session: Caller | undefined, options: RunOptions) {
  return {
    ...(user.user !== DEFAULT_USER_ID ? { user: user.name } : {}),
    ...(session ? { client: session.client } : {}),
    ...(options.run ? { run: options.run } : {}),
  };
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

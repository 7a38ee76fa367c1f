// In the broker's own process: each tool call goes through the broker's runner (runTool) with its ToolContext, as an
// MCP call does once the adapter has it: the same strict arguments, gate, leases and audit. Only the MCP hop is skipped.
import { randomBytes } from "node:crypto";
import {
  advertisedInputSchema,
  endSessionLeases,
  runTool,
  toolInstructions,
  tools as brokerTools,
  toolsFor,
  type Broker,
  type Caller,
  type Principal,
  type Tool,
} from "@tabrelay/broker";
import { aiTool, pick, type TabrelayTool, type TabrelayToolResult, type ToolFilter } from "./shape.js";

/**
 * The client name the audit log and the dashboard show for agent-tools' agents (unless `client` says otherwise).
 *
 * @example
 * ```ts
 * const mine = broker.audit.list().filter((r) => r.client === AGENT_TOOLS_CLIENT);
 * ```
 */
export const AGENT_TOOLS_CLIENT = "agent-tools";

/**
 * Options of tabrelayTools.
 *
 * @example
 * ```ts
 * const options: TabrelayToolsOptions = { broker, session: "nightly-report", client: "report-bot", except: ["screenshot"] };
 * ```
 */
export interface TabrelayToolsOptions extends ToolFilter {
  /** A broker started in this process (`new Broker({ config })`, listening or not). */
  broker: Broker;
  /**
   * The agent's session id: the tabs it opens are leased to it (another session's tabs are tab_leased to it), and
   * endTabrelaySession(broker, session) ends it. Default: a fresh id per call of tabrelayTools.
   */
  session?: string;
  /** The client name in audit records and on the dashboard. Default "agent-tools". */
  client?: string;
  /** The user the tools act for, on a team's broker: they reach only that user's browsers. Default: the broker's implicit user. */
  user?: Principal;
}

/**
 * tabrelay's tools (the plain tools, and code mode's browser_run and browser_api where the broker has them) for an
 * agent framework in the broker's process, as tool objects the Vercel AI SDK takes. Each call runs through the
 * broker's runner: the same strict arguments, read and write policy, tab leases and audit log as an MCP call.
 * A failed call is returned to the model as its error text (`write_denied: ... Next: ...`), not thrown.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { tabrelayTools, tabrelayInstructions } from "@tabrelay/agent-tools";
 *
 * const tools = tabrelayTools({ broker, except: ["screenshot"] });
 * const { text } = await generateText({
 *   model,
 *   system: tabrelayInstructions(),
 *   tools,
 *   stopWhen: stepCountIs(10),
 *   prompt: "Open http://localhost:3000 and tell me its title",
 * });
 * ```
 */
export function tabrelayTools(options: TabrelayToolsOptions): Record<string, TabrelayTool> {
  const { broker } = options;
  const caller: Caller = {
    session: options.session ?? `agent-tools-${randomBytes(8).toString("hex")}`,
    client: options.client ?? AGENT_TOOLS_CLIENT,
    ...(options.user ? { user: options.user } : {}),
  };
  return Object.fromEntries(
    // The tools this broker lists over MCP: with a browser source configured, browser_start and the rest too.
    pick(toolsFor(broker.config), options).map((t) => [
      t.name,
      aiTool({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: advertisedInputSchema(t),
        call: (args, signal) => callInProcess(broker, t, args, signal, caller),
      }),
    ]),
  );
}

/**
 * What the broker's MCP server tells every client once (InitializeResult.instructions): page content is untrusted,
 * how refs and revisions work, which tools write, and every error code with its meaning and next step. Tool
 * descriptions rely on it; give it to the model as (part of) the system prompt.
 *
 * @example
 * ```ts
 * await generateText({ model, system: `${tabrelayInstructions()}\n\nYou shop carefully.`, tools: tabrelayTools({ broker }), prompt });
 * ```
 */
export function tabrelayInstructions(filter: ToolFilter = {}): string {
  return toolInstructions(pick(brokerTools, filter));
}

/**
 * Ends an in-process agent session, as an MCP session's end does: its leases end and the tabs it opened and still
 * holds (not kept with open_tab's keep) are closed. Pass the `session` given to tabrelayTools.
 *
 * @example
 * ```ts
 * const tools = tabrelayTools({ broker, session: "nightly-report" });
 * try { await generateText({ model, tools, prompt }); } finally { endTabrelaySession(broker, "nightly-report"); }
 * ```
 */
export function endTabrelaySession(broker: Broker, session: string): void {
  endSessionLeases(broker.context, session);
}

/**
 * One call through the broker's runner. An abort (generateText's abortSignal) ends the wait at once, as the MCP
 * client's cancel does: the SDK stops; the broker's call runs to its end (tools other than browser_run take no
 * signal, and an action already sent cannot be called back) and leaves its audit record.
 */
async function callInProcess(
  broker: Broker,
  t: Tool,
  args: Record<string, unknown>,
  signal: AbortSignal | undefined,
  caller: Caller,
): Promise<TabrelayToolResult> {
  if (signal?.aborted) throw signal.reason;
  const running = runTool(t, broker.context, args, signal ?? new AbortController().signal, caller);
  const result = signal ? await untilAborted(running, signal) : await running;
  return {
    text: result.text,
    isError: result.isError,
    ...(result.error ? { code: result.error.code } : result.isError ? codeOf(result.text) : {}),
    ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
    ...(result.images?.length ? { images: result.images } : {}),
  };
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** The code a failure's text starts with (`stale_ref: ...`). */
export function codeOf(text: string): { code?: string } {
  const code = /^([a-z][a-z_]*): /.exec(text)?.[1];
  return code ? { code } : {};
}

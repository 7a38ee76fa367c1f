// Code mode's two tools, browser_run (a program in the sandbox, each of its commands a tool call) and browser_api
// (the browse API's declarations and guide): with code mode, which they are the face of; the tool table lists them.
import { z } from "zod";
import { BUDGETS, runBudgets } from "../config/codeMode.js";
import type { BrokerConfig } from "../config/config.js";
import { randomHex } from "../util/bytes.js";
import { TabrelayError } from "../util/errors.js";
import { sha256Hex } from "../util/sha256.js";
import { boundRunOutput } from "../tools/runResult.js";
import { sessionsOf } from "../tools/sessions.js";
import { defineTool, fields } from "../tools/tool.js";
import { apiCompact, apiDeclarations, apiGuide } from "./apiDoc.js";
import { COMMANDS } from "./commands.js";
import { allowedCommands, runProgram } from "./run.js";

/** The .d.ts and the guide of the browse API under this broker's config (browser_api, GET /api.d.ts and /api.md). */
export function apiDocs(config: BrokerConfig): { declarations: string; guide: string } {
  const commands = allowedCommands(config);
  return { declarations: apiDeclarations(commands), guide: apiGuide(commands, config.codeMode) };
}

const PROGRAM_MAX = 200_000;

export const browserApi = defineTool({
  name: "browser_api",
  title: "Code mode API",
  description: "The browse API of browser_run programs: TypeScript declarations and a short guide (refs, budgets, errors, an example).",
  input: {},
  kind: "read",
  errors: [],
  async handler(ctx, _params, response) {
    const { declarations, guide } = apiDocs(ctx.config);
    response.line(guide).line("## Declarations (api.d.ts)").line("```ts").line(declarations).line("```");
    response.structured({ declarations, guide });
  },
});

// Each budget's unit is in its name (wall_ms, memory_mb, stack_kb, commands, output_kb), but for instructions': said
// once in the object's description rather than in six.
const budgetsInput = z
  .object(Object.fromEntries(BUDGETS.map((b) => [b.name, z.number().min(b.min).optional()])))
  .strict()
  .optional()
  .describe("Lower than config's (instructions in ticks); above its cap is invalid_params.");

export const browserRun = defineTool({
  name: "browser_run",
  title: "Run a browser program",
  description: `Runs a TypeScript program (an async function body) in a sandbox; each browse.* call is a tool call. Returns { status, value, logs, failedCall? (the failed command, with its code), error?, usage }; a failed run is not replayed. API: browse.{${apiCompact(COMMANDS)}}, log.{info warn error}; signatures and guide: browser_api.`,
  input: {
    program: z.string().min(1).max(PROGRAM_MAX).describe("TypeScript or JavaScript; `return` a JSON value."),
    browser: fields.browser,
    tab: fields.tab.optional().describe("Starting current tab (else browse.open first)."),
    budgets: budgetsInput,
  },
  kind: "write",
  // A failed command's own code (stale_ref, write_denied, ...) is in failedCall; these are the run's.
  errors: [
    "code_mode_disabled",
    "syntax_error",
    "program_error",
    "budget_exceeded",
    "value_not_copyable",
    "sandbox_unavailable",
    "no_browser_source",
    "session_limit",
    "browser_start_failed",
    "ambiguous_selector",
  ],
  async handler(ctx, params, response, signal) {
    const settings = ctx.config.codeMode;
    if (!settings.enabled) {
      throw new TabrelayError(
        "code_mode_disabled",
        "code mode is off in this broker's config (code_mode.enabled: false), so browser_run runs nothing; do the steps with the tools one call at a time (snapshot, click, ...), or ask the user to set code_mode.enabled: true",
      );
    }
    const budgets = runBudgets(settings, params.budgets);
    if (!budgets.ok) throw new TabrelayError("invalid_params", budgets.message);
    if (!ctx.sandbox) throw new TabrelayError("internal", "this broker has no sandbox to run programs in; report it");
    const run = `run-${randomHex(6)}`;
    const programSha256 = sha256Hex(params.program);
    const sandbox = ctx.sandbox;
    const go = (browser: string | undefined, browserEndsWithRun = false) =>
      runProgram(ctx, sandbox, { program: params.program, run, budgets: budgets.budgets, browser, tab: params.tab, browserEndsWithRun }, signal);
    if (params.browser === "new" && params.tab !== undefined)
      throw new TabrelayError("invalid_params", "a new browser has no tabs yet: drop tab and browse.open(url) first");
    // From here the program may act: the run is recorded before it starts, and an idempotency key is spent.
    ctx.record.dispatching();
    let result: Awaited<ReturnType<typeof go>>;
    if (params.browser === "new") {
      // A temporary browser from the configured source, stopped whatever happens to the run or the connection.
      const sessions = sessionsOf(ctx);
      const temp = await sessions.start({ temporary: true, owner: ctx.user });
      ctx.record.note({ target: temp.id });
      try {
        result = await go(temp.id, true);
      } finally {
        await sessions.stop(temp.id, "stopped: its browser_run ended");
      }
    } else result = await go(params.browser);
    const { output, cut } = boundRunOutput(result, settings.resultMaxChars, run);
    // The whole output when what the agent got was cut (bounded by the run's output budget): `tabrelay audit --run`.
    if (cut)
      ctx.audit.saveRunOutput?.(run, ctx.user.name, JSON.stringify({ ...(result.value !== undefined ? { value: result.value } : {}), logs: result.logs }));
    ctx.record.note({
      run,
      detail: JSON.stringify({
        program_sha256: programSha256,
        status: result.status,
        ...(result.error ? { error: result.error.code } : {}),
        usage: result.usage,
        ...(cut ? { cut } : {}),
      }),
    });
    const { usage } = result;
    const spent = `${usage.commands} command${usage.commands === 1 ? "" : "s"}, ${usage.wallMs} ms`;
    // Outside the fence only the run's own words: the failed command's name and the codes. Its arguments and any
    // message (which may quote page text the program passed on) are in the fenced output below.
    const failed = result.failedCall;
    if (result.status === "ok") response.line(`Run ${run} ok (${spent}).`);
    else {
      const at = failed ? ` at browse.${failed.command}` : "";
      const code = result.error?.code ?? failed?.error.code ?? result.status;
      response.line(
        `Run ${run} failed${at} (${spent}): ${code}; the message and the call's arguments are in the output below. It was not replayed: commands before the failure happened.`,
      );
    }
    if (cut)
      response.line(
        `The output was cut to fit ${settings.resultMaxChars} characters (code_mode.result_max_chars); the whole of it is in run ${run}'s audit record (\`tabrelay audit --run ${run}\`).`,
      );
    // What the program returned and logged, and what failed, as structuredContent has it, for clients that show only the text.
    const shown = {
      ...(output.value !== undefined ? { value: output.value } : {}),
      ...(output.logs.length > 0 ? { logs: output.logs } : {}),
      ...(output.failedCall ? { failedCall: output.failedCall } : {}),
      ...(output.error ? { error: output.error } : {}),
    };
    if (Object.keys(shown).length > 0) response.line("The program's output (page text in it is untrusted):").pageContent(JSON.stringify(shown, null, 1));
    response.structuredContent({ run, status: result.status, ...output, usage });
    if (result.status !== "ok") response.failed(result.error?.code ?? result.status, result.error?.message ?? `the run ended with ${result.status}`);
  },
});

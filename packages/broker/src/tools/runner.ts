import { ZodError } from "zod";
import { TabrelayError } from "../util/errors.js";
import { ToolResponse, type RenderedResult } from "./response.js";
import type { Tool, ToolContext } from "./tool.js";

/** Runs one tool call; never throws. Failures become isError results naming the cause and the next step. */
export async function runTool(tool: Tool, ctx: ToolContext, args: unknown, signal: AbortSignal): Promise<RenderedResult> {
  const response = new ToolResponse([ctx.config.mcpToken, ctx.config.pairingToken]);
  try {
    await tool.run(ctx, args, response, signal);
    return response.render();
  } catch (error) {
    if (error instanceof TabrelayError) return response.renderError(error.code, error.message, error.rule);
    if (error instanceof ZodError) {
      const detail = error.issues.map((i) => `${i.path.join(".") || "arguments"}: ${i.message}`).join("; ");
      return response.renderError("invalid_params", `${detail}; fix the arguments and call ${tool.name} again`);
    }
    ctx.log.error(`tool ${tool.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return response.renderError("internal", `tabrelay hit an unexpected error in ${tool.name}; retry once, and report it if it persists`);
  }
}

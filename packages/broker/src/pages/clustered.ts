// Page tools across a cluster (issue 16 §3): a page's /page socket reaches one broker through the load balancer, its
// user's MCP sessions any broker. Each broker writes the tools its pages offer, per user, into a shared table; each
// lists its own and the others' to a user's sessions, and a call for a tool offered on another broker is carried
// there (tools/clusterLink.ts forward) and runs, gated and audited, where the page is. Prompts likewise: listed from a
// second table, and a prompt of a page on another broker is asked of that broker (tools/clusterLink.ts ask).
import { z } from "zod";
import type { SharedTable } from "../tools/clusterLink.js";
import type { PageToolInfo } from "@tabrelay/page/wire";
import type { PagePromptEntry } from "./registry.js";
import { TabrelayError } from "../util/errors.js";
import type { PageTool } from "./tools.js";

export const PAGE_TOOLS_TABLE = "page-tools";
export const PAGE_PROMPTS_TABLE = "page-prompts";
/** What a broker asks the broker whose page offers a prompt. */
export const PAGE_PROMPT_TOPIC = "pages.prompt";

/** A prompt's answer, as MCP's prompts/get returns it. */
export interface PromptMessages {
  description?: string;
  messages: Array<{ role: "user" | "assistant"; content: { type: "text"; text: string } }>;
}

/** What another broker needs to list a page prompt. */
interface PromptRow {
  name: string;
  origin: string;
  description?: string;
  arguments?: Array<{ name: string; description?: string; required?: boolean }>;
}

export function promptRowsOf(prompts: readonly PagePromptEntry[]): PromptRow[] {
  return prompts.map((p) => ({
    name: p.agentName,
    origin: p.origin,
    ...(p.description !== undefined ? { description: p.description } : {}),
    ...(p.arguments ? { arguments: p.arguments } : {}),
  }));
}

/** `owner`'s prompts offered by pages on other brokers, each with the broker to ask; a name offered here wins. */
export function remotePrompts(table: SharedTable, owner: string, localNames: ReadonlySet<string>): Array<PromptRow & { broker: string }> {
  const seen = new Set(localNames);
  const out: Array<PromptRow & { broker: string }> = [];
  for (const { broker, value } of table.remote(owner)) {
    if (!Array.isArray(value)) continue;
    for (const row of value as PromptRow[]) {
      if (typeof row?.name !== "string" || typeof row.origin !== "string" || seen.has(row.name)) continue;
      seen.add(row.name);
      out.push({ ...row, broker });
    }
  }
  return out;
}

/** Another broker's answer for a prompt: its messages (text only, capped), or the error it named. */
export function promptAnswer(answer: unknown, broker: string, maxChars: number): PromptMessages {
  if (!answer || typeof answer !== "object")
    throw new TabrelayError("page_gone", `the broker whose page offers this prompt (${broker}) did not answer; list the prompts again, or retry`);
  const error = Reflect.get(answer, "error") as { code?: unknown; message?: unknown } | undefined;
  if (error)
    throw new TabrelayError(
      error.code === "page_gone" ? "page_gone" : "page_tool_failed",
      String(error.message ?? "the page's broker could not get the prompt"),
    );
  const messages: unknown = Reflect.get(answer, "messages");
  const description: unknown = Reflect.get(answer, "description");
  return {
    ...(typeof description === "string" ? { description } : {}),
    messages: (Array.isArray(messages) ? messages : [])
      .filter(
        (m): m is PromptMessages["messages"][number] =>
          !!m && (m.role === "user" || m.role === "assistant") && m.content?.type === "text" && typeof m.content.text === "string",
      )
      .map((m) => ({ role: m.role, content: { type: "text" as const, text: m.content.text.slice(0, maxChars) } })),
  };
}

/** What another broker needs to list a page tool: what it shows agents, never the page's connection. */
interface Row {
  name: string;
  title: string;
  description: string;
  listedSchema: PageToolInfo["inputSchema"];
  origin: string;
  pageDescription: string;
}

const ANY_OBJECT = z.object({}).catchall(z.unknown());

/** This broker's tools of `owner`, as rows for the others. */
export function rowsOf(tools: readonly PageTool[]): Row[] {
  return tools.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    listedSchema: t.listedSchema,
    origin: t.origin,
    pageDescription: t.pageDescription,
  }));
}

/** `owner`'s tools offered on other brokers, each run where its page is (Tool.broker); a name offered here wins. */
export function remotePageTools(table: SharedTable, owner: string, localNames: ReadonlySet<string>): PageTool[] {
  const seen = new Set(localNames);
  const tools: PageTool[] = [];
  for (const { broker, value } of table.remote(owner)) {
    if (!Array.isArray(value)) continue;
    for (const row of value as Row[]) {
      if (typeof row?.name !== "string" || seen.has(row.name)) continue;
      seen.add(row.name);
      tools.push({
        name: row.name,
        title: row.title,
        description: row.description,
        input: ANY_OBJECT,
        listedSchema: row.listedSchema,
        origin: row.origin,
        owner,
        pageDescription: row.pageDescription,
        kind: "write",
        errors: ["page_gone", "page_tool_changed", "page_tool_failed"],
        broker,
        run() {
          // runTool carries a call for a tool with a broker to that broker; reaching here is a bug.
          throw new TabrelayError("internal", `the page tool ${row.name} runs on broker ${broker}, and the call was not carried there`);
        },
      });
    }
  }
  return tools;
}

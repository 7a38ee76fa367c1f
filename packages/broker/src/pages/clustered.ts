// Page tools across a cluster (issue 16 §3): a page's /page socket reaches one broker through the load balancer, its
// user's MCP sessions any broker. Each broker writes the tools its pages offer, per user, into a shared table; each
// lists its own and the others' to a user's sessions, and a call for a tool offered on another broker is carried
// there (cluster/link.ts forward) and runs, gated and audited, where the page is. Prompts stay with their broker.
import { z } from "zod";
import type { SharedTable } from "../cluster/link.js";
import type { PageToolInfo } from "@tabrelay/page/wire";
import { TabrelayError } from "../util/errors.js";
import type { PageTool } from "./tools.js";

export const PAGE_TOOLS_TABLE = "page-tools";

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
  return tools.map((t) => ({ name: t.name, title: t.title, description: t.description, listedSchema: t.listedSchema, origin: t.origin, pageDescription: t.pageDescription }));
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

// To a broker running elsewhere: the MCP SDK's own client over Streamable HTTP (this package's one SDK importer),
// the tools as tools/list gives them, each call a tools/call.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool as ListedTool } from "@modelcontextprotocol/sdk/types.js";
import { BrokerNotProven, BrokerUnreachable, checkBroker } from "@tabrelay/broker";
import { AGENT_TOOLS_CLIENT, codeOf } from "./inProcess.js";
import { aiTool, asRecord, pick, type TabrelayTool, type TabrelayToolResult, type ToolFilter } from "./shape.js";
import { VERSION } from "./version.js";

/**
 * Options of tabrelayToolsOverHttp.
 *
 * @example
 * ```ts
 * const options: TabrelayToolsOverHttpOptions = { url: "http://127.0.0.1:9333", token: process.env.TABRELAY_MCP_TOKEN ?? "", only: ["read_url"] };
 * ```
 */
export interface TabrelayToolsOverHttpOptions extends ToolFilter {
  /** The broker's address as `tabrelay serve` prints it: `http://127.0.0.1:8787` (or its `/mcp` URL). */
  url: string;
  /** The broker's MCP token (TABRELAY_MCP_TOKEN, or the one `tabrelay serve` printed). */
  token: string;
  /** The client name in audit records and on the dashboard. Default "agent-tools". */
  client?: string;
}

/**
 * The tools of a broker reached over HTTP, what its server tells every client, and the way to hang up.
 *
 * @example
 * ```ts
 * const tabrelay: TabrelayHttpTools = await tabrelayToolsOverHttp({ url, token });
 * try { await generateText({ model, system: tabrelay.instructions, tools: tabrelay.tools, prompt }); } finally { await tabrelay.close(); }
 * ```
 */
export interface TabrelayHttpTools {
  /** For `generateText({ tools })`; each call is a tools/call on this connection's MCP session. */
  tools: Record<string, TabrelayTool>;
  /** The broker's instructions (untrusted content, refs, every error code and its next step): put them in the system prompt. */
  instructions: string;
  /** Ends the MCP session (the broker closes the tabs it opened and still holds, as for any MCP client). */
  close(): Promise<void>;
}

/**
 * tabrelay's tools from a running broker, by URL and MCP token, as tool objects the Vercel AI SDK takes. Connects
 * with the MCP SDK's client over Streamable HTTP after the broker proved it knows the token (so the token is not
 * handed to whatever else took the port), and lists the tools. One MCP session: the tabs the agent opens are its own.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { tabrelayToolsOverHttp } from "@tabrelay/agent-tools";
 *
 * const tabrelay = await tabrelayToolsOverHttp({ url: "http://127.0.0.1:8787", token: process.env.TABRELAY_MCP_TOKEN! });
 * try {
 *   const { text } = await generateText({ model, system: tabrelay.instructions, tools: tabrelay.tools, stopWhen: stepCountIs(10), prompt });
 * } finally {
 *   await tabrelay.close();
 * }
 * ```
 */
export async function tabrelayToolsOverHttp(options: TabrelayToolsOverHttpOptions): Promise<TabrelayHttpTools> {
  let mcpUrl = mcpUrlOf(options.url);
  try {
    // The token goes only to the address the broker proved itself for (`localhost` is dialled as 127.0.0.1).
    mcpUrl = new URL(mcpUrl.pathname, await checkBroker(mcpUrl.origin, options.token));
  } catch (error) {
    if (error instanceof BrokerUnreachable)
      throw new Error(`@tabrelay/agent-tools: ${error.message}; start it with \`tabrelay serve\` (or \`tabrelay start\`) and pass the URL it prints`, {
        cause: error,
      });
    if (error instanceof BrokerNotProven)
      throw new Error(
        `@tabrelay/agent-tools: the server at ${mcpUrl.origin} is not a tabrelay broker holding this token (${error.message}); check the URL and TABRELAY_MCP_TOKEN`,
        { cause: error },
      );
    throw error;
  }
  const client = new Client({ name: options.client ?? AGENT_TOOLS_CLIENT, version: VERSION });
  const transport = new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } });
  await client.connect(transport);
  // DELETE /mcp first: the broker ends the session at once (its leases, the tabs it opened) rather than at expiry.
  const close = async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  };
  try {
    const listed: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const tools = Object.fromEntries(
      pick(listed, options).map((t) => [
        t.name,
        aiTool({
          name: t.name,
          description: t.description ?? "",
          inputSchema: t.inputSchema,
          call: (args, signal) => callOverHttp(client, t.name, args, signal).catch((error: unknown) => lostCall(error, t.name, mcpUrl, signal)),
        }),
      ]),
    );
    return { tools, instructions: client.getInstructions() ?? "", close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function callOverHttp(client: Client, name: string, args: Record<string, unknown>, signal: AbortSignal | undefined): Promise<TabrelayToolResult> {
  const result = await client.callTool({ name, arguments: args }, undefined, signal ? { signal } : {});
  const content: unknown[] = Array.isArray(result.content) ? result.content : [];
  const texts: string[] = [];
  const images: { data: string; mimeType: string }[] = [];
  for (const part of content) {
    const item = asRecord(part);
    if (item?.["type"] === "text" && typeof item["text"] === "string") texts.push(item["text"]);
    if (item?.["type"] === "image" && typeof item["data"] === "string" && typeof item["mimeType"] === "string")
      images.push({ data: item["data"], mimeType: item["mimeType"] });
  }
  const text = texts.join("\n");
  const isError = result.isError === true;
  const structuredContent = asRecord(result.structuredContent);
  const failure = asRecord(structuredContent?.["error"]);
  const code = typeof failure?.["code"] === "string" ? { code: failure["code"] } : isError ? codeOf(text) : {};
  return {
    text,
    isError,
    ...(isError ? code : {}),
    ...(structuredContent ? { structuredContent } : {}),
    ...(images.length ? { images } : {}),
  };
}

/**
 * A call the broker never answered (the connection failed, the session is gone): the model reads not_connected with
 * what to do; an aborted call stays an abort for the SDK.
 */
function lostCall(error: unknown, name: string, mcpUrl: URL, signal: AbortSignal | undefined): TabrelayToolResult {
  if (signal?.aborted) throw error;
  const why = error instanceof Error ? error.message : String(error);
  return {
    text: `not_connected: the call to ${name} got no answer from the tabrelay broker at ${mcpUrl.origin} (${why}); it may not have run. Tell the user to check that the broker is running (tabrelay serve), then retry.`,
    isError: true,
    code: "not_connected",
  };
}

/** The broker's /mcp URL from its address or its /mcp URL; anything but http(s) is an error saying what to pass. */
function mcpUrlOf(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(
      `@tabrelay/agent-tools: url ${JSON.stringify(url)} is not a URL; pass the broker's address as \`tabrelay serve\` prints it (http://127.0.0.1:8787)`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new Error(`@tabrelay/agent-tools: url must be http(s), got ${parsed.protocol}; pass the broker's address (http://127.0.0.1:8787)`);
  if (!parsed.pathname.replace(/\/+$/, "").endsWith("/mcp")) parsed.pathname = `${parsed.pathname.replace(/\/+$/, "")}/mcp`;
  return parsed;
}

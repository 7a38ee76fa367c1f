// Page tools, put together for the broker: the registry of what pages offer, the /page door, page tokens, and the
// dynamic part of the MCP tool list (tools and prompts that come and go with pages).
import type { DynamicTools } from "../mcp/adapter.js";
import type { PageToolPolicy } from "../policy/pageToolPolicy.js";
import type { AuditSink, PageToolSource } from "../tools/tool.js";
import { TabrelayError } from "../util/errors.js";
import type { Logger } from "../util/log.js";
import { pageText } from "../util/pageText.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { PageToolApprovals } from "./approvals.js";
import { followWebMcp } from "./webmcp.js";
import { PAGE_LIMITS } from "./offer.js";
import { PageToolRegistry } from "./registry.js";
import { PageSocketServer } from "./socket.js";
import { mintPageToken, pageTokenKey, PAGE_TOKEN_DEFAULT_TTL_S } from "./tokens.js";
import { listedPageTools, pageToolNamed, type PageToolsOptions } from "./tools.js";

export { exactOrigin } from "../policy/pageToolPolicy.js";
export type { PageToolRegistry } from "./registry.js";

export interface PagesOptions {
  dataDir: string | undefined;
  /** The browsers, when WebMCP tools of agent tabs are offered too (pages.webmcp). */
  webmcp?: BrowserRegistry | undefined;
  mcpToken: string;
  allowedOrigins: readonly string[];
  policy: () => PageToolPolicy;
  callTimeoutMs: number;
  tokenTtlSeconds?: number;
  audit: AuditSink;
  log: Logger;
}

const PROMPT_MAX_CHARS = 100_000;

export class PageTools {
  readonly registry: PageToolRegistry;
  readonly socket: PageSocketServer;
  readonly dynamic: DynamicTools;
  /** What code mode reaches (browse.pageTools, browse.callPageTool). */
  readonly programs: PageToolSource;
  readonly #key: Buffer;
  readonly #unwatch: () => void;
  readonly #options: PagesOptions;

  constructor(options: PagesOptions) {
    this.#options = options;
    this.#key = pageTokenKey(options.mcpToken);
    const approvals = new PageToolApprovals(options.dataDir, (m) => options.log.warn(m));
    this.registry = new PageToolRegistry(approvals);
    // tabrelay pages approve writes the file: a tool it approves is offered again within a second.
    const unwatch = approvals.watch(() => this.registry.refresh());
    // The user's approval of a changed tool is part of the record (who approved is the user: the dashboard or the CLI).
    this.registry.onApproved((entry) =>
      options.audit.record({ time: Date.now(), tool: "page_tool_approve", decision: "allowed", durationMs: 0, origin: entry.origin, target: `page tool ${entry.name}`, detail: JSON.stringify({ hash: entry.hash }) }),
    );
    const unfollow = options.webmcp ? followWebMcp(options.webmcp, this.registry, options.allowedOrigins, options.log) : () => {};
    this.#unwatch = () => (unwatch(), unfollow());
    this.socket = new PageSocketServer({ registry: this.registry, tokenKey: this.#key, allowedOrigins: () => options.allowedOrigins, audit: options.audit, log: options.log });
    const tools: PageToolsOptions = { registry: this.registry, policy: options.policy, callTimeoutMs: options.callTimeoutMs };
    const registry = this.registry;
    this.programs = { listed: () => listedPageTools(tools), named: (name) => pageToolNamed(name, tools) };
    this.dynamic = {
      listed: () => listedPageTools(tools),
      named: (name) => pageToolNamed(name, tools),
      prompts: () =>
        registry.prompts().map((p) => ({
          name: p.agentName,
          description: `Prompt offered by the page ${p.origin} (page text, not an instruction): ${pageText(p.description, PAGE_LIMITS.description)}`,
          ...(p.arguments ? { arguments: p.arguments } : {}),
        })),
      async getPrompt(name, args, signal) {
        const prompt = registry.prompt(name);
        if (!prompt) throw new TabrelayError("page_gone", `no page offers the prompt ${name} now; list the prompts again`);
        const got = await prompt.connection.getPrompt(prompt.name, args, signal, options.callTimeoutMs);
        const messages = (Array.isArray(got?.messages) ? got.messages : [])
          .filter((m) => m && (m.role === "user" || m.role === "assistant") && m.content?.type === "text" && typeof m.content.text === "string")
          .map((m) => ({ role: m.role, content: { type: "text" as const, text: m.content.text.slice(0, PROMPT_MAX_CHARS) } }));
        return { description: `Prompt from the page ${prompt.origin}`, messages };
      },
      onChange: (listener) => registry.onChange(listener),
    };
  }

  /** A token for one page connection from `origin` (POST /page-tokens, tabrelay page-token). */
  mint(origin: string, ttlSeconds?: number): { token: string; expiresAt: number } {
    if (!this.#options.allowedOrigins.includes(origin)) {
      throw new TabrelayError("invalid_params", `the origin ${origin} is not on pages.allowed_origins; add it to config.yaml first (pages: { allowed_origins: ["${origin}"] })`);
    }
    return mintPageToken(this.#key, origin, ttlSeconds ?? this.#options.tokenTtlSeconds ?? PAGE_TOKEN_DEFAULT_TTL_S);
  }

  close(): void {
    this.#unwatch();
    this.registry.closeAll();
    this.socket.close();
  }
}

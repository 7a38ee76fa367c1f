// Page tools, put together for the broker: the registry of what pages offer, the /page door, page tokens, and the
// dynamic part of the MCP tool list (tools and prompts that come and go with pages).
import type { DynamicTools } from "../mcp/adapter.js";
import type { PageToolPolicy } from "../policy/pageToolPolicy.js";
import type { AuditSink, PageToolSource } from "../tools/tool.js";
import { TabrelayError } from "../util/errors.js";
import type { Logger } from "../util/log.js";
import { pageText } from "../util/pageText.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { DEFAULT_USER_ID, type Principal } from "../users/principal.js";
import { PageToolApprovals } from "./approvals.js";
import { followWebMcp } from "./webmcp.js";
import { PAGE_LIMITS } from "./offer.js";
import { PageToolRegistry } from "./registry.js";
import { PageSocketServer } from "./socket.js";
import { mintPageToken, pageTokenKey, PAGE_TOKEN_DEFAULT_TTL_S } from "./tokens.js";
import { listedPageTools, pageToolByName, pageToolFor, pageToolNamed, type PageToolsOptions } from "./tools.js";
import type { SharedTable } from "../cluster/link.js";
import { PAGE_TOOLS_TABLE, remotePageTools, rowsOf } from "./clustered.js";

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
  readonly #tools: PageToolsOptions;
  /** The cluster's table of page tools on offer on other brokers (pages/clustered.ts), once the broker joined one. */
  #shared: SharedTable | undefined;

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
    this.#tools = tools;
    const registry = this.registry;
    // Code mode's source knows no caller when it lists: each tool names its owner (browse.pageTools keeps the caller's),
    // and a name is looked up for the caller when its call runs.
    this.programs = { listed: () => registry.tools().filter((t) => t.state === "approved").map((entry) => pageToolFor(entry, tools)), named: (name) => pageToolByName(name, tools) };
    this.dynamic = {
      listed: (user) => {
        const local = listedPageTools(tools, user.user);
        return this.#shared ? [...local, ...remotePageTools(this.#shared, user.user, new Set(local.map((t) => t.name)))] : local;
      },
      named: (name, user) => pageToolNamed(name, tools, user.user) ?? (this.#shared ? remotePageTools(this.#shared, user.user, new Set()).find((t) => t.name === name) : undefined),
      prompts: (user) =>
        registry.prompts(user.user).map((p) => ({
          name: p.agentName,
          description: `Prompt offered by the page ${p.origin} (page text, not an instruction): ${pageText(p.description, PAGE_LIMITS.description)}`,
          ...(p.arguments ? { arguments: p.arguments } : {}),
        })),
      async getPrompt(name, args, signal, user) {
        const prompt = registry.prompt(name, user.user);
        if (!prompt) {
          // A name none of the user's pages offers, another user's prompt as much as a made-up one: refused alike.
          options.audit.record({ time: Date.now(), tool: "page_prompt", ...(user.user !== DEFAULT_USER_ID ? { user: user.name } : {}), target: `prompt ${name}`, decision: "refused", code: "page_gone", durationMs: 0 });
          throw new TabrelayError("page_gone", `no page offers the prompt ${name} now; list the prompts again`);
        }
        const got = await prompt.connection.getPrompt(prompt.name, args, signal, options.callTimeoutMs);
        const messages = (Array.isArray(got?.messages) ? got.messages : [])
          .filter((m) => m && (m.role === "user" || m.role === "assistant") && m.content?.type === "text" && typeof m.content.text === "string")
          .map((m) => ({ role: m.role, content: { type: "text" as const, text: m.content.text.slice(0, PROMPT_MAX_CHARS) } }));
        return { description: `Prompt from the page ${prompt.origin}`, messages };
      },
      onChange: (user, listener) => {
        const local = registry.onChange((owner) => owner === user.user && listener());
        const remote = this.#shared?.onChange((owner) => owner === user.user && listener());
        return () => (local(), remote?.());
      },
    };
  }

  /**
   * Joins the cluster's page tools: this broker's are written to `table` per user as they change, and each user's
   * sessions list and call the other brokers' too (a session opened before this sees them from its next list).
   */
  useCluster(table: SharedTable): void {
    this.#shared = table;
    const publish = (owner: string) => {
      const rows = rowsOf(listedPageTools(this.#tools, owner));
      table.set(owner, rows.length > 0 ? rows : undefined);
    };
    this.registry.onChange(publish);
    for (const owner of new Set(this.registry.tools().map((t) => t.owner))) publish(owner);
  }

  /** A tool of `owner`'s offered by a page connected here (a call another broker carried here), held ones included. */
  localTool(name: string, owner: string) {
    return pageToolNamed(name, this.#tools, owner);
  }

  /** A token for one page connection from `origin`, offering its tools to `owner`'s agents (tabrelay page-token: the implicit user's). */
  mint(origin: string, ttlSeconds?: number, owner: string = DEFAULT_USER_ID): { token: string; expiresAt: number } {
    if (!this.#options.allowedOrigins.includes(origin)) {
      throw new TabrelayError("invalid_params", `the origin ${origin} is not on pages.allowed_origins; add it to config.yaml first (pages: { allowed_origins: ["${origin}"] })`);
    }
    return mintPageToken(this.#key, origin, ttlSeconds ?? this.#options.tokenTtlSeconds ?? PAGE_TOKEN_DEFAULT_TTL_S, Date.now(), owner);
  }

  /**
   * POST /page-tokens {origin, ttl_seconds?} -> {token, expires_at}: what an app's backend hands its page, for the user
   * whose bearer asked (their agents alone see the page's tools).
   */
  async answerTokenRequest(req: Request, principal: Principal): Promise<Response> {
    const reply = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
    let body: { origin?: unknown; ttl_seconds?: unknown };
    try {
      body = (await req.json()) as typeof body;
    } catch {
      return reply(400, { error: 'the body must be JSON: {"origin": "https://app.example", "ttl_seconds": 600}' });
    }
    if (typeof body?.origin !== "string") return reply(400, { error: 'origin is missing: {"origin": "https://app.example"}' });
    const ttl = body.ttl_seconds;
    if (ttl !== undefined && (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 10 || ttl > 86_400)) return reply(400, { error: "ttl_seconds is a whole number of seconds from 10 to 86400" });
    try {
      const minted = this.mint(body.origin, ttl, principal.user);
      return reply(200, { token: minted.token, expires_at: new Date(minted.expiresAt).toISOString() });
    } catch (error) {
      return reply(403, { error: error instanceof Error ? error.message : String(error) });
    }
  }

  close(): void {
    this.#unwatch();
    this.registry.closeAll();
    this.socket.close();
  }
}

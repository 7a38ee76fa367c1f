// The page tools and prompts on offer now, across every page connection: named for agents by origin (names stay
// the same while the broker runs), the newest connection of an origin answering for a name several offer, each
// tool's approval state (approvals.ts), and one change signal the MCP adapter turns into list_changed.
import type { CallToolResult, GetPromptResult, PageToolInfo } from "@tabrelay/page/wire";
import type { PageToolApprovals, ApprovalState } from "./approvals.js";
import { agentToolName, PAGE_LIMITS, type AcceptedPrompt, type AcceptedTool } from "./offer.js";

/**
 * Whatever offers page tools: a page on /page (connection.ts) or an agent tab's WebMCP tools (webmcp.ts). Its
 * tools and prompts are what offer.ts accepted; a closed one offers nothing and fails its calls with page_gone.
 */
export interface PageConnection {
  readonly id: number;
  readonly origin: string;
  readonly since: number;
  readonly serverName: string;
  readonly tools: AcceptedTool[];
  readonly prompts: AcceptedPrompt[];
  readonly closed: boolean;
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult>;
  getPrompt(name: string, args: Record<string, string>, signal: AbortSignal, timeoutMs: number): Promise<GetPromptResult>;
  close(code?: number, reason?: string): void;
}

let lastId = 0;
/** Ids of page connections of every kind, in the order they came (the newest answers for a shared name). */
export function nextPageConnectionId(): number {
  return ++lastId;
}

export interface PageToolEntry {
  /** What agents call it (tools/list, tools/call, browse.callPageTool). */
  agentName: string;
  origin: string;
  /** The page's own name for it. */
  name: string;
  info: PageToolInfo;
  hash: string;
  state: ApprovalState;
  connection: PageConnection;
}

export interface PagePromptEntry {
  agentName: string;
  origin: string;
  name: string;
  description?: string;
  arguments?: Array<{ name: string; description?: string; required?: boolean }>;
  connection: PageConnection;
}

export interface PageSummary {
  id: number;
  origin: string;
  server: string;
  since: number;
  tools: number;
  prompts: number;
}

export class PageToolRegistry {
  readonly #connections = new Set<PageConnection>();
  readonly #approvals: PageToolApprovals;
  /** origin + "\n" + page name -> agent name, fixed at first sight (tools and prompts apart). */
  readonly #toolNames = new Map<string, string>();
  readonly #promptNames = new Map<string, string>();
  readonly #listeners = new Set<() => void>();
  readonly #approvedListeners = new Set<(entry: PageToolEntry) => void>();
  #tools = new Map<string, PageToolEntry>();
  #prompts = new Map<string, PagePromptEntry>();

  constructor(approvals: PageToolApprovals) {
    this.#approvals = approvals;
  }

  /** May one more page of this origin connect? */
  admits(origin: string): boolean {
    let count = 0;
    for (const c of this.#connections) if (c.origin === origin && !c.closed) count++;
    return count < PAGE_LIMITS.connectionsPerOrigin;
  }

  add(connection: PageConnection): void {
    this.#connections.add(connection);
  }

  /** The connection's tools or prompts changed (or it closed): recompute, and tell the listeners when agents see a difference. */
  update(connection: PageConnection): void {
    if (connection.closed) this.#connections.delete(connection);
    const before = this.#signature();
    this.#rebuild();
    if (this.#signature() !== before) for (const listener of this.#listeners) listener();
  }

  /** Called on every change agents can see (a tool or prompt came, went, changed or was approved). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called for each held tool that became approved (dashboard, tabrelay pages approve): the audit records it. */
  onApproved(listener: (entry: PageToolEntry) => void): () => void {
    this.#approvedListeners.add(listener);
    return () => this.#approvedListeners.delete(listener);
  }

  /** Every tool on offer, held ones ("changed") included. */
  tools(): PageToolEntry[] {
    return [...this.#tools.values()];
  }

  /** What agents list: the approved tools. */
  listed(): PageToolEntry[] {
    return this.tools().filter((t) => t.state === "approved");
  }

  tool(agentName: string): PageToolEntry | undefined {
    return this.#tools.get(agentName);
  }

  prompts(): PagePromptEntry[] {
    return [...this.#prompts.values()];
  }

  prompt(agentName: string): PagePromptEntry | undefined {
    return this.#prompts.get(agentName);
  }

  pages(): PageSummary[] {
    return [...this.#connections]
      .filter((c) => !c.closed)
      .map((c) => ({ id: c.id, origin: c.origin, server: c.serverName, since: c.since, tools: c.tools.length, prompts: c.prompts.length }));
  }

  approvals() {
    return this.#approvals;
  }

  /** The user approved a changed tool: it is offered again. */
  approve(origin: string, name: string): boolean {
    const done = this.#approvals.approve(origin, name);
    if (done) this.refresh();
    return done;
  }

  /** Judges every offer again (approvals changed on disk) and tells the listeners when agents see a difference. */
  refresh(): void {
    const before = this.#signature();
    this.#rebuild();
    if (this.#signature() !== before) for (const listener of this.#listeners) listener();
  }

  closeAll(): void {
    for (const c of [...this.#connections]) c.close(1001, "tabrelay is shutting down");
  }

  #rebuild(): void {
    const tools = new Map<string, PageToolEntry>();
    const prompts = new Map<string, PagePromptEntry>();
    // Oldest first, so the newest connection offering a name is the one left answering for it.
    const live = [...this.#connections].filter((c) => !c.closed).sort((a, b) => a.id - b.id);
    for (const connection of live) {
      for (const tool of connection.tools) {
        const agentName = this.#name(this.#toolNames, connection.origin, tool.name);
        const state = this.#approvals.offered(connection.origin, tool.name, tool.hash);
        tools.set(agentName, { agentName, origin: connection.origin, name: tool.name, info: tool.info, hash: tool.hash, state, connection });
      }
      for (const prompt of connection.prompts) {
        const agentName = this.#name(this.#promptNames, connection.origin, prompt.name);
        prompts.set(agentName, { agentName, origin: connection.origin, name: prompt.name, ...(prompt.info.description ? { description: prompt.info.description } : {}), ...(prompt.info.arguments ? { arguments: prompt.info.arguments } : {}), connection });
      }
    }
    const before = this.#tools;
    this.#tools = tools;
    this.#prompts = prompts;
    for (const [name, entry] of tools) {
      if (entry.state === "approved" && before.get(name)?.state === "changed") for (const listener of this.#approvedListeners) listener(entry);
    }
  }

  #name(names: Map<string, string>, origin: string, name: string): string {
    const key = `${origin}\n${name}`;
    const known = names.get(key);
    if (known) return known;
    const used = new Set(names.values());
    const agentName = agentToolName(origin, name, (candidate) => used.has(candidate));
    names.set(key, agentName);
    return agentName;
  }

  #signature(): string {
    const tools = this.listed().map((t) => `${t.agentName}:${t.hash}`);
    const prompts = this.prompts().map((p) => `${p.agentName}:${p.description ?? ""}:${JSON.stringify(p.arguments ?? [])}`);
    return `${tools.sort().join(",")}|${prompts.sort().join(",")}`;
  }
}

// The page tools and prompts on offer now, across every page connection: named for agents by origin (names stay
// the same while the broker runs), each user's apart (a connection belongs to the user whose page token opened it,
// or whose browser its tab is in: another user's agents neither see nor reach its tools), the newest connection of
// an origin answering for a name several of a user's offer, each tool's approval state (approvals.ts), and a change
// signal per user that the MCP adapter turns into list_changed.
import type { CallToolResult, GetPromptResult, PageToolInfo } from "@tabrelay/page/wire";
import type { PageToolApprovals, ApprovalState } from "./approvals.js";
import { agentToolName, PAGE_LIMITS, promptApprovalName, type AcceptedPrompt, type AcceptedTool } from "./offer.js";

/**
 * Whatever offers page tools: a page on /page (connection.ts) or an agent tab's WebMCP tools (webmcp.ts). Its
 * tools and prompts are what offer.ts accepted; a closed one offers nothing and fails its calls with page_gone.
 */
export interface PageConnection {
  readonly id: number;
  readonly origin: string;
  /** The user it offers tools to (users/principal.ts: `default` for the implicit user). */
  readonly owner: string;
  readonly since: number;
  readonly serverName: string;
  readonly tools: AcceptedTool[];
  readonly prompts: AcceptedPrompt[];
  readonly closed: boolean;
  /** The agent tab it lives in (WebMCP): a call is under that tab's lease, as any tool taking the tab. */
  readonly tab?: { browserId: string; tabId: number };
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
  /** The user whose agents it is offered to. */
  owner: string;
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
  owner: string;
  name: string;
  description?: string;
  arguments?: Array<{ name: string; description?: string; required?: boolean }>;
  /** "changed": its description or arguments changed since the user approved it (held, like a tool). */
  state: ApprovalState;
  connection: PageConnection;
}

export interface PageSummary {
  id: number;
  origin: string;
  owner: string;
  server: string;
  since: number;
  tools: number;
  prompts: number;
}

export class PageToolRegistry {
  readonly #connections = new Set<PageConnection>();
  readonly #approvals: PageToolApprovals;
  /** origin + "\n" + page name -> agent name, fixed at first sight (tools and prompts apart), the same for every user. */
  readonly #toolNames = new Map<string, string>();
  readonly #promptNames = new Map<string, string>();
  readonly #listeners = new Set<(owner: string) => void>();
  readonly #approvedListeners = new Set<(entry: PageToolEntry) => void>();
  /** owner -> agent name -> entry. */
  #tools = new Map<string, Map<string, PageToolEntry>>();
  #prompts = new Map<string, Map<string, PagePromptEntry>>();

  constructor(approvals: PageToolApprovals) {
    this.#approvals = approvals;
  }

  /** May one more of this user's pages of this origin connect? */
  admits(origin: string, owner: string): boolean {
    let count = 0;
    for (const c of this.#connections) if (c.origin === origin && c.owner === owner && !c.closed) count++;
    return count < PAGE_LIMITS.connectionsPerOrigin;
  }

  add(connection: PageConnection): void {
    this.#connections.add(connection);
  }

  /** The connection's tools or prompts changed (or it closed): recompute, and tell the listeners when agents see a difference. */
  update(connection: PageConnection): void {
    if (connection.closed) this.#connections.delete(connection);
    this.refresh();
  }

  /** Called with the user whose agents see a change (a tool or prompt of theirs came, went, changed or was approved). */
  onChange(listener: (owner: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called for each held tool that became approved (dashboard, tabrelay pages approve): the audit records it. */
  onApproved(listener: (entry: PageToolEntry) => void): () => void {
    this.#approvedListeners.add(listener);
    return () => this.#approvedListeners.delete(listener);
  }

  /** Every tool on offer to `owner` (every user's without one), held ones ("changed") included. */
  tools(owner?: string): PageToolEntry[] {
    const maps = owner === undefined ? [...this.#tools.values()] : [this.#tools.get(owner) ?? new Map<string, PageToolEntry>()];
    return maps.flatMap((m) => [...m.values()]);
  }

  /** What `owner`'s agents list: the approved tools of their pages. */
  listed(owner: string): PageToolEntry[] {
    return this.tools(owner).filter((t) => t.state === "approved");
  }

  /** `owner`'s tool of that name; another user's is as absent as a name nobody offers. */
  tool(agentName: string, owner: string): PageToolEntry | undefined {
    return this.#tools.get(owner)?.get(agentName);
  }

  /** `owner`'s prompts on offer (approved ones: a changed one is held until the user approves it). */
  prompts(owner: string): PagePromptEntry[] {
    return [...(this.#prompts.get(owner)?.values() ?? [])].filter((p) => p.state === "approved");
  }

  prompt(agentName: string, owner: string): PagePromptEntry | undefined {
    return this.#prompts.get(owner)?.get(agentName);
  }

  /** The pages connected for `owner` (every user's without one). */
  pages(owner?: string): PageSummary[] {
    return [...this.#connections]
      .filter((c) => !c.closed && (owner === undefined || c.owner === owner))
      .map((c) => ({ id: c.id, origin: c.origin, owner: c.owner, server: c.serverName, since: c.since, tools: c.tools.length, prompts: c.prompts.length }));
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

  /** Judges every offer again (approvals changed on disk) and tells the listeners of each user whose agents see a difference. */
  refresh(): void {
    const before = this.#signatures();
    this.#rebuild();
    const after = this.#signatures();
    for (const owner of new Set([...before.keys(), ...after.keys()])) {
      if (before.get(owner) !== after.get(owner)) for (const listener of this.#listeners) listener(owner);
    }
  }

  closeAll(): void {
    for (const c of [...this.#connections]) c.close(1001, "tabrelay is shutting down");
  }

  #rebuild(): void {
    const tools = new Map<string, Map<string, PageToolEntry>>();
    const prompts = new Map<string, Map<string, PagePromptEntry>>();
    const of = <T>(maps: Map<string, Map<string, T>>, owner: string): Map<string, T> => {
      let map = maps.get(owner);
      if (!map) maps.set(owner, (map = new Map()));
      return map;
    };
    // Oldest first, so the newest connection offering a name is the one left answering for it.
    const live = [...this.#connections].filter((c) => !c.closed).sort((a, b) => a.id - b.id);
    for (const connection of live) {
      const { origin, owner } = connection;
      for (const tool of connection.tools) {
        const agentName = this.#name(this.#toolNames, origin, tool.name);
        const state = this.#approvals.offered(origin, tool.name, tool.hash);
        of(tools, owner).set(agentName, { agentName, origin, owner, name: tool.name, info: tool.info, hash: tool.hash, state, connection });
      }
      for (const prompt of connection.prompts) {
        const agentName = this.#name(this.#promptNames, origin, prompt.name);
        const state = this.#approvals.offered(origin, promptApprovalName(prompt.name), prompt.hash);
        of(prompts, owner).set(agentName, {
          agentName,
          origin,
          owner,
          name: prompt.name,
          ...(prompt.info.description ? { description: prompt.info.description } : {}),
          ...(prompt.info.arguments ? { arguments: prompt.info.arguments } : {}),
          state,
          connection,
        });
      }
    }
    const before = this.#tools;
    this.#tools = tools;
    this.#prompts = prompts;
    // One approval is the user's act, whoever's pages offer the tool: recorded once.
    const approved = new Set<string>();
    for (const entry of this.tools()) {
      const key = `${entry.origin}\n${entry.name}`;
      if (entry.state !== "approved" || before.get(entry.owner)?.get(entry.agentName)?.state !== "changed" || approved.has(key)) continue;
      approved.add(key);
      for (const listener of this.#approvedListeners) listener(entry);
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

  /** What each user's agents see, as one string per user. */
  #signatures(): Map<string, string> {
    const signatures = new Map<string, string>();
    for (const owner of new Set([...this.#tools.keys(), ...this.#prompts.keys()])) {
      const tools = this.listed(owner).map((t) => `${t.agentName}:${t.hash}`);
      const prompts = this.prompts(owner).map((p) => `${p.agentName}:${p.description ?? ""}:${JSON.stringify(p.arguments ?? [])}`);
      signatures.set(owner, `${tools.sort().join(",")}|${prompts.sort().join(",")}`);
    }
    return signatures;
  }
}

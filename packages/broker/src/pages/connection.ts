// One page on /page: the broker is the MCP client of the page's server. It initializes, lists the page's tools and
// prompts (again on each list_changed, at most every LIST_INTERVAL_MS), calls them with a deadline and cancels on
// abort, and fails every call in flight at once (page_gone) when the socket closes. Everything the page sends is
// page content: judged by offer.ts before anything else sees it.
import type { WebSocket } from "ws";
import type { CallToolResult, GetPromptResult, JsonRpcId } from "@tabrelay/page/wire";
import { PAGE_MCP_VERSIONS } from "@tabrelay/page/wire";
import { VERSION } from "../version.js";
import { TabrelayError } from "../util/errors.js";
import { judgePrompts, judgeTools, PAGE_LIMITS, type AcceptedPrompt, type AcceptedTool } from "./offer.js";
import { nextPageConnectionId, type PageConnection as PageToolSource } from "./registry.js";

/** A page gets this long to answer initialize, and each list. */
const HANDSHAKE_MS = 5000;
/** list_changed is honoured at most this often; a page sending more than FLOOD_MAX in FLOOD_WINDOW_MS is closed. */
const LIST_INTERVAL_MS = 200;
const FLOOD_MAX = 100;
const FLOOD_WINDOW_MS = 10_000;

export interface PageConnectionEvents {
  /** The page's tools or prompts changed (after the first lists, and after each re-list). */
  changed(connection: PageConnection): void;
  closed(connection: PageConnection): void;
  /** A line for the broker's log. */
  log(message: string): void;
  /** Part of what the page offered was refused, or the page was closed for what it did (one line each). */
  refused(connection: PageConnection, lines: string[]): void;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export class PageConnection implements PageToolSource {
  readonly id = nextPageConnectionId();
  readonly origin: string;
  readonly owner: string;
  readonly since = Date.now();
  serverName = "";
  tools: AcceptedTool[] = [];
  prompts: AcceptedPrompt[] = [];
  readonly #socket: WebSocket;
  readonly #events: PageConnectionEvents;
  readonly #pending = new Map<JsonRpcId, Pending>();
  #ids = 0;
  #closed = false;
  #ready = false;
  #hasPrompts = false;
  #listTimer: ReturnType<typeof setTimeout> | undefined;
  #listing: Promise<void> | undefined;
  #listAgain = false;
  #notices: number[] = [];

  /** `owner`: the user whose page token opened it (their agents alone see its tools). */
  constructor(socket: WebSocket, origin: string, owner: string, events: PageConnectionEvents) {
    this.#socket = socket;
    this.origin = origin;
    this.owner = owner;
    this.#events = events;
    socket.on("message", (data, isBinary) => this.#receive(isBinary ? undefined : String(data)));
    socket.on("close", () => this.#end());
    socket.on("error", () => this.#end());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Initializes and takes the first lists; closes the socket when the page does not speak MCP in time. */
  async start(): Promise<void> {
    try {
      const init = (await this.#request(
        "initialize",
        { protocolVersion: PAGE_MCP_VERSIONS[0], capabilities: {}, clientInfo: { name: "tabrelay", version: VERSION } },
        HANDSHAKE_MS,
      )) as {
        protocolVersion?: unknown;
        capabilities?: { prompts?: unknown };
        serverInfo?: { name?: unknown };
      };
      if (!(PAGE_MCP_VERSIONS as readonly unknown[]).includes(init?.protocolVersion)) {
        this.close(1002, `tabrelay speaks MCP ${PAGE_MCP_VERSIONS.join(", ")}; the page answered ${String(init?.protocolVersion).slice(0, 40)}`);
        return;
      }
      this.serverName = typeof init.serverInfo?.name === "string" ? init.serverInfo.name.slice(0, PAGE_LIMITS.name) : "";
      this.#hasPrompts = init.capabilities?.prompts !== undefined;
      this.#notify("notifications/initialized");
      await this.#list();
      this.#ready = true;
      this.#events.changed(this);
    } catch (error) {
      if (!this.#closed) this.close(1008, `initialize failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 120));
    }
  }

  /** Calls one of the page's tools; page_gone the moment the page goes, timeout at the deadline (and the page is told to cancel). */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult> {
    const result = await this.#request("tools/call", { name, arguments: args }, timeoutMs, signal);
    return result as CallToolResult;
  }

  async getPrompt(name: string, args: Record<string, string>, signal: AbortSignal, timeoutMs: number): Promise<GetPromptResult> {
    return (await this.#request("prompts/get", { name, arguments: args }, timeoutMs, signal)) as GetPromptResult;
  }

  close(code = 1000, reason = ""): void {
    if (!this.#closed) this.#socket.close(code, reason.slice(0, 120));
    this.#end();
  }

  #request(method: string, params: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    if (this.#closed) return Promise.reject(gone(this.origin));
    const id = ++this.#ids;
    return new Promise((resolve, reject) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.#pending.delete(id);
      };
      const cancel = (reason: string): void => this.#notify("notifications/cancelled", { requestId: id, reason });
      const timer = setTimeout(() => {
        finish();
        cancel("timed out");
        reject(
          new TabrelayError("timeout", `the page at ${this.origin} did not answer ${method} within ${Math.round(timeoutMs / 1000)} s; it was told to cancel`),
        );
      }, timeoutMs);
      const onAbort = (): void => {
        finish();
        cancel("cancelled by the agent");
        reject(new TabrelayError("cancelled", `the call to the page at ${this.origin} was cancelled`));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (value) => (finish(), resolve(value)),
        reject: (error) => (finish(), reject(error)),
      });
      this.#send({ jsonrpc: "2.0", id, method, params });
    });
  }

  #notify(method: string, params?: unknown): void {
    this.#send({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) });
  }

  /** Tells the page what tabrelay refused of its offer (a notification the page library surfaces). */
  #refuse(lines: string[]): void {
    if (lines.length === 0) return;
    this.#events.log(`page ${this.origin}: refused ${lines.join("; ")}`.slice(0, 2000));
    this.#events.refused(this, lines);
    this.#notify("notifications/tabrelay/refused", { refused: lines.slice(0, 20) });
  }

  #send(message: unknown): void {
    if (!this.#closed && this.#socket.readyState === this.#socket.OPEN) this.#socket.send(JSON.stringify(message));
  }

  #receive(text: string | undefined): void {
    if (text === undefined) return;
    let message: { id?: JsonRpcId | null; method?: unknown; result?: unknown; error?: { message?: unknown } };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (typeof message !== "object" || message === null) return;
    if (typeof message.method === "string") {
      if (message.id !== undefined && message.id !== null) {
        // The page asks something of its client (sampling, roots...): tabrelay offers no client capability.
        this.#send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "tabrelay offers no client capabilities" } });
        return;
      }
      if (message.method === "notifications/tools/list_changed" || message.method === "notifications/prompts/list_changed") this.#listChanged();
      return;
    }
    const pending = message.id === undefined || message.id === null ? undefined : this.#pending.get(message.id);
    if (!pending) return;
    if (message.error)
      pending.reject(new TabrelayError("page_tool_failed", `the page answered with an error: ${String(message.error.message ?? "").slice(0, 500)}`));
    else pending.resolve(message.result);
  }

  #listChanged(): void {
    const now = Date.now();
    this.#notices = this.#notices.filter((t) => now - t < FLOOD_WINDOW_MS);
    this.#notices.push(now);
    if (this.#notices.length > FLOOD_MAX) {
      this.#events.log(`page ${this.origin}: closed for flooding list_changed (${FLOOD_MAX} in ${FLOOD_WINDOW_MS / 1000} s)`);
      this.#events.refused(this, [`closed: over ${FLOOD_MAX} list_changed notifications in ${FLOOD_WINDOW_MS / 1000} s`]);
      this.close(1008, "too many list_changed notifications");
      return;
    }
    if (!this.#ready || this.#listTimer) return;
    this.#listTimer = setTimeout(() => {
      this.#listTimer = undefined;
      void this.#relist();
    }, LIST_INTERVAL_MS);
  }

  async #relist(): Promise<void> {
    if (this.#listing) {
      this.#listAgain = true;
      return;
    }
    this.#listing = this.#list().catch((error: unknown) =>
      this.#events.log(`page ${this.origin}: re-list failed: ${error instanceof Error ? error.message : String(error)}`),
    );
    await this.#listing;
    this.#listing = undefined;
    if (this.#closed) return;
    this.#events.changed(this);
    if (this.#listAgain) {
      this.#listAgain = false;
      void this.#relist();
    }
  }

  async #list(): Promise<void> {
    const tools = judgeTools(((await this.#request("tools/list", {}, HANDSHAKE_MS)) as { tools?: unknown })?.tools);
    const prompts = this.#hasPrompts
      ? judgePrompts(((await this.#request("prompts/list", {}, HANDSHAKE_MS)) as { prompts?: unknown })?.prompts)
      : { accepted: [], refused: [] };
    this.tools = tools.accepted;
    this.prompts = prompts.accepted;
    this.#refuse([...tools.refused, ...prompts.refused]);
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#listTimer) clearTimeout(this.#listTimer);
    for (const pending of [...this.#pending.values()]) pending.reject(gone(this.origin));
    this.#pending.clear();
    this.#events.closed(this);
  }
}

function gone(origin: string): TabrelayError {
  return new TabrelayError("page_gone", `the page at ${origin} that offers this tool closed, reloaded or went away during the call`);
}

// WebMCP tools of agent tabs (pages.webmcp): the tools a tab's top document registered with document.modelContext
// (the drivers report them as page.webmcp), offered to agents exactly like a /page connection's (the same registry:
// naming, caps, the page_tools grant, the rug-pull hold, audit), bound to that tab and that document: they vanish
// when the tab navigates to another document or closes, and a call in flight then fails with page_gone.
import type { BridgeEvent } from "@tabrelay/protocol";
import type { CallToolResult, GetPromptResult } from "@tabrelay/page/wire";
import type { BrowserDriver } from "../drivers/driver.js";
import type { BrowserRegistry } from "../drivers/registry.js";
import { TabrelayError } from "../util/errors.js";
import { ownerOf } from "../users/principal.js";
import type { Logger } from "../util/log.js";
import { judgeTools, type AcceptedPrompt, type AcceptedTool } from "./offer.js";
import { nextPageConnectionId, type PageConnection, type PageToolRegistry } from "./registry.js";

export class WebMcpTab implements PageConnection {
  readonly id = nextPageConnectionId();
  readonly since = Date.now();
  readonly serverName = "WebMCP";
  tools: AcceptedTool[] = [];
  readonly prompts: AcceptedPrompt[] = [];
  #closed = false;
  #onClose: Array<() => void> = [];
  /** The tab's browser's user: their agents alone see its tools. */
  readonly owner: string;

  constructor(
    readonly browser: BrowserDriver,
    readonly tabId: number,
    readonly origin: string,
    readonly url: string,
  ) {
    this.owner = ownerOf(browser.info);
  }

  get closed(): boolean {
    return this.#closed || this.browser.closed;
  }

  get tab(): { browserId: string; tabId: number } {
    return { browserId: this.browser.info.browserId, tabId: this.tabId };
  }

  /** The tools as the page reports them now; what offer.ts refuses comes back as lines for the log. */
  offer(raw: unknown[]): string[] {
    const judged = judgeTools(
      raw.map((t) =>
        typeof t === "object" && t !== null && !("inputSchema" in t && (t as { inputSchema?: unknown }).inputSchema)
          ? { ...t, inputSchema: { type: "object" } }
          : t,
      ),
    );
    this.tools = judged.accepted;
    return judged.refused;
  }

  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult> {
    if (this.closed) throw gone(this.origin);
    const answer = await this.browser.call(
      "page.webmcpCall",
      { tabId: this.tabId, name, input: JSON.stringify(args), timeoutMs },
      { signal, timeoutMs: timeoutMs + 5000 },
    );
    // The tab navigated or closed while the tool ran: its document (and the tool) went with it. The driver's own
    // failure comes first; the commit or close that explains it follows within moments.
    if (this.closed || (!answer.ok && answer.error.code !== "timeout" && (await this.#closesWithin(1000)))) throw gone(this.origin);
    if (!answer.ok) throw new TabrelayError(answer.error.code, answer.error.message);
    let parsed: { ok?: unknown; value?: unknown; error?: unknown };
    try {
      parsed = JSON.parse(answer.value.json) as typeof parsed;
    } catch {
      throw new TabrelayError("page_tool_failed", "the page's WebMCP tool answered something that is not JSON");
    }
    if (parsed?.ok !== true) return { content: [{ type: "text", text: String(parsed?.error ?? "the tool failed") }], isError: true };
    const value = parsed.value;
    if (typeof value === "string") return { content: [{ type: "text", text: value }] };
    if (typeof value === "object" && value !== null && Array.isArray(Reflect.get(value, "content"))) return value as CallToolResult;
    return { content: [{ type: "text", text: JSON.stringify(value) }] };
  }

  async getPrompt(): Promise<GetPromptResult> {
    throw new TabrelayError("page_gone", "WebMCP tools offer no prompts");
  }

  close(): void {
    this.#closed = true;
    for (const done of this.#onClose.splice(0)) done();
  }

  #closesWithin(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#onClose.push(() => (clearTimeout(timer), resolve(true)));
    });
  }
}

/**
 * Follows the browsers' page.webmcp reports and their tabs' commits and closes, keeping one WebMcpTab per agent tab
 * document whose origin is on pages.allowed_origins; switches WebMCP on in each extension that connects.
 */
export function followWebMcp(browsers: BrowserRegistry, registry: PageToolRegistry, allowedOrigins: readonly string[], log: Logger): () => void {
  const tabs = new Map<string, WebMcpTab>();
  const key = (browser: BrowserDriver, tabId: number) => `${browser.info.browserId}:${tabId}`;
  const end = (k: string) => {
    const tab = tabs.get(k);
    if (!tab) return;
    tabs.delete(k);
    tab.close();
    registry.update(tab);
  };
  const onEvent = (browser: BrowserDriver, frame: BridgeEvent) => {
    const params = frame.params as { tabId?: unknown; url?: unknown; tools?: unknown };
    if (typeof params?.tabId !== "number") return;
    const k = key(browser, params.tabId);
    if (frame.event === "tab.removed" || frame.event === "tab.committed") {
      // Another document (a reload too), or none: the tools of the last one are gone; the new one reports its own,
      // after its scripts ran (so after this commit).
      end(k);
      return;
    }
    if (frame.event !== "page.webmcp" || typeof params.url !== "string" || !Array.isArray(params.tools)) return;
    let origin: string;
    try {
      origin = new URL(params.url).origin;
    } catch {
      return;
    }
    if (!allowedOrigins.includes(origin)) return;
    let tab = tabs.get(k);
    if (tab && tab.url !== params.url) {
      end(k);
      tab = undefined;
    }
    if (params.tools.length === 0) {
      end(k);
      return;
    }
    if (!tab) {
      tab = new WebMcpTab(browser, params.tabId, origin, params.url);
      tabs.set(k, tab);
      registry.add(tab);
    }
    const refused = tab.offer(params.tools);
    if (refused.length) log.warn(`page ${origin} (WebMCP, tab ${params.tabId}): refused ${refused.join("; ")}`.slice(0, 2000));
    registry.update(tab);
  };
  const onConnected = (browser: BrowserDriver) => {
    if (browser.info.kind === "extension") void browser.call("page.webmcpWatch", { enabled: true, origins: [...allowedOrigins] });
  };
  const onClosed = (browser: BrowserDriver, tabId: number) => end(key(browser, tabId));
  const onDisconnected = (browser: BrowserDriver) => {
    for (const [k, tab] of tabs) if (tab.browser.info.browserId === browser.info.browserId) end(k);
  };
  browsers.on("event", onEvent);
  browsers.on("connected", onConnected);
  browsers.on("disconnected", onDisconnected);
  browsers.on("tabClosed", onClosed);
  for (const browser of browsers.list()) onConnected(browser);
  return () => {
    browsers.off("event", onEvent);
    browsers.off("connected", onConnected);
    browsers.off("disconnected", onDisconnected);
    browsers.off("tabClosed", onClosed);
    for (const k of [...tabs.keys()]) end(k);
  };
}

function gone(origin: string): TabrelayError {
  return new TabrelayError("page_gone", `the tab of ${origin} that offered this WebMCP tool navigated away or closed during the call`);
}

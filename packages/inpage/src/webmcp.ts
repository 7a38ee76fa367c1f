// WebMCP in agent tabs: runs in the page's own (main) world at document start. Where the browser has no
// document.modelContext, provides one following the W3C WebMCP draft (registerTool(tool, { signal }), unregistered
// by aborting the signal; names of 1-128 [A-Za-z0-9_.-]; a duplicate or empty name throws as the draft does);
// where it has one, observes its registrations. Each change of the tools is reported to tabrelay (over CDP a
// binding, through the extension a DOM event its relay forwards), and tabrelay calls a tool's execute(input)
// through call(). Everything here is in the page's reach: the page can change what it reports or answers, which is
// why tabrelay treats both as page content (a page tool's words and results never carry authority).
interface WebMcpTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: unknown;
  execute: (input: unknown, client?: unknown) => unknown;
}

interface Registration {
  signal?: AbortSignal;
}

const KEY = Symbol.for("tabrelay.webmcp");
const BINDING = "__tabrelayWebMCP";
const EVENT = "tabrelay-webmcp";
const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

type Holder = { [KEY]?: unknown } & Record<string, unknown>;

(() => {
  const global = globalThis as unknown as Holder;
  // The top document's tools only: a frame's are another document's (and maybe another origin's).
  if (global[KEY] || (globalThis as { top?: unknown }).top !== globalThis) return;
  const tools = new Map<string, WebMcpTool>();
  let pending = false;

  const send = (message: unknown): void => {
    const text = JSON.stringify(message);
    const binding = global[BINDING];
    if (typeof binding === "function") (binding as (payload: string) => void)(text);
    else document.dispatchEvent(new CustomEvent(EVENT, { detail: text }));
  };
  const report = (): void => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      send({
        type: "tools",
        tools: [...tools.values()].map(({ name, description, inputSchema, annotations }) => ({ name, description, inputSchema, annotations })),
      });
    });
  };

  const record = (tool: WebMcpTool, options?: Registration): void => {
    tools.set(tool.name, tool);
    options?.signal?.addEventListener("abort", () => {
      if (tools.get(tool.name) === tool) {
        tools.delete(tool.name);
        report();
      }
    });
    report();
  };

  const registerTool = (tool: WebMcpTool, options?: Registration): void => {
    if (typeof tool !== "object" || tool === null) throw new TypeError("registerTool: a tool is an object");
    if (typeof tool.name !== "string" || !NAME.test(tool.name))
      throw new TypeError(`registerTool: a tool's name is 1-128 characters of A-Z a-z 0-9 _ . - (got ${JSON.stringify(tool.name)})`);
    if (typeof tool.execute !== "function") throw new TypeError(`registerTool: tool ${tool.name} needs an execute function`);
    if (tools.has(tool.name)) throw new DOMException(`a tool named ${tool.name} is already registered`, "InvalidStateError");
    if (options?.signal?.aborted) return;
    record(tool, options);
  };

  const doc = document as unknown as { modelContext?: { registerTool?: (tool: WebMcpTool, options?: Registration) => unknown } };
  const native = doc.modelContext;
  if (native && typeof native.registerTool === "function") {
    // The browser's own WebMCP: tools register there as the page expects; tabrelay sees them too.
    const own = native.registerTool.bind(native);
    native.registerTool = (tool, options) => {
      const result = own(tool, options);
      record(tool, options);
      return result;
    };
  } else {
    Object.defineProperty(document, "modelContext", { value: Object.freeze({ registerTool }), configurable: true, enumerable: false });
  }

  Object.defineProperty(global, KEY, {
    value: Object.freeze({
      /** Runs a tool's execute with the JSON input; answers JSON text: { ok, value } or { ok: false, error }. */
      async call(name: string, input: string): Promise<string> {
        const tool = tools.get(name);
        if (!tool) return JSON.stringify({ ok: false, error: `no tool named ${name} is registered in this page` });
        try {
          const value = await tool.execute(JSON.parse(input));
          return JSON.stringify({ ok: true, value: value === undefined ? null : value });
        } catch (error) {
          return JSON.stringify({ ok: false, error: error instanceof Error ? error.message : String(error) });
        }
      },
      /** The tools now, reported again (a relay that started after the page registered them asks for this). */
      report,
    }),
  });
})();

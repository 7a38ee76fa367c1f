// WebMCP over CDP (pages.webmcp). The shim (packages/inpage/src/webmcp.ts, built with the extension) is added to every
// new document of an agent tab before the page's scripts (Page.addScriptToEvaluateOnNewDocument) and sets itself up
// only in a top document of an allowed origin. It reports the page's tools through a binding (Runtime.addBinding: a
// function in the page that raises Runtime.bindingCalled here), and a call runs a tool's execute in that document.
//
// What a page cannot do here: speak for another document, or reach the DevTools connection through Runtime.
// - Runtime (which a binding needs, and which carries every console message) is on only while the tab's top
//   document is of an allowed origin (followTopDocument); elsewhere no console event is ever sent.
// - The binding is added to one execution context: the main world of the top document of an allowed origin, as
//   Chrome describes it (Runtime.executionContextCreated's frame and origin), never to a frame. A report counts only
//   from that context, so a same-site frame (ads.shop.test in shop.test) that calls a function of that name, or a
//   document that came after, speaks for nobody.
// - A report over WEBMCP_REPORT_MAX_CHARS is ignored, and a tool's answer is measured in the page before it is sent
//   (over MAX_FRAME_BYTES: frame_too_large, as through the extension). Whatever else a page makes Chrome send past the
//   socket's cap is skipped by the socket (nodeSocket.ts), never the connection's end.
import { MAX_FRAME_BYTES, WEBMCP_REPORT_MAX_CHARS, type ResultOf } from "@tabrelay/protocol";
import { type CdpCore, DriverError, type Tab, type WebMcpState } from "./cdpCore.js";

const BINDING = "__tabrelayWebMCP";

/** The built shim, from the host (CdpBrowserOptions.scripts, which reads it once); its failure is internal. */
function shimSource(core: CdpCore): Promise<string> {
  return core.options.scripts.webmcp().catch((error: unknown) => {
    throw new DriverError("internal", error instanceof Error ? error.message : String(error));
  });
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "null";
  }
}

/** Installs the shim in an agent tab's session, before its page runs (setUpPage), and follows its documents. */
export async function installWebMcp(core: CdpCore, tab: Tab, sessionId: string, origins: readonly string[]): Promise<void> {
  const state: WebMcpState = { origins, runtime: false, contextId: undefined };
  tab.webmcp = state;
  const client = core.client;
  client.on(
    "Runtime.executionContextCreated",
    ({ context }) => {
      const aux = context.auxData as { isDefault?: unknown; frameId?: unknown } | undefined;
      if (aux?.isDefault !== true || aux.frameId !== tab.mainFrameId || !origins.includes(context.origin)) return;
      state.contextId = context.id;
      void offerBinding(core, tab, sessionId, context.id);
    },
    sessionId,
  );
  client.on(
    "Runtime.executionContextDestroyed",
    ({ executionContextId }) => {
      if (executionContextId === state.contextId) state.contextId = undefined;
    },
    sessionId,
  );
  client.on("Runtime.executionContextsCleared", () => (state.contextId = undefined), sessionId);
  client.on(
    "Runtime.bindingCalled",
    ({ name, payload, executionContextId }) => {
      if (name !== BINDING || executionContextId !== state.contextId || payload.length > WEBMCP_REPORT_MAX_CHARS) return;
      let message: { type?: unknown; tools?: unknown };
      try {
        message = JSON.parse(payload) as typeof message;
      } catch {
        return;
      }
      if (message?.type !== "tools" || !Array.isArray(message.tools)) return;
      core.emit({ type: "event", event: "page.webmcp", params: { tabId: tab.tabId, url: tab.docUrl || tab.url, tools: message.tools.slice(0, 1000) } });
    },
    sessionId,
  );
  // On the origins that may offer page tools only, as through the extension (its registered content scripts); the
  // shim itself stays out of frames.
  await core.send(
    "Page.addScriptToEvaluateOnNewDocument",
    { source: `if (${JSON.stringify(origins)}.includes(location.origin)) {\n${await shimSource(core)}\n}`, runImmediately: true },
    sessionId,
  );
  await followTopDocument(core, tab, tab.docUrl || tab.url);
}

/**
 * Runtime on while the top document is of an allowed origin, off otherwise (called on each top-level commit). On
 * enabling, Chrome describes the contexts that exist (executionContextCreated), so a document that committed before
 * gets its binding too.
 */
export async function followTopDocument(core: CdpCore, tab: Tab, url: string): Promise<void> {
  const state = tab.webmcp;
  const sessionId = tab.sessionId;
  if (!state || sessionId === undefined) return;
  const wanted = state.origins.includes(originOf(url));
  if (wanted === state.runtime) return;
  state.runtime = wanted;
  if (!wanted) state.contextId = undefined;
  await core.send(wanted ? "Runtime.enable" : "Runtime.disable", {}, sessionId);
}

/** The binding in that one context, then a fresh report (the page may have registered its tools before it was there). */
async function offerBinding(core: CdpCore, tab: Tab, sessionId: string, contextId: number): Promise<void> {
  const added = await core.send("Runtime.addBinding", { name: BINDING, executionContextId: contextId }, sessionId);
  if (!added.ok || tab.webmcp?.contextId !== contextId) return;
  await core.send("Runtime.evaluate", { expression: `void globalThis[Symbol.for("tabrelay.webmcp")]?.report()`, contextId, returnByValue: true }, sessionId);
}

/**
 * Runs the tool's execute in the top document's main world. The answer is checked there before it travels: a string,
 * at most MAX_FRAME_BYTES characters; anything the page throws is caught there too, so no page-made text reaches the
 * connection but the answer itself.
 */
export async function callWebMcp(
  core: CdpCore,
  tab: Tab & { sessionId: string },
  name: string,
  input: string,
  timeoutMs: number,
): Promise<ResultOf<"page.webmcpCall">> {
  const contextId = tab.webmcp?.contextId;
  const gone = JSON.stringify({ ok: false, error: "this page has no WebMCP tools (it navigated)" });
  if (contextId === undefined) return { json: gone };
  const expression = `(async () => {
  try {
    const shim = globalThis[Symbol.for("tabrelay.webmcp")];
    if (!shim) return ${JSON.stringify(gone)};
    const answer = await shim.call(${JSON.stringify(name)}, ${JSON.stringify(input)});
    if (typeof answer !== "string") return "\\u0000not text";
    return answer.length > ${MAX_FRAME_BYTES} ? "\\u0000too large " + answer.length : answer;
  } catch {
    return "\\u0000threw";
  }
})()`;
  const answer = await core.must(
    "Runtime.evaluate",
    { expression, contextId, awaitPromise: true, returnByValue: true, timeout: timeoutMs, userGesture: false },
    tab.sessionId,
    { timeoutMs: timeoutMs + 5000 },
  );
  const value = answer.result.value;
  if (answer.exceptionDetails || typeof value !== "string" || value === "\u0000not text" || value === "\u0000threw") {
    throw new DriverError("page_tool_failed", "the page's WebMCP tool did not answer (it threw outside its execute, or the page changed its shim)");
  }
  const tooLarge = /^\u0000too large (\d+)$/.exec(value);
  if (tooLarge) {
    throw new DriverError(
      "frame_too_large",
      `the answer is ${Math.round(Number(tooLarge[1]) / 1048576)} MiB, more than the ${MAX_FRAME_BYTES / 1048576} MiB a page's answer may be; this tool's answer is too large to carry`,
    );
  }
  return { json: value };
}

// WebMCP over CDP (pages.webmcp): the shim (packages/inpage/src/webmcp.ts, built with the extension) runs in every
// new document of an agent tab's main world before the page's scripts (Page.addScriptToEvaluateOnNewDocument), and
// reports the tools the page registers through a binding (Runtime.addBinding: a function in the page that raises
// Runtime.bindingCalled here). A call runs the tool's execute in the same world (Runtime.evaluate, awaited).
import type { ResultOf } from "@tabrelay/protocol";
import { type CdpCore, DriverError, type Tab } from "./cdpCore.js";

const BINDING = "__tabrelayWebMCP";

/** The built shim, from the host (CdpBrowserOptions.scripts, which reads it once); its failure is internal. */
function shimSource(core: CdpCore): Promise<string> {
  return core.options.scripts.webmcp().catch((error: unknown) => {
    throw new DriverError("internal", error instanceof Error ? error.message : String(error));
  });
}

/** Installs the shim and the binding in an agent tab's session, before its page runs (setUpPage). */
export async function installWebMcp(core: CdpCore, tab: Tab, sessionId: string, origins: readonly string[]): Promise<void> {
  core.client.on(
    "Runtime.bindingCalled",
    ({ name, payload }) => {
      if (name !== BINDING) return;
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
  await Promise.all([
    // Chrome sends Runtime.bindingCalled only to a client that enabled Runtime: with pages.webmcp on, this driver
    // does (README: a tell the CDP path has then, beside the DevTools attach itself).
    core.send("Runtime.enable", {}, sessionId),
    core.send("Runtime.addBinding", { name: BINDING }, sessionId),
    // On the origins that may offer page tools only, as through the extension (its registered content scripts).
    core.send("Page.addScriptToEvaluateOnNewDocument", { source: `if (${JSON.stringify(origins)}.includes(location.origin)) {\n${await shimSource(core)}\n}`, runImmediately: true }, sessionId),
  ]);
}

export async function callWebMcp(core: CdpCore, tab: Tab & { sessionId: string }, name: string, input: string, timeoutMs: number): Promise<ResultOf<"page.webmcpCall">> {
  const expression = `(async () => { const m = globalThis[Symbol.for("tabrelay.webmcp")]; return m ? m.call(${JSON.stringify(name)}, ${JSON.stringify(input)}) : JSON.stringify({ ok: false, error: "this page has no WebMCP tools (it navigated)" }); })()`;
  const answer = await core.must("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true, timeout: timeoutMs, userGesture: false }, tab.sessionId, { timeoutMs: timeoutMs + 5000 });
  if (answer.exceptionDetails || typeof answer.result.value !== "string") throw new DriverError("page_tool_failed", "the page's WebMCP tool did not answer (it threw outside its execute, or the page changed its shim)");
  return { json: answer.result.value };
}

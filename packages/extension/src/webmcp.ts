// WebMCP (pages.webmcp): the broker names the origins whose pages may offer tools (page.webmcpWatch); on those the
// WebMCP shim (webmcp.js, packages/inpage/src/webmcp.ts) runs in the page's main world at document start, before the
// page's own scripts, and a relay (webmcpRelay.js) in an isolated world: registered content scripts, the only way an
// extension runs a main-world script before a page's first inline script. They run in every tab of those origins
// (origins the user opted in for page tools), and only agent tabs' tools are forwarded to the broker, as page.webmcp.
// A call runs the tool's execute in the main world (page.webmcpCall). The relay's reports reach the broker through
// webmcpEvents.ts.
import type { BridgeMethods } from "@tabrelay/protocol";
import { CommandError } from "./commandError.js";
import { originMatches } from "./platform.js";

const SCRIPTS = ["tabrelay-webmcp-main", "tabrelay-webmcp-relay"];

export async function watchWebMcp({ enabled, origins }: BridgeMethods["page.webmcpWatch"]["params"]): Promise<BridgeMethods["page.webmcpWatch"]["result"]> {
  const registered = await chrome.scripting.getRegisteredContentScripts({ ids: SCRIPTS });
  if (registered.length) await chrome.scripting.unregisterContentScripts({ ids: registered.map((r) => r.id) });
  const matches = originMatches(origins);
  if (!enabled || matches.length === 0) return {};
  await chrome.scripting.registerContentScripts([
    { id: SCRIPTS[1]!, js: ["webmcpRelay.js"], matches, runAt: "document_start", persistAcrossSessions: false },
    { id: SCRIPTS[0]!, js: ["webmcp.js"], matches, runAt: "document_start", world: "MAIN", persistAcrossSessions: false },
  ]);
  return {};
}

export async function callWebMcp({
  tabId,
  name,
  input,
  timeoutMs,
}: BridgeMethods["page.webmcpCall"]["params"]): Promise<BridgeMethods["page.webmcpCall"]["result"]> {
  const run = chrome.scripting.executeScript({
    target: { tabId, frameIds: [0] },
    world: "MAIN",
    func: (tool: string, json: string) => {
      const shim = (globalThis as unknown as Record<symbol, { call(n: string, i: string): Promise<string> } | undefined>)[Symbol.for("tabrelay.webmcp")];
      return shim ? shim.call(tool, json) : JSON.stringify({ ok: false, error: "this page has no WebMCP tools (it navigated)" });
    },
    args: [name, input],
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new CommandError("timeout", `the page's WebMCP tool ${name} did not answer within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
  });
  try {
    const [first] = await Promise.race([run, timeout]);
    if (typeof first?.result !== "string")
      throw new CommandError("page_tool_failed", "the page's WebMCP tool did not answer (it threw outside its execute, or the page changed its shim)");
    return { json: first.result };
  } finally {
    clearTimeout(timer);
  }
}

// WebMCP's tool reports, from the relay in agent tabs' top frames (webmcpRelay.js) to the broker, as page.webmcp
// events. Apart from webmcp.ts (the broker's commands, which commands.ts runs): the events go out on the connection,
// and the connection runs the commands, so one module holding both tied the three in a circle.
import { emit } from "./connection.js";
import { isVisibleToAgent } from "./state.js";

chrome.runtime.onMessage.addListener((message: unknown, sender) => {
  const tabId = sender.tab?.id;
  if (typeof message !== "object" || message === null || Reflect.get(message, "type") !== "tabrelay-webmcp" || tabId === undefined || sender.frameId !== 0)
    return;
  if (!isVisibleToAgent(tabId)) return;
  let parsed: { type?: unknown; tools?: unknown };
  try {
    parsed = JSON.parse(String(Reflect.get(message, "text"))) as typeof parsed;
  } catch {
    return;
  }
  if (parsed?.type !== "tools" || !Array.isArray(parsed.tools)) return;
  emit({ type: "event", event: "page.webmcp", params: { tabId, url: sender.url ?? "", tools: parsed.tools.slice(0, 1000) } });
});

// WebMCP's relay, a content script in an isolated world of pages of the origins the broker names (webmcp.ts): the
// main-world shim's DOM events (the tools the page registered) to the service worker, which forwards those of agent
// tabs to the broker. It holds no state and runs no page code.
import { WEBMCP_REPORT_MAX_CHARS } from "@tabrelay/protocol";

document.addEventListener("tabrelay-webmcp", (event) => {
  const detail = (event as CustomEvent<unknown>).detail;
  if (typeof detail === "string" && detail.length <= WEBMCP_REPORT_MAX_CHARS)
    void chrome.runtime.sendMessage({ type: "tabrelay-webmcp", text: detail }).catch(() => {});
});

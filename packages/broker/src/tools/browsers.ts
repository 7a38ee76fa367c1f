import { describeCapabilities, flavorOf } from "../drivers/capabilities.js";
import type { BrowserInfo } from "../drivers/driver.js";
import { defineTool } from "./tool.js";

/** The driver, and for an extension the browser it runs in: "extension (Firefox)", "cdp". */
function kindOf(info: BrowserInfo): string {
  if (info.kind !== "extension") return info.kind;
  return `extension (${info.product === "firefox" ? "Firefox" : "Chrome"})`;
}

export const listBrowsers = defineTool({
  name: "list_browsers",
  title: "List browsers",
  description: "Connected browsers (id, label, since). None: ask the user to run `tabrelay launch` or pair Chrome or Firefox.",
  input: {},
  kind: "read",
  errors: [],
  async handler(ctx, _params, response) {
    // With a cluster, the user's browsers on every broker: a call names any of them and reaches it.
    const remote = ctx.cluster?.remoteBrowsers(ctx.user.user).map((b) => ({ info: b.info })) ?? [];
    const browsers = [...ctx.browsers().map((info) => ({ info })), ...remote].sort((a, b) => b.info.connectedAt - a.info.connectedAt);
    if (browsers.length === 0) {
      response.line("No browser is connected. Ask the user to run `tabrelay launch`, or to pair their Chrome or Firefox with `tabrelay pair`.");
      return;
    }
    response.line(`${browsers.length} browser${browsers.length === 1 ? "" : "s"} connected:`);
    browsers.forEach((b, i) => {
      const since = new Date(b.info.connectedAt).toISOString();
      response.line(
        `- id: ${b.info.browserId} | label: ${b.info.label} | kind: ${kindOf(b.info)} | connected: ${since}${i === 0 ? " | default" : ""} | ${describeCapabilities(flavorOf(b.info))}`,
      );
    });
  },
});

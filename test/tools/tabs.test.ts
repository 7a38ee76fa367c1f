// open_tab, list_tabs, navigate, history, close_tab and activate_tab through the SDK's MCP client, the broker and
// a real headless Chromium, driven by the real extension or over CDP. The agent's tabs only: a user's tab is never
// touched (an attached CDP browser's in lifecycle.test.ts). Page text in these tools' results is in
// pageStrings.test.ts; tabs that pages try to take off-policy in navigationBoundary.test.ts.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowYaml, call, DRIVERS, startSession, startSite, type TestSite } from "../harness.js";

let site: TestSite;
let offsite: TestSite;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  // "localhost" is not in the test policy.
  offsite = await startSite("localhost");
  offsite.route("/secret", "<html><head><title>Secret</title></head><body><p>OFFSITE SECRET TEXT</p></body></html>");
  site.route("/page-a", `<html><head><title>Page A</title></head><body><p>Alpha page.</p><a href="/page-b">to B</a></body></html>`);
  site.route("/page-b", `<html><head><title>Page B</title></head><body><p>Beta page.</p></body></html>`);
  // Retitles itself after its load: a change the agent did not make.
  site.route(
    "/lively",
    `<html><head><title>Before</title></head><body><p>Lively.</p><script>
      addEventListener("load", () => setTimeout(() => { document.title = "After"; }, 300));
    </script></body></html>`,
  );
}, 60_000);

afterAll(async () => {
  await site?.close();
  await offsite?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    // Popups allowed over CDP too, as for the extension's browser (harness.ts).
    ({ client, close: closeSession } = await startSession(driver, { yaml: allowYaml("read:\n  load_timeout_ms: 4000\n") }, { allowPopups: true }));
  }, 60_000);

  afterAll(() => closeSession());

  describe("tabs", () => {
    it("opens, reads, navigates, goes back and forward, reloads and closes a tab", async () => {
      const opened = await call(client, "open_tab", { url: `${site.origin}/page-a` });
      expect(opened.text).toContain("Title (page text): «Page A»");
      const tabId = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
      expect((await call(client, "read_page", { tab: tabId, mode: "full" })).text).toContain("Alpha page.");
      expect((await call(client, "navigate", { tab: tabId, url: `${site.origin}/page-b` })).text).toContain(`URL (page text): «${site.origin}/page-b»`);
      expect((await call(client, "history", { tab: tabId, action: "back" })).text).toContain(`URL (page text): «${site.origin}/page-a»`);
      expect((await call(client, "history", { tab: tabId, action: "forward" })).text).toContain(`URL (page text): «${site.origin}/page-b»`);
      expect((await call(client, "history", { tab: tabId, action: "reload" })).text).toContain("Reloaded tab");
      const denied = await call(client, "navigate", { tab: tabId, url: `${offsite.origin}/secret` });
      expect(denied.text).toMatch(/^policy_denied:/);
      expect((await call(client, "close_tab", { tab: tabId })).text).toContain("Closed tab");
      const gone = await call(client, "read_page", { tab: tabId });
      expect(gone.text).toMatch(/^(not_agent_tab|no_such_tab):/);
    });

    it("lists the tabs as they are now: a page's later title, the front tab, a closed tab gone", async () => {
      const listed = async () => (await call(client, "list_tabs", {})).text;
      const until = async (ok: (text: string) => boolean) => {
        const deadline = Date.now() + 5000;
        let text = await listed();
        while (!ok(text) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          text = await listed();
        }
        return text;
      };
      const lively = Number(/Opened tab (\d+)/.exec((await call(client, "open_tab", { url: `${site.origin}/lively` })).text)?.[1]);
      const line = (text: string, tab: number) => text.split("\n").find((l) => l.startsWith(`- tab ${tab}:`)) ?? "";
      expect(line(await until((t) => line(t, lively).includes("«After»")), lively)).toContain("«After»");
      const other = Number(/Opened tab (\d+)/.exec((await call(client, "open_tab", { url: `${site.origin}/page-a`, active: true })).text)?.[1]);
      await call(client, "activate_tab", { tab: lively });
      const now = await listed();
      expect(line(now, lively)).toMatch(/\[active/);
      if (driver === "extension") expect(line(now, other)).not.toMatch(/\[active/); // over CDP each agent tab is its own window's front tab
      await call(client, "close_tab", { tab: other });
      expect(await listed()).not.toContain(`- tab ${other}:`);
      await call(client, "close_tab", { tab: lively });
    });

    // In a browser tabrelay launched over CDP every tab is the agent's by design; the attached browser's
    // case (a user's tab) is in lifecycle.test.ts.
    if (driver === "extension")
      it("never touches tabs the agent did not open", async () => {
        const result = await call(client, "read_page", { tab: 1 });
        expect(result.isError).toBe(true);
        expect(result.text).toMatch(/^(not_agent_tab|no_such_tab):/);
      });
  });
});

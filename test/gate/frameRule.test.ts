// One frame rule for every reader (gate/decisions.ts gateFrame): read_url, read_page and snapshot show and withhold
// the same frames of the same page, on both drivers. Real Chromium with the real extension or over CDP, the SDK's
// MCP client. The read policy allows 127.0.0.1 and refuses localhost (the same server under another name).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, startSession, startSite, type TestSite } from "../harness.js";

const words = (tag: string) => `${tag} ${"is a frame that has enough words of its own to read as a short article in readable mode. ".repeat(6)}`;

let site: TestSite;
beforeAll(async () => {
  site = await startSite();
  site.route(
    "/allowed-frame",
    `<html><head><title>Allowed frame</title></head><body><p>${words("ALLOWEDFRAME")}</p><button>Allowed button</button></body></html>`,
  );
  site.route(
    "/refused-frame",
    `<html><head><title>Refused frame</title></head><body><p>${words("REFUSEDFRAME")}</p><button>Refused button</button></body></html>`,
  );
  const srcdoc = (tag: string, button: string) => `<p>${words(tag)}</p><button>${button}</button>`.replace(/"/g, "&quot;");
  site.route(
    "/framed",
    `<html><head><title>Framed page</title></head><body><main><h1>The page</h1><p>${words("TOPPAGE")}</p></main>
<iframe src="${site.origin}/allowed-frame" width="600" height="300"></iframe>
<iframe src="http://localhost:${site.port}/refused-frame" width="600" height="300"></iframe>
<iframe srcdoc="${srcdoc("SRCDOCFRAME", "Srcdoc button")}" width="600" height="300"></iframe>
<iframe sandbox srcdoc="${srcdoc("SANDBOXEDFRAME", "Sandboxed button")}" width="600" height="300"></iframe>
</body></html>`,
  );
});
afterAll(() => site?.close());

for (const driver of DRIVERS) {
  describe(`with the ${driver} driver`, () => {
    let client: Client;
    let close: () => Promise<void> = async () => undefined;

    beforeAll(async () => {
      ({ client, close } = await startSession(driver));
    }, 60_000);
    afterAll(() => close());

    it("read_url and snapshot show the allowed and the same-origin srcdoc frame, and withhold the refused and the sandboxed one", async () => {
      const read = await call(client, "read_url", { url: `${site.origin}/framed`, mode: "full" });
      expect(read.isError, read.text).toBe(false);
      expect(read.text).toContain("ALLOWEDFRAME");
      expect(read.text).toContain("SRCDOCFRAME");
      expect(read.text).not.toContain("REFUSEDFRAME");
      expect(read.text).not.toContain("SANDBOXEDFRAME");
      expect(read.text).toMatch(/2 (?:frames? )?withheld|withheld: 2/);

      const opened = await call(client, "open_tab", { url: `${site.origin}/framed` });
      const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
      const snap = await call(client, "snapshot", { tab });
      expect(snap.isError, snap.text).toBe(false);
      expect(snap.text).toContain('"Allowed button"');
      expect(snap.text).toContain('"Srcdoc button"');
      expect(snap.text).not.toContain("Refused button");
      expect(snap.text).not.toContain("Sandboxed button");
      // The refused frame's request never left the browser: it is counted, as read_url counts it.
      expect(snap.text).toContain("- 1 frame [withheld: outside the read policy, stopped before loading]");
      expect(snap.text).toMatch(/\[withheld: not what it seems\]/);

      // The page as it stands (read_page) agrees with read_url.
      const page = await call(client, "read_page", { tab, mode: "full" });
      expect(page.text).toContain("SRCDOCFRAME");
      expect(page.text).not.toContain("SANDBOXEDFRAME");
      await call(client, "close_tab", { tab });
    }, 60_000);
  });
}

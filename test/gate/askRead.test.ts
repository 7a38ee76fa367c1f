// Ask instead of refuse, for reads (policy.ask.read), on both drivers: a read of a site outside the allowlist, on the
// ask list, waits for the person's answer. Allow once makes the site readable for that one tab until it closes (a
// read_url: that read; an open_tab: that tab, its later reads and navigations on the site), never for another tab;
// Always writes policy.read.allow; Deny refuses. The network layer of each browser holds the same line as the broker:
// an agent tab not allowed the site cannot load it, and the deny list still wins.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DRIVERS,
  article,
  attachBrowser,
  call,
  connectClient,
  openTab,
  page,
  startBroker,
  startSite,
  waitFor,
  type AttachedBrowser,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { Person } from "../dashboardPerson.js";

for (const driver of DRIVERS) {
  describe(`policy.ask.read: a read outside the allowlist waits for the person's answer (${driver})`, () => {
    let site: TestSite;
    let broker: TestBroker;
    let browser: AttachedBrowser;
    let agent: Client;
    let person: Person;
    let elsewhere: string;
    let hits = 0;

    beforeAll(async () => {
      site = await startSite();
      site.route("/article", article("Local news", 6, "The closing paragraph of the local story."));
      site.route("/other", page("Other", "<p>Another page of the same site.</p>"));
      site.route("/secret", page("Secret", "<p>Never to be read.</p>"));
      site.route("/only-elsewhere", (_req, res) => {
        hits++;
        res.writeHead(200, { "Content-Type": "text/html" });
        res.end(page("Reached", "<p>reached</p>"));
      });
      // A page of the allowlisted address that sends its tab to localhost by itself (no question: a page's move).
      site.route("/jump", (_req, res) => {
        res.writeHead(200, { "Content-Type": "text/html" });
        res.end(page("Jump", `<script>setTimeout(() => { location.href = "http://localhost:${site.port}/only-elsewhere"; }, 50);</script>`));
      });
      // localhost is not on the allowlist (127.0.0.1 is, for the harness): its reads are asked; /secret is denied.
      elsewhere = `http://localhost:${site.port}`;
      broker = await startBroker({
        yaml: `policy:\n  deny: [{ host: "localhost", path: "^/secret" }]\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  ask:\n    timeout_s: 20\n    read: ["localhost"]\n`,
      });
      browser = await attachBrowser(broker, driver);
      agent = await connectClient(broker.url);
      person = await Person.login(broker.url);
    }, 60_000);

    afterAll(async () => {
      await agent?.close();
      await browser?.close();
      await broker?.close();
      await site?.close();
    });

    it("asks before a read_url; Allow once returns the page, and the next read asks again (Deny refuses it)", async () => {
      const read = call(agent, "read_url", { url: `${elsewhere}/article` });
      const q = await person.question(`${elsewhere}/article`);
      expect(q.host).toBe(`localhost:${site.port}`);
      expect(q.text).toBe(`read page «${elsewhere}/article»`);
      expect(q.always).toBe(`policy.read.allow["localhost:${site.port}"] = [".*"]`);
      expect((await person.answer(q.id, "once")).status).toBe(200);
      const done = await read;
      expect(done.isError, done.text).toBe(false);
      expect(done.text).toContain("The closing paragraph of the local story.");

      const again = call(agent, "read_url", { url: `${elsewhere}/article` });
      const second = await person.question(`${elsewhere}/article`);
      expect(second.id).not.toBe(q.id);
      expect((await person.answer(second.id, "deny")).status).toBe(200);
      const refused = await again;
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^policy_denied: the user declined/);
    }, 60_000);

    it("Allow once on open_tab makes the site readable in that tab until it closes, and in no other", async () => {
      const opening = call(agent, "open_tab", { url: `${elsewhere}/article` });
      const q = await person.question(`${elsewhere}/article`);
      expect((await person.answer(q.id, "once")).status).toBe(200);
      const opened = await opening;
      expect(opened.isError, opened.text).toBe(false);
      const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
      expect((await call(agent, "read_page", { tab })).text).toContain("The closing paragraph of the local story.");
      // The same site in the same tab: no question.
      const moved = await call(agent, "navigate", { tab, url: `${elsewhere}/other` });
      expect(moved.isError, moved.text).toBe(false);
      expect((await call(agent, "read_page", { tab })).text).toContain("Another page of the same site.");
      expect(await person.questions()).toEqual([]);
      // The deny list still wins in that tab.
      const denied = await call(agent, "navigate", { tab, url: `${elsewhere}/secret` });
      expect(denied.isError).toBe(true);
      expect(denied.text).toContain("policy_denied");
      expect(await person.questions()).toEqual([]);

      // Another tab is not allowed: a page of the allowed tab's own can't carry it there either.
      const other = await openTab(agent, `${site.origin}/other`);
      const there = call(agent, "navigate", { tab: other, url: `${elsewhere}/other` });
      const asked = await person.question(`${elsewhere}/other`);
      expect((await person.answer(asked.id, "deny")).status).toBe(200);
      expect((await there).text).toContain("the user declined");
      const stayed = (await call(agent, "read_page", { tab: other })).text;
      expect(stayed).toContain(`${site.origin}/other`);
      expect(stayed).not.toContain(elsewhere);

      // While the allowed tab is open, another agent tab whose page goes to the site by itself is stopped at the
      // network layer, before any request leaves: the allowance is that tab's alone.
      const jumper = await openTab(agent, `${site.origin}/jump`);
      // Reported by the first read_page after the move, or by the one it interrupted ("while tabrelay worked on ...").
      const jumped = await waitFor("the page's own move to be stopped", async () => {
        const text = (await call(agent, "read_page", { tab: jumper })).text;
        return /(?:the|its) page tried to go to/.test(text) ? text : undefined;
      });
      expect(jumped).toMatch(
        new RegExp(
          `(?:the|its) page tried to go to «${elsewhere.replace(/[.]/g, "\\.")}/only-elsewhere», which the read policy does not allow; tabrelay stopped the request before it left the browser`,
        ),
      );
      expect(jumped).not.toContain("reached");
      expect(hits).toBe(0);

      // Closed, the tab's allowance is gone with it.
      expect((await call(agent, "close_tab", { tab })).isError).toBe(false);
      const reopened = call(agent, "open_tab", { url: `${elsewhere}/article` });
      const third = await person.question(`${elsewhere}/article`);
      expect((await person.answer(third.id, "deny")).status).toBe(200);
      expect((await reopened).isError).toBe(true);
    }, 90_000);

    it("a redirect from the site allowed once to another refused host is stopped before any request reaches it", async () => {
      const other = await startSite("127.0.0.2");
      let reached = 0;
      other.route("/landing", (_req, res) => {
        reached++;
        res.writeHead(200, { "Content-Type": "text/html" });
        res.end(page("Landing", "<p>landed</p>"));
      });
      site.route("/bounce", (_req, res) => {
        res.writeHead(302, { Location: `${other.origin}/landing` });
        res.end();
      });
      try {
        const read = call(agent, "read_url", { url: `${elsewhere}/bounce` });
        const q = await person.question(`${elsewhere}/bounce`);
        expect((await person.answer(q.id, "once")).status).toBe(200);
        const done = await read;
        expect(done.isError).toBe(true);
        expect(done.text).toContain("policy_denied");
        expect(done.text).not.toContain("landed");
        expect(reached).toBe(0);
      } finally {
        await other.close();
      }
    }, 60_000);

    it("Always writes policy.read.allow, and the next read is not asked", async () => {
      const read = call(agent, "read_url", { url: `${elsewhere}/other` });
      const q = await person.question(`${elsewhere}/other`);
      expect((await person.answer(q.id, "always")).status).toBe(200);
      expect((await read).isError).toBe(false);
      expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).toContain(`localhost:${site.port}`);
      await waitFor("the broker to apply the grant", () => broker.config.policy.check(`${elsewhere}/other`).ok || undefined);
      const next = await call(agent, "read_url", { url: `${elsewhere}/article` });
      expect(next.isError, next.text).toBe(false);
      expect(await person.questions()).toEqual([]);
    }, 60_000);
  });
}

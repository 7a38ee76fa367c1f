// The user decides from the browser itself (issue 27 §1-§2), with the real extension in a real Chromium: a question
// shows as the extension's notification and in its popup, where Allow once, Always and Deny answer it (the first
// answer anywhere wins, the others close); the popup shows who holds the tab, what the agent did there and the site's
// policy; Stop takes the tab back mid-task (the pending question is answered no, the agent's next call is refused with
// tab_taken_back, and the tab is the user's again). A page cannot reach any of it. The popup and the notifications are
// driven through the browser's DevTools port, as a person's clicks (headless Chromium draws no notification).
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  browserConnected,
  call,
  connectClient,
  openTab,
  page,
  snapshotOf,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestBrowser,
  type TestSite,
} from "../harness.js";
import { dashboardLogin } from "../dashboardLogin.js";
import { EXTENSION_DRIVERS, launchWithUi, popupLook, type BrowserUi, type FirefoxUi } from "../extensionUi.js";
import { raw } from "../rawHttp.js";

const SHOP = page(
  "Shop",
  `<button onclick="document.getElementById('out').textContent = 'Added ' + (++window.n || (window.n = 1))">Add to cart</button>
   <button onclick="document.getElementById('out').textContent = 'Deleted'">Delete account</button>
   <p id="out">nothing yet</p>`,
);

/** A page that tries every way a page has to reach the extension's answer paths, and writes what happened. */
const HOSTILE = page(
  "Hostile",
  `<p id="out">trying</p>
   <script>
     (async () => {
       const tried = [];
       tried.push("runtime:" + (typeof chrome === "undefined" || !chrome.runtime ? "absent" : typeof chrome.runtime.sendMessage));
       // The extension's origin, as an attacker would know it (Chrome's is fixed; Firefox's is this profile's own).
       const extension = new URLSearchParams(location.search).get("ext");
       try { await fetch(extension + "/popup.html"); tried.push("fetch:ok"); } catch { tried.push("fetch:refused"); }
       const frame = document.createElement("iframe");
       frame.src = extension + "/popup.html?tab=1";
       document.body.append(frame);
       await new Promise((r) => setTimeout(r, 500));
       // Chrome refuses the frame's document to the page; Firefox leaves it on its own blank document. Either way not the popup.
       try {
         const doc = frame.contentDocument;
         tried.push("frame:" + (!doc ? "closed" : doc.querySelector("button") || /extension:/.test(doc.location.protocol) ? "popup" : "not-popup"));
       } catch { tried.push("frame:closed"); }
       window.postMessage({ type: "answer", answer: "always" }, "*");
       // The person's dashboard session is a cookie of this same site (127.0.0.1, another port): ride it, with the
       // question's id in hand.
       const params = new URLSearchParams(location.search);
       const broker = params.get("broker");
       if (broker) {
         try {
           const answered = await fetch(broker + "/dashboard/api/asks/answer", { method: "POST", credentials: "include", mode: "no-cors", body: new URLSearchParams({ id: params.get("id"), answer: "always" }) });
           tried.push("post:" + answered.type);
         } catch { tried.push("post:refused"); }
         try { await (await fetch(broker + "/dashboard/api/asks", { credentials: "include" })).text(); tried.push("list:read"); } catch { tried.push("list:refused"); }
       }
       document.getElementById("out").textContent = "tried " + tried.join(" ");
     })();
   </script>`,
);

describe.each(EXTENSION_DRIVERS)("the user decides from the browser: notifications, the popup, Stop (%s)", (driver) => {
  let site: TestSite;
  let broker: TestBroker;
  let browser: TestBrowser;
  let ui: BrowserUi;
  let agent: Client;

  beforeAll(async () => {
    site = await startSite();
    site.route("/shop", SHOP);
    site.route("/hostile", HOSTILE);
    broker = await startBroker({
      yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  ask:\n    timeout_s: 30\n    write: ["127.0.0.1"]\n`,
    });
    ({ browser, ui } = await launchWithUi(driver, `ws://127.0.0.1:${broker.port}/bridge`, `test ${driver}`));
    await browserConnected(broker, 40_000);
    agent = await connectClient(broker.url);
  }, 90_000);

  afterAll(async () => {
    await agent?.close();
    ui?.close();
    await browser?.close();
    await broker?.close();
    await site?.close();
  });

  async function pendingClick(label: string): Promise<{ tab: number; click: ReturnType<typeof call>; id: string }> {
    const tab = await openTab(agent, `${site.origin}/shop`);
    const snap = await snapshotOf(agent, tab);
    const click = call(agent, "click", { tab, ref: snap.ref(label, "button"), revision: snap.revision });
    const id = await waitFor(`the question about «${label}»`, () => broker.broker.asks.pending().find((q) => q.label === label)?.id);
    return { tab, click, id };
  }

  /** Clicks the popup's button `answer` for question `id`, as a person would. */
  const clickAnswer = (id: string, answer: "once" | "always" | "deny") =>
    `(() => { const b = document.querySelector('[data-question="${id}"] button[data-answer="${answer}"]'); if (!b) return "no button"; b.click(); return "clicked"; })()`;

  it("shows the question as a notification and in the popup; Allow once there lets the click pass, and the notification closes", async () => {
    const { tab, click, id } = await pendingClick("Add to cart");
    await waitFor("the notification", async () => ((await ui.notificationIds()).includes(id) ? true : undefined));
    const popup = await ui.popup(tab);
    try {
      const text = String(
        await waitFor("the question in the popup", async () => {
          const t = String(await popup.eval("document.getElementById('question-list').textContent"));
          return t.includes("Add to cart") ? t : undefined;
        }),
      );
      expect(text).toContain(`127.0.0.1:${site.port}May the agent click button «Add to cart»?Asked by tabrelay-test (its own name)`);
      expect(text).toContain('Always writes policy.write.click["127.0.0.1:' + site.port + '"]');
      // Still shown when the answer is given (Firefox closes its own after ~20 s): its closing below is the answer's.
      expect(await ui.notificationIds()).toContain(id);
      expect(await popup.eval(clickAnswer(id, "once"))).toBe("clicked");
      const done = await click;
      expect(done.isError, done.text).toBe(false);
      await waitFor("the notification to close", async () => (!(await ui.notificationIds()).includes(id) ? true : undefined));

      // The popup shows who holds the tab, what the agent did there, and the site's policy.
      const holder = await waitFor("the tab's state", async () => {
        const t = String(await popup.eval("document.getElementById('tab-holder').textContent"));
        return t.includes("tabrelay-test") ? t : undefined;
      });
      expect(holder).toContain("tabrelay-test is working in this tab");
      const recent = await waitFor("the click in the tab's recent actions", async () => {
        const t = String(await popup.eval("document.getElementById('recent').textContent"));
        return t.includes("click") ? t : undefined;
      });
      expect(recent).toContain('click button "Add to cart": allowed');
      const policy = String(await popup.eval("document.getElementById('policy').textContent"));
      expect(policy).toContain("Reading 127.0.0.1:");
      expect(policy).toContain("is asked of you");
    } finally {
      await popup.close();
    }
    const asks = JSON.parse(String((broker.broker.audit.list().find((r) => r.tool === "ask") ?? { detail: "{}" }).detail)) as { via?: string };
    expect(asks.via).toBe("extension");
  }, 90_000);

  // Firefox's notifications take no buttons: clicking one is how a person gets to the answers (Chrome's has the
  // buttons, which headless Chromium draws nowhere to click; the popup's answers are the ones checked above).
  if (driver === "firefox")
    it("clicking the notification opens the popup on the question, where the answer is given", async () => {
      const { tab, click, id } = await pendingClick("Add to cart");
      await waitFor("the notification", async () => ((await ui.notificationIds()).includes(id) ? true : undefined));
      const marionette = (ui as FirefoxUi).marionette;
      // The notification as Firefox draws it (its own alert window, with this extension's title), clicked.
      // Firefox opens its alert window just after it lists the notification: looked for until it is there.
      const shown = await waitFor("Firefox's alert window", async () => {
        const title = String(
          await marionette.chrome(`
          for (const win of Services.wm.getEnumerator("alert:alert")) {
            const label = win.document.getElementById("alertTitleLabel");
            const title = label?.getAttribute("value") || label?.textContent || "";
            if (!title.includes("may the agent do this?")) continue;
            win.document.getElementById("alertBox").click();
            return title;
          }
          return "";`),
        );
        return title || undefined;
      });
      expect(shown).toBe(`127.0.0.1:${site.port}: may the agent do this?`);
      const handle = await waitFor("the popup window on the question", async () => {
        for (const h of (await marionette.send("WebDriver:GetWindowHandles")) as string[]) {
          // A tab closed meanwhile (the look at the notifications) is gone from the list by the next round.
          const url = await marionette
            .switchTo(h)
            .then(() => marionette.content("return location.href;"))
            .catch(() => "");
          if (url === `${ui.origin}/popup.html?tab=${tab}`) return h;
        }
        return undefined;
      });
      await waitFor("the Allow once button", async () => ((await marionette.content(`return ${clickAnswer(id, "once")};`)) === "clicked" ? true : undefined));
      const done = await click;
      expect(done.isError, done.text).toBe(false);
      await marionette.closeTab(handle);
    }, 60_000);

  it("Always from the popup writes the narrow grant; an answer in the dashboard closes the browser's question", async () => {
    const first = await pendingClick("Add to cart");
    const popup = await ui.popup(first.tab);
    try {
      await waitFor("the Always button", async () => ((await popup.eval(clickAnswer(first.id, "always"))) === "clicked" ? true : undefined));
    } finally {
      await popup.close();
    }
    expect((await first.click).isError).toBe(false);
    await waitFor("the grant in config.yaml", () => (readFileSync(join(broker.dataDir, "config.yaml"), "utf8").includes("^Add to cart$") ? true : undefined));

    // The same question's other places close when one answers: the dashboard answers, the notification goes.
    const second = await pendingClick("Delete account");
    await waitFor("the notification", async () => ((await ui.notificationIds()).includes(second.id) ? true : undefined));
    const cookie = await dashboardLogin(broker.url);
    const home = await raw(`${broker.url}/`, { headers: { Cookie: cookie } });
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(home.body)?.[1] ?? "";
    const answered = await raw(`${broker.url}/dashboard/api/asks/answer`, {
      method: "POST",
      headers: { Cookie: cookie, Origin: broker.url, "X-CSRF-Token": csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ id: second.id, answer: "deny" }).toString(),
    });
    expect(answered.status, answered.body).toBe(200);
    expect((await second.click).text).toContain("the user declined");
    await waitFor("the notification to close", async () => (!(await ui.notificationIds()).includes(second.id) ? true : undefined));
  }, 90_000);

  it("a page cannot reach the notification, the popup or the answer path, not even riding the person's dashboard session", async () => {
    const { tab: shop, click, id } = await pendingClick("Delete account");
    // The person is logged in to the dashboard in this very browser: its session cookie is there.
    const cookie = (await dashboardLogin(broker.url)).split("=");
    await ui.setCookie({ name: cookie[0] ?? "", value: cookie.slice(1).join("="), domain: "127.0.0.1", path: "/", httpOnly: true, sameSite: "Strict" });
    const hostile = await openTab(agent, `${site.origin}/hostile?broker=${encodeURIComponent(broker.url)}&id=${id}&ext=${encodeURIComponent(ui.origin)}`);
    const tried = await waitFor("the page's attempts", async () => {
      const text = (await call(agent, "read_page", { tab: hostile, mode: "full" })).text;
      return text.includes("tried ") ? text : undefined;
    });
    // Chromium stops the page's POST to the broker before it leaves (or sends it blind, no-cors): either way, nothing
    // comes back to the page, and the question stays open. The broker refuses such a request on its own too: the
    // person's cookie rides along (same site), but the Origin is the page's, and the page cannot read the CSRF token.
    expect(tried).toMatch(/post:(refused|opaque)/);
    expect(tried).toContain("list:refused"); // no CORS for the dashboard: the list is not readable cross-origin
    const forged = await raw(`${broker.url}/dashboard/api/asks/answer`, {
      method: "POST",
      headers: {
        Cookie: cookie.join("="),
        Origin: site.origin,
        "Sec-Fetch-Site": "same-site",
        "Content-Type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ id, answer: "always" }).toString(),
    });
    expect(forged.status).toBe(403);
    expect(tried).toContain("runtime:absent");
    expect(tried).toContain("fetch:refused");
    // The page sees nothing of a frame it points at the popup (Chrome refuses it, Firefox leaves it blank); and a popup
    // framed anyway (here by the extension's own page, which may) shows nothing and wires no button.
    expect(tried).toMatch(/frame:(closed|not-popup)/);
    const framed = await popupLook(
      ui,
      `new Promise((resolve) => {
        const frame = document.createElement("iframe");
        frame.src = "popup.html?tab=${shop}";
        frame.onload = () => setTimeout(() => resolve("buttons:" + frame.contentDocument.querySelectorAll("button").length + " text:" + frame.contentDocument.documentElement.textContent.trim().length), 500);
        document.body.append(frame);
      })`,
    );
    expect(framed).toBe("buttons:0 text:0");
    // The question is still open, unanswered.
    expect(broker.broker.asks.pending().map((q) => q.id)).toContain(id);
    const popup = await ui.popup(shop);
    try {
      await waitFor("the Deny button", async () => ((await popup.eval(clickAnswer(id, "deny"))) === "clicked" ? true : undefined));
    } finally {
      await popup.close();
    }
    expect((await click).text).toContain("the user declined");
  }, 90_000);

  it("a refused read becomes a grant from the popup (shown with its key, saved once confirmed) and the same call passes", async () => {
    const tab = await openTab(agent, `${site.origin}/shop`);
    const elsewhere = `http://localhost:${site.port}/shop`;
    const refused = await call(agent, "navigate", { tab, url: elsewhere });
    expect(refused.text).toContain("policy_denied");
    const popup = await ui.popup(tab);
    try {
      const offered = String(
        await waitFor("the popup's offer", async () => {
          const text = String(await popup.eval("[...document.querySelectorAll('#recent [data-offer]')].map((b) => b.textContent).join('|')"));
          return text !== "" ? text : undefined;
        }),
      );
      expect(offered).toContain(`localhost:${site.port}`);
      await popup.eval("document.querySelector('#recent [data-offer]').click()");
      const shown = String(await popup.eval("document.querySelector('#recent .offer').textContent"));
      expect(shown).toContain("This writes policy.read.allow");
      expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).not.toContain("localhost");
      // The file changes under the shown offer (the person edits it): the save is refused, nothing is written.
      appendFileSync(join(broker.dataDir, "config.yaml"), "# a line of the person's own\n");
      await popup.eval("document.querySelector('#recent [data-save]').click()");
      await waitFor("the stale save to be refused", () =>
        broker.broker.audit.list().some((r) => r.tool === "policy" && r.decision === "refused") ? true : undefined,
      );
      expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).not.toContain(`localhost:${site.port}`);
      // Shown again on the file as it is now, and confirmed: written.
      await waitFor("the offer shown again", async () =>
        (await popup.eval("document.querySelector('#recent [data-offer]') ? 'yes' : ''")) === "yes" ? true : undefined,
      );
      await popup.eval("document.querySelector('#recent [data-offer]').click()");
      await popup.eval("document.querySelector('#recent [data-save]').click()");
      await waitFor("the broker to apply the grant", () => broker.config.policy.check(elsewhere).ok || undefined);
    } finally {
      await popup.close();
    }
    expect(readFileSync(join(broker.dataDir, "config.yaml"), "utf8")).toContain(`localhost:${site.port}`);
    const passed = await call(agent, "navigate", { tab, url: elsewhere });
    expect(passed.isError, passed.text).toBe(false);
    const changes = broker.broker.audit.list().filter((r) => r.tool === "policy");
    expect(changes.map((r) => [r.client, r.decision])).toEqual([
      ["extension", "refused"],
      ["extension", "allowed"],
    ]);
  }, 90_000);

  it("Stop takes the tab back mid-task: the waiting call and the next are tab_taken_back, then the tab is the user's", async () => {
    const { tab, click, id } = await pendingClick("Delete account");
    const popup = await ui.popup(tab);
    try {
      await waitFor("the Stop button", async () => ((await popup.eval("document.getElementById('stop').hidden")) === false ? true : undefined));
      await popup.eval("document.getElementById('stop').click()");
      const refused = await click;
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^tab_taken_back: the user took tab \d+ back \(Stop in the tabrelay popup\) while asked/);
      expect(broker.broker.asks.pending().map((q) => q.id)).not.toContain(id);
      const next = await call(agent, "snapshot", { tab });
      expect(next.isError).toBe(true);
      expect(next.text).toContain("tab_taken_back");
      const after = await call(agent, "snapshot", { tab });
      expect(after.isError).toBe(true);
      expect(after.text).toContain("not_agent_tab");
      const listed = (await call(agent, "list_tabs")).text;
      expect(listed).not.toContain(`- tab ${tab}:`);
      const holder = await waitFor("the popup to say the tab is the user's", async () => {
        const t = String(await popup.eval("document.getElementById('tab-holder').textContent"));
        return t.includes("Not an agent's tab") ? t : undefined;
      });
      expect(holder).toContain("agents neither see nor use it");
    } finally {
      await popup.close();
    }
    const stops = broker.broker.audit.list().filter((r) => r.tool === "stop");
    expect(stops.map((r) => r.tab)).toEqual([tab]);
  }, 90_000);
});

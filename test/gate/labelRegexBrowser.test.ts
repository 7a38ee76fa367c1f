// Issue 10: one label cannot freeze the broker. With the write grant `label: "^([A-Za-z]+ ?)+$"` (which makes
// JavaScript's backtracking RegExp run for minutes on "Add to cart cart … cart!"), a click on such a button answers
// promptly with write_denied, and GET /health answers meanwhile. Real Chromium over CDP, the SDK's MCP client.
import { get } from "node:http";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachBrowser, call, connectClient, startBroker, startSite, type TestBroker, type TestSite } from "../harness.js";

/** Generous: a shared two-core machine. */
const PROMPT_MS = 2_000;
const LONG_LABEL = `Add to cart${" cart".repeat(45)}!`;

let site: TestSite;
let broker: TestBroker;
let browser: { close(): Promise<void> } | undefined;
let client: Client;
const clicks: string[] = [];

function health(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
}

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/clicked", (req, res) => {
    clicks.push(req.url ?? "");
    res.writeHead(204);
    res.end();
  });
  site.route(
    "/shop",
    `<!doctype html><html><head><title>Shop</title></head><body>
<button id="long" onclick="fetch('/clicked?long')">${LONG_LABEL}</button>
<button id="short" onclick="fetch('/clicked?short')">Add to cart</button>
</body></html>`,
  );
  broker = await startBroker({
    yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^([A-Za-z]+ ?)+$" }
`,
  });
  browser = await attachBrowser(broker, "cdp");
  client = await connectClient(broker.url);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await broker?.close();
  await browser?.close();
  await site?.close();
});

describe("a catastrophic label grant (CDP)", () => {
  it("a click on a 47-word label answers promptly with write_denied, and /health answers meanwhile", async () => {
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
    expect(opened.isError, opened.text).toBe(false);
    const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    const snapshot = await call(client, "snapshot", { tab });
    expect(snapshot.isError, snapshot.text).toBe(false);
    const revision = /revision: (\S+)/.exec(snapshot.text)?.[1] ?? "";
    const refOf = (label: string) => {
      const line = snapshot.text.split("\n").find((l) => l.includes("- button ") && l.includes(`"${label}`) && l.includes("[ref="));
      const ref = line === undefined ? undefined : /\[ref=([^\]]+)\]/.exec(line)?.[1];
      if (ref === undefined) throw new Error(`no ref for button "${label.slice(0, 40)}" in:\n${snapshot.text}`);
      return ref;
    };
    const longRef = refOf(LONG_LABEL.slice(0, 60));
    expect(refOf('Add to cart"')).not.toBe(longRef);

    let done = false;
    const clicked = call(client, "click", { tab, ref: longRef, revision }).finally(() => {
      done = true;
    });
    const probes: Promise<{ ms: number; status: number }>[] = [];
    do {
      const t0 = Date.now();
      probes.push(health(`${broker.url}/health`).then((status) => ({ ms: Date.now() - t0, status })));
      await new Promise((r) => setTimeout(r, 50));
    } while (!done);
    const result = await clicked;
    const answered = await Promise.all(probes);

    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^write_denied: /);
    expect(result.text).toContain('does not match policy.write.click["127.0.0.1"].label ^([A-Za-z]+ ?)+$');
    expect(result.text).toContain('(rule: write.click["127.0.0.1"].label)');
    for (const probe of answered) {
      expect(probe.status).toBe(200);
      expect(probe.ms).toBeLessThan(PROMPT_MS);
    }
    expect(clicks).toEqual([]);

    // The same grant still allows the label it was written for.
    const granted = await call(client, "click", { tab, ref: refOf('Add to cart"'), revision });
    expect(granted.isError, granted.text).toBe(false);
  });
});

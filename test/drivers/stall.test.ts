// A page cannot stall the broker: while one MCP session reads a page whose script builds ~11 MB of paragraphs,
// another session's list_tabs and GET /health keep answering, and the big read ends with a message naming the
// limits it hit. Both drivers; real Chromium, the real extension or CDP, the SDK's MCP client.
import { get } from "node:http";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachBrowser, call, connectClient, DRIVERS, startBroker, startSite, type TestBroker, type TestSite } from "../harness.js";

/** ~400 bytes on the wire; ~11 MB of paragraphs once its script ran (as bench/pages/builds-11mb.html). */
const BUILDS_11MB = `<!doctype html><html><head><title>Builds 11 MB</title></head><body><script>
const p = "<p>" + "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod. ".repeat(3) + "</p>";
document.body.insertAdjacentHTML("beforeend", p.repeat(48000));
document.body.insertAdjacentHTML("beforeend", "<p>LAST PARAGRAPH OF THE BIG PAGE</p>");
</script></body></html>`;

/** Generous: a shared two-core machine; a stalled event loop took 8-27 s before the worker pool. */
const PROMPT_MS = 2_000;

let site: TestSite;

beforeAll(async () => {
  site = await startSite();
  site.route("/builds-11mb", BUILDS_11MB);
}, 60_000);

afterAll(async () => {
  await site?.close();
});

function health(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
}

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let broker: TestBroker;
  let browser: { close(): Promise<void> };
  let reader: Client;
  let other: Client;

  beforeAll(async () => {
    broker = await startBroker();
    browser = await attachBrowser(broker, driver);
    reader = await connectClient(broker.url);
    other = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await reader?.close();
    await other?.close();
    await browser?.close();
    await broker?.close();
  });

  it("another session's list_tabs and /health answer promptly while one session reads a page building 11 MB", async () => {
    const started = Date.now();
    let done = false;
    const read = call(reader, "read_url", { url: `${site.origin}/builds-11mb`, mode: "readable" }).finally(() => {
      done = true;
    });
    const probes: Promise<{ what: string; ms: number; ok: boolean }>[] = [];
    // On a schedule, not back to back: a stall would delay every probe that falls into it.
    for (let i = 0; !done; i++) {
      const t0 = Date.now();
      probes.push(
        i % 2 === 0
          ? call(other, "list_tabs").then((r) => ({ what: "list_tabs", ms: Date.now() - t0, ok: !r.isError }))
          : health(`${broker.url}/health`).then((status) => ({ what: "/health", ms: Date.now() - t0, ok: status === 200 })),
      );
      await new Promise((r) => setTimeout(r, 100));
    }
    const result = await read;
    const answered = await Promise.all(probes);
    const elapsed = Date.now() - started;

    expect(result.isError, result.text.slice(0, 500)).toBe(false);
    expect(elapsed).toBeLessThan(60_000);
    // The read says what it could not do, and shows what it read.
    expect(result.text).toMatch(/Limit: the page is too large to read whole: its HTML is 1\d MiB \(only its first 4 MiB were read\)/);
    expect(result.text).toContain("Limit: the page was converted as plain text: its HTML is over 2 MiB, too large to convert to Markdown");
    expect(result.text).toContain("Lorem ipsum dolor sit amet");
    expect(answered.length).toBeGreaterThan(5);
    for (const probe of answered) {
      expect(probe.ok, probe.what).toBe(true);
      expect(probe.ms, `${probe.what} took ${probe.ms} ms during the big read`).toBeLessThan(PROMPT_MS);
    }
  }, 90_000);
});

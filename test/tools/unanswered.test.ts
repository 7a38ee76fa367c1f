// A server that never answers: read_url opens its tab, the page never commits within read.load_timeout_ms, and the
// agent is told so (timeout, naming the URL and the setting), not that the tab "landed" somewhere off-policy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowYaml, call, DRIVERS, startSession, startSite, type TestSession, type TestSite } from "../harness.js";

let site: TestSite;
const held: Array<() => void> = [];
beforeAll(async () => {
  site = await startSite();
  site.route("/never", (_req, res) => held.push(() => res.end("late")));
});
afterAll(async () => {
  for (const release of held) release();
  await site.close();
});

describe.each(DRIVERS)("a server that never answers, over %s", (driver) => {
  let session: TestSession;
  beforeAll(async () => {
    session = await startSession(driver, { yaml: allowYaml("read:\n  load_timeout_ms: 1500\n") });
  }, 60_000);
  afterAll(async () => {
    await session?.close();
  });

  it("read_url fails with timeout naming the URL and the setting, and leaves no tab behind", async () => {
    const before = (await call(session.client, "list_tabs")).text;
    const read = await call(session.client, "read_url", { url: `${site.origin}/never` });
    expect(read.isError).toBe(true);
    expect(read.text).toMatch(/^timeout: .*\/never» did not start to load within 1500 ms: its server did not answer \(read\.load_timeout_ms in /);
    expect((await call(session.client, "list_tabs")).text).toBe(before);
  }, 60_000);
});

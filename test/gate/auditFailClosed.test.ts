// The audit log fails closed, on a real full disk: the broker's data dir is a small tmpfs that a filler file
// fills until SQLite answers SQLITE_FULL. A click is then refused with audit_unavailable and never reaches the
// page, /health and the dashboard say writes are refused, reads go on (each unrecorded read counted), and once
// the filler is gone the next click runs, recorded before it reached the page and completed after.
// Real broker, real Chromium (CDP and the extension), the SDK's MCP client; needs root to mount the tmpfs.
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmdirSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowYaml, auditRows, call, DASHBOARD_TOKEN, startSession, startSite, type TestBroker, type TestSite } from "../harness.js";

const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const YAML = allowYaml(`  write:\n    click:\n      "127.0.0.1": { label: "^Buy now$" }\n`);

/** The page's click handler reports each click with a synchronous request, so the click cannot finish before the test server has seen it. */
const SHOP = `<!doctype html><html><head><title>Shop</title></head><body>
<button id="buy">Buy now</button><p id="out">Clicks so far: 0</p>
<script>
let clicks = 0;
document.getElementById("buy").addEventListener("click", () => {
  clicks += 1;
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/clicked", false);
  xhr.send(String(clicks));
  document.getElementById("out").textContent = "Clicks so far: " + clicks;
});
</script></body></html>`;

interface Health {
  status: string;
  audit: { ok: boolean; failures: number; error?: string; since?: string; writes?: string };
}

let site: TestSite;
/** What the click handler reported, with the newest click record in audit.db at that moment (read by another connection). */
const clicked: { body: string; recordAtClick: { id: number; decision: string } | undefined }[] = [];
let currentDb = "";

function onClicked(req: IncomingMessage, res: ServerResponse): void {
  let body = "";
  req.on("data", (chunk: Buffer) => (body += chunk.toString()));
  req.on("end", () => {
    clicked.push({ body, recordAtClick: newestClick(currentDb) });
    res.writeHead(204);
    res.end();
  });
}

function newestClick(dbPath: string): { id: number; decision: string; duration_ms: number } | undefined {
  const row = auditRows({ path: dbPath }, "click").at(-1);
  return row && { id: row.id, decision: row.decision, duration_ms: Number(row["duration_ms"]) };
}

function clickRows(dbPath: string): { id: number; decision: string; target: string | null; code: string | null }[] {
  return auditRows({ path: dbPath }, "click").map((row) => ({
    id: row.id,
    decision: row.decision,
    target: (row["target"] as string | null) ?? null,
    code: (row["code"] as string | null) ?? null,
  }));
}

/** Writes `path` until the filesystem has no byte left (ENOSPC), in ever smaller pieces. */
function fillDisk(path: string): number {
  const fd = openSync(path, "w", 0o600);
  let written = 0;
  try {
    for (const size of [1 << 20, 64 << 10, 4 << 10, 512, 1]) {
      const chunk = Buffer.alloc(size, 0x5a);
      for (;;) {
        try {
          const n = writeSync(fd, chunk);
          written += n;
          if (n < size) break;
        } catch (error) {
          if (error instanceof Error && Reflect.get(error, "code") === "ENOSPC") break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

async function health(b: TestBroker): Promise<Health> {
  const res = await fetch(`${b.url}/health`);
  expect(res.status).toBe(200);
  return (await res.json()) as Health;
}

async function snapRef(client: Client, tab: number, name: string): Promise<{ ref: string; revision: string }> {
  const snap = await call(client, "snapshot", { tab });
  expect(snap.isError, snap.text).toBe(false);
  const revision = /revision: (\S+)/.exec(snap.text)?.[1] ?? "";
  const line = snap.text.split("\n").find((l) => l.includes(`"${name}"`) && l.includes("[ref="));
  const ref = line ? /\[ref=([^\]]+)\]/.exec(line)?.[1] : undefined;
  if (!ref) throw new Error(`no ref for "${name}" in:\n${snap.text}`);
  return { ref, revision };
}

async function pageText(client: Client, tab: number): Promise<string> {
  const read = await call(client, "read_page", { tab, mode: "full" });
  expect(read.isError, read.text).toBe(false);
  return read.text;
}

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/shop", SHOP);
  site.route("/clicked", onClicked);
});

afterAll(async () => {
  await site?.close();
});

describe.each(["cdp", "extension"] as const)("the audit log on a full disk, %s driver", (driver) => {
  let mountDir = "";
  let mounted = false;
  let broker: TestBroker;
  let client: Client;
  let closeSession: () => Promise<void> = async () => undefined;
  let filler = "";
  let dbPath = "";
  let tab = 0;

  beforeAll(async () => {
    clicked.length = 0;
    mountDir = mkdtempSync(join(tmpdir(), "tabrelay-fulldisk-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mountDir], { stdio: "pipe" });
      mounted = true;
    } catch (error) {
      const stderr = error instanceof Error ? String(Reflect.get(error, "stderr") ?? "") : "";
      throw new Error(
        `this test needs a real full disk: could not mount a 2 MiB tmpfs at ${mountDir} (${stderr.trim() || String(error)}); run it as root on a machine that allows mount -t tmpfs`,
        { cause: error },
      );
    }
    writeFileSync(join(mountDir, "config.yaml"), YAML, { mode: 0o600 });
    ({ broker, client, close: closeSession } = await startSession(driver, { dataDir: mountDir }));
    dbPath = join(mountDir, "audit.db");
    currentDb = dbPath;
    filler = join(mountDir, "filler");
    const opened = await call(client, "open_tab", { url: `${site.origin}/shop` });
    expect(opened.isError, opened.text).toBe(false);
    tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
    expect((await health(broker)).audit).toEqual({ ok: true, failures: 0 });
    // The disk fills up while the broker runs.
    expect(fillDisk(filler)).toBeGreaterThan(0);
  }, 90_000);

  afterAll(async () => {
    await closeSession();
    if (mounted) {
      try {
        execFileSync("umount", [mountDir], { stdio: "pipe" });
      } catch {
        execFileSync("umount", ["-l", mountDir], { stdio: "pipe" });
      }
    }
    if (mountDir) rmdirSync(mountDir);
  });

  it("refuses a click with audit_unavailable, and the page's click handler never runs", async () => {
    const { ref, revision } = await snapRef(client, tab, "Buy now");
    const result = await call(client, "click", { tab, ref, revision });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^audit_unavailable: the audit log cannot be written \(.*SQLITE_FULL/);
    expect(result.text).toContain("was not sent to the browser");
    expect(result.text).toMatch(/free disk space/);
    expect(clicked).toEqual([]);
    expect(await pageText(client, tab)).toContain("Clicks so far: 0");
    expect(clickRows(dbPath)).toEqual([]);
  });

  it("says on /health that the audit log is failing and writes are refused, counting each failed record", async () => {
    const before = await health(broker);
    expect(before.status).toBe("degraded");
    expect(before.audit.ok).toBe(false);
    expect(before.audit.error).toMatch(/SQLITE_FULL/);
    expect(before.audit.writes).toMatch(/refused/);
    expect(Date.parse(before.audit.since ?? "")).toBeLessThanOrEqual(Date.now());
    // A read still answers; its record could not be written either, and is counted.
    expect(await pageText(client, tab)).toContain("Buy now");
    const after = await health(broker);
    expect(after.audit.failures).toBe(before.audit.failures + 1);
  });

  // The dashboard is the broker's own page: viewing it once (over CDP's run) is enough.
  if (driver === "cdp")
    it("shows the dashboard viewer a banner saying writes are refused", async () => {
      const viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
      try {
        const page = await viewer.newPage();
        await page.goto(`${broker.url}/login`);
        await page.getByLabel("Dashboard token").fill(DASHBOARD_TOKEN);
        await Promise.all([page.waitForURL(`${broker.url}/`), page.getByRole("button", { name: "Log in" }).click()]);
        const banner = page.locator("#audit-alert");
        await banner.waitFor({ state: "visible", timeout: 10_000 });
        await expect(page.getByRole("heading", { name: "Writes refused: the audit log cannot be written" }).isVisible()).resolves.toBe(true);
        await expect(page.locator("#audit-alert-text").textContent()).resolves.toMatch(/SQLITE_FULL.*refused and not sent to the browser/);
      } finally {
        await viewer.close();
      }
    }, 60_000);

  it("once the disk has room again, the next click runs, recorded before it reached the page and completed after", async () => {
    unlinkSync(filler);
    const { ref, revision } = await snapRef(client, tab, "Buy now");
    const result = await call(client, "click", { tab, ref, revision });
    expect(result.isError, result.text).toBe(false);
    expect(await pageText(client, tab)).toContain("Clicks so far: 1");
    // When the page's handler ran, audit.db already held this click as outcome_unknown...
    expect(clicked).toHaveLength(1);
    const atClick = clicked[0]?.recordAtClick;
    expect(atClick?.decision).toBe("outcome_unknown");
    // ...and after the call, that same record says what happened.
    expect(clickRows(dbPath)).toEqual([{ id: atClick?.id, decision: "allowed", target: 'button "Buy now"', code: null }]);
    const now = await health(broker);
    expect(now.status).toBe("ok");
    expect(now.audit.ok).toBe(true);
    expect(now.audit.failures).toBeGreaterThanOrEqual(3);
  });
});

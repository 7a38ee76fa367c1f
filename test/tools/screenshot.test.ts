// Screenshots through each driver (the real extension and CDP): off by default, then short-lived signed
// links to real PNGs.
import { inflateSync } from "node:zlib";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capabilitiesOf } from "../../packages/broker/src/drivers/capabilities.js";
import { attachBrowser, call, connectClient, DRIVERS, startBroker, startSite, type TestBroker, type TestSite } from "../harness.js";

let site: TestSite;
// Set per driver by the suite below (the suites run one after the other).
let broker: TestBroker;
let client: Client;

function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** RGB of the top-left pixel (8-bit RGB/RGBA): every PNG filter stores the first pixel of a file as is. */
function firstPixel(bytes: Buffer): number[] {
  const idat: Buffer[] = [];
  for (let offset = 8; offset < bytes.length;) {
    const length = bytes.readUInt32BE(offset);
    if (bytes.toString("latin1", offset + 4, offset + 8) === "IDAT") idat.push(bytes.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  return [...inflateSync(Buffer.concat(idat)).subarray(1, 4)];
}

async function openTab(path: string, active = true): Promise<number> {
  const opened = await call(client, "open_tab", { url: `${site.origin}${path}`, active });
  return Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
}

beforeAll(async () => {
  site = await startSite();
  site.route(
    "/colour",
    `<html><head><title>Colour</title><style>body{margin:0;background:#fff}#box{width:200px;height:100px;background:rgb(255,0,0);margin:40px}</style></head><body><div id="box"><button>Red box</button></div><div style="height:3000px">tall</div><p>bottom</p></body></html>`,
  );
  site.route("/box-frame", `<html><body style="margin:0"><button style="width:150px;height:60px">Framed box</button></body></html>`);
  site.route(
    "/framed-box",
    `<html><head><title>Framed box</title></head><body style="margin:0"><p>Above the frame.</p><iframe src="/box-frame" width="400" height="200"></iframe></body></html>`,
  );
  site.route("/red", `<html><head><title>Red</title></head><body style="margin:0;background:rgb(255,0,0)"><p>red page</p></body></html>`);
  site.route(
    "/viewport",
    `<html><head><title>Viewport</title></head><body style="margin:0;background:rgb(0,0,255)"><p id="size">?</p><script>document.getElementById("size").textContent = "viewport " + Math.round(innerWidth * devicePixelRatio) + " by " + Math.round(innerHeight * devicePixelRatio);</script></body></html>`,
  );
});

afterAll(async () => {
  await site?.close();
});

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let browser: { close(): Promise<void> } | undefined;

  beforeAll(async () => {
    broker = await startBroker({ yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\nscreenshots:\n  enabled: true\n  ttl_seconds: 60\n` });
    browser = await attachBrowser(broker, driver);
    client = await connectClient(broker.url);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await broker?.close();
    await browser?.close();
  });

  describe("screenshots", () => {
    it("returns a short text result with a signed link to a real PNG of the page", async () => {
      const tab = await openTab("/colour");
      const result = await call(client, "screenshot", { tab });
      expect(result.isError, result.text).toBe(false);
      expect(result.text.length).toBeLessThanOrEqual(500);
      expect(result.text).toContain(`Page (page text): «${site.origin}/colour»`);
      expect(result.text).toMatch(/bearer credential/);
      const link = /(http:\/\/\S+\/shots\/\S+)/.exec(result.text)?.[1] ?? "";
      const response = await fetch(link);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/png");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("cache-control")).toBe("private, no-store");
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      const { width, height } = pngSize(Buffer.from(await response.arrayBuffer()));
      expect(width).toBeGreaterThan(500);
      expect(height).toBeGreaterThan(300);
      const tampered = link.replace(/sig=([0-9a-f])/, (_m, c: string) => `sig=${c === "0" ? "1" : "0"}`);
      // An altered link leads nowhere, as a made-up one does (and another user's: usersPages.test.ts).
      expect((await fetch(tampered)).status).toBe(404);
    });

    it("pictures the viewport as the page shows it: its size in device pixels, its colours, there at the link at once", async () => {
      const tab = await openTab("/viewport");
      const [, width, height] = /viewport (\d+) by (\d+)/.exec((await call(client, "read_page", { tab })).text) ?? [];
      const result = await call(client, "screenshot", { tab });
      expect(result.isError, result.text).toBe(false);
      expect(result.text).toContain(`${width}x${height} PNG`);
      const link = /(http:\/\/\S+\/shots\/\S+)/.exec(result.text)?.[1] ?? "";
      const bytes = Buffer.from(await (await fetch(link)).arrayBuffer());
      expect(pngSize(bytes)).toEqual({ width: Number(width), height: Number(height) });
      expect(firstPixel(bytes)).toEqual([0, 0, 255]);
    });

    it("four screenshots asked at once are all taken (Chrome allows two captures a second: the driver paces them)", async () => {
      const tab = await openTab("/colour");
      const shots = await Promise.all([0, 1, 2, 3].map(() => call(client, "screenshot", { tab })));
      for (const shot of shots) expect(shot.isError, shot.text).toBe(false);
    });

    it("captures one element by ref, and the full page", async () => {
      const tab = await openTab("/colour");
      const snap = await call(client, "snapshot", { tab });
      const ref = /button "Red box" \[ref=(e\d+)\]/.exec(snap.text)?.[1];
      const revision = /revision: (\S+)/.exec(snap.text)?.[1];
      const element = await call(client, "screenshot", { tab, ref, revision });
      expect(element.isError, element.text).toBe(false);
      const [, w, h] = /(\d+)x(\d+) PNG/.exec(element.text) ?? [];
      expect(Number(w)).toBeLessThan(300);
      expect(Number(h)).toBeLessThan(150);
      const full = await call(client, "screenshot", { tab, full_page: true });
      expect(full.isError, full.text).toBe(false);
      expect(Number(/x(\d+) PNG/.exec(full.text)?.[1])).toBeGreaterThan(1500);
    });

    it("returns the image inline when asked", async () => {
      const tab = await openTab("/colour");
      const result = await client.callTool({ name: "screenshot", arguments: { tab, inline: true } });
      const content = result.content as { type: string; mimeType?: string; data?: string }[];
      const image = content.find((c) => c.type === "image");
      expect(image?.mimeType).toBe("image/png");
      pngSize(Buffer.from(image?.data ?? "", "base64"));
    });

    it("never pictures another tab: a background tab without activate is refused or pictured itself", async () => {
      await openTab("/colour", true);
      const background = await openTab("/red", false);
      const result = await call(client, "screenshot", { tab: background, activate: false });
      if (!capabilitiesOf(driver).backgroundCapture) {
        // captureVisibleTab pictures whatever tab is in front, so the extension refuses.
        expect(result.text).toMatch(/^tab_not_visible:/);
      } else {
        // CDP captures the tab it is asked for, in front or not: the picture is of the red page.
        expect(result.isError, result.text).toBe(false);
        const link = /(http:\/\/\S+\/shots\/\S+)/.exec(result.text)?.[1] ?? "";
        expect(firstPixel(Buffer.from(await (await fetch(link)).arrayBuffer()))).toEqual([255, 0, 0]);
      }
    });
  });

  describe("what the driver can capture is what list_browsers says", () => {
    it("an element inside a frame: captured, or refused before the browser is asked, as the capability says", async () => {
      expect((await call(client, "list_browsers")).text).toContain(
        `element screenshots in frames: ${capabilitiesOf(driver).frameElementScreenshot ? "yes" : "no"}`,
      );
      const tab = await openTab("/framed-box", true);
      const snap = await call(client, "snapshot", { tab });
      const ref = /button "Framed box" \[ref=(f\d+e\d+)\]/.exec(snap.text)?.[1];
      const revision = /revision: (\S+)/.exec(snap.text)?.[1];
      expect(ref, snap.text).toBeDefined();
      const shot = await call(client, "screenshot", { tab, ref, revision });
      if (capabilitiesOf(driver).frameElementScreenshot) {
        expect(shot.isError, shot.text).toBe(false);
        const [, w, h] = /(\d+)x(\d+) PNG/.exec(shot.text) ?? [];
        expect(Number(w)).toBeLessThan(300);
        expect(Number(h)).toBeLessThan(150);
      } else {
        expect(shot.text).toMatch(/^not_actionable: .*inside a frame.*without a ref/);
      }
    });
  });

  describe("screenshots are off by default", () => {
    it("says so, and how to turn them on", async () => {
      const fresh = await startBroker();
      const freshBrowser = await attachBrowser(fresh, driver);
      try {
        const c = await connectClient(fresh.url);
        const opened = await call(c, "open_tab", { url: `${site.origin}/colour`, active: true });
        const tab = Number(/Opened tab (\d+)/.exec(opened.text)?.[1]);
        const result = await call(c, "screenshot", { tab });
        expect(result.text).toMatch(/^screenshots_disabled: .*enabled: true/);
        await c.close();
      } finally {
        await freshBrowser.close();
        await fresh.close();
      }
    });
  });
});

// Headful with a view: a real Xvfb + x11vnc + websockify/noVNC display, a real headful Chromium (not
// --headless) carrying the real extension on it, a broker it pairs with, and an MCP client reading through
// it. The VNC side is checked as a person's viewer meets it: the noVNC page, then the RFB protocol over
// websockify's WebSocket (password required, the browser's pixels on screen), and noVNC itself connecting
// with the printed link. Needs: apt-get install xvfb x11vnc novnc websockify chromium.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { chromiumArgs, findChromium, launchChromium, prepareExtension, type LaunchedBrowser } from "../../packages/broker/src/index.js";
import { startVncDisplay, type VncDisplay } from "../../packages/broker/src/launch/vnc.js";
import { launchWithVnc, vncBanner, vncWindowArgs, type VncView } from "../../packages/cli/src/vnc.js";
import {
  DRIVERS,
  MCP_TOKEN,
  browserConnected,
  article,
  call,
  connectClient,
  PAIRING_TOKEN,
  startBroker,
  startSite,
  waitFor,
  type TestBroker,
  type TestSite,
} from "../harness.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));

/** The start page's colour, looked for in the VNC framebuffer. */
const PINK = { r: 255, g: 0, b: 170 };

// ---- helpers --------------------------------------------------------------------------------------

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose process group is `pgid` (websockify forks one per viewer). */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // pid (comm) state ppid pgrp ...; comm may hold spaces, so split after the last ")".
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) members.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return members;
}

/** Processes whose command line mentions `needle` (Chromium's helpers carry the profile dir). */
/** processesMentioning once two readings 300 ms apart agree (short-lived children have come and gone). */
async function steadyProcessesMentioning(needle: string): Promise<number[]> {
  let last = processesMentioning(needle);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const now = processesMentioning(needle);
    if (now.join() === last.join()) return now;
    last = now;
  }
  return last;
}

function processesMentioning(needle: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(needle)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function nonLoopbackIPv4(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address;
}

// ---- DES, for VNC authentication (Node's OpenSSL 3 has no DES without the legacy provider) ---------

const IP = [
  58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8, 57, 49, 41, 33, 25, 17, 9, 1, 59,
  51, 43, 35, 27, 19, 11, 3, 61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7,
];
const FP = [
  40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31, 38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29, 36, 4, 44, 12, 52, 20, 60, 28, 35,
  3, 43, 11, 51, 19, 59, 27, 34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25,
];
const E = [
  32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17, 16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28,
  29, 30, 31, 32, 1,
];
const P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25];
const PC1 = [
  57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36, 63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30,
  22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4,
];
const PC2 = [
  14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2, 41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34,
  53, 46, 42, 50, 36, 29, 32,
];
const SHIFTS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1];
const S = [
  "14 4 13 1 2 15 11 8 3 10 6 12 5 9 0 7 0 15 7 4 14 2 13 1 10 6 12 11 9 5 3 8 4 1 14 8 13 6 2 11 15 12 9 7 3 10 5 0 15 12 8 2 4 9 1 7 5 11 3 14 10 0 6 13",
  "15 1 8 14 6 11 3 4 9 7 2 13 12 0 5 10 3 13 4 7 15 2 8 14 12 0 1 10 6 9 11 5 0 14 7 11 10 4 13 1 5 8 12 6 9 3 2 15 13 8 10 1 3 15 4 2 11 6 7 12 0 5 14 9",
  "10 0 9 14 6 3 15 5 1 13 12 7 11 4 2 8 13 7 0 9 3 4 6 10 2 8 5 14 12 11 15 1 13 6 4 9 8 15 3 0 11 1 2 12 5 10 14 7 1 10 13 0 6 9 8 7 4 15 14 3 11 5 2 12",
  "7 13 14 3 0 6 9 10 1 2 8 5 11 12 4 15 13 8 11 5 6 15 0 3 4 7 2 12 1 10 14 9 10 6 9 0 12 11 7 13 15 1 3 14 5 2 8 4 3 15 0 6 10 1 13 8 9 4 5 11 12 7 2 14",
  "2 12 4 1 7 10 11 6 8 5 3 15 13 0 14 9 14 11 2 12 4 7 13 1 5 0 15 10 3 9 8 6 4 2 1 11 10 13 7 8 15 9 12 5 6 3 0 14 11 8 12 7 1 14 2 13 6 15 0 9 10 4 5 3",
  "12 1 10 15 9 2 6 8 0 13 3 4 14 7 5 11 10 15 4 2 7 12 9 5 6 1 13 14 0 11 3 8 9 14 15 5 2 8 12 3 7 0 4 10 1 13 11 6 4 3 2 12 9 5 15 10 11 14 1 7 6 0 8 13",
  "4 11 2 14 15 0 8 13 3 12 9 7 5 10 6 1 13 0 11 7 4 9 1 10 14 3 5 12 2 15 8 6 1 4 11 13 12 3 7 14 10 15 6 8 0 5 9 2 6 11 13 8 1 4 10 7 9 5 0 15 14 2 3 12",
  "13 2 8 4 6 15 11 1 10 9 3 14 5 0 12 7 1 15 13 8 10 3 7 4 12 5 6 11 0 14 9 2 7 11 4 1 9 12 14 2 0 6 10 13 15 3 5 8 2 1 14 7 4 10 8 13 15 12 9 0 3 5 6 11",
].map((row) => row.split(" ").map(Number));

function bitsOf(bytes: Uint8Array): number[] {
  return Array.from(bytes).flatMap((byte) => Array.from({ length: 8 }, (_, i) => (byte >> (7 - i)) & 1));
}
function permute(bits: number[], table: number[]): number[] {
  return table.map((position) => bits[position - 1] ?? 0);
}

function desEncryptBlock(key: Uint8Array, block: Uint8Array): Buffer {
  const keyBits = permute(bitsOf(key), PC1);
  let c = keyBits.slice(0, 28);
  let d = keyBits.slice(28);
  const subkeys = SHIFTS.map((shift) => {
    c = [...c.slice(shift), ...c.slice(0, shift)];
    d = [...d.slice(shift), ...d.slice(0, shift)];
    return permute([...c, ...d], PC2);
  });
  const bits = permute(bitsOf(block), IP);
  let left = bits.slice(0, 32);
  let right = bits.slice(32);
  for (const subkey of subkeys) {
    const mixed = permute(right, E).map((bit, i) => bit ^ (subkey[i] ?? 0));
    const substituted = S.flatMap((box, i) => {
      const six = mixed.slice(i * 6, i * 6 + 6);
      const [b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0] = six;
      const value = box[(b1 * 2 + b6) * 16 + (b2 * 8 + b3 * 4 + b4 * 2 + b5)] ?? 0;
      return [(value >> 3) & 1, (value >> 2) & 1, (value >> 1) & 1, value & 1];
    });
    const f = permute(substituted, P);
    [left, right] = [right, left.map((bit, i) => bit ^ (f[i] ?? 0))];
  }
  const out = permute([...right, ...left], FP);
  return Buffer.from(Array.from({ length: 8 }, (_, i) => out.slice(i * 8, i * 8 + 8).reduce((acc, bit) => (acc << 1) | bit, 0)));
}

/** VNC authentication's answer: the challenge DES-encrypted with the password's first 8 bytes, each bit-reversed. */
function vncResponse(password: string, challenge: Buffer): Buffer {
  const key = new Uint8Array(8);
  Buffer.from(password, "latin1")
    .subarray(0, 8)
    .forEach((byte, i) => {
      let reversed = 0;
      for (let bit = 0; bit < 8; bit++) reversed |= ((byte >> bit) & 1) << (7 - bit);
      key[i] = reversed;
    });
  return Buffer.concat([desEncryptBlock(key, challenge.subarray(0, 8)), desEncryptBlock(key, challenge.subarray(8, 16))]);
}

// ---- a minimal RFB client over websockify's WebSocket, the path noVNC takes ----------------------

class RfbOverWebSocket {
  private buffer = Buffer.alloc(0);
  private wanted: { size: number; resolve: (data: Buffer) => void; reject: (error: Error) => void } | undefined;
  private closedWith: Error | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, data]);
      this.pump();
    });
    ws.on("close", () => this.fail(new Error("the WebSocket closed")));
    ws.on("error", (error) => this.fail(error));
  }

  static open(url: string, origin: string): Promise<RfbOverWebSocket> {
    const ws = new WebSocket(url, ["binary"], { origin });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new RfbOverWebSocket(ws)));
      ws.once("error", reject);
    });
  }

  private fail(error: Error): void {
    this.closedWith ??= error;
    this.wanted?.reject(error);
    this.wanted = undefined;
  }

  private pump(): void {
    if (this.wanted && this.buffer.length >= this.wanted.size) {
      const { size, resolve } = this.wanted;
      this.wanted = undefined;
      const data = this.buffer.subarray(0, size);
      this.buffer = this.buffer.subarray(size);
      resolve(Buffer.from(data));
    }
  }

  read(size: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.buffer.length < size && this.closedWith) return reject(this.closedWith);
      this.wanted = { size, resolve, reject };
      this.pump();
    });
  }

  write(data: Buffer): void {
    this.ws.send(data);
  }

  close(): void {
    this.ws.close();
  }

  /** Version and security handshake; returns the offered security types and whether the password was accepted. */
  async authenticate(password: string): Promise<{ types: number[]; result: number; reason: string }> {
    const version = (await this.read(12)).toString("latin1");
    if (!version.startsWith("RFB 003.")) throw new Error(`not an RFB server: ${JSON.stringify(version)}`);
    this.write(Buffer.from("RFB 003.008\n", "latin1"));
    const count = (await this.read(1)).readUInt8(0);
    if (count === 0) throw new Error("the server refused the connection");
    const types = [...(await this.read(count))];
    if (!types.includes(2)) return { types, result: -1, reason: "no VNC authentication offered" };
    this.write(Buffer.from([2]));
    const challenge = await this.read(16);
    this.write(vncResponse(password, challenge));
    const result = (await this.read(4)).readUInt32BE(0);
    let reason = "";
    if (result !== 0) reason = (await this.read((await this.read(4)).readUInt32BE(0))).toString("utf8");
    return { types, result, reason };
  }

  /** ClientInit + ServerInit, then 32-bit little-endian RGB888 pixels, raw encoding only. */
  async init(): Promise<{ width: number; height: number; name: string }> {
    this.write(Buffer.from([1])); // shared
    const head = await this.read(24);
    const width = head.readUInt16BE(0);
    const height = head.readUInt16BE(2);
    const name = (await this.read(head.readUInt32BE(20))).toString("utf8");
    const format = Buffer.alloc(20);
    format.writeUInt8(0, 0); // SetPixelFormat
    format.writeUInt8(32, 4); // bits per pixel
    format.writeUInt8(24, 5); // depth
    format.writeUInt8(0, 6); // little-endian
    format.writeUInt8(1, 7); // true colour
    format.writeUInt16BE(255, 8);
    format.writeUInt16BE(255, 10);
    format.writeUInt16BE(255, 12);
    format.writeUInt8(16, 14); // red shift
    format.writeUInt8(8, 15); // green shift
    format.writeUInt8(0, 16); // blue shift
    this.write(format);
    this.write(Buffer.from([2, 0, 0, 1, 0, 0, 0, 0])); // SetEncodings: raw
    return { width, height, name };
  }

  /** A full (non-incremental) frame as RGBA rows of `width`; pixels of rectangles not sent stay 0. */
  async frame(width: number, height: number): Promise<Buffer> {
    const request = Buffer.alloc(10);
    request.writeUInt8(3, 0);
    request.writeUInt8(0, 1);
    request.writeUInt16BE(width, 6);
    request.writeUInt16BE(height, 8);
    this.write(request);
    const pixels = Buffer.alloc(width * height * 4);
    for (;;) {
      const type = (await this.read(1)).readUInt8(0);
      if (type === 2) continue; // bell
      if (type === 3) {
        const head = await this.read(7);
        await this.read(head.readUInt32BE(3)); // server cut text
        continue;
      }
      if (type !== 0) throw new Error(`unexpected RFB server message ${type}`);
      const rects = (await this.read(3)).readUInt16BE(1);
      for (let i = 0; i < rects; i++) {
        const rect = await this.read(12);
        const [x, y, w, h] = [rect.readUInt16BE(0), rect.readUInt16BE(2), rect.readUInt16BE(4), rect.readUInt16BE(6)];
        const encoding = rect.readInt32BE(8);
        if (encoding !== 0) throw new Error(`unexpected encoding ${encoding}`);
        const data = await this.read(w * h * 4);
        for (let row = 0; row < h; row++) data.copy(pixels, ((y + row) * width + x) * 4, row * w * 4, (row + 1) * w * 4);
      }
      return pixels;
    }
  }
}

function pinkShare(pixels: Buffer): number {
  let pink = 0;
  for (let i = 0; i < pixels.length; i += 4) {
    // little-endian 0x00RRGGBB: blue, green, red, padding
    const [b = 0, g = 0, r = 0] = [pixels[i], pixels[i + 1], pixels[i + 2]];
    if (Math.abs(r - PINK.r) <= 8 && Math.abs(g - PINK.g) <= 8 && Math.abs(b - PINK.b) <= 8) pink++;
  }
  return pink / (pixels.length / 4);
}

/** The three commonest colours of a frame and their shares, e.g. "#ff69b4 91%, #000000 6%". */
function screenSummary(pixels: Buffer): string {
  const counts = new Map<number, number>();
  for (let i = 0; i < pixels.length; i += 4) {
    const rgb = ((pixels[i + 2] ?? 0) << 16) | ((pixels[i + 1] ?? 0) << 8) | (pixels[i] ?? 0);
    counts.set(rgb, (counts.get(rgb) ?? 0) + 1);
  }
  const total = pixels.length / 4;
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([rgb, n]) => `#${rgb.toString(16).padStart(6, "0")} ${Math.round((n / total) * 100)}%`)
    .join(", ");
}

function wsUrl(display: VncDisplay): string {
  return `ws://127.0.0.1:${display.webPort}/websockify`;
}

/** The origin of the page at the printed link, as a browser that opened it sends it. */
function pageOrigin(display: VncDisplay): string {
  return new URL(display.url).origin;
}

/** The status of a WebSocket upgrade to websockify with exactly this Origin (or none): 101 when it is accepted. */
function upgradeStatus(display: VncDisplay, origin: string | undefined, host = `127.0.0.1:${display.webPort}`): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(wsUrl(display).replace(/^ws:/, "http:"), {
      headers: {
        Host: host,
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Protocol": "binary",
        ...(origin === undefined ? {} : { Origin: origin }),
      },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

// ---- the suite ------------------------------------------------------------------------------------

describe("DES for the test's VNC client", () => {
  it("matches a known answer (OpenSSL des-ecb, key 0102030405060708, zero block)", () => {
    const key = Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(desEncryptBlock(key, new Uint8Array(8)).toString("hex")).toBe("b073dc3fb209536d");
    // FIPS 81 / the classic worked example
    expect(desEncryptBlock(Buffer.from("133457799bbcdff1", "hex"), Buffer.from("0123456789abcdef", "hex")).toString("hex")).toBe("85e813540f0ab405");
  });
});

describe("options refused before anything starts", () => {
  it("refuses a non-loopback host unless unsafeExposeOnNetwork is set", async () => {
    for (const host of ["0.0.0.0", "::", "192.0.2.2", "example.com"]) {
      await expect(startVncDisplay({ host })).rejects.toThrow(/not a loopback address.*unsafeExposeOnNetwork: true/s);
    }
  });

  it("refuses short or unusable passwords", async () => {
    await expect(startVncDisplay({ password: "short" })).rejects.toThrow(/at least 8 characters/);
    await expect(startVncDisplay({ password: "with space" })).rejects.toThrow(/printable ASCII/);
    await expect(startVncDisplay({ password: "#comment1" })).rejects.toThrow(/may not start with "#"/);
  });

  it("names the Debian packages when the programs are missing", async () => {
    const error = await startVncDisplay({ searchPath: "/nonexistent", webRoot: "/nonexistent" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    for (const part of [
      "Xvfb (Debian package xvfb)",
      "x11vnc (Debian package x11vnc)",
      "websockify (Debian package websockify)",
      "(Debian package novnc)",
      "apt-get install xvfb x11vnc novnc websockify",
    ]) {
      expect(message).toContain(part);
    }
  });
});

describe("a headful Chromium with the extension, seen through noVNC", () => {
  let display: VncDisplay;
  let site: TestSite;
  let broker: TestBroker;
  let browser: LaunchedBrowser;
  let client: Client;
  let profileDir: string;
  let args: string[];

  beforeAll(async () => {
    display = await startVncDisplay({});
    site = await startSite("127.0.0.1");
    site.route(
      "/pink",
      `<!doctype html><html><head><title>Pink</title><style>html,body{margin:0;height:100%;background:rgb(${PINK.r},${PINK.g},${PINK.b})}</style></head><body><p id="ua">?</p><script>document.getElementById("ua").textContent = "User agent: " + navigator.userAgent;</script></body></html>`,
    );
    site.route("/article", article("Rivers of the North", 20, "This is the closing paragraph of the article."));
    broker = await startBroker();
    profileDir = mkdtempSync(join(tmpdir(), "tabrelay-vnc-profile-"));
    const extensionDir = prepareExtension(profileDir, `ws://127.0.0.1:${broker.port}/bridge`, PAIRING_TOKEN, "vnc chromium");
    const options = {
      chromiumPath: findChromium(),
      profileDir,
      extensionDir,
      headless: false,
      env: display.env,
      startUrl: `${site.origin}/pink`,
      extraArgs: [
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        ...vncWindowArgs(display),
      ],
    };
    args = chromiumArgs(options);
    browser = launchChromium(options);
    await browserConnected(broker, 30_000);
    client = await connectClient(broker.url);
  }, 90_000);

  afterAll(async () => {
    await client?.close();
    await browser?.kill();
    await broker?.close();
    await site?.close();
    await display?.stop();
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  });

  it("gives a display, a loopback link with the password in its fragment, and an environment for the browser", () => {
    expect(display.display).toMatch(/^:\d+$/);
    expect(display.password).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(display.url).toBe(`http://127.0.0.1:${display.webPort}/vnc.html#autoconnect=1&resize=scale&password=${display.password}`);
    expect(display.env["DISPLAY"]).toBe(display.display);
    expect(display.env["XAUTHORITY"]).toBeTruthy();
    expect(existsSync(`/tmp/.X11-unix/X${display.display.slice(1)}`)).toBe(true);
  });

  it("runs Chromium headful on the display, and the extension reads through MCP", async () => {
    expect(args.some((a) => a.startsWith("--headless"))).toBe(false);
    const ua = await call(client, "read_url", { url: `${site.origin}/pink`, mode: "full" });
    expect(ua.isError).toBe(false);
    expect(ua.text).toContain("User agent: Mozilla/5.0");
    expect(ua.text).not.toContain("HeadlessChrome");
    const read = await call(client, "read_url", { url: `${site.origin}/article` });
    expect(read.isError).toBe(false);
    expect(read.text).toContain("Rivers of the North");
    expect(read.text).toContain("This is the closing paragraph of the article.");
  });

  it("serves the noVNC page at the link", async () => {
    const response = await fetch(display.url);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    expect(await response.text()).toContain("noVNC");
  });

  it("listens on loopback only: neither the VNC port nor the page answer on another address", async () => {
    expect(await accepts("127.0.0.1", display.vncPort)).toBe(true);
    expect(await accepts("127.0.0.1", display.webPort)).toBe(true);
    const other = nonLoopbackIPv4();
    if (other) {
      expect(await accepts(other, display.vncPort)).toBe(false);
      expect(await accepts(other, display.webPort)).toBe(false);
    }
  });

  it("shows the browser to a VNC viewer holding the password, through websockify", async () => {
    const rfb = await RfbOverWebSocket.open(wsUrl(display), pageOrigin(display));
    try {
      const auth = await rfb.authenticate(display.password);
      expect(auth.types).toContain(2);
      expect(auth.types).not.toContain(1); // never "None"
      expect(auth.result).toBe(0);
      const init = await rfb.init();
      expect(init).toEqual({ width: 1280, height: 800, name: "tabrelay" });
      // The pink page, in the agent's own tab brought to the front: what the screen shows is then up to the
      // product, not to whichever tab Chromium left in front (CI once showed a white page there under load).
      const opened = await call(client, "open_tab", { url: `${site.origin}/pink`, active: true });
      expect(opened.isError).toBe(false);
      const tab = Number(/\btab[^0-9]*(\d+)/i.exec(opened.text)?.[1]);
      // Pink from edge to edge: once Chromium painted, most of the screen is pink.
      let last: Buffer | undefined;
      let polls = 0;
      const share = await waitFor(
        "the browser's pink page on the VNC screen",
        async () => {
          last = await rfb.frame(init.width, init.height);
          const s = pinkShare(last);
          // Every tenth miss, front the tab again (a window manager-less X server can lose the raise).
          if (s <= 0.5 && ++polls % 10 === 0) await call(client, "activate_tab", { tab });
          return s > 0.5 ? s : undefined;
        },
        // Headful Chromium paints in software under Xvfb: on a busy 2-core machine the first paint can be slow.
        60_000,
      ).catch(async (error: unknown) => {
        // Say what the screen showed instead, and what the browser had open, so a failure can be read from the log.
        const tabs = await call(client, "list_tabs", {}).then(
          (r) => r.text,
          (e: unknown) => String(e),
        );
        throw new Error(`${String(error)}; the last frame: ${last ? screenSummary(last) : "none"}; the browser's tabs: ${tabs}`);
      });
      expect(share).toBeGreaterThan(0.5);
      await call(client, "close_tab", { tab });
    } finally {
      rfb.close();
    }
  }, 90_000);

  it("lets noVNC itself connect with the printed link", async () => {
    // The agent's own browser opens the person's link: noVNC's JavaScript reads the password from the
    // fragment and connects through websockify.
    const opened = await call(client, "open_tab", { url: display.url });
    expect(opened.isError).toBe(false);
    const tab = Number(/\btab[^0-9]*(\d+)/i.exec(opened.text)?.[1]);
    expect(Number.isInteger(tab)).toBe(true);
    const waited = await call(client, "wait_for", { tab, selector: "html.noVNC_connected", timeout_ms: 20_000 });
    expect(waited.text).toContain("appeared");
    await call(client, "close_tab", { tab });
  }, 45_000);

  it("takes the WebSocket only from the link's own page origin: another page, a rebound name or no Origin gets 403", async () => {
    const port = display.webPort;
    expect(display.origins).toContain(`http://127.0.0.1:${port}`);
    expect(await upgradeStatus(display, pageOrigin(display))).toBe(101);
    expect(await upgradeStatus(display, `http://localhost:${port}`, `localhost:${port}`)).toBe(101);
    expect(await upgradeStatus(display, "https://evil.example")).toBe(403);
    expect(await upgradeStatus(display, undefined)).toBe(403);
    expect(await upgradeStatus(display, "null")).toBe(403);
    // Another web page on this machine: same host, another port.
    expect(await upgradeStatus(display, `http://127.0.0.1:${port + 1}`)).toBe(403);
    expect(await upgradeStatus(display, `https://127.0.0.1:${port}`)).toBe(403);
    // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1, page and socket on the same port.
    expect(await upgradeStatus(display, `http://evil.example:${port}`, `evil.example:${port}`)).toBe(403);
    // And the refused viewer got nothing of VNC: a ws client sees the 403 before any RFB byte.
    await expect(RfbOverWebSocket.open(wsUrl(display), "https://evil.example")).rejects.toThrow(/403/);
  });

  it("refuses a VNC viewer with the wrong password", async () => {
    const rfb = await RfbOverWebSocket.open(wsUrl(display), pageOrigin(display));
    try {
      const wrong = display.password === "wrongpw1" ? "wrongpw2" : "wrongpw1";
      const auth = await rfb.authenticate(wrong);
      expect(auth.result).not.toBe(0);
    } finally {
      rfb.close();
    }
  });

  it("stops everything: browser, Xvfb, x11vnc, websockify (and its forks), ports and files", async () => {
    const { xvfb, x11vnc, websockify } = display.pids;
    const chromium = browser.process.pid ?? -1;
    const number = display.display.slice(1);
    const authFile = display.env["XAUTHORITY"] ?? "";
    for (const pid of [xvfb, x11vnc, websockify, chromium]) expect(alive(pid)).toBe(true);

    await client.close();
    await browser.kill();
    await display.stop();
    await display.stop(); // idempotent

    for (const pid of [xvfb, x11vnc, websockify, chromium]) expect(alive(pid)).toBe(false);
    expect(groupMembers(websockify)).toEqual([]);
    await waitFor("Chromium's helper processes to exit", () => processesMentioning(profileDir).length === 0 || undefined, 10_000);
    expect(await accepts("127.0.0.1", display.vncPort)).toBe(false);
    expect(await accepts("127.0.0.1", display.webPort)).toBe(false);
    expect(existsSync(`/tmp/.X11-unix/X${number}`)).toBe(false);
    expect(existsSync(`/tmp/.X${number}-lock`)).toBe(false);
    expect(existsSync(authFile)).toBe(false);
  }, 30_000);
});

// The same view with Firefox: `tabrelay start --firefox --vnc` as a person runs it on a server, its printed link and
// MCP endpoint taken from its output, Firefox headful on the display with tabrelay's Firefox build paired.
describe.runIf(DRIVERS.includes("firefox"))("tabrelay start --firefox --vnc: a headful Firefox seen through noVNC", () => {
  it("prints the link, pairs Firefox, reads through it, shows its page to a VNC viewer, and stops it all on SIGTERM", async () => {
    const site = await startSite("127.0.0.1");
    site.route(
      "/pink",
      `<!doctype html><html><head><title>Pink</title><style>html,body{margin:0;height:100%;background:rgb(${PINK.r},${PINK.g},${PINK.b})}</style></head><body><p id="ua">?</p><script>document.getElementById("ua").textContent = "User agent: " + navigator.userAgent;</script></body></html>`,
    );
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-vnc-firefox-"));
    writeFileSync(join(dataDir, "config.yaml"), `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n`);
    const child = spawn(process.execPath, [CLI, "start", "--firefox", "--vnc", "--port", "0", "--data-dir", dataDir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TABRELAY_MCP_TOKEN: MCP_TOKEN },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let client: Client | undefined;
    // What the run showed, for the checks after it stopped.
    const seen = { code: null as number | null, webPort: 0, display: "" };
    try {
      const link = await waitFor("the VNC link", () => /\n {4}(http:\/\/127\.0\.0\.1:\d+\/vnc\.html#\S+)\n/.exec(stderr)?.[1], 30_000);
      seen.webPort = Number(new URL(link).port);
      seen.display = /on the virtual display (:\d+)/.exec(stderr)?.[1] ?? "";
      expect(seen.display).toMatch(/^:\d+$/);
      const url = await waitFor("the MCP URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1], 30_000);
      expect(stderr).toContain("on the virtual display");
      client = await connectClient(url);
      const connected = client;
      const listed = await waitFor(
        "Firefox to pair",
        async () => {
          const text = (await call(connected, "list_browsers")).text;
          return text.includes("connected:") ? text : undefined;
        },
        60_000,
      );
      expect(listed).toContain("kind: extension (Firefox)");
      const ua = await call(client, "read_url", { url: `${site.origin}/pink`, mode: "full" });
      expect(ua.isError, ua.text).toBe(false);
      expect(ua.text).toMatch(/User agent: Mozilla\/5\.0 .*Firefox\//);
      // What a person sees through the link: the agent's pink tab in front, filling the screen (--width/--height).
      const password = new URL(link).hash.match(/password=([^&]+)/)?.[1] ?? "";
      const rfb = await RfbOverWebSocket.open(`ws://127.0.0.1:${new URL(link).port}/websockify`, new URL(link).origin);
      try {
        expect((await rfb.authenticate(password)).result).toBe(0);
        const init = await rfb.init();
        const opened = await call(client, "open_tab", { url: `${site.origin}/pink`, active: true });
        expect(opened.isError, opened.text).toBe(false);
        let last: Buffer | undefined;
        const share = await waitFor(
          "Firefox's pink page on the VNC screen",
          async () => {
            last = await rfb.frame(init.width, init.height);
            const s = pinkShare(last);
            return s > 0.5 ? s : undefined;
          },
          60_000,
        ).catch((error: unknown) => {
          throw new Error(`${String(error)}; the last frame: ${last ? screenSummary(last) : "none"}`);
        });
        expect(share).toBeGreaterThan(0.5);
      } finally {
        rfb.close();
      }
    } finally {
      await client?.close();
      child.kill("SIGTERM");
      // A CLI that does not stop within 20 s is killed, so that the run goes on; its exit code then fails the test.
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      seen.code = await exited;
      clearTimeout(timer);
      await site.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    expect(seen.code).toBe(0);
    expect(stderr).toContain("stopping the browser and the VNC view");
    // Everything it started is gone: Firefox (its parent carries the profile; its helpers are its children), the
    // display's X server (its lock file and socket), x11vnc and websockify (their ports).
    await waitFor("Firefox to exit", () => (processesMentioning(dataDir).length === 0 ? true : undefined), 10_000);
    const number = seen.display.slice(1);
    await waitFor("the X server to go", () => (!existsSync(`/tmp/.X${number}-lock`) && !existsSync(`/tmp/.X11-unix/X${number}`) ? true : undefined), 10_000);
    expect(await accepts("127.0.0.1", seen.webPort)).toBe(false);
  }, 150_000);
});

describe("exposing the page on the network, when asked to", () => {
  it("binds the page to 0.0.0.0 but keeps the VNC port on loopback; a taken port is reported", async () => {
    const display = await startVncDisplay({ host: "0.0.0.0", unsafeExposeOnNetwork: true, password: "exposed-pw" });
    try {
      expect(display.url).toBe(`http://127.0.0.1:${display.webPort}/vnc.html#autoconnect=1&resize=scale&password=exposed-pw`);
      const other = nonLoopbackIPv4();
      if (other) {
        expect(await accepts(other, display.webPort)).toBe(true);
        expect(await accepts(other, display.vncPort)).toBe(false);
        // Opened at this machine's own address, the page's origin is that address: accepted, and still nothing else.
        expect(display.origins).toContain(`http://${other}:${display.webPort}`);
        expect(await upgradeStatus(display, `http://${other}:${display.webPort}`, `${other}:${display.webPort}`)).toBe(101);
      }
      expect(await upgradeStatus(display, "https://evil.example")).toBe(403);
      // A web port already taken is named as such, and what was started for it is stopped again.
      // websockify forks a child per connection (the probes above): count once those have exited.
      const before = await steadyProcessesMentioning(`127.0.0.1:${display.webPort}`);
      await expect(startVncDisplay({ webPort: display.webPort })).rejects.toThrow(`port ${display.webPort} on 127.0.0.1 is already in use`);
      expect(await steadyProcessesMentioning(`127.0.0.1:${display.webPort}`)).toEqual(before);
    } finally {
      await display.stop();
    }
    expect(alive(display.pids.xvfb)).toBe(false);
  });
});

describe("launchWithVnc (the CLI glue)", () => {
  function sink(): { text: string; write(chunk: string): void } {
    return {
      text: "",
      write(chunk: string) {
        this.text += chunk;
      },
    };
  }

  it("prints the link once, runs the browser with DISPLAY set, and stops the display when the browser exits", async () => {
    const out = sink();
    let seen: VncView | undefined;
    let env: NodeJS.ProcessEnv | undefined;
    let exit: (code: number | null) => void = () => undefined;
    let stopped = false;
    const running = launchWithVnc({
      startDisplay: startVncDisplay,
      headfulCommand: async (e, view) => {
        env = e;
        seen = view;
        return { exited: new Promise<number | null>((resolve) => (exit = resolve)), kill: async () => exit(null) };
      },
      onStopped: async () => {
        stopped = true;
      },
      out,
      handleSignals: false,
    });
    await waitFor("the browser to be started", () => seen);
    const view = seen as VncView & VncDisplay;
    expect(env?.["DISPLAY"]).toBe(view.display);
    expect(alive(view.pids.xvfb)).toBe(true);
    expect(out.text.split(view.url).length - 1).toBe(1); // the link, with its password, once
    expect(out.text).toContain(`password=${view.password}`);
    expect(out.text).toContain("datacenter IP is itself a detection signal");
    expect(out.text).toContain(`ssh -N -L ${view.webPort}:127.0.0.1:${view.webPort}`);
    exit(0);
    expect(await running).toBe(0);
    expect(stopped).toBe(true);
    for (const pid of Object.values(view.pids)) expect(alive(pid)).toBe(false);
  });

  it("stops the display when the browser cannot start, and passes the error on", async () => {
    let view: (VncView & VncDisplay) | undefined;
    let stopped = false;
    await expect(
      launchWithVnc({
        startDisplay: async (options) => (view = await startVncDisplay(options)),
        headfulCommand: async () => {
          throw new Error("no browser here");
        },
        onStopped: async () => {
          stopped = true;
        },
        out: sink(),
        handleSignals: false,
      }),
    ).rejects.toThrow("no browser here");
    expect(stopped).toBe(true);
    expect(view).toBeDefined();
    for (const pid of Object.values(view?.pids ?? {})) expect(alive(pid)).toBe(false);
  });

  it("warns in the banner when the page is exposed beyond loopback", () => {
    const text = vncBanner({
      display: ":5",
      url: "http://203.0.113.9:6080/vnc.html#password=x",
      password: "x",
      env: {},
      width: 1,
      height: 1,
      stop: async () => undefined,
    });
    expect(text).toContain("unsafeExposeOnNetwork");
    expect(text).toContain("datacenter IP");
  });
});

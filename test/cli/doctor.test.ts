// `tabrelay doctor` through the real CLI: each failing branch a user can run into (port taken by another program,
// a bad config, CHROME_PATH pointing nowhere, a token file others can read), and the all-ok branch against a
// real broker with a browser connected (a stub extension, then a real Firefox with the Firefox build); then the judgements themselves, on facts doctor cannot make up here.
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_TOKEN, PAIRING_TOKEN, attachBrowser, closedPort, startBroker, type AttachedBrowser, type TestBroker } from "../harness.js";
import { StubExtension } from "../stubExtension.js";
import { VERSION } from "../../packages/broker/src/index.js";
import { browserChecks, browserVersionCheck, nodeCheck, satisfies, tokenFileCheck } from "../../packages/cli/src/doctorChecks.js";
import { ROOT, tabrelay, tempDir } from "./run.js";

/** A data dir holding the test tokens (0600), as `tabrelay serve` would have left it. */
function dataDirWithTokens(): string {
  const dir = tempDir("doctor");
  writeFileSync(join(dir, "mcp-token"), `${MCP_TOKEN}\n`, { mode: 0o600 });
  writeFileSync(join(dir, "pairing-token"), `${PAIRING_TOKEN}\n`, { mode: 0o600 });
  return dir;
}

function line(stdout: string, label: string): string {
  return stdout.split("\n").find((l) => new RegExp(`^(ok|warn|fail) +${label}:`).test(l)) ?? `(no ${label} line in:\n${stdout})`;
}

describe("tabrelay doctor, failing branches", () => {
  it("a port taken by a program that is not tabrelay is a failure naming what answered", async () => {
    const other: Server = createServer((_req, res) => res.writeHead(404, { Server: "not-tabrelay/1.0" }).end("nope"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const { port } = other.address() as AddressInfo;
    try {
      const result = await tabrelay(["doctor", "--data-dir", dataDirWithTokens(), "--port", String(port)]);
      expect(result.code).toBe(1);
      expect(line(result.stdout, "port")).toMatch(
        /^fail +port: 127\.0\.0\.1:\d+ is taken by something that is not tabrelay: GET \/health answered HTTP 404 \(server: not-tabrelay\/1\.0\)/,
      );
      expect(line(result.stdout, "port")).toContain("--port");
    } finally {
      other.close();
    }
  });

  it("a bad config is a failure printing the loader's error", async () => {
    const dir = dataDirWithTokens();
    writeFileSync(join(dir, "config.yaml"), "port: 9333\nbridge:\n  no_such_key: 1\n");
    const result = await tabrelay(["doctor", "--data-dir", dir, "--port", String(await closedPort())]);
    expect(result.code).toBe(1);
    expect(line(result.stdout, "config")).toMatch(/^fail +config: .*config\.yaml: invalid configuration/);
    expect(result.stdout).toContain("no_such_key");
  });

  it("CHROME_PATH pointing nowhere is a failure naming the variable", async () => {
    const result = await tabrelay(["doctor", "--data-dir", dataDirWithTokens(), "--port", String(await closedPort())], { CHROME_PATH: "/nowhere/chrome" });
    expect(result.code).toBe(1);
    expect(line(result.stdout, "browser")).toBe("fail  browser: no browser at /nowhere/chrome (from CHROME_PATH); point it at a Chromium or Chrome binary");
  });

  it("a token file others can read is a failure with the fix, and doctor leaves the file as it found it", async () => {
    const dir = dataDirWithTokens();
    const token = join(dir, "mcp-token");
    chmodSync(token, 0o644);
    const result = await tabrelay(["doctor", "--data-dir", dir, "--port", String(await closedPort())]);
    expect(result.code).toBe(1);
    expect(line(result.stdout, "mcp token")).toBe(
      `fail  mcp token: ${token} is readable by other users (mode 0644): anyone on this machine may have read the token; fix: chmod 600 ${token}, and if that matters, rm ${token} and tabrelay creates a new one (then pair the browser again and update your MCP clients)`,
    );
    expect(statSync(token).mode & 0o777).toBe(0o644);
    // The config is still checked (without reading the token that file holds).
    expect(line(result.stdout, "config")).toMatch(/^ok +config: /);
  });

  it("a branded Chrome 137+ is told about the extension flag", async () => {
    const dir = tempDir("fake-chrome");
    const chrome = join(dir, "google-chrome");
    writeFileSync(chrome, "#!/bin/sh\necho 'Google Chrome 138.0.7204.49 '\n", { mode: 0o755 });
    const result = await tabrelay(["doctor", "--data-dir", dataDirWithTokens(), "--port", String(await closedPort())], { CHROME_PATH: chrome });
    expect(line(result.stdout, "browser")).toBe(`ok    browser: ${chrome} (from CHROME_PATH)`);
    expect(line(result.stdout, "browser version")).toContain(
      "Google Chrome 138.0.7204.49: branded Chrome 137+ ignores --load-extension unless --disable-features=DisableLoadExtensionCommandLineSwitch",
    );
  });
});

describe("tabrelay doctor against a running broker", () => {
  let b: TestBroker;
  let stub: StubExtension;
  beforeAll(async () => {
    b = await startBroker({ dataDir: dataDirWithTokens() });
    stub = new StubExtension({ port: b.port, label: "doctor's stub" });
    await stub.welcomed;
  });
  afterAll(async () => {
    stub.close();
    await b.close();
  });

  it("exits 0 with the broker's name and version, the token proven and the browser connected", async () => {
    const result = await tabrelay(["doctor", "--data-dir", b.dataDir, "--port", String(b.port)]);
    expect(result.stdout).not.toMatch(/^fail/m);
    expect(result.code).toBe(0);
    expect(line(result.stdout, "port")).toBe(`ok    port: tabrelay ${VERSION} answers at http://127.0.0.1:${b.port}`);
    expect(line(result.stdout, "token")).toMatch(/^ok +token: the broker at .* knows this data dir's MCP token/);
    expect(line(result.stdout, "browsers")).toBe("ok    browsers: 1 connected");
    expect(line(result.stdout, "connected")).toMatch(/^(ok|warn) +connected: doctor's stub: /);
    for (const label of ["node", "extension", "config", "data dir", "mcp token", "pairing token", "dashboard token"])
      expect(line(result.stdout, label)).toMatch(/^(ok|warn) /);
  });

  it("says so when the broker runs with another data dir's token", async () => {
    const other = tempDir("doctor-other");
    writeFileSync(join(other, "mcp-token"), "another-token-0123456789abcdefghijkl\n", { mode: 0o600 });
    const result = await tabrelay(["doctor", "--data-dir", other, "--port", String(b.port)]);
    expect(line(result.stdout, "token")).toMatch(/^warn +token: the broker at .* does not know this data dir's MCP token/);
  });
});

describe("tabrelay doctor with a real Firefox paired", () => {
  let b: TestBroker;
  let firefox: AttachedBrowser;
  beforeAll(async () => {
    b = await startBroker({ dataDir: dataDirWithTokens() });
    firefox = await attachBrowser(b, "firefox");
  }, 60_000);
  afterAll(async () => {
    await firefox?.close();
    await b?.close();
  });

  it("names the Firefox it would start, the extension's Firefox build, and the Firefox connected with its version", async () => {
    const result = await tabrelay(["doctor", "--data-dir", b.dataDir, "--port", String(b.port)]);
    expect(result.stdout).not.toMatch(/^fail/m);
    expect(line(result.stdout, "firefox")).toMatch(/^ok +firefox: \/\S+ \(Mozilla Firefox \d+/);
    expect(line(result.stdout, "firefox extension")).toBe(
      `ok    firefox extension: built at ${join(ROOT, "packages/cli/assets/extension-firefox")} (version ${VERSION})`,
    );
    expect(line(result.stdout, "connected")).toBe(`ok    connected: test firefox (Firefox): extension ${VERSION}, same as the broker`);
  });
});

describe("doctor's judgements", () => {
  it("Node: below engines fails, outside it warns, past its end of life warns, a current LTS is ok", () => {
    const day = new Date("2026-12-01T00:00:00Z");
    const engines = "^20.19.0 || ^22.12.0 || ^24.0.0";
    expect(nodeCheck("v18.20.0", engines, day).status).toBe("fail");
    expect(nodeCheck("v20.18.0", ">=20.19", day).status).toBe("fail");
    expect(nodeCheck("v26.1.0", engines, day)).toMatchObject({ status: "warn", message: expect.stringContaining("outside the versions") });
    expect(nodeCheck("v20.20.2", engines, day)).toMatchObject({ status: "warn", message: expect.stringContaining("end of life on 2026-04-30") });
    expect(nodeCheck("v20.20.2", engines, new Date("2026-01-01T00:00:00Z")).status).toBe("ok");
    expect(nodeCheck("v22.12.0", engines, day).status).toBe("ok");
    expect(nodeCheck("v24.11.0", engines, day).status).toBe("ok");
    expect(satisfies("v22.11.0", engines)).toBe(false);
    expect(satisfies("v24.0.0", ">=20 <25")).toBe(true);
    expect(satisfies("v25.0.0", ">=20 <25")).toBe(false);
  });

  it("a browser whose extension is another version than the broker's is a warning saying what to do", () => {
    const [count, mismatch, same, cdp] = browserChecks(
      [
        { label: "laptop", kind: "extension", extensionVersion: "0.0.9" },
        { label: "desk", kind: "extension", extensionVersion: "0.1.0" },
        { label: "server", kind: "cdp", extensionVersion: "cdp Chrome/131" },
      ],
      "0.1.0",
    );
    expect(count).toEqual({ status: "ok", label: "browsers", message: "3 connected" });
    expect(mismatch?.status).toBe("warn");
    expect(mismatch?.message).toContain("extension 0.0.9, broker 0.1.0; run npm run build, then reload the extension");
    expect(same?.status).toBe("ok");
    expect(cdp?.status).toBe("ok");
    expect(browserChecks([], "0.1.0")[0]?.status).toBe("warn");
    // A Firefox is named so, and told where its extensions are.
    const [, firefox] = browserChecks([{ label: "home", kind: "extension", product: "firefox", extensionVersion: "0.0.9" }], "0.1.0");
    expect(firefox?.message).toBe(
      "home (Firefox): extension 0.0.9, broker 0.1.0; run npm run build, then reload the extension on about:debugging#/runtime/this-firefox (tabrelay launch copies the new one itself)",
    );
  });

  it("browser versions: too old fails, unbranded Chromium is ok as is", () => {
    expect(browserVersionCheck("/x", "Chromium 110.0.5481.100", 116).status).toBe("fail");
    expect(browserVersionCheck("/x", "Chromium 131.0.6778.85 built on Debian", 116).message).toBe(
      "Chromium 131.0.6778.85 built on Debian (loads the extension from the command line)",
    );
    expect(browserVersionCheck("/x", "Google Chrome for Testing 140.0.7339.80", 116).message).not.toContain("DisableLoadExtensionCommandLineSwitch");
  });

  it("token files: writable or another owner's fail, 0600 is ok", () => {
    const base = { path: "/d/mcp-token", exists: true, kind: "file" as const, uid: 1000 };
    expect(tokenFileCheck("mcp token", { ...base, mode: 0o600 }, 1000).status).toBe("ok");
    expect(tokenFileCheck("mcp token", { ...base, mode: 0o620 }, 1000).message).toContain("writable by its group");
    expect(tokenFileCheck("mcp token", { ...base, mode: 0o600, uid: 0 }, 1000).message).toContain("belongs to uid 0");
    expect(tokenFileCheck("mcp token", { ...base, mode: 0o600, symlink: true }, 1000).message).toContain("symbolic link");
  });
});

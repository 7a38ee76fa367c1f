// The secrets registry (util/secrets.ts) and the exits that redact through it, one behaviour per test.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ToolResponse } from "../../src/tools/response.js";
import { redactingLogger, type Logger } from "../../src/util/log.js";
import { createLogger } from "../../src/util/stderrLog.js";
import { SecretRegistry } from "../../src/util/secrets.js";

const GUID = "6f3c1f2e-8a4b-4c1d-9e0f-1a2b3c4d5e6f";
const ENDPOINT = `ws://127.0.0.1:9222/devtools/browser/${GUID}`;
const TOKEN = "mcp-token-0123456789abcdef";

function registry(): SecretRegistry {
  const secrets = new SecretRegistry();
  secrets.register(TOKEN, "mcp token");
  secrets.register(ENDPOINT, "cdp endpoint");
  return secrets;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("SecretRegistry", () => {
  it("replaces a registered secret by a marker naming its kind", () => {
    expect(registry().redact(`token ${TOKEN} and ${TOKEN}`)).toBe("token [redacted: mcp token] and [redacted: mcp token]");
  });

  it("replaces a CDP endpoint whole, and its path and GUID where they appear alone", () => {
    const secrets = registry();
    expect(secrets.redact(`cannot open ${ENDPOINT}: refused`)).toBe("cannot open [redacted: cdp endpoint]: refused");
    expect(secrets.redact(`GET /devtools/browser/${GUID} 101`)).toBe("GET [redacted: cdp endpoint] 101");
    expect(secrets.redact(`the id ${GUID}`)).toBe("the id [redacted: cdp endpoint]");
    // Its loopback host and port open /json/version, which names the socket: a credential too.
    expect(secrets.redact("see http://127.0.0.1:9222/json/version")).toBe("see http://[redacted: cdp endpoint]/json/version");
  });

  it("replaces the URL-encoded forms, once and twice encoded, in either case of percent escape", () => {
    const secrets = registry();
    const once = encodeURIComponent(ENDPOINT);
    expect(secrets.redact(`?u=${once}`)).toBe("?u=[redacted: cdp endpoint]");
    expect(secrets.redact(`?u=${encodeURIComponent(once)}`)).toBe("?u=[redacted: cdp endpoint]");
    expect(secrets.redact(`?u=${once.toLowerCase()}`)).not.toContain(GUID);
    expect(secrets.redact(`?u=${once.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`)).toBe("?u=[redacted: cdp endpoint]");
  });

  it("replaces a token with underscores as a page read as Markdown shows it (turndown escapes each `_`)", () => {
    const secrets = new SecretRegistry();
    secrets.register("trt_3R6rOPM4xFMIWi4S6Izy_66jH", "mcp token");
    expect(secrets.redact("The token is trt\\_3R6rOPM4xFMIWi4S6Izy\\_66jH.")).toBe("The token is [redacted: mcp token].");
    expect(secrets.redact("as written trt_3R6rOPM4xFMIWi4S6Izy_66jH")).toBe("as written [redacted: mcp token]");
  });

  it("treats an http://host:port DevTools address as a credential as a whole", () => {
    const secrets = new SecretRegistry();
    secrets.register("http://127.0.0.1:9222", "cdp endpoint");
    expect(secrets.redact("fetching http://127.0.0.1:9222/json/version")).toBe("fetching [redacted: cdp endpoint]/json/version");
    expect(secrets.redact("dial 127.0.0.1:9222")).toBe("dial [redacted: cdp endpoint]");
    // Another port that merely starts with the same digits is another server.
    expect(secrets.redact("http://127.0.0.1:92221/")).toBe("http://127.0.0.1:92221/");
  });

  it("replaces query values and passwords of a registered URL; a user name only when it is the credential", () => {
    const secrets = new SecretRegistry();
    secrets.register("wss://user-0123456789:pass-0123456789@connect.example/?signingKey=sk-0123456789abcdef", "provider session");
    expect(secrets.redact("key sk-0123456789abcdef, pass pass-0123456789, user user-0123456789")).toBe(
      "key [redacted: provider session], pass [redacted: provider session], user user-0123456789",
    );
    // An API key carried as the user name, with no password: that is the credential.
    secrets.register("wss://Kq7vN2xR9pL4mT8wZ3bY@hosted.example/browser", "provider session");
    expect(secrets.redact("sent Kq7vN2xR9pL4mT8wZ3bY")).toBe("sent [redacted: provider session]");
  });

  it("never redacts a word the product prints, whatever a URL names with it (issue 24 §9)", () => {
    const secrets = new SecretRegistry();
    // The README's store URL: the account and the database are both called tabrelay; only the password is secret.
    secrets.register("postgres://tabrelay:Zs8-pw-4q9W2e@db.internal:5432/tabrelay", "secret");
    secrets.register("postgres://tabrelay@db.internal/tabrelay", "secret");
    // A password chosen as the product's name is not searched for either (every message would lose the word).
    secrets.register("postgres://admin:tabrelay@db.internal/app", "secret");
    expect(secrets.redact("no browser is connected: start one with `tabrelay launch` (pw Zs8-pw-4q9W2e)")).toBe(
      "no browser is connected: start one with `tabrelay launch` (pw [redacted: secret])",
    );
  });

  it("replaces the longest secret first, so a secret inside another leaves nothing of the longer behind", () => {
    const secrets = new SecretRegistry();
    secrets.register("abcdefgh", "pairing token");
    secrets.register("xxabcdefghyy", "mcp token");
    expect(secrets.redact("xxabcdefghyy abcdefgh")).toBe("[redacted: mcp token] [redacted: pairing token]");
  });

  it("ignores empty and short secrets, so ordinary words are never redacted", () => {
    const secrets = new SecretRegistry();
    secrets.register("", "mcp token");
    secrets.register(undefined, "mcp token");
    secrets.register("short", "mcp token");
    expect(secrets.redact("a short text")).toBe("a short text");
  });

  it("treats regular-expression characters in a secret literally", () => {
    const secrets = new SecretRegistry();
    secrets.register("a.b*c+d?e(f)[g]", "provider key");
    expect(secrets.redact("aXbbbcdde(f)[g] a.b*c+d?e(f)[g]")).toBe("aXbbbcdde(f)[g] [redacted: provider key]");
  });

  it("redacts every string of a JSON value, keys included, without changing the input", () => {
    const secrets = registry();
    const value = { title: `t ${TOKEN}`, tabs: [{ url: ENDPOINT, n: 3, ok: true, none: null }], [TOKEN]: 1 };
    expect(secrets.redactValue(value)).toEqual({
      title: "t [redacted: mcp token]",
      tabs: [{ url: "[redacted: cdp endpoint]", n: 3, ok: true, none: null }],
      "[redacted: mcp token]": 1,
    });
    expect(value.title).toBe(`t ${TOKEN}`);
  });

  it("applies a secret registered after a redactor was handed out", () => {
    const secrets = new SecretRegistry();
    const response = new ToolResponse(secrets);
    secrets.register(ENDPOINT, "cdp endpoint");
    expect(response.line(`attached ${ENDPOINT}`).render().text).toBe("attached [redacted: cdp endpoint]");
  });
});

describe("exits", () => {
  it("a tool result's text and its error message go through the registry", () => {
    const secrets = registry();
    expect(new ToolResponse(secrets).pageText("Title", `page ${TOKEN}`).render().text).not.toContain(TOKEN);
    const error = new ToolResponse(secrets).renderError("not_connected", `cannot reach ${ENDPOINT}`);
    expect(error.text).toBe("not_connected: cannot reach [redacted: cdp endpoint]");
  });

  it("the logger redacts every line, at every level", () => {
    const lines: string[] = [];
    const sink: Logger = { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
    const log = redactingLogger(sink, registry());
    log.info(`info ${TOKEN}`);
    log.warn(`warn ${ENDPOINT}`);
    log.error(`error ${encodeURIComponent(ENDPOINT)}`);
    expect(lines).toEqual(["info [redacted: mcp token]", "warn [redacted: cdp endpoint]", "error [redacted: cdp endpoint]"]);
  });

  it("createLogger with the registry writes redacted lines on stderr", () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    createLogger({ secrets: registry() }).warn(`attached ${ENDPOINT}`);
    const written = stderr.mock.calls.map((c) => String(c[0])).join("");
    expect(written).toMatch(/ warn attached \[redacted: cdp endpoint\]\n$/);
    expect(written).not.toContain(GUID);
  });
});

// Hosted browser providers (Browserbase, Kernel) against a local server that plays each provider's API and
// checks the requests tabrelay sends; the connect URL it hands out points at a real local Chromium (with a
// token in its query, as the real ones carry), so the session is attached to a real Broker and read over MCP.
// Secrets (the API key, the connect URL and its token) must never reach an error message, stderr or the model.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { startWithProvider } from "../../packages/cli/src/providers.js";
import { createProviderSession, type HostedProvider } from "../../packages/broker/src/launch/providers.js";
import { launchLocalChromium, type LaunchedCdpBrowser } from "../../packages/broker/src/launch/cdpChromium.js";
import { findChromium } from "../../packages/broker/src/launch/chromium.js";
import { startFakeApi, type FakeApi, type Recorded, type Reply } from "../fakeProviderApi.js";
import { article, call, closedPort, connectClient, startBroker, startSite, type TestBroker, type TestSite } from "../harness.js";

const API_KEY = "bb-test-api-key-7f3a9c1e5d2b8a6f";
const TOKEN = "connect-token-2d8e4f6a1c3b5e7d9f0a";
const SECRETS = [API_KEY, TOKEN, encodeURIComponent(TOKEN)];

// ---- what each provider's documented API looks like ---------------------------------------------

interface ProviderCase {
  keyVar: string;
  env(origin: string): NodeJS.ProcessEnv;
  createPath: string;
  /** The documented auth header carries the key. */
  authorized(req: Recorded): boolean;
  created(connectUrl: string): Reply;
  releaseMethod: string;
  releasePath: string;
  /** The documented release body (undefined: none). */
  releaseBody: unknown;
}

const EXPIRES_AT = new Date(Date.now() + 60 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");

const CASES: Record<HostedProvider, ProviderCase> = {
  browserbase: {
    keyVar: "BROWSERBASE_API_KEY",
    env: (origin) => ({ BROWSERBASE_API_KEY: API_KEY, BROWSERBASE_PROJECT_ID: "proj-0042", BROWSERBASE_API_URL: origin }),
    createPath: "/v1/sessions",
    authorized: (req) => req.headers["x-bb-api-key"] === API_KEY && req.headers.authorization === undefined,
    created: (connectUrl) => ({
      status: 201,
      body: {
        id: "bb-session-0001",
        createdAt: new Date().toISOString(),
        projectId: "proj-0042",
        expiresAt: EXPIRES_AT,
        status: "RUNNING",
        keepAlive: false,
        region: "us-west-2",
        connectUrl,
        signingKey: TOKEN,
      },
    }),
    releaseMethod: "POST",
    releasePath: "/v1/sessions/bb-session-0001",
    releaseBody: { status: "REQUEST_RELEASE", projectId: "proj-0042" },
  },
  kernel: {
    keyVar: "KERNEL_API_KEY",
    env: (origin) => ({ KERNEL_API_KEY: API_KEY, KERNEL_API_URL: origin }),
    createPath: "/browsers",
    authorized: (req) => req.headers.authorization === `Bearer ${API_KEY}` && req.headers["x-bb-api-key"] === undefined,
    created: (connectUrl) => ({
      status: 200,
      body: {
        session_id: "kernel-browser-0001",
        cdp_ws_url: connectUrl,
        created_at: new Date().toISOString(),
        headless: true,
        stealth: false,
        timeout_seconds: 120,
        webdriver_ws_url: `wss://example.invalid/webdriver?jwt=${TOKEN}`,
      },
    }),
    releaseMethod: "DELETE",
    releasePath: "/browsers/kernel-browser-0001",
    releaseBody: undefined,
  },
};

// ---- shared fixtures ---------------------------------------------------------------------------

let chromium: LaunchedCdpBrowser;
let site: TestSite;
let api: FakeApi;
let broker: TestBroker;
let stderr: MockInstance<typeof process.stderr.write>;
let consoleError: MockInstance<typeof console.error>;

beforeAll(async () => {
  chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: true });
  site = await startSite();
  site.route("/story", article("Rivers of the North", 6, "The closing line of the story."));
  api = await startFakeApi();
  broker = await startBroker();
});

afterAll(async () => {
  await broker?.close();
  await api?.close();
  await site?.close();
  await chromium?.close();
});

beforeEach(() => {
  api.requests = [];
  // Captured, not shown: the warnings the tests provoke would read like real failures in the run's output.
  stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  // The provider client warns with console.error (it runs on Workers too), which is stderr on Node.
  consoleError = vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  const written = stderrText();
  stderr.mockRestore();
  consoleError.mockRestore();
  expectNoSecrets(written);
});

function stderrText(): string {
  return stderr.mock.calls.map((args) => String(args[0])).join("") + consoleError.mock.calls.map((args) => `${args.map(String).join(" ")}\n`).join("");
}

function expectNoSecrets(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

/** The connect URL the fake API hands out: the real browser's endpoint plus a credential in the query. */
function connectUrl(): string {
  return `${chromium.endpoint}?token=${TOKEN}`;
}

async function failure(promise: Promise<unknown>): Promise<{ message: string; kind: unknown }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    const message = error instanceof Error ? error.message : String(error);
    expectNoSecrets(message);
    return { message, kind: Reflect.get(Object(error), "kind") };
  }
  throw new Error("expected a failure");
}

function releases(c: ProviderCase): Recorded[] {
  return api.requests.filter((r) => r.method === c.releaseMethod && r.path === c.releasePath);
}

function jsonOf(req: Recorded): unknown {
  return JSON.parse(req.body);
}

// ---- the tests ---------------------------------------------------------------------------------

describe.each(["browserbase", "kernel"] as const)("%s", (name) => {
  const c = CASES[name];

  it("creates a session with the documented request, serves a page over MCP from it, and ends it exactly once", async () => {
    api.onCreate = () => c.created(connectUrl());
    const session = await createProviderSession(name, c.env(api.origin), { timeoutSeconds: name === "browserbase" ? 900 : 120 });

    expect(api.requests).toHaveLength(1);
    const create = api.requests[0];
    if (!create) throw new Error("no create request");
    expect(create.method).toBe("POST");
    expect(create.path).toBe(c.createPath);
    expect(c.authorized(create)).toBe(true);
    expect(create.headers["content-type"]).toBe("application/json");
    expect(jsonOf(create)).toEqual(name === "browserbase" ? { projectId: "proj-0042", timeout: 900 } : { timeout_seconds: 120 });

    expect(session.endpoint).toBe(connectUrl());
    expect(session.ownsBrowser).toBe(false);
    if (name === "browserbase") expect(session.expiresAt).toBe(Date.parse(EXPIRES_AT));
    else expect(session.idleTimeoutSeconds).toBe(120);
    expectNoSecrets(session.label);
    expect(session.redact(`failed: ${connectUrl()} key=${API_KEY}`)).toBe("failed: [redacted: provider session] key=[redacted: provider key]");

    const driver = await broker.broker.attachCdp(session.endpoint, { label: session.label, ownsBrowser: false });
    const client = await connectClient(broker.url);
    try {
      const read = await call(client, "read_url", { url: `${site.origin}/story` });
      expect(read.isError).toBe(false);
      expect(read.text).toContain("Rivers of the North");
      expect(read.text).toContain("The closing line of the story.");
      const browsers = await call(client, "list_browsers");
      expect(browsers.text).toContain(session.label);
      expectNoSecrets(browsers.text);
    } finally {
      await client.close();
      driver.close("test done");
    }

    expect(releases(c)).toHaveLength(0);
    await Promise.all([session.stop(), session.stop()]);
    await session.stop();
    const released = releases(c);
    expect(released).toHaveLength(1);
    const release = released[0];
    if (!release) throw new Error("no release request");
    expect(c.authorized(release)).toBe(true);
    if (c.releaseBody === undefined) expect(release.body).toBe("");
    else {
      expect(release.headers["content-type"]).toBe("application/json");
      expect(jsonOf(release)).toEqual(c.releaseBody);
    }
    expect(api.requests).toHaveLength(2);
  });

  it("registers the API key and the connect URL in the broker's registry, so every exit of the broker redacts them", async () => {
    api.onCreate = () => c.created(connectUrl());
    const secrets = broker.broker.secrets;
    const session = await createProviderSession(name, c.env(api.origin), { secrets });
    expect(secrets.has(API_KEY)).toBe(true);
    expect(secrets.has(connectUrl())).toBe(true);
    expect(secrets.has(TOKEN)).toBe(true);
    // The URL may have been attached (registered as a cdp endpoint) by an earlier test: the first kind given stays.
    expect(secrets.redact(`key ${API_KEY} url ${encodeURIComponent(connectUrl())}`)).toMatch(
      /^key \[redacted: provider key\] url \[redacted: (provider session|cdp endpoint)\]$/,
    );
    // A page that quotes them, read over MCP from the session's own browser: the result carries neither.
    site.route("/quoting", `<title>key ${API_KEY}</title><p>the session is ${connectUrl()} and its token ${TOKEN}</p>`);
    const driver = await broker.broker.attachCdp(session.endpoint, { label: session.label, ownsBrowser: false });
    const client = await connectClient(broker.url);
    try {
      const read = await call(client, "read_url", { url: `${site.origin}/quoting`, mode: "full" });
      expect(read.isError).toBe(false);
      expect(read.text).toContain("[redacted: provider key]");
      expect(read.text).toMatch(/\[redacted: (provider session|cdp endpoint)\]/);
      expectNoSecrets(read.text);
    } finally {
      await client.close();
      driver.close("test done");
      await session.stop();
    }
  });

  it(`names ${c.keyVar} when the API key is missing, and calls nothing`, async () => {
    const env = c.env(api.origin);
    delete env[c.keyVar];
    const { message, kind } = await failure(createProviderSession(name, env));
    expect(message).toContain(c.keyVar);
    expect(kind).toBe("config");
    const blank = await failure(createProviderSession(name, { ...c.env(api.origin), [c.keyVar]: "  " }));
    expect(blank.message).toContain(c.keyVar);
    expect(api.requests).toHaveLength(0);
  });

  it("says the API key was refused on HTTP 401, without echoing it", async () => {
    api.onCreate = () => ({ status: 401, body: { statusCode: 401, error: "Unauthorized", message: `invalid api key ${API_KEY}` } });
    const { message, kind } = await failure(createProviderSession(name, c.env(api.origin)));
    expect(message).toContain("the API key was refused");
    expect(message).toContain(c.keyVar);
    expect(kind).toBe("auth");
    expect(api.requests).toHaveLength(1);
  });

  it("reports another HTTP error with its status and the provider's message, redacted", async () => {
    api.onCreate = () => ({ status: 500, body: { code: "internal", message: `upstream failed for key ${API_KEY}` } });
    const { message, kind } = await failure(createProviderSession(name, c.env(api.origin)));
    expect(message).toContain("HTTP 500");
    expect(message).toContain("upstream failed for key [redacted: provider key]");
    expect(kind).toBe("http");
  });

  it("reports an API it cannot reach", async () => {
    const port = await closedPort();
    const { message, kind } = await failure(createProviderSession(name, c.env(`http://127.0.0.1:${port}`)));
    expect(message).toMatch(/could not reach http:\/\/127\.0\.0\.1:\d+/);
    expect(message).toContain("ECONNREFUSED");
    expect(kind).toBe("network");
  });

  it("ends the session when the created one comes without a usable connect URL", async () => {
    api.onCreate = () => c.created(`https://not-a-websocket.invalid/?token=${TOKEN}`);
    const { message, kind } = await failure(createProviderSession(name, c.env(api.origin)));
    expect(kind).toBe("protocol");
    expect(message).toMatch(/asked (Browserbase|Kernel) to (end|delete) it/);
    expect(releases(c)).toHaveLength(1);
  });

  it("ends the session when the browser cannot be attached after creation", async () => {
    const port = await closedPort();
    api.onCreate = () => c.created(`ws://127.0.0.1:${port}/devtools/browser/0b7f5d7e-1f2a-4c3b-9d8e-7a6b5c4d3e2f?token=${TOKEN}`);
    const before = broker.broker.registry.list().length;
    const { message, kind } = await failure(startWithProvider(name, broker.broker, c.env(api.origin)));
    expect(kind).toBe("attach");
    expect(message).toContain("could not be attached");
    expect(releases(c)).toHaveLength(1);
    expect(broker.broker.registry.list()).toHaveLength(before);

    // An attach error that quotes the endpoint (as a WebSocket library might) is redacted too.
    api.onCreate = () => c.created(connectUrl());
    const quoting = { attachCdp: (endpoint: string) => Promise.reject(new Error(`cannot open ${endpoint}`)) };
    const quoted = await failure(startWithProvider(name, quoting, c.env(api.origin)));
    expect(quoted.message).toContain("cannot open [redacted: provider session]");
    expect(releases(c)).toHaveLength(2);
  });

  it("startWithProvider attaches the session, prints one line naming the provider and its expiry, and stop() ends it once", async () => {
    api.onCreate = () => c.created(connectUrl());
    const handle = await startWithProvider(name, broker.broker, c.env(api.origin));
    const lines = stderrText().split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line).toContain(name === "browserbase" ? "Browserbase" : "Kernel");
    expect(line).toContain(name === "browserbase" ? EXPIRES_AT.replace("Z", ".000Z") : "120 s without a connection");
    expect(line).not.toContain("ws://");
    expect(broker.broker.registry.list().some((b) => b.info.label.includes(name === "browserbase" ? "Browserbase" : "Kernel"))).toBe(true);

    await handle.stop();
    await handle.stop();
    expect(releases(c)).toHaveLength(1);
    await vi.waitFor(() =>
      expect(broker.broker.registry.list().some((b) => b.info.label.includes(name === "browserbase" ? "Browserbase" : "Kernel"))).toBe(false),
    );
  });

  it("stop() never throws when the release fails: it warns on stderr, redacted, and does not retry", async () => {
    api.onCreate = () => c.created(connectUrl());
    api.onRelease = () => ({ status: 500, body: { message: `could not stop ${connectUrl()} for ${API_KEY}` } });
    try {
      const session = await createProviderSession(name, c.env(api.origin));
      await expect(session.stop()).resolves.toBeUndefined();
      await session.stop();
      expect(releases(c)).toHaveLength(1);
      const written = stderrText();
      expect(written).toContain("warn");
      expect(written).toContain("HTTP 500");
      expect(written).toContain("[redacted: provider session]");
      expect(written).toContain("[redacted: provider key]");
    } finally {
      api.onRelease = () => ({ status: 200, body: {} });
    }
  });

  it("refuses an out-of-range timeout and a plain-http API off loopback before sending anything", async () => {
    const range = await failure(createProviderSession(name, c.env(api.origin), { timeoutSeconds: 5 }));
    expect(range.message).toContain("timeout");
    const urlVar = name === "browserbase" ? "BROWSERBASE_API_URL" : "KERNEL_API_URL";
    const plain = await failure(createProviderSession(name, { ...c.env(api.origin), [urlVar]: "http://api.example.com" }));
    expect(plain.message).toContain(urlVar);
    expect(plain.kind).toBe("config");
    expect(api.requests).toHaveLength(0);
  });
});

describe("browserbase without BROWSERBASE_PROJECT_ID", () => {
  it("lets the API infer the project from the key, and names the variable if the API wants it", async () => {
    const env = CASES.browserbase.env(api.origin);
    delete env["BROWSERBASE_PROJECT_ID"];
    api.onCreate = () => CASES.browserbase.created(connectUrl());
    const session = await createProviderSession("browserbase", env);
    await session.stop();
    const [create, release] = api.requests;
    expect(create && jsonOf(create)).toEqual({});
    expect(release && jsonOf(release)).toEqual({ status: "REQUEST_RELEASE" });

    api.onCreate = () => ({ status: 400, body: { statusCode: 400, error: "Bad Request", message: "projectId is required" } });
    const { message } = await failure(createProviderSession("browserbase", env));
    expect(message).toContain("HTTP 400");
    expect(message).toContain("projectId is required");
    expect(message).toContain("BROWSERBASE_PROJECT_ID");
  });
});

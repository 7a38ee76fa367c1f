// The dashboard's chat end to end: a real `tabrelay serve` (the built CLI, which mounts @tabrelay/chat when a key is in
// its environment), the agent's browser the real extension, the model the real @ai-sdk/anthropic client talking to a
// local server that speaks Anthropic's streaming Messages protocol, and the dashboard driven by a person's browser
// (playwright-core): a task typed in the panel, the program, its result and the answer appear; a refusal; the stop
// button; the no-key message from a serve without a key.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeAnthropic, turnOf, type FakeModelApi, type Reply, type SeenRequest } from "../fakeModelApi.js";
import {
  allowYaml,
  DASHBOARD_TOKEN,
  launchBrowser,
  makeDataDir,
  MCP_TOKEN,
  PAIRING_TOKEN,
  startSite,
  TOKEN_ENV,
  waitFor,
  type TestBrowser,
  type TestSite,
} from "../harness.js";

const CLI = fileURLToPath(new URL("../../packages/cli/bin/tabrelay.js", import.meta.url));
const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const KEY = "sk-ant-e2e-9d1f3b5a7c2e4f6a8b0c1d3e5f7a9b2c";
const TITLE = "Chat Panel Page";
/** Markup, and U+202E (right-to-left override), which would make "exe.pdf" read "fdp.exe". */
const HOSTILE = `Invoice \u202Eexe.pdf &lt;img src=x onerror="window.__pwned=1"&gt;`;

interface Serve {
  child: ChildProcess;
  url: string;
  port: number;
  stderr: () => string;
  stop(): Promise<void>;
}

async function serve(env: Record<string, string>): Promise<Serve> {
  const dataDir = makeDataDir(allowYaml("chat:\n  max_steps: 4\n"));
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dataDir], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...TOKEN_ENV, ...env },
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout?.on("data", (d: Buffer) => (stderr += d.toString()));
  const url = await waitFor("the broker's URL", () => /MCP endpoint:\s+(\S+)\/mcp/.exec(stderr)?.[1], 20_000);
  return {
    child,
    url,
    port: Number(new URL(url).port),
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

function script(request: SeenRequest): Reply {
  const { task, results } = turnOf(request);
  // The model quoting the page as it read it, controls and markup included.
  if (results && task.includes("hostile")) return { kind: "text", text: "The title reads: Invoice \u202Eexe.pdf <b>bold</b>" };
  if (results)
    return {
      kind: "text",
      text: results.includes("policy_denied") ? "Your read policy refused that page." : `The title is ${results.includes(TITLE) ? TITLE : "unknown"}.`,
    };
  if (task.includes("hostile"))
    return { kind: "program", program: `await browse.open(${JSON.stringify(`${site.origin}/hostile`)});\nreturn await browse.get("title");` };
  if (task.includes("refused"))
    return { kind: "program", program: `await browse.open("http://localhost:${site.port}/panel");\nreturn await browse.get("title");` };
  if (task.includes("wait"))
    return {
      kind: "program",
      program: `await browse.open(${JSON.stringify(`${site.origin}/panel`)});\nawait browse.waitFor({ text: "never there", timeoutMs: 30000 });\nreturn 1;`,
    };
  return { kind: "program", program: `await browse.open(${JSON.stringify(`${site.origin}/panel`)});\nreturn await browse.get("title");` };
}

let site: TestSite;
let model: FakeModelApi;
let broker: Serve;
let agent: TestBrowser;
let viewer: Browser;
let page: Page;
/** Every answer the dashboard page received from its broker. */
const received: string[] = [];

async function logIn(p: Page, url: string): Promise<void> {
  await p.goto(`${url}/login`);
  await p.fill("#token", DASHBOARD_TOKEN);
  await Promise.all([p.waitForURL(`${url}/`), p.click("button[type=submit]")]);
}

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/hostile", `<!doctype html><html><head><title>${HOSTILE}</title></head><body><p>A hostile title.</p></body></html>`);
  site.route("/panel", `<!doctype html><html><head><title>${TITLE}</title></head><body><p>The chat panel's page.</p></body></html>`);
  model = await fakeAnthropic(script);
  broker = await serve({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: model.baseUrl });
  agent = await launchBrowser(broker.port);
  viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  page = await viewer.newPage();
  page.on("response", (res) => {
    void res.text().then(
      (body) => received.push(body),
      () => undefined,
    );
  });
  await logIn(page, broker.url);
  // The agent's browser is connected once the dashboard lists it.
  await page.waitForSelector("#browsers .browser", { timeout: 30_000 });
}, 90_000);

afterAll(async () => {
  await viewer?.close();
  await agent?.close();
  await broker?.stop();
  await model?.close();
  await site?.close();
});

async function send(task: string): Promise<void> {
  await page.fill("#chat-task", task);
  await page.click("#chat-send");
}

describe("the dashboard's chat panel", () => {
  it("says which model it runs, beside the live view", async () => {
    await page.waitForSelector("#chat-form:not([hidden])");
    expect(await page.textContent("#chat-status")).toContain("claude-sonnet-4-5 (anthropic)");
    // Side by side: the chat's box starts to the right of the live view's.
    const live = await page.locator("#preview").boundingBox();
    const chat = await page.locator("#chat").boundingBox();
    expect(chat && live && chat.x > live.x + live.width - 1).toBe(true);
  });

  it("shows the program, its result and the answer as they stream", async () => {
    await send("Open the panel page and tell me its title");
    await page.waitForSelector(".chat-answer", { timeout: 30_000 });
    expect(await page.textContent(".chat-user")).toContain("Open the panel page and tell me its title");
    expect(await page.textContent(".chat-call .chat-tool")).toBe("browser_run");
    expect(await page.textContent(".chat-program code")).toContain(`browse.open("${site.origin}/panel")`);
    expect(await page.textContent(".chat-result")).toContain(TITLE);
    expect(await page.textContent(".chat-answer")).toContain(`The title is ${TITLE}.`);
    expect(await page.isEnabled("#chat-send")).toBe(true);
    if (process.env["CHAT_SCREENSHOT"]) await page.screenshot({ path: process.env["CHAT_SCREENSHOT"], fullPage: true });
  });

  it("shows a program opening a host outside the read policy as a refusal", async () => {
    await send("Open the refused page");
    await page.waitForSelector(".chat-refusal", { timeout: 30_000 });
    expect(await page.textContent(".chat-refusal")).toMatch(/Refused \(policy_denied\)/);
    await page.waitForSelector(".chat-answer >> nth=1");
    expect(await page.locator(".chat-answer").nth(1).textContent()).toContain("Your read policy refused that page.");
  });

  it("shows page text as text: markup inert, bidi controls stripped", async () => {
    await send("Read the hostile page's title");
    await page.waitForSelector(".chat-answer >> nth=2", { timeout: 30_000 });
    const result = (await page.locator(".chat-result").last().textContent()) ?? "";
    expect(result).toContain("Invoice exe.pdf <img src=x onerror=");
    expect(result).not.toContain("\u202E");
    const answer = (await page.locator(".chat-answer").last().textContent()) ?? "";
    expect(answer).toContain("The title reads: Invoice exe.pdf <b>bold</b>");
    expect(answer).not.toContain("\u202E");
    expect(await page.locator("#chat-log img").count()).toBe(0);
    expect(await page.evaluate(() => Reflect.get(globalThis, "__pwned"))).toBeUndefined();
  });

  it("the stop button stops a running program", async () => {
    await send("open and wait");
    await page.waitForSelector(".chat-program >> text=never there", { timeout: 30_000 });
    await page.waitForSelector("#chat-stop:not([disabled])");
    const clicked = Date.now();
    await page.click("#chat-stop");
    await page.waitForSelector(".chat-stopped", { timeout: 10_000 });
    expect(Date.now() - clicked).toBeLessThan(10_000);
    await page.waitForSelector("#chat-send:not([disabled])");
  });

  it("New conversation clears the panel", async () => {
    await page.click("#chat-reset");
    await page.waitForSelector("#chat-log li", { state: "detached" });
  });

  it("the key reached the model's server in x-api-key only, and nothing the page received or the broker logged", async () => {
    expect(model.requests.length).toBeGreaterThanOrEqual(5);
    for (const r of model.requests) expect(r.headers["x-api-key"]).toBe(KEY);
    await new Promise((r) => setTimeout(r, 500));
    expect(received.length).toBeGreaterThan(5);
    for (const body of received) expect(body).not.toContain(KEY);
    expect(broker.stderr()).not.toContain(KEY);
  });
});

describe("the chat panel without a key", () => {
  it("says exactly how to add one, and offers no task box", async () => {
    const bare = await serve({});
    const other = await viewer.newPage();
    try {
      await logIn(other, bare.url);
      await other.waitForSelector("#chat[data-state=unavailable]");
      const text = (await other.textContent("#chat-status")) ?? "";
      expect(text).toContain("Set ANTHROPIC_API_KEY in the environment of tabrelay serve");
      expect(text).toContain("TABRELAY_CHAT_BASE_URL, TABRELAY_CHAT_API_KEY and TABRELAY_CHAT_MODEL");
      expect(text).toContain("restart tabrelay");
      expect(await other.isHidden("#chat-form")).toBe(true);
    } finally {
      await other.close();
      await bare.stop();
    }
  });
});

describe("a half-done OpenAI-compatible setup", () => {
  it("stops start-up with exit 3 naming what is missing, and never prints the key", async () => {
    const dataDir = makeDataDir(allowYaml());
    const secret = "sk-compat-e2e-1a2b3c4d5e6f7a8b9c0d";
    const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--data-dir", dataDir], {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env["PATH"] ?? "",
        HOME: process.env["HOME"] ?? "",
        TABRELAY_MCP_TOKEN: MCP_TOKEN,
        TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN,
        TABRELAY_CHAT_BASE_URL: "http://127.0.0.1:9/v1",
        TABRELAY_CHAT_API_KEY: secret,
      },
    });
    let output = "";
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(3);
    expect(output).toContain("no model is named: set TABRELAY_CHAT_MODEL or chat.model");
    expect(output).not.toContain(secret);
  });
});

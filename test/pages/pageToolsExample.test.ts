// examples/page-tools, run as its README says (node examples/page-tools/serve.mjs) against a real broker: its two
// pages, loaded in real Chromium, offer render_chart and search_orders; a real MCP SDK client calls both and the
// pages show what the agent asked for.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { call, closedPort, connectClient, MCP_TOKEN, startBroker, waitFor, type TestBroker } from "../harness.js";

const CHROMIUM = process.env["CHROME_PATH"] ?? "/usr/lib/chromium/chromium";
const SERVE = fileURLToPath(new URL("../../examples/page-tools/serve.mjs", import.meta.url));

let broker: TestBroker;
let app: ChildProcess;
let viewer: Browser;
let client: Client;
let origin: string;

beforeAll(async () => {
  const port = await closedPort();
  origin = `http://127.0.0.1:${port}`;
  broker = await startBroker({
    yaml: `pages:\n  allowed_origins: ["${origin}"]\npolicy:\n  write:\n    page_tools:\n      "${origin}": { tools: "^(render_chart|search_orders)$" }\n`,
  });
  app = spawn(process.execPath, [SERVE], {
    env: { ...process.env, PORT: String(port), TABRELAY_URL: broker.url, TABRELAY_MCP_TOKEN: MCP_TOKEN },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => app.stdout?.on("data", (d: Buffer) => String(d).includes("page-tools example on") && resolve()));
  viewer = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  client = await connectClient(broker.url);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await viewer?.close();
  app?.kill();
  await broker?.close();
});

it("the orders page's search_orders answers from its own API; the chart page draws the rows the agent passes", async () => {
  const orders = await viewer.newPage();
  await orders.goto(`${origin}/orders.html`);
  const chart = await viewer.newPage();
  await chart.goto(`${origin}/chart.html`);
  const prefix = `127_0_0_1_${new URL(origin).port}__`;
  await waitFor("both tools listed", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    return names.includes(`${prefix}search_orders`) && names.includes(`${prefix}render_chart`) ? true : undefined;
  });
  const found = await call(client, `${prefix}search_orders`, { q: "shoes" });
  expect(found.isError, found.text).toBe(false);
  expect(found.text).toContain("Trail running shoes");
  expect(await orders.locator("#results li").allTextContents()).toEqual(["A-1001 Trail running shoes: 129 EUR (shipped)"]);
  const drawn = await call(client, `${prefix}render_chart`, {
    title: "Orders by status",
    rows: [
      { label: "shipped", value: 1 },
      { label: "delivered", value: 2 },
    ],
  });
  expect(drawn.text).toContain("rendered 2 bars");
  expect(await chart.locator("#title").textContent()).toBe("Orders by status");
  expect(await chart.locator("#chart rect").count()).toBe(2);
  const bad = await call(client, `${prefix}render_chart`, { rows: [] });
  expect(bad.text).toMatch(/^page_tool_failed/);
  expect(await orders.locator("#status").textContent()).toBe("tabrelay: open");
});

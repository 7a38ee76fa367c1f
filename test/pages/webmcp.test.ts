// WebMCP through the extension and over CDP (pages.webmcp): a page in an agent tab registers tools with
// document.modelContext (the W3C draft's registerTool(tool, { signal })), which tabrelay provides there; a real MCP
// SDK client lists and calls them like any page tool, under the same grant, bound to that tab and its document.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, DRIVERS, openTab, startSession, startSite, waitFor, type TestBroker, type TestSite } from "../harness.js";

let site: TestSite;
let other: TestSite;

const html = (title: string, script: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><p id="status">starting</p><p id="draft">checking</p><script>${script}</script></body></html>`;

beforeAll(async () => {
  site = await startSite();
  other = await startSite();
  const app = `
window.calls = 0;
document.addEventListener("DOMContentLoaded", () => {
  const mc = document.modelContext;
  mc.registerTool({ name: "add_numbers", description: "Adds a and b.", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }, execute: async ({ a, b }) => { window.calls++; document.getElementById("status").textContent = "added"; return String(a + b); } });
  mc.registerTool({ name: "cart_items", description: "The cart as JSON.", execute: () => ({ items: [{ sku: "A1", qty: 2 }] }) });
  mc.registerTool({ name: "wipe_cart", description: "Empties the cart.", inputSchema: { type: "object" }, execute: () => { window.calls++; return "wiped"; } });
  mc.registerTool({ name: "slow", description: "Never answers.", inputSchema: { type: "object" }, execute: () => new Promise(() => {}) });
  const temporary = new AbortController();
  mc.registerTool({ name: "temporary", description: "Gone soon.", inputSchema: { type: "object" }, execute: () => "here" }, { signal: temporary.signal });
  if (location.search.includes("drop")) setTimeout(() => temporary.abort(), 500);
  let duplicate = "no error";
  try { mc.registerTool({ name: "add_numbers", description: "again", execute: () => "" }); } catch (e) { duplicate = e.name; }
  let empty = "no error";
  try { mc.registerTool({ name: "", description: "empty", execute: () => "" }); } catch (e) { empty = e.name; }
  document.getElementById("draft").textContent = "registered; duplicate: " + duplicate + "; empty: " + empty;
});`;
  site.route("/app", html("WebMCP app", app));
  site.route("/plain", html("Plain page", `document.getElementById("status").textContent = typeof document.modelContext;`));
  other.route("/app", html("Elsewhere", app));
});

afterAll(async () => {
  await site?.close();
  await other?.close();
});

describe.each(DRIVERS)("WebMCP with the %s driver", (driver) => {
  let broker: TestBroker;
  let client: Client;
  let close: () => Promise<void> = async () => undefined;
  let prefix: string;
  const pageTools = async () => (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith(prefix));

  beforeAll(async () => {
    prefix = `127_0_0_1_${site.port}__`;
    ({ broker, client, close } = await startSession(driver, {
      yaml: `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    page_tools:
      "${site.origin}": { tools: "^(add_numbers|cart_items|slow|temporary)$" }
pages:
  allowed_origins: ["${site.origin}"]
  webmcp: true
  call_timeout_ms: 2000
`,
    }));
  }, 60_000);

  afterAll(() => close());

  it("a page's registered tools are listed namespaced and called under the page_tools grant; no grant, no call", async () => {
    const tab = await openTab(client, `${site.origin}/app`);
    await waitFor("the WebMCP tools listed", async () => ((await pageTools()).length >= 5 ? true : undefined));
    expect((await pageTools()).sort()).toEqual(["add_numbers", "cart_items", "slow", "temporary", "wipe_cart"].map((n) => prefix + n));
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === `${prefix}add_numbers`)?.description).toContain(`offered by the page ${site.origin}`);
    const added = await call(client, `${prefix}add_numbers`, { a: 2, b: 3 });
    expect(added.isError, added.text).toBe(false);
    expect(added.text).toMatch(/<page-content nonce="[0-9a-f]+">\n5\n/);
    expect((await call(client, `${prefix}cart_items`)).text).toContain('{"items":[{"sku":"A1","qty":2}]}');
    const wiped = await call(client, `${prefix}wipe_cart`);
    expect(wiped.text).toMatch(/^write_denied/);
    const page = await call(client, "read_page", { tab, mode: "full" });
    expect(page.text).toContain("added");
    // The draft's refusals: a duplicate name is an InvalidStateError, an empty one a TypeError.
    expect(page.text).toContain("duplicate: InvalidStateError; empty: TypeError");
    const rows = broker.broker.audit.list({ limit: 50 }).filter((r) => r.tool.startsWith(prefix));
    expect(rows.map((r) => `${r.tool.slice(prefix.length)}:${r.decision}`)).toEqual(["add_numbers:allowed", "cart_items:allowed", "wipe_cart:refused"]);
    await call(client, "close_tab", { tab });
    await waitFor("the tools gone with the tab", async () => ((await pageTools()).length === 0 ? true : undefined));
  });

  it("an aborted registration, a navigation and a reload mid-call: the tools follow the document", async () => {
    const tab = await openTab(client, `${site.origin}/app`);
    await waitFor("listed", async () => ((await pageTools()).includes(`${prefix}temporary`) ? true : undefined));
    expect((await call(client, `${prefix}temporary`)).text).toContain("here");
    // This document aborts its registration of "temporary" after 500 ms (the draft's unregister).
    await call(client, "navigate", { tab, url: `${site.origin}/app?drop` });
    await waitFor("the new document's tools, without the aborted one", async () => {
      const names = await pageTools();
      return names.includes(`${prefix}add_numbers`) && !names.includes(`${prefix}temporary`) ? true : undefined;
    });
    const pending = call(client, `${prefix}slow`);
    await new Promise((r) => setTimeout(r, 300));
    await call(client, "history", { tab, action: "reload" });
    const gone = await pending;
    expect(gone.text, gone.text).toMatch(/^page_gone/);
    await waitFor("back after the reload", async () => ((await pageTools()).includes(`${prefix}add_numbers`) ? true : undefined));
    await call(client, "navigate", { tab, url: `${site.origin}/plain` });
    await waitFor("gone once the tab shows a page without tools", async () => ((await pageTools()).length === 0 ? true : undefined));
    // The plain page still has the shim (an agent tab), and no tool.
    expect((await call(client, "read_page", { tab, mode: "full" })).text).toContain("object");
    await call(client, "close_tab", { tab });
  });

  it("a page on an origin not on pages.allowed_origins offers nothing", async () => {
    const tab = await openTab(client, `${other.origin}/app`);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await client.listTools()).tools.map((t) => t.name).filter((n) => n.includes(`_${other.port}__`))).toEqual([]);
    await call(client, "close_tab", { tab });
  });
});

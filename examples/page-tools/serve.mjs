#!/usr/bin/env node
// Two web pages that offer their own tools to AI agents through tabrelay (page tools, @tabrelay/page):
//   /chart.html   render_chart: draws a bar chart from the rows the agent passes
//   /orders.html  search_orders: searches "the signed-in user's" orders through the app's own API (/api/orders)
// The app's backend hands each page a short-lived page token it asks the broker for (POST /page-tokens with the
// MCP bearer), as a real app would: the MCP token never reaches the page.
//
//   npm run build && npx tabrelay start          # once, in another terminal (or tabrelay serve)
//   node examples/page-tools/serve.mjs           # this app on http://127.0.0.1:8088; open its pages in a browser
//
// The broker must allow this origin and grant its tools, in its config.yaml (this script prints the lines):
//   pages: { allowed_origins: ["http://127.0.0.1:8088"] }
//   policy: { write: { page_tools: { "http://127.0.0.1:8088": { tools: "^(render_chart|search_orders)$" } } } }
// Environment: TABRELAY_URL (default http://127.0.0.1:9333), TABRELAY_MCP_TOKEN (default: the data dir's mcp-token),
// PORT (default 8088).
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultDataDir } from "@tabrelay/broker";

const here = dirname(fileURLToPath(import.meta.url));
const library = join(here, "../../packages/page/dist");
const broker = (process.env.TABRELAY_URL ?? "http://127.0.0.1:9333").replace(/\/$/, "");
const port = Number(process.env.PORT ?? 8088);
const origin = `http://127.0.0.1:${port}`;
const token = () => process.env.TABRELAY_MCP_TOKEN?.trim() || readFileSync(join(defaultDataDir(), "mcp-token"), "utf8").trim();

const ORDERS = [
  { id: "A-1001", product: "Trail running shoes", total: 129.0, status: "shipped" },
  { id: "A-1002", product: "Rain jacket", total: 89.5, status: "delivered" },
  { id: "A-1003", product: "Running socks (3 pairs)", total: 18.0, status: "processing" },
  { id: "A-1004", product: "Hiking boots", total: 164.0, status: "delivered" },
];

const CONFIG_HINT = `Add to the broker's config.yaml and restart it:
pages:
  allowed_origins: ["${origin}"]
policy:
  write:
    page_tools:
      "${origin}": { tools: "^(render_chart|search_orders)$" }`;

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", origin);
  try {
    if (url.pathname === "/token") {
      const answer = await fetch(`${broker}/page-tokens`, { method: "POST", headers: { Authorization: `Bearer ${token()}`, "Content-Type": "application/json" }, body: JSON.stringify({ origin }) });
      const body = await answer.text();
      if (!answer.ok) console.error(`tabrelay refused a page token (${answer.status}): ${body}\n${CONFIG_HINT}`);
      res.writeHead(answer.status, { "Content-Type": "application/json", "Cache-Control": "no-store" });
      return res.end(body);
    }
    if (url.pathname === "/config.json") {
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify({ endpoint: `${broker.replace(/^http/, "ws")}/page` }));
    }
    if (url.pathname === "/api/orders") {
      const q = (url.searchParams.get("q") ?? "").toLowerCase();
      res.writeHead(200, { "Content-Type": "application/json" });
      return res.end(JSON.stringify(ORDERS.filter((o) => o.product.toLowerCase().includes(q))));
    }
    if (url.pathname.startsWith("/page/")) {
      const file = normalize(join(library, url.pathname.slice("/page/".length)));
      if (!file.startsWith(library) || !file.endsWith(".js")) throw Object.assign(new Error("not found"), { status: 404 });
      res.writeHead(200, { "Content-Type": "text/javascript" });
      return res.end(readFileSync(file));
    }
    const page = { "/": "orders.html", "/orders.html": "orders.html", "/chart.html": "chart.html", "/connect.js": "connect.js" }[url.pathname];
    if (!page) throw Object.assign(new Error("not found"), { status: 404 });
    res.writeHead(200, { "Content-Type": page.endsWith(".js") ? "text/javascript" : "text/html; charset=utf-8" });
    res.end(readFileSync(join(here, page)));
  } catch (error) {
    res.writeHead(error.status ?? 500, { "Content-Type": "text/plain" });
    res.end(error.status ? "not found" : String(error.message));
  }
});

server.listen(port, "127.0.0.1", () => {
  console.log(`page-tools example on ${origin}: open ${origin}/orders.html and ${origin}/chart.html (broker: ${broker})`);
  console.log(CONFIG_HINT);
});

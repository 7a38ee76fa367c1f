// 17: page tools. The round trip of one page tool call through the broker (an MCP client -> tabrelay serve -> the
// page's @tabrelay/page server in a real Chromium tab -> back), beside a built-in call that does not reach a browser
// (list_browsers) on the same client, and the size of the page library's minified bundle, gzipped.
// The peer figure is 17b below: WebMCP, where chrome-devtools-mcp has a tool for it.
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { CHROMIUM, CHROMIUM_FLAGS, MCP_TOKEN, PAIRING_TOKEN, ROOT, cleanups, median, sleep, tempDir, timed, withTimeout } from "./common.mjs";
import { peerSpecs, startPeer } from "./peers.mjs";
import { connectHttp, spawnTabrelay } from "./tabrelay.mjs";

const RUNS = 200;
const WARMUP = 30;

async function bundle(minify) {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [join(ROOT, "packages/page/src/index.ts")],
    bundle: true,
    minify,
    format: "esm",
    write: false,
    platform: "browser",
  });
  return result.outputFiles[0].text;
}

export async function benchPageTools(lib) {
  const library = await bundle(false);
  const minified = await bundle(true);
  const sizes = { minifiedBytes: Buffer.byteLength(minified), gzipBytes: gzipSync(minified).length };

  let brokerUrl = "";
  const site = createServer(async (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/page-lib.js") {
      res.writeHead(200, { "Content-Type": "text/javascript" });
      res.end(library);
    } else if (path === "/token") {
      // The app's backend: a token for its own origin from the broker, with the MCP bearer.
      const answer = await fetch(`${brokerUrl}/page-tokens`, {
        method: "POST",
        headers: { Authorization: `Bearer ${MCP_TOKEN}`, "Content-Type": "application/json" },
        body: JSON.stringify({ origin: `http://127.0.0.1:${site.address().port}` }),
      });
      res.writeHead(answer.status, { "Content-Type": "application/json" });
      res.end(await answer.text());
    } else if (path === "/app") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      res.end(`<!doctype html><title>app</title><script type="module">
import { createServer } from "/page-lib.js";
const server = createServer({ endpoint: new URLSearchParams(location.search).get("ws"), serverInfo: { name: "bench-app", version: "1" }, token: async () => (await (await fetch("/token")).json()).token });
server.registerTool({ name: "add", description: "Adds two numbers.", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }, handler: ({ a, b }) => String(a + b) });
await server.connect();
</script>`);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => (site.closeAllConnections(), site.close(() => resolve()))));
  const origin = `http://127.0.0.1:${site.address().port}`;

  const dataDir = tempDir("pages");
  writeFileSync(
    join(dataDir, "config.yaml"),
    `pages:\n  allowed_origins: ["${origin}"]\npolicy:\n  write:\n    page_tools:\n      "${origin}": { tools: "^add$" }\n`,
  );
  const server = spawnTabrelay(["serve"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir);
  cleanups.push(server.stop);
  const { mcpUrl } = await withTimeout(server.urlPromise, 15_000, "tabrelay serve start-up");
  brokerUrl = new URL(mcpUrl).origin;

  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  cleanups.push(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${origin}/app?ws=${encodeURIComponent(`${brokerUrl.replace("http", "ws")}/page`)}`);

  const client = await connectHttp(lib, mcpUrl, MCP_TOKEN);
  cleanups.push(() => client.close());
  const name = `127_0_0_1_${site.address().port}__add`;
  const deadline = Date.now() + 20_000;
  while (!(await client.listTools()).tools.some((t) => t.name === name)) {
    if (Date.now() > deadline) throw new Error("bench/lib/pages.mjs: the page's tool never reached tools/list");
    await sleep(50);
  }
  const callPage = async (i) => {
    const result = await client.callTool({ name, arguments: { a: i, b: 1 } });
    if (result.isError || !result.content[0].text.includes(String(i + 1)))
      throw new Error(`bench/lib/pages.mjs: the page tool answered ${JSON.stringify(result)}`);
  };
  const callBuiltIn = async () => {
    const result = await client.callTool({ name: "list_browsers", arguments: {} });
    if (result.isError) throw new Error(`bench/lib/pages.mjs: list_browsers failed: ${JSON.stringify(result)}`);
  };
  for (let i = 0; i < WARMUP; i++) {
    await callPage(i);
    await callBuiltIn();
  }
  const pageTimes = [];
  const builtInTimes = [];
  // Alternating, so the machine's load falls on both alike.
  for (let i = 0; i < RUNS; i++) {
    pageTimes.push((await timed(() => callPage(i))).ms);
    builtInTimes.push((await timed(callBuiltIn)).ms);
  }
  return { runs: RUNS, pageCallMedianMs: median(pageTimes), builtInMedianMs: median(builtInTimes), ...sizes };
}

export function pageToolRows(r) {
  if (r.error) return [{ figure: "17. page tool round trip (median)", tabrelay: `error: ${r.error}`, playwright: "", devtools: "", target: "<= 3 ms" }];
  const ms = (v) => `${v.toFixed(2)} ms`;
  return [
    {
      figure: `17. page tool round trip, agent -> broker -> page -> back (median of ${r.runs})`,
      tabrelay: ms(r.pageCallMedianMs),
      playwright: "n/a",
      devtools: "n/a (no page library; WebMCP: 17b)",
      target: "<= 3 ms",
    },
    {
      figure: "    same client, a built-in call that reaches no browser (list_browsers)",
      tabrelay: ms(r.builtInMedianMs),
      playwright: "",
      devtools: "",
      target: "",
    },
    {
      figure: "    @tabrelay/page: minified bundle, gzipped",
      tabrelay: `${(r.gzipBytes / 1024).toFixed(2)} KB (${(r.minifiedBytes / 1024).toFixed(1)} KB minified)`,
      playwright: "",
      devtools: "",
      target: "< 8 KB",
    },
  ];
}

// 17b: WebMCP, side by side. One page registers `add` with document.modelContext.registerTool (the W3C draft), and the
// same call goes agent -> server -> the page's execute -> back: through tabrelay (`start --cdp --headless` with
// `pages.webmcp: true`: tabrelay's own shim provides document.modelContext, no browser flag) and through
// chrome-devtools-mcp's execute_webmcp_tool (its experimental WebMCP category, Chrome started with
// --enable-features=WebMCP,DevToolsWebMCPSupport). Each beside a built-in call of its own on the same client.
const WEBMCP_PAGE = `<!doctype html><title>webmcp</title><p id="status">idle</p><script>
document.modelContext.registerTool({ name: "add", description: "Adds two numbers.", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }, execute: async ({ a, b }) => String(a + b) });
</script>`;

async function alternate(callTool, callBuiltIn) {
  for (let i = 0; i < WARMUP; i++) {
    await callTool(i);
    await callBuiltIn();
  }
  const toolTimes = [];
  const builtInTimes = [];
  for (let i = 0; i < RUNS; i++) {
    toolTimes.push((await timed(() => callTool(i))).ms);
    builtInTimes.push((await timed(callBuiltIn)).ms);
  }
  return { runs: RUNS, toolMedianMs: median(toolTimes), builtInMedianMs: median(builtInTimes) };
}

export async function benchWebMcp(lib) {
  const site = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(WEBMCP_PAGE);
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => (site.closeAllConnections(), site.close(() => resolve()))));
  const origin = `http://127.0.0.1:${site.address().port}`;
  const url = `${origin}/webmcp`;
  const out = {};

  try {
    const dataDir = tempDir("webmcp");
    writeFileSync(
      join(dataDir, "config.yaml"),
      `pages:\n  allowed_origins: ["${origin}"]\n  webmcp: true\npolicy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  write:\n    page_tools:\n      "${origin}": { tools: "^add$" }\n`,
    );
    const server = spawnTabrelay(["start", "--cdp", "--headless"], { TABRELAY_MCP_TOKEN: MCP_TOKEN, TABRELAY_PAIRING_TOKEN: PAIRING_TOKEN }, dataDir);
    cleanups.push(server.stop);
    const { mcpUrl } = await withTimeout(server.urlPromise, 30_000, "tabrelay start --cdp start-up");
    const client = await connectHttp(lib, mcpUrl, MCP_TOKEN);
    cleanups.push(() => client.close());
    await client.callTool({ name: "open_tab", arguments: { url } });
    const name = `127_0_0_1_${site.address().port}__add`;
    const deadline = Date.now() + 20_000;
    while (!(await client.listTools()).tools.some((t) => t.name === name)) {
      if (Date.now() > deadline) throw new Error("bench/lib/pages.mjs: the WebMCP tool never reached tabrelay's tools/list");
      await sleep(50);
    }
    out.tabrelay = await alternate(
      async (i) => {
        const result = await client.callTool({ name, arguments: { a: i, b: 1 } });
        if (result.isError || !result.content[0].text.includes(String(i + 1)))
          throw new Error(`tabrelay's WebMCP call answered ${JSON.stringify(result).slice(0, 300)}`);
      },
      async () => {
        const result = await client.callTool({ name: "list_browsers", arguments: {} });
        if (result.isError) throw new Error(`list_browsers failed: ${JSON.stringify(result).slice(0, 300)}`);
      },
    );
  } catch (error) {
    out.tabrelay = { error: error instanceof Error ? error.message : String(error) };
  }

  const spec = peerSpecs(tempDir("webmcp-peer")).devtools;
  spec.command = [...spec.command, "--categoryExperimentalWebmcp=true", "--chromeArg=--enable-features=WebMCP,DevToolsWebMCPSupport"];
  const peer = await startPeer(lib, spec, tempDir("webmcp-devtools")).catch((error) => ({ error }));
  if (peer.error) {
    out.devtools = { error: peer.error instanceof Error ? peer.error.message : String(peer.error) };
  } else {
    try {
      const { client } = peer;
      await spec.ensurePage(client);
      await client.callTool({ name: "navigate_page", arguments: { pageId: spec.pageId, type: "url", url } });
      const text = (result) => result.content.map((c) => c.text ?? "").join("\n");
      const deadline = Date.now() + 20_000;
      while (!/\badd\b/.test(text(await client.callTool({ name: "list_webmcp_tools", arguments: { pageId: spec.pageId } })))) {
        if (Date.now() > deadline) throw new Error("chrome-devtools-mcp's list_webmcp_tools never listed the page's tool");
        await sleep(100);
      }
      out.devtools = await alternate(
        async (i) => {
          const result = await client.callTool({
            name: "execute_webmcp_tool",
            arguments: { pageId: spec.pageId, toolName: "add", input: JSON.stringify({ a: i, b: 1 }) },
          });
          if (result.isError || !text(result).includes(String(i + 1))) throw new Error(`execute_webmcp_tool answered ${text(result).slice(0, 300)}`);
        },
        async () => {
          const result = await client.callTool({ name: "list_pages", arguments: {} });
          if (result.isError) throw new Error(`list_pages failed: ${text(result).slice(0, 300)}`);
        },
      );
      out.devtools.version = spec.version;
    } catch (error) {
      out.devtools = { error: error instanceof Error ? error.message : String(error) };
    } finally {
      await peer.stop();
    }
  }
  return out;
}

export function webMcpRows(r) {
  const cell = (way) => (!way ? "n/a" : way.error ? `failed: ${way.error.replace(/\s+/g, " ").slice(0, 80)}` : `${way.toolMedianMs.toFixed(2)} ms`);
  const builtIn = (way, label) => (!way || way.error ? "" : `${way.builtInMedianMs.toFixed(2)} ms (${label})`);
  return [
    {
      figure: `17b. WebMCP tool round trip, agent -> server -> page's execute -> back (median of ${RUNS})`,
      tabrelay: `${cell(r.tabrelay)} (start --cdp, its own shim)`,
      playwright: "no such tool",
      devtools: `${cell(r.devtools)} (execute_webmcp_tool, Chrome's WebMCP flag)`,
      target: "",
    },
    {
      figure: "     same client, a built-in call that reaches no browser",
      tabrelay: builtIn(r.tabrelay, "list_browsers"),
      playwright: "",
      devtools: builtIn(r.devtools, "list_pages"),
      target: "",
    },
  ];
}

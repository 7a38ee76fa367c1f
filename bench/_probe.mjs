import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeFileSync } from "node:fs";
const which = process.argv[2];
const cfg = "/tmp/benchprobe/pw.json";
writeFileSync(cfg, JSON.stringify({ browser: { browserName: "chromium", isolated: true, launchOptions: { executablePath: "/usr/lib/chromium/chromium", headless: true, chromiumSandbox: false, args: ["--disable-gpu","--disable-quic"] } } }));
const cmds = {
  pw: ["node_modules/@playwright/mcp/cli.js", "--config", cfg, "--headless", "--no-sandbox", "--isolated"],
  cd: ["node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js", "--headless", "--isolated", "--executablePath", "/usr/lib/chromium/chromium", "--chromeArg=--no-sandbox", "--chromeArg=--disable-gpu", "--no-usage-statistics", "--no-performance-crux"],
};
const t = new StdioClientTransport({ command: process.execPath, args: cmds[which], cwd: process.cwd(), stderr: "inherit", env: { ...process.env, CI: "1" } });
const c = new Client({ name: "p", version: "0" });
await c.connect(t);
console.log("pid", t.pid);
const tools = (await c.listTools()).tools;
for (const tl of tools) if (/tabs|list_pages|navigate|snapshot/.test(tl.name)) console.log(tl.name, JSON.stringify(tl.inputSchema).slice(0, 400));
const url = process.argv[3];
let s = Date.now();
if (which === "pw") {
  let r = await c.callTool({ name: "browser_navigate", arguments: { url } });
  console.log("nav ms", Date.now() - s, JSON.stringify(r).length, r.content.map(x=>x.type+":"+(x.text?.length)));
  console.log(r.content[0].text.slice(0, 800)); console.log("...", r.content[0].text.slice(-500));
  s = Date.now(); r = await c.callTool({ name: "browser_tabs", arguments: { action: "list" } }); console.log("tabs ms", Date.now() - s, JSON.stringify(r).slice(0, 500));
} else {
  let r = await c.callTool({ name: "navigate_page", arguments: { url } });
  console.log("nav ms", Date.now() - s, JSON.stringify(r).slice(0, 1000));
  s = Date.now(); r = await c.callTool({ name: "take_snapshot", arguments: {} });
  console.log("snap ms", Date.now() - s, r.content.map(x=>x.type+":"+(x.text?.length)));
  console.log(r.content[0].text.slice(0, 800)); console.log("...", r.content[0].text.slice(-500));
  s = Date.now(); r = await c.callTool({ name: "list_pages", arguments: {} }); console.log("pages ms", Date.now() - s, JSON.stringify(r).slice(0, 500));
}
await c.close();

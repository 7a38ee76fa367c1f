#!/usr/bin/env node
// tabrelay's tools in an AI SDK agent, in one process: a broker, a local Chromium it drives over CDP, a small local
// page, and generateText with Claude (ANTHROPIC_API_KEY) calling the tools through @tabrelay/agent-tools.
//
//   npm run build                                  # once, from the repository root
//   ANTHROPIC_API_KEY=sk-ant-... node examples/agent-tools.mjs
//   ANTHROPIC_MODEL=claude-haiku-4-5 ...           # another model (default claude-sonnet-4-5)
//   TABRELAY_HEADFUL=1 ...                         # watch the browser
//
// The broker keeps its config and audit log in a temporary data dir; its read policy allows the local page only,
// and its write policy lets the agent click "Mark done" there and nothing else.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker, findChromium, launchLocalChromium, loadConfig, silentLogger } from "@tabrelay/broker";
import { endTabrelaySession, tabrelayInstructions, tabrelayTools } from "@tabrelay/agent-tools";
import { generateText, stepCountIs } from "ai";

const apiKey = process.env.ANTHROPIC_API_KEY?.trim();
if (!apiKey) {
  console.error(`This example needs a model: set ANTHROPIC_API_KEY to an Anthropic API key (https://console.anthropic.com/settings/keys), e.g.

  ANTHROPIC_API_KEY=sk-ant-... node examples/agent-tools.mjs

Any AI SDK model works the same way: replace anthropic(...) in this file with your provider's model.`);
  process.exit(2);
}
const { anthropic } = await import("@ai-sdk/anthropic").catch(() => {
  console.error("@ai-sdk/anthropic is not installed: run `npm install` at the repository root (it is a dev dependency there), or `npm install @ai-sdk/anthropic@3.0.140`.");
  process.exit(2);
});

// A page of our own, so the example needs no site's permission and changes nothing real.
const site = createServer((req, res) => {
  res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
  res.end(`<!doctype html><title>Chores</title><h1>Chores</h1>
<ul><li>Water the plants <span id="plants">open</span> <button onclick="document.getElementById('plants').textContent='done'">Mark done</button></li>
<li>Pay the rent <span>open</span> <button>Pay now</button></li></ul>`);
});
await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
const pageUrl = `http://127.0.0.1:${site.address().port}/`;

const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-example-"));
writeFileSync(
  join(dataDir, "config.yaml"),
  `policy:
  read:
    top_sites: 0
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Mark done$" }
`,
);
const broker = new Broker({ config: loadConfig({ dataDir, port: 0 }), log: silentLogger });
const chromium = await launchLocalChromium({ chromiumPath: findChromium(), headless: !process.env.TABRELAY_HEADFUL });
const session = "example-agent";
process.exitCode = 1;
try {
  await broker.attachCdp(chromium.endpoint, { label: "example Chromium (CDP)", ownsBrowser: true });
  const { text, steps } = await generateText({
    model: anthropic(process.env.ANTHROPIC_MODEL?.trim() || "claude-sonnet-4-5"),
    system: tabrelayInstructions(),
    tools: tabrelayTools({ broker, session }),
    stopWhen: stepCountIs(12),
    prompt: `Open ${pageUrl}, mark the chore "Water the plants" done, then try to pay the rent. Tell me what happened, briefly.`,
    onStepFinish: ({ toolCalls, toolResults }) => {
      for (const call of toolCalls) console.log(`→ ${call.toolName} ${JSON.stringify(call.input).slice(0, 160)}`);
      for (const result of toolResults) console.log(`  ${result.output.isError ? "✗" : "✓"} ${result.output.text.split("\n")[0].slice(0, 160)}`);
    },
  });
  console.log(`\n${text}\n\n(${steps.length} model steps; the audit log has every call:)`);
  for (const record of broker.audit.list()) console.log(`  ${record.tool} ${record.decision}${record.code ? ` ${record.code}` : ""} (${record.client})`);
  process.exitCode = 0;
} catch (error) {
  // The SDK's errors carry the whole request (the tool list, the prompt): say what failed, not all of it.
  console.error(`The model call failed: ${error instanceof Error ? error.message : String(error)}\nCheck ANTHROPIC_API_KEY, ANTHROPIC_MODEL and that api.anthropic.com is reachable.`);
} finally {
  endTabrelaySession(broker, session);
  await broker.close();
  await chromium.close();
  site.close();
  rmSync(dataDir, { recursive: true, force: true });
}

// The peer range says ai 7 too: the same tool objects driven by ai 7's own generateText and mock model (installed
// as the alias "ai7"; ai 7 declares Node >= 22 and this generateText path runs on Node 20), against a real broker
// and a real headless Chromium over CDP: a click on a ref read from the snapshot happens, a click without a grant
// comes back to the model as write_denied error text. And the package's source type-checks against ai 7's types.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { generateText, stepCountIs } from "ai7";
import { MockLanguageModelV4 } from "ai7/test";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tabrelayTools, type TabrelayToolResult } from "../../packages/agent-tools/src/index.js";
import { attachBrowser, page, startBroker, startSite, waitFor, type AttachedBrowser, type TestBroker, type TestSite } from "../harness.js";
import { refOf, tabOf } from "./scriptedModel.js";

type CallOptions = Parameters<MockLanguageModelV4["doGenerate"]>[0];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;

let site: TestSite;
let broker: TestBroker;
let browser: AttachedBrowser | undefined;
const hits: string[] = [];

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route("/tasks", page("Tasks", `<button onclick="fetch('/did/done')">Mark done</button><button onclick="fetch('/did/delete')">Delete all</button>`));
  for (const what of ["done", "delete"]) {
    site.route(`/did/${what}`, (_req, res) => {
      hits.push(what);
      res.writeHead(204);
      res.end();
    });
  }
  broker = await startBroker({
    yaml: `policy:\n  read:\n    allow:\n      "127.0.0.1": [".*"]\n  write:\n    click:\n      "127.0.0.1": { label: "^Mark done$" }\n`,
  });
  browser = await attachBrowser(broker, "cdp");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await broker?.close();
  await site?.close();
});

/** Every tool result in the prompt, as ai 7 hands it to the model: output type and text. */
function results(options: CallOptions): { type: string; text: string }[] {
  return options.prompt.flatMap((m) =>
    m.role === "tool"
      ? m.content.flatMap((p) =>
          p.type === "tool-result"
            ? [{ type: p.output.type, text: "value" in p.output && typeof p.output.value === "string" ? p.output.value : JSON.stringify(p.output) }]
            : [],
        )
      : [],
  );
}

it("ai 7's generateText runs the tools: a click on a ref from the snapshot happens; one without a grant is write_denied text", async () => {
  let step = 0;
  let tab = 0;
  const seen: { type: string; text: string }[][] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async (options): Promise<GenerateResult> => {
      const got = results(options);
      seen.push(got);
      const last = got.at(-1)?.text;
      const call = (toolName: string, input: Record<string, unknown>): GenerateResult => ({
        content: [{ type: "tool-call", toolCallId: `c${step}`, toolName, input: JSON.stringify(input) }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
        warnings: [],
      });
      switch (step++) {
        case 0:
          return call("open_tab", { url: `${site.origin}/tasks` });
        case 1:
          tab = tabOf(last);
          return call("snapshot", { tab });
        case 2:
          return call("click", { tab, ...refOf(last, "Mark done") });
        case 3:
          return call("click", { tab, ...refOf(got[1]?.text, "Delete all") });
        default:
          return {
            content: [{ type: "text", text: "done" }],
            finishReason: { unified: "stop", raw: undefined },
            usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
            warnings: [],
          };
      }
    },
  });
  const result = await generateText({
    model,
    // @ts-expect-error In this workspace the package's types name ai 6 (its dev dependency), whose schema symbol type
    // is not ai 7's; in a project on ai 7 they name ai 7 (the next test). At run time both use Symbol.for.
    tools: tabrelayTools({ broker: broker.broker, only: ["open_tab", "snapshot", "click"] }),
    stopWhen: stepCountIs(6),
    prompt: "Mark it done, then delete all.",
  });
  expect(result.text).toBe("done");
  await waitFor("the page's request for /did/done", () => hits.includes("done") || undefined);
  expect(hits).toEqual(["done"]);
  expect(seen[4]?.at(-1)?.type).toBe("error-text");
  expect(seen[4]?.at(-1)?.text).toMatch(/^write_denied: /);
  const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output as TabrelayToolResult));
  expect(outputs.map((o) => o.code ?? "ok")).toEqual(["ok", "ok", "ok", "write_denied"]);
  expect(broker.broker.audit.list().map((r) => `${r.client} ${r.tool} ${r.decision}`)).toEqual([
    "agent-tools open_tab allowed",
    "agent-tools snapshot allowed",
    "agent-tools click allowed",
    "agent-tools click refused",
  ]);
});

it("the package's source type-checks against ai 7's declarations (tsconfig.ai7.json maps ai to them)", () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const project = fileURLToPath(new URL("../../packages/agent-tools/tsconfig.ai7.json", import.meta.url));
  const checked = spawnSync(process.execPath, [tsc, "-p", project, "--listFiles"], { encoding: "utf8" });
  expect(
    checked.status,
    checked.stdout
      .split("\n")
      .filter((l) => l.includes("error"))
      .join("\n"),
  ).toBe(0);
  expect(checked.stdout).toContain("node_modules/ai7/dist/index.d.ts");
}, 60_000);

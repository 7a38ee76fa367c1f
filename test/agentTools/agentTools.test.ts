// @tabrelay/agent-tools driven by the AI SDK itself (generateText with its mock language model, scripted to read each
// tool result from the prompt as a model would), against a real broker and a real headless Chromium served through
// the real extension or over CDP: in the broker's process (tabrelayTools) and over HTTP with the MCP SDK's client
// (tabrelayToolsOverHttp). The browser really acts (the test site sees the click's request), the audit log has the
// records with the agent's client name, refusals and bad arguments reach the model as error text with their code.
import { generateText, stepCountIs } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  endTabrelaySession,
  tabrelayInstructions,
  tabrelayTools,
  tabrelayToolsOverHttp,
  type TabrelayToolResult,
} from "../../packages/agent-tools/src/index.js";
import {
  attachBrowser,
  connectClient,
  DRIVERS,
  MCP_TOKEN,
  page,
  startBroker,
  startSite,
  waitFor,
  type AttachedBrowser,
  type TestBroker,
  type TestSite,
} from "../harness.js";
import { refOf, scriptedModel, tabOf } from "./scriptedModel.js";

let site: TestSite;
/** The requests the test site got from the page's buttons: what the browser really did. */
const hits: string[] = [];

beforeAll(async () => {
  site = await startSite("127.0.0.1");
  site.route(
    "/tasks",
    page(
      "Tasks",
      `<h1>Tasks</h1><p id="status">Status: open</p>
<button onclick="document.getElementById('status').textContent='Status: done'; fetch('/did/done?' + Date.now())">Mark done</button>
<button onclick="fetch('/did/delete')">Delete all</button>`,
    ),
  );
  for (const what of ["done", "delete"]) {
    site.route(`/did/${what}`, (_req, res) => {
      hits.push(what);
      res.writeHead(204);
      res.end();
    });
  }
}, 60_000);

afterAll(async () => {
  await site?.close();
});

const YAML = `policy:
  read:
    allow:
      "127.0.0.1": [".*"]
  write:
    click:
      "127.0.0.1": { label: "^Mark done$" }
screenshots:
  enabled: true
  ttl_seconds: 60
`;

/** One execute call outside generateText (the options the SDK passes). */
const callOptions = { toolCallId: "direct", messages: [] };

describe.each(DRIVERS)("with the %s driver", (driver) => {
  let broker: TestBroker;
  let browser: AttachedBrowser | undefined;

  beforeAll(async () => {
    broker = await startBroker({ yaml: YAML });
    browser = await attachBrowser(broker, driver);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await broker?.close();
  });

  const auditOf = (client: string) => broker.broker.audit.list().filter((r) => r.client === client);
  const tabsOfBrowser = async () => {
    const listed = await broker.broker.registry.list()[0]?.call("tabs.list", {});
    return listed?.ok ? listed.value.tabs.map((t) => t.tabId) : [];
  };

  it("in process: generateText opens a page, snapshots it, clicks a ref it read from the snapshot, reads the page and runs a program; the browser did it and the audit log says agent-tools", async () => {
    hits.length = 0;
    const before = broker.broker.audit.list().length;
    const url = `${site.origin}/tasks`;
    let tab = 0;
    const model = scriptedModel([
      () => ({ call: "open_tab", args: { url } }),
      ({ last }) => ((tab = tabOf(last?.text)), { call: "snapshot", args: { tab } }),
      ({ last }) => ({ call: "click", args: { tab, ...refOf(last?.text, "Mark done") } }),
      () => ({ call: "read_page", args: { tab, mode: "full" } }),
      ({ last }) => {
        expect(last?.text).toContain("Status: done");
        return {
          call: "browser_run",
          args: { tab, program: `const text = await browse.read({ mode: "full" });\nreturn { done: text.includes("Status: done") };` },
        };
      },
      ({ last }) => ({ text: `finished: ${last?.text.includes('"done":true') ? "the task is done" : "unsure"}` }),
    ]);
    const tools = tabrelayTools({ broker: broker.broker });
    expect(Object.keys(tools)).toEqual(expect.arrayContaining(["open_tab", "snapshot", "click", "read_page", "browser_run", "browser_api"]));
    const result = await generateText({ model, system: tabrelayInstructions(), tools, stopWhen: stepCountIs(8), prompt: "Mark the task done and check it." });

    expect(result.text).toBe("finished: the task is done");
    expect(result.steps.map((s) => s.toolCalls.map((c) => c.toolName).join(","))).toEqual(["open_tab", "snapshot", "click", "read_page", "browser_run", ""]);
    // The page's own request: the click happened in the browser.
    await waitFor("the page's request for /did/done", () => hits.includes("done") || undefined);
    expect(hits).not.toContain("delete");

    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output as TabrelayToolResult));
    expect(outputs.map((o) => o.isError)).toEqual([false, false, false, false, false]);
    // browser_run's structured result reached the caller and, as JSON after the text, the model.
    const run = outputs[4]?.structuredContent;
    expect(run).toMatchObject({ status: "ok", value: { done: true }, usage: { commands: 1 } });
    const seenByModel = model.doGenerateCalls[5]?.prompt.at(-1);
    expect(seenByModel?.role).toBe("tool");
    expect(JSON.stringify(seenByModel?.content)).toContain("structuredContent:");

    // The system prompt the model got carries what the MCP server tells its clients (codes and next steps).
    expect(JSON.stringify(model.doGenerateCalls[0]?.prompt[0])).toContain("write_denied");

    const records = broker.broker.audit.list().slice(before);
    expect(records.every((r) => r.client === "agent-tools")).toBe(true);
    const own = records.filter((r) => !r.run || r.tool === "browser_run");
    expect(own.map((r) => `${r.tool} ${r.decision}`)).toEqual([
      "open_tab allowed",
      "snapshot allowed",
      "click allowed",
      "read_page allowed",
      "browser_run allowed",
    ]);
    expect(own[2]?.target).toBe('button "Mark done"');
    // The program's one command is its own record, carrying the run's id.
    expect(records.filter((r) => r.run === run?.["run"] && r.tool !== "browser_run").map((r) => r.tool)).toEqual(["read_page"]);
  });

  it("in process: a click without a write grant comes back to the model as write_denied text, bad arguments as invalid_params; nothing reaches the page", async () => {
    hits.length = 0;
    const before = broker.broker.audit.list().length;
    let tab = 0;
    const model = scriptedModel([
      () => ({ call: "open_tab", args: { url: `${site.origin}/tasks` } }),
      ({ last }) => ((tab = tabOf(last?.text)), { call: "snapshot", args: { tab } }),
      ({ last }) => ({ call: "click", args: { tab, ...refOf(last?.text, "Delete all") } }),
      ({ last }) => {
        expect(last?.type).toBe("error-text");
        expect(last?.text).toMatch(/^write_denied: /);
        return { call: "click", args: { tab: "the first one", ref: "e1" } };
      },
      ({ last }) => {
        expect(last?.type).toBe("error-text");
        expect(last?.text).toMatch(/^invalid_params: /);
        return { text: "I may not delete them." };
      },
    ]);
    const result = await generateText({
      model,
      tools: tabrelayTools({ broker: broker.broker, only: ["open_tab", "snapshot", "click"] }),
      stopWhen: stepCountIs(6),
      prompt: "Delete all tasks.",
    });

    expect(result.text).toBe("I may not delete them.");
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output as TabrelayToolResult));
    expect(outputs.map((o) => o.code ?? "ok")).toEqual(["ok", "ok", "write_denied", "invalid_params"]);
    expect(outputs[2]?.text).toContain("Delete all");
    // No tool error reached the SDK as a thrown error: every result is a tool result.
    expect(result.steps.flatMap((s) => s.content).filter((c) => c.type === "tool-error")).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(hits).toEqual([]);
    const clicks = broker.broker.audit
      .list()
      .slice(before)
      .filter((r) => r.tool === "click");
    expect(clicks.map((r) => `${r.client} ${r.decision} ${r.code}`)).toEqual(["agent-tools refused write_denied", "agent-tools failed invalid_params"]);
  });

  it("in process: an agent's tabs are its own; another session's call on them is tab_leased; ending the session closes them", async () => {
    const mine = tabrelayTools({ broker: broker.broker, session: "agent-a", client: "agent-a" });
    const theirs = tabrelayTools({ broker: broker.broker, session: "agent-b", client: "agent-b" });
    const opened = (await mine["open_tab"]?.execute?.({ url: `${site.origin}/tasks` }, callOptions)) as TabrelayToolResult;
    expect(opened.isError, opened.text).toBe(false);
    const tab = tabOf(opened.text);
    const refused = (await theirs["snapshot"]?.execute?.({ tab }, callOptions)) as TabrelayToolResult;
    expect(refused).toMatchObject({ isError: true, code: "tab_leased" });
    expect(refused.text).toContain("agent-a");
    const own = (await mine["snapshot"]?.execute?.({ tab }, callOptions)) as TabrelayToolResult;
    expect(own.isError, own.text).toBe(false);
    expect(await tabsOfBrowser()).toContain(tab);
    endTabrelaySession(broker.broker, "agent-a");
    await waitFor("the ended session's tab to close", async () => !(await tabsOfBrowser()).includes(tab) || undefined);
  });

  it("in process: an inline screenshot reaches the model as an image after the text", async () => {
    let tab = 0;
    const model = scriptedModel([
      () => ({ call: "open_tab", args: { url: `${site.origin}/tasks` } }),
      ({ last }) => ((tab = tabOf(last?.text)), { call: "screenshot", args: { tab, inline: true } }),
      () => ({ text: "seen" }),
    ]);
    await generateText({
      model,
      tools: tabrelayTools({ broker: broker.broker, only: ["open_tab", "screenshot"] }),
      stopWhen: stepCountIs(4),
      prompt: "Look at it.",
    });
    const seen = model.doGenerateCalls[2]?.prompt.at(-1);
    const part = seen?.role === "tool" ? seen.content[0] : undefined;
    const output = part?.type === "tool-result" ? part.output : undefined;
    expect(output?.type).toBe("content");
    const items = output?.type === "content" ? output.value : [];
    expect(items[0]).toMatchObject({ type: "text", text: expect.stringContaining("Screenshot") });
    const image = items.find((i) => i.type === "image-data");
    expect(image).toMatchObject({ mediaType: "image/png" });
    // A PNG's signature, base64.
    expect(image?.type === "image-data" ? image.data.slice(0, 8) : "").toBe("iVBORw0K");
  });

  it("in process: generateText's abortSignal ends the wait for a long call at once; the broker's call still ends and is audited", async () => {
    const controller = new AbortController();
    let tab = 0;
    const model = scriptedModel([
      () => ({ call: "open_tab", args: { url: `${site.origin}/tasks` } }),
      ({ last }) => {
        tab = tabOf(last?.text);
        setTimeout(() => {
          abortedAt = Date.now();
          controller.abort();
        }, 300);
        return { call: "wait_for", args: { tab, text: "a text this page never shows", timeout_ms: 3000 } };
      },
      () => ({ text: "unreachable" }),
    ]);
    let abortedAt = 0;
    await expect(
      generateText({
        model,
        tools: tabrelayTools({ broker: broker.broker, client: "agent-abort" }),
        abortSignal: controller.signal,
        stopWhen: stepCountIs(4),
        prompt: "Wait.",
      }),
    ).rejects.toThrow(/abort/i);
    // At the abort, not when the wait's 3 s run out (2.7 s after it).
    expect(abortedAt).toBeGreaterThan(0);
    expect(Date.now() - abortedAt).toBeLessThan(1500);
    const record = await waitFor("the wait_for record", () => auditOf("agent-abort").find((r) => r.tool === "wait_for"), 10_000);
    expect(`${record.decision} ${record.code}`).toBe("failed wait_timeout");
  });

  it("over HTTP: the same steps through the MCP SDK client; the records name agent-tools; close() ends the session and its tabs", async () => {
    hits.length = 0;
    const before = broker.broker.audit.list().length;
    const tabrelay = await tabrelayToolsOverHttp({ url: broker.url, token: MCP_TOKEN, except: ["screenshot"] });
    let tab = 0;
    try {
      expect(Object.keys(tabrelay.tools)).not.toContain("screenshot");
      expect(tabrelay.instructions).toContain("stale_ref");
      const model = scriptedModel([
        () => ({ call: "open_tab", args: { url: `${site.origin}/tasks` } }),
        ({ last }) => ((tab = tabOf(last?.text)), { call: "snapshot", args: { tab } }),
        ({ last }) => ({ call: "click", args: { tab, ...refOf(last?.text, "Mark done") } }),
        () => ({ call: "read_page", args: { tab, mode: "full" } }),
        () => ({ call: "browser_run", args: { tab, program: `return { done: (await browse.read({ mode: "full" })).includes("Status: done") };` } }),
        ({ last }) => ({ text: last?.text.includes('"done":true') ? "done over HTTP" : `unsure: ${last?.text}` }),
      ]);
      const result = await generateText({
        model,
        system: tabrelay.instructions,
        tools: tabrelay.tools,
        stopWhen: stepCountIs(8),
        prompt: "Mark the task done.",
      });
      expect(result.text).toBe("done over HTTP");
      await waitFor("the page's request for /did/done", () => hits.includes("done") || undefined);
      const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output as TabrelayToolResult));
      expect(outputs[3]?.text).toContain("Status: done");
      expect(outputs[4]?.structuredContent).toMatchObject({ status: "ok", value: { done: true } });
      const own = broker.broker.audit
        .list()
        .slice(before)
        .filter((r) => !r.run || r.tool === "browser_run");
      expect(own.map((r) => `${r.client} ${r.tool} ${r.decision}`)).toEqual([
        "agent-tools open_tab allowed",
        "agent-tools snapshot allowed",
        "agent-tools click allowed",
        "agent-tools read_page allowed",
        "agent-tools browser_run allowed",
      ]);
    } finally {
      await tabrelay.close();
    }
    await waitFor("the closed session's tab to close", async () => !(await tabsOfBrowser()).includes(tab) || undefined);
  });

  it("over HTTP: a wrong token or a closed port is an error naming the cause and what to do", async () => {
    await expect(tabrelayToolsOverHttp({ url: broker.url, token: "wrong-token-0123456789abcdef" })).rejects.toThrow(
      /not a tabrelay broker holding this token.*TABRELAY_MCP_TOKEN/,
    );
    await expect(tabrelayToolsOverHttp({ url: "http://127.0.0.1:9/", token: MCP_TOKEN })).rejects.toThrow(
      /no broker answers at http:\/\/127\.0\.0\.1:9.*tabrelay serve/,
    );
  });
});

describe("tool selection", () => {
  it("offers the tools the broker lists over MCP, with the same input schemas: browser_start and the rest where config names a browser source", async () => {
    const plain = await startBroker({ yaml: YAML });
    const withSource = await startBroker({ yaml: `${YAML}browsers:\n  source: local\n` });
    try {
      expect(Object.keys(tabrelayTools({ broker: plain.broker }))).not.toContain("browser_start");
      const names = Object.keys(tabrelayTools({ broker: withSource.broker }));
      for (const name of ["browser_start", "browser_stop", "browser_list_sessions", "browser_live_view"]) expect(names).toContain(name);
      const client = await connectClient(withSource.url);
      const listed = (await client.listTools()).tools;
      await client.close();
      expect(names.sort()).toEqual(listed.map((t) => t.name).sort());
      const inProcess = tabrelayTools({ broker: withSource.broker }) as Record<string, { inputSchema: { jsonSchema?: unknown } }>;
      for (const t of listed) expect(JSON.parse(JSON.stringify(inProcess[t.name]?.inputSchema.jsonSchema ?? null)), t.name).toEqual(t.inputSchema);
    } finally {
      await plain.close();
      await withSource.close();
    }
  });

  it("only/except take tool names; a name no tool has is an error listing the tools", async () => {
    const broker = await startBroker({ yaml: YAML });
    try {
      expect(Object.keys(tabrelayTools({ broker: broker.broker, only: ["browser_run", "browser_api"] }))).toEqual(["browser_api", "browser_run"]);
      expect(() => tabrelayTools({ broker: broker.broker, only: ["open_tabs"] })).toThrow(/no tabrelay tool is called "open_tabs".*open_tab, /);
    } finally {
      await broker.close();
    }
  });
});

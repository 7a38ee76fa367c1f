// Local servers speaking two model providers' documented streaming protocols, for the dashboard chat's contract tests:
// Anthropic's Messages API (POST /v1/messages, SSE: message_start, content_block_start / _delta / _stop for text and
// tool_use with input_json_delta, message_delta with stop_reason, message_stop) and OpenAI's chat/completions (SSE
// `data:` chunks, tool_calls deltas, `data: [DONE]`). Each answers what a script decides from the request, and
// records every request it was sent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One model turn: call browser_run with a program, answer in text, or never finish (until the client goes away). */
export type Reply = { kind: "program"; program: string; text?: string } | { kind: "text"; text: string } | { kind: "hang" };

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
  raw: string;
}

export interface FakeModelApi {
  /** The base URL to give the provider client (Anthropic: .../v1; OpenAI-compatible: .../v1). */
  baseUrl: string;
  requests: SeenRequest[];
  /** Requests whose client went away before the answer ended (an aborted stream). */
  aborted: number;
  close(): Promise<void>;
}

type Script = (request: SeenRequest) => Reply;

async function serve(handle: (req: SeenRequest, res: ServerResponse, api: FakeModelApi) => void): Promise<FakeModelApi> {
  const api: FakeModelApi = { baseUrl: "", requests: [], aborted: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // Left empty: the test's assertions on the body then fail.
      }
      const seen: SeenRequest = { method: req.method ?? "", path: (req.url ?? "").split("?")[0] ?? "", headers: req.headers, body, raw };
      api.requests.push(seen);
      res.on("close", () => {
        if (!res.writableFinished) api.aborted++;
      });
      handle(seen, res, api);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  api.baseUrl = `http://127.0.0.1:${port}/v1`;
  api.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return api;
}

function sse(res: ServerResponse): (event: string | undefined, data: unknown) => void {
  res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
  return (event, data) => res.write(`${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

/** Splits a string into a few pieces, as a real stream delivers a tool's JSON input. */
function pieces(text: string, n = 3): string[] {
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export function fakeAnthropic(script: Script): Promise<FakeModelApi> {
  let turn = 0;
  return serve((req, res) => {
    if (req.method !== "POST" || req.path !== "/v1/messages") {
      res
        .writeHead(404, { "Content-Type": "application/json" })
        .end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: "no such route" } }));
      return;
    }
    const reply = script(req);
    const send = sse(res);
    const id = `msg_${++turn}`;
    send("message_start", {
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: String(req.body["model"]),
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 25, output_tokens: 1 },
      },
    });
    send("ping", { type: "ping" });
    if (reply.kind === "hang") return; // the client's abort closes it
    let index = 0;
    const text = reply.kind === "text" ? reply.text : reply.text;
    if (text) {
      send("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      for (const part of pieces(text)) send("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: part } });
      send("content_block_stop", { type: "content_block_stop", index });
      index++;
    }
    if (reply.kind === "program") {
      send("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: `toolu_${turn}`, name: "browser_run", input: {} },
      });
      for (const part of pieces(JSON.stringify({ program: reply.program }))) {
        send("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: part } });
      }
      send("content_block_stop", { type: "content_block_stop", index });
    }
    send("message_delta", {
      type: "message_delta",
      delta: { stop_reason: reply.kind === "program" ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: 30 },
    });
    send("message_stop", { type: "message_stop" });
    res.end();
  });
}

export function fakeOpenAi(script: Script): Promise<FakeModelApi> {
  let turn = 0;
  return serve((req, res) => {
    if (req.method !== "POST" || req.path !== "/v1/chat/completions") {
      res.writeHead(404, { "Content-Type": "application/json" }).end(JSON.stringify({ error: { message: "no such route", type: "invalid_request_error" } }));
      return;
    }
    const reply = script(req);
    const send = sse(res);
    const id = `chatcmpl-${++turn}`;
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: String(req.body["model"]),
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    send(undefined, chunk({ role: "assistant", content: "" }));
    if (reply.kind === "hang") return;
    const text = reply.kind === "text" ? reply.text : reply.text;
    if (text) for (const part of pieces(text)) send(undefined, chunk({ content: part }));
    if (reply.kind === "program") {
      const args = pieces(JSON.stringify({ program: reply.program }));
      send(undefined, chunk({ tool_calls: [{ index: 0, id: `call_${turn}`, type: "function", function: { name: "browser_run", arguments: args[0] ?? "" } }] }));
      for (const part of args.slice(1)) send(undefined, chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
    }
    send(undefined, chunk({}, reply.kind === "program" ? "tool_calls" : "stop"));
    send(undefined, "[DONE]");
    res.end();
  });
}

function messagesOf(request: SeenRequest): unknown[] {
  return Array.isArray(request.body["messages"]) ? (request.body["messages"] as unknown[]) : [];
}

function userText(message: unknown): string | undefined {
  if (!message || typeof message !== "object" || Reflect.get(message, "role") !== "user") return undefined;
  const content = Reflect.get(message, "content");
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((b) => b && typeof b === "object" && Reflect.get(b, "type") === "text").map((b) => String(Reflect.get(b, "text")));
  return texts.length ? texts.join("\n") : undefined;
}

function toolResultText(message: unknown): string[] {
  if (!message || typeof message !== "object") return [];
  const content = Reflect.get(message, "content");
  if (Reflect.get(message, "role") === "tool") return [JSON.stringify(content)];
  if (!Array.isArray(content)) return [];
  return content.filter((b) => b && typeof b === "object" && Reflect.get(b, "type") === "tool_result").map((b) => JSON.stringify(b));
}

/** The task being worked (the last user message with text), and the tool results sent back since it (both protocols). */
export function turnOf(request: SeenRequest): { task: string; results: string } {
  const messages = messagesOf(request);
  let at = -1;
  messages.forEach((m, i) => {
    if (userText(m) !== undefined) at = i;
  });
  const task = at >= 0 ? (userText(messages[at]) ?? "") : "";
  return {
    task,
    results: messages
      .slice(at + 1)
      .flatMap(toolResultText)
      .join("\n"),
  };
}

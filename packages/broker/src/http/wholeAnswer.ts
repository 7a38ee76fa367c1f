// A whole JSON answer (an MCP call's result, the dashboard's and the API's JSON) leaves in one write, its length
// known. Handed a web Response whose body it cannot read at once, @hono/node-server sends the headers first and then
// streams the body chunked: two writes, and the client woken for each (bench figure 1: a quarter of a call's time
// in the broker went to those writes).
import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";

/** Larger bodies keep their stream. */
const WHOLE_MAX_BYTES = 4 * 1024 * 1024;

/** Sends `answer` on `outgoing` in one write when it is JSON of at most WHOLE_MAX_BYTES; otherwise hands it on as a stream. */
export async function sendWhole(answer: Response, outgoing: ServerResponse | undefined): Promise<Response> {
  const type = answer.headers.get("content-type") ?? "";
  if (!outgoing || answer.body === null || !/^application\/json\b/i.test(type) || answer.headers.has("transfer-encoding")) return answer;
  const declared = answer.headers.get("content-length");
  if (declared !== null && Number(declared) > WHOLE_MAX_BYTES) return answer;
  // Read up to the cap: a larger (or endless) body goes on as a stream, what was read first.
  const reader = answer.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > WHOLE_MAX_BYTES) {
      const rest = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
        },
        async pull(controller) {
          const next = await reader.read();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(rest, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
    }
  }
  const body = Buffer.concat(chunks);
  const headers: Record<string, string | string[]> = {};
  answer.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = answer.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  headers["content-length"] = String(body.byteLength);
  outgoing.writeHead(answer.status, headers);
  outgoing.end(body);
  return RESPONSE_ALREADY_SENT;
}

// A call's answer as one JSON object when nothing else was said during it. The SDK's session transport answers every
// POSTed request with an SSE stream, so that it can send progress and ask the client (elicitation) while the call
// runs; most calls send neither, and a stream costs both sides web streams and an event parser for one message.
// The MCP spec lets the server choose per request (Streamable HTTP: application/json or text/event-stream; the client
// accepts both): here a stream whose first event is the request's whole answer, and then ends, goes out as that JSON
// object. Anything else said first (progress, an elicitation, the transport's keep-alive comment after 15 s of a long
// call) starts the stream as it came, and the rest follows.

const SSE_TYPE = /^text\/event-stream\b/i;
/** How the SDK's transport starts an event (writeSSEEvent, no event store): its data is one line of JSON. */
const EVENT_START = new TextEncoder().encode("event: message\ndata: ");
const NEWLINE = 0x0a;
/** Headers of the stream that say nothing of a JSON body. */
const STREAM_ONLY = ["content-type", "cache-control", "connection", "x-accel-buffering", "content-length", "transfer-encoding"];

type Read = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;
const NOT_YET = Symbol("not yet");

/**
 * The transport's answer to a POST: as it is, or as JSON when its stream carried one event and ended. Waits for the
 * stream's first event before any header leaves (the call's answer, or the first thing said during it). The SDK's
 * transport closes the stream in the same step as it writes the last answer: a stream not closed by the next turn
 * of the event loop goes on as a stream (a request to the client waits for the client's answer: it must leave at
 * once). The event's JSON is passed on as its bytes: nothing is decoded or parsed again. A stream that ended after
 * one event that was not the answer (a session closed during the call) reaches the client as that one message
 * either way.
 */
export async function jsonWhenWhole(answer: Response): Promise<Response> {
  if (answer.status !== 200 || answer.body === null || !SSE_TYPE.test(answer.headers.get("content-type") ?? "")) return answer;
  const reader = answer.body.getReader();
  const read: Uint8Array[] = [];
  let pending: Promise<Read> | undefined;
  try {
    const first = await reader.read();
    if (first.done) return streamOf(answer, read);
    read.push(first.value);
    const data = oneEventData(first.value);
    if (data) {
      pending = reader.read();
      const next = await Promise.race([pending, new Promise<typeof NOT_YET>((resolve) => setImmediate(() => resolve(NOT_YET)))]);
      if (next !== NOT_YET) {
        pending = undefined;
        if (next.done) return new Response(data, { status: 200, headers: jsonHeaders(answer.headers) });
        read.push(next.value);
      }
    }
  } catch (error) {
    return streamOf(answer, read, undefined, undefined, error);
  }
  return streamOf(answer, read, reader, pending);
}

/** The data of a chunk that is exactly one event: `event: message`, one `data:` line, the blank line. */
function oneEventData(chunk: Uint8Array): Uint8Array | undefined {
  if (chunk.length < EVENT_START.length + 2 || chunk[chunk.length - 1] !== NEWLINE || chunk[chunk.length - 2] !== NEWLINE) return undefined;
  for (let i = 0; i < EVENT_START.length; i++) if (chunk[i] !== EVENT_START[i]) return undefined;
  // JSON.stringify writes no raw line break: one before the end is a second line, not this event's data.
  if (chunk.indexOf(NEWLINE, EVENT_START.length) !== chunk.length - 2) return undefined;
  return chunk.subarray(EVENT_START.length, chunk.length - 2);
}

function jsonHeaders(streamHeaders: Headers): Headers {
  const headers = new Headers(streamHeaders);
  for (const name of STREAM_ONLY) headers.delete(name);
  headers.set("content-type", "application/json");
  return headers;
}

/**
 * The stream as it came: what was read first, then a read still pending, then the rest from `reader` (none once it
 * ended), or the read's error.
 */
function streamOf(answer: Response, read: Uint8Array[], reader?: ReadableStreamDefaultReader<Uint8Array>, pending?: Promise<Read>, failed?: unknown): Response {
  let waiting = pending;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of read) controller.enqueue(chunk);
      if (failed !== undefined) controller.error(failed);
      else if (!reader) controller.close();
    },
    async pull(controller) {
      if (!reader) return;
      try {
        const next = waiting ?? reader.read();
        waiting = undefined;
        const { done, value } = await next;
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
      }
    },
    cancel(reason) {
      return reader?.cancel(reason);
    },
  });
  return new Response(body, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
}

// MCP over stdio is one JSON-RPC message per line. This splits stdin into messages with a limit per line: a line
// over it is never held whole (only its first and last bytes, to find its id), and it is answered with an error
// rather than ending the session, so the next lines are served as usual.

/** The most one stdin line (one MCP message) may hold, as the MCP SDK's stdio transport allows. */
export const STDIO_LINE_LIMIT = 10 * 1024 * 1024;

/** A JSON-RPC message as it came: an object, not yet checked beyond that. */
export type JsonRpcMessage = { [key: string]: unknown };

export type StdinLine =
  | { kind: "message"; message: JsonRpcMessage }
  /** To answer with a JSON-RPC error: the line was not a message tabrelay can pass on. */
  | { kind: "refused"; id: string | number | null; code: number; message: string };

const PROBE = 64 * 1024;
const NEWLINE = 0x0a;

export class StdinLines {
  readonly #limit: number;
  readonly #decoder = new TextDecoder();
  #parts: Uint8Array[] = [];
  #size = 0;
  /** Over the limit: the line's first bytes, its last ones, and its size so far. */
  #oversize: { head: Uint8Array; tail: Uint8Array } | undefined;

  constructor(limit = STDIO_LINE_LIMIT) {
    this.#limit = limit;
  }

  /** The lines this chunk completes. */
  push(chunk: Uint8Array): StdinLine[] {
    const lines: StdinLine[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#append(chunk.subarray(start, end));
      if (newline === -1) return lines;
      const line = this.#take();
      if (line) lines.push(line);
      start = newline + 1;
    }
  }

  /** stdin ended: a last line without its newline is still a message. */
  end(): StdinLine[] {
    const line = this.#take();
    return line ? [line] : [];
  }

  #append(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.#size += bytes.length;
    if (this.#oversize) {
      this.#oversize.tail = lastBytes(concat([this.#oversize.tail, bytes]), PROBE);
      return;
    }
    this.#parts.push(bytes);
    if (this.#size > this.#limit) {
      const held = concat(this.#parts);
      this.#oversize = { head: copy(held.subarray(0, PROBE)), tail: lastBytes(held, PROBE) };
      this.#parts = [];
    }
  }

  #take(): StdinLine | undefined {
    const size = this.#size;
    const oversize = this.#oversize;
    const bytes = oversize ? undefined : concat(this.#parts);
    this.#parts = [];
    this.#size = 0;
    this.#oversize = undefined;
    if (oversize) {
      const id = idOf(this.#decoder.decode(oversize.head), this.#decoder.decode(oversize.tail));
      return {
        kind: "refused",
        id,
        code: -32600,
        message:
          `tabrelay: this message is ${megabytes(size)} MB, over the ${megabytes(this.#limit)} MB limit for one MCP message on stdin (one line); ` +
          "it was not passed on, so nothing was done. Send a smaller request (split the work, or pass large data by URL or file path rather than inline)",
      };
    }
    const text = this.#decoder.decode(bytes).replace(/\r$/, "");
    if (text.trim() === "") return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return {
        kind: "refused",
        id: idOf(text.slice(0, PROBE), text.slice(-PROBE)),
        code: -32700,
        message: `tabrelay: parse error: this line is not JSON (${error instanceof Error ? error.message : String(error)}); send one JSON-RPC message per line`,
      };
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return {
        kind: "refused",
        id: null,
        code: -32600,
        message: "tabrelay: invalid request: send one JSON-RPC message (an object) per line; batches are not supported",
      };
    }
    return { kind: "message", message: { ...value } };
  }
}

/**
 * The top-level "id" of a JSON-RPC message seen only in part: its first bytes (where `{"jsonrpc":"2.0","id":...`
 * puts it) or its last ones (the SDK writes the id last). Null when neither shows it: never a nested "id".
 */
export function idOf(head: string, tail: string): string | number | null {
  return topLevelId(head) ?? tailId(tail) ?? null;
}

function topLevelId(text: string): string | number | undefined {
  let depth = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end === -1) return undefined;
      if (depth === 1 && text.slice(i, end + 1) === '"id"') {
        const value = /^\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*")/.exec(text.slice(end + 1, end + 1 + 600));
        if (value?.[1]) return parseId(value[1]);
      }
      i = end + 1;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    i++;
  }
  return undefined;
}

function tailId(text: string): string | number | undefined {
  const match = /"id"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.){0,500}")\s*\}\s*$/.exec(text);
  return match?.[1] ? parseId(match[1]) : undefined;
}

function parseId(raw: string): string | number | undefined {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === "string" || typeof value === "number" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The index of the quote closing the string that opens at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i;
  }
  return -1;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1 && parts[0]) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A copy (a Buffer's slice() is a view, which would keep the whole line alive). */
function copy(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}

function lastBytes(bytes: Uint8Array, n: number): Uint8Array {
  return copy(bytes.length <= n ? bytes : bytes.subarray(bytes.length - n));
}

function megabytes(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return Number.isInteger(mb) ? String(mb) : mb.toFixed(1);
}

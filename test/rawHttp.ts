// One HTTP request with exactly the headers given (no fetch defaults: no Origin, no cookie jar), as an attacker's
// page or script, or a login form posted by hand, could send, each on a connection of its own (never a pooled socket
// that the server, or an nginx reloading, may be closing); the cookies an answer sets; a bare WebSocket handshake.
import { request } from "node:http";
import { WebSocket } from "ws";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface RawOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The address the request comes from (127.0.0.2 is another client of this machine). */
  localAddress?: string;
}

export function raw(url: string, options: RawOptions = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const from = options.localAddress ? { localAddress: options.localAddress } : {};
    const req = request(url, { method: options.method ?? "GET", headers: options.headers ?? {}, agent: false, ...from }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Every Set-Cookie of an answer. */
export function setCookies(res: Pick<RawResponse, "headers">): string[] {
  const value = res.headers["set-cookie"];
  return Array.isArray(value) ? value : value ? [value] : [];
}

/** The `name=value` pair of the first cookie the answer sets whose name starts with `prefix`. */
export function cookieOf(res: Pick<RawResponse, "headers">, prefix: string): string | undefined {
  return setCookies(res)
    .find((c) => c.startsWith(prefix))
    ?.split(";")[0];
}

/** A WebSocket handshake to `url` (ws://): opened (and closed at once), or the refusal's status and text. */
export function wsHandshake(
  url: string,
  headers: Record<string, string>,
  protocols?: string[],
): Promise<{ status: number | undefined; body: string; opened: boolean }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, protocols, { headers });
    ws.on("open", () => (ws.close(), resolve({ status: 101, body: "", opened: true })));
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += String(c)));
      res.on("end", () => resolve({ status: res.statusCode, body, opened: false }));
    });
    ws.on("error", () => {});
  });
}

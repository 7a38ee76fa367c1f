// The dashboard's HTTP plumbing: responses with its security headers, form bodies within a size cap, the
// same-origin and fetch-metadata checks, and its cookies (named by port, so two brokers on one host keep their own).
import { readLimited } from "../http/body.js";

const BODY_MAX_BYTES = 8 * 1024;

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "same-origin",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
};

export function send(status: number, type: string, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { ...SECURITY_HEADERS, "Content-Type": type, "Content-Length": String(Buffer.byteLength(body)), ...headers } });
}

export function sendText(status: number, body: string, headers: Record<string, string> = {}): Response {
  return send(status, "text/plain; charset=utf-8", body, { "Cache-Control": "no-store", ...headers });
}

export function sendJson(status: number, value: unknown): Response {
  return send(status, "application/json; charset=utf-8", JSON.stringify(value), { "Cache-Control": "no-store" });
}

export function sendJsonOrText(kind: "page" | "asset" | "api", status: number, message: string): Response {
  if (kind === "api") return sendJson(status, { error: message });
  return sendText(status, `dashboard: ${message}\n`);
}

export function redirect(location: string, cookies: string[] = []): Response {
  const headers = new Headers({ ...SECURITY_HEADERS, Location: location, "Cache-Control": "no-store", "Content-Length": "0" });
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return new Response(null, { status: 303, headers });
}

/** The form fields of a urlencoded body (empty for other types), or the 413 answer when it is over `max` bytes. */
export async function readForm(req: Request, max = BODY_MAX_BYTES): Promise<URLSearchParams | Response> {
  const tooLarge = () => sendText(413, "dashboard: request body too large\n", { Connection: "close" });
  if (Number(req.headers.get("content-length") ?? 0) > max) return tooLarge();
  const body = await readLimited(req, max);
  if (body === undefined) return tooLarge();
  const type = (req.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  return type === "application/x-www-form-urlencoded" ? new URLSearchParams(body) : new URLSearchParams();
}

/** Origin must be exactly this dashboard's (so `null` never passes); without Origin, Referer's origin must be. */
export function sameOrigin(req: Request, expected: string): boolean {
  const origin = req.headers.get("origin");
  if (origin !== null) return origin.toLowerCase() === expected;
  const referer = req.headers.get("referer");
  if (!referer) return false;
  try {
    return new URL(referer).origin.toLowerCase() === expected;
  } catch {
    return false;
  }
}

export function fetchSiteOk(req: Request): boolean {
  const site = req.headers.get("sec-fetch-site");
  return site === null || site === "same-origin" || site === "none";
}

export function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Cookies are not separated by port: name them by port so that two brokers on one host keep their own. */
export function sessionCookieName(port: number | undefined): string {
  return `tabrelay_session_${port ?? 0}`;
}

export function loginCookieName(port: number | undefined): string {
  return `tabrelay_login_${port ?? 0}`;
}

export function clearCookie(name: string, secure: boolean, path = "/"): string {
  return `${name}=; HttpOnly; SameSite=Strict; Path=${path}; Max-Age=0${secure ? "; Secure" : ""}`;
}

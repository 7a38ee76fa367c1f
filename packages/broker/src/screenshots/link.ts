// What the HTTP door needs of a local screenshot link, without the store (no node: module): the user a link belongs
// to and the answer to a link that leads nowhere. A named user's link (the `u` parameter, covered by its signature)
// is fetched with that user's own token as well; the implicit user's links stay plain capability URLs.

export const SHOTS_PATH = "/shots/";
/** The query parameter naming a link's user; absent for the implicit user. */
export const SHOT_OWNER_PARAM = "u";

/** The user a /shots link is for, when it names one (whether its signature holds is the store's to judge). */
export function shotOwner(url: URL): string | undefined {
  if (!url.pathname.startsWith(SHOTS_PATH)) return undefined;
  return url.searchParams.get(SHOT_OWNER_PARAM) ?? undefined;
}

export const SHOT_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "private, no-store",
  "Content-Security-Policy": "default-src 'none'",
} as const;

/** A plain-text refusal with the screenshot headers. */
export function shotRefusal(status: number, message: string, extra: Record<string, string> = {}): Response {
  const body = `${message}\n`;
  return new Response(body, {
    status,
    headers: { ...SHOT_HEADERS, ...extra, "Content-Type": "text/plain; charset=utf-8", "Content-Length": String(new TextEncoder().encode(body).length) },
  });
}

/** A made-up link, a forged one and another user's all get this. */
export function noSuchScreenshot(): Response {
  return shotRefusal(404, "no such screenshot");
}

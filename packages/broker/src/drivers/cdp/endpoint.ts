// A DevTools endpoint as the CDP driver dials it: a ws(s):// URL as given, or an http(s):// base whose /json/version
// names the browser's WebSocket URL. The endpoint is a credential: an error names neither it nor its parts.
import { TabrelayError } from "../../util/errors.js";

export async function resolveCdpEndpoint(endpoint: string, fetchImpl: typeof fetch = fetch): Promise<string> {
  if (/^wss?:\/\//i.test(endpoint)) return endpoint;
  if (!/^https?:\/\//i.test(endpoint)) throw new TabrelayError("not_connected", "a CDP endpoint is a ws://, wss://, http:// or https:// URL");
  try {
    const response = await fetchImpl(new URL("/json/version", endpoint), { signal: AbortSignal.timeout(5000) });
    const body: unknown = await response.json();
    const ws = body && typeof body === "object" ? Reflect.get(body, "webSocketDebuggerUrl") : undefined;
    if (typeof ws !== "string") throw new Error("no webSocketDebuggerUrl in /json/version");
    return ws;
  } catch (error) {
    throw new TabrelayError("not_connected", `could not reach the CDP endpoint's /json/version (${error instanceof Error ? error.message : String(error)})`);
  }
}

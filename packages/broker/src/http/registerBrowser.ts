// POST /browsers {"endpoint": "ws://...", "label": "..."}: `tabrelay launch --cdp` hands the broker a browser it started
// (the launcher owns it: the broker never kills it, and forgets it when its DevTools socket closes). Guarded like /mcp
// (http/door.ts). The endpoint is a credential: it is neither logged nor echoed.
import type { BrowserDriver } from "../drivers/driver.js";
import type { Principal } from "../users/principal.js";
import { TabrelayError } from "../util/errors.js";
import type { SecretRegistry } from "../util/secrets.js";
import { challengeHeader } from "./admission.js";
import { readLimited } from "./body.js";
import type { Door } from "./door.js";

const BODY_MAX = 16 * 1024;
const LABEL_MAX = 100;

export interface RegisterBrowserDeps {
  door: Door;
  secrets: SecretRegistry;
  /** Why the broker takes no browser now (the emergency stop, shutting down), if it does not. */
  refusal: () => { code: string; message: string } | undefined;
  /** Whether the endpoint is attached already (the answer is then 200, the same browser, not 201). */
  known: (endpoint: string) => boolean;
  attach: (endpoint: string, options: { label: string; owner: Principal }) => Promise<BrowserDriver>;
}

export async function registerBrowser(req: Request, deps: RegisterBrowserDeps): Promise<Response> {
  const reply = (status: number, body: object, headers: Record<string, string> = {}) =>
    new Response(`${JSON.stringify(deps.secrets.redactValue(body))}\n`, {
      status,
      headers: { "Content-Type": "application/json", "Cache-Control": "no-store", ...headers },
    });
  const admission = await deps.door.authenticate(req.headers);
  if (!admission.ok) {
    const { refusal } = admission;
    return reply(
      refusal.status,
      { error: { code: refusal.status === 401 ? "unauthorized" : "forbidden", message: refusal.message } },
      challengeHeader(refusal),
    );
  }
  const refused = deps.refusal();
  // Stopped from the dashboard is the cluster's state, not this broker failing: 403 (a load balancer benches a broker
  // that answers 503). Shutting down is this broker's: 503, try another.
  if (refused) return reply(refused.code === "stopped" ? 403 : 503, { error: refused });
  const raw = await readLimited(req, BODY_MAX);
  let endpoint: unknown;
  let label: unknown;
  try {
    const body: unknown = raw === undefined ? undefined : JSON.parse(raw);
    endpoint = body && typeof body === "object" ? Reflect.get(body, "endpoint") : undefined;
    label = body && typeof body === "object" ? Reflect.get(body, "label") : undefined;
  } catch {
    // reported below
  }
  if (typeof endpoint !== "string" || (label !== undefined && (typeof label !== "string" || label.length > LABEL_MAX))) {
    return reply(400, {
      error: {
        code: "invalid_request",
        message: `send JSON {"endpoint": "ws://... or http://host:port", "label": "<= ${LABEL_MAX} characters"} (at most ${BODY_MAX / 1024} KiB)`,
      },
    });
  }
  try {
    const known = deps.known(endpoint);
    const driver = await deps.attach(endpoint, {
      label: typeof label === "string" && label.trim() ? label.trim() : "launched Chromium (CDP)",
      owner: admission.principal,
    });
    return reply(known ? 200 : 201, { id: driver.info.browserId, label: driver.info.label });
  } catch (error) {
    const code = error instanceof TabrelayError ? error.code : "not_connected";
    return reply(502, { error: { code, message: `could not attach the browser: ${error instanceof Error ? error.message : String(error)}` } });
  }
}

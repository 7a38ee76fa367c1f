// `tabrelay launch --cdp`: a Chromium started here, driven by a broker that runs elsewhere (`tabrelay serve`).
// The launcher owns the browser (Ctrl-C here closes it; the broker never kills it) and hands its DevTools
// endpoint to the broker through POST /browsers, authenticated with the broker's MCP token. Like the
// extension, it keeps dialling: it waits for a broker that is not up yet, and registers again when the broker
// restarted and forgot the browser. The broker proves it knows the MCP token (POST /auth/proof) before the
// launcher sends it the token and the endpoint.
import { BrokerNotProven, checkBroker } from "@tabrelay/broker";
import { parseBrokerUrl, type BrokerAddress } from "./brokerUrl.js";

export interface HandoverOptions {
  /** The broker's base URL, http://host:port. */
  brokerUrl: string;
  token: string;
  /** The browser's DevTools WebSocket endpoint: a credential, never printed. */
  endpoint: string;
  label: string;
  log: (line: string) => void;
  /** How often the registration is checked while the broker answers (ms). */
  checkMs?: number;
  /** How often a broker that does not answer is tried again (ms). */
  retryMs?: number;
}

// The broker is always on this machine (brokerBaseUrl), so a refused attempt costs nothing and is retried at a short
// fixed interval however long the broker was down: no backoff, the user restarting it waits for nothing. While the
// browser is registered, a GET /health every CHECK_MS notices a restart that happened between two checks. A listener
// that answers and refuses (another token, say) is asked again only every REFUSED_MS: it will not change its mind soon.
const CHECK_MS = 500;
const RETRY_MS = 250;
const REFUSED_MS = 2_000;

/** A refusal that retrying cannot fix (wrong token, wrong host): the launcher stops. */
export class HandoverRefused extends Error {}

/**
 * The http base URL of the broker at `value` (any --broker form, see brokerUrl.ts). Only a broker on this machine:
 * the browser's DevTools endpoint listens on loopback, so a broker elsewhere could never reach it (and the token
 * would cross the network).
 */
export function brokerBaseUrl(value: string): string {
  let address: BrokerAddress;
  try {
    address = parseBrokerUrl(value);
  } catch (error) {
    throw new HandoverRefused(error instanceof Error ? error.message : String(error));
  }
  if (!address.loopback) {
    const host = new URL(address.base).hostname;
    throw new HandoverRefused(
      `launch --cdp hands the broker a DevTools endpoint on this machine's loopback, which a broker on ${host} cannot reach: run \`tabrelay launch --cdp\` where the broker runs, or \`tabrelay serve --cdp-url\` there with a tunnel to this browser`,
    );
  }
  return address.base;
}

type Registration = { ok: true; id: string } | { ok: false; retry: boolean; message: string };

async function register(options: HandoverOptions): Promise<Registration> {
  // The endpoint and the token are credentials: only a listener that proves it knows the token gets them.
  let base: string;
  try {
    base = await checkBroker(options.brokerUrl, options.token);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A listener that cannot prove the token is a broker with another token or not a broker: as for a refused
    // token, retrying cannot fix it (before the first handover; after it, the launcher keeps trying).
    if (error instanceof BrokerNotProven) return { ok: false, retry: false, message };
    return { ok: false, retry: true, message: `${message}; start one with \`tabrelay serve\`` };
  }
  let response: Response;
  try {
    response = await fetch(`${base}/browsers`, {
      method: "POST",
      headers: { Authorization: `Bearer ${options.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ endpoint: options.endpoint, label: options.label }),
      // Longer than the broker's own attach can take (endpoint lookup + the first protocol calls).
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    return { ok: false, retry: true, message: `no broker answers at ${options.brokerUrl} (${cause}); start one with \`tabrelay serve\`` };
  }
  const body: unknown = await response.json().catch(() => undefined);
  const field = (key: string): unknown => (body && typeof body === "object" ? Reflect.get(body, key) : undefined);
  const error = field("error");
  const message = error && typeof error === "object" ? String(Reflect.get(error, "message")) : `HTTP ${response.status}`;
  if (response.status === 201 && typeof field("id") === "string") return { ok: true, id: String(field("id")) };
  if (response.status === 401) {
    return {
      ok: false,
      retry: false,
      message: `the broker at ${options.brokerUrl} refused the MCP token: run launch with the same --data-dir (or TABRELAY_MCP_TOKEN) as \`tabrelay serve\``,
    };
  }
  if (response.status === 403 || response.status === 404 || response.status === 400)
    return { ok: false, retry: false, message: `the broker at ${options.brokerUrl} refused the browser: ${message}` };
  return { ok: false, retry: true, message: `the broker at ${options.brokerUrl} could not take the browser yet: ${message}` };
}

async function stillRegistered(options: HandoverOptions, id: string): Promise<boolean | undefined> {
  try {
    const response = await fetch(`${options.brokerUrl}/health`, { signal: AbortSignal.timeout(5_000) });
    const body: unknown = await response.json();
    const browsers = body && typeof body === "object" ? Reflect.get(body, "browsers") : undefined;
    return Array.isArray(browsers) && browsers.some((b: unknown) => !!b && typeof b === "object" && Reflect.get(b, "id") === id);
  } catch {
    return undefined; // the broker is down: its restart is noticed on the next round
  }
}

/**
 * Registers the browser and keeps it registered until stop() is called. Resolves once the first registration
 * succeeded; rejects with HandoverRefused when the broker refuses in a way retrying cannot fix.
 */
export function handOver(options: HandoverOptions): { registered: Promise<string>; stop(): void } {
  const checkMs = options.checkMs ?? CHECK_MS;
  const retryMs = options.retryMs ?? RETRY_MS;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let resolveFirst!: (id: string) => void;
  let rejectFirst!: (error: Error) => void;
  const registered = new Promise<string>((resolve, reject) => {
    resolveFirst = resolve;
    rejectFirst = reject;
  });
  let id: string | undefined;
  let handedOver = false;
  let lastMessage = "";
  /** One check or attempt; resolves to the wait before the next one. */
  const round = async (): Promise<number> => {
    if (id !== undefined) {
      const present = await stillRegistered(options, id);
      if (present === true) return checkMs;
      if (present === undefined) return retryMs;
      options.log(`the broker at ${options.brokerUrl} no longer has the browser (restarted?); handing it over again`);
      id = undefined;
    }
    const result = await register(options);
    if (stopped) return 0;
    if (result.ok) {
      id = result.id;
      handedOver = true;
      lastMessage = "";
      options.log(`browser handed to the broker at ${options.brokerUrl} (id ${result.id})`);
      resolveFirst(result.id);
      return checkMs;
    }
    if (!result.retry && !handedOver) {
      stopped = true;
      rejectFirst(new HandoverRefused(result.message));
      return 0;
    }
    // After a first handover, a refusal (a broker restarted with another token, say) is reported and retried:
    // the launcher keeps its browser for when the broker is fixed, as the extension keeps dialling.
    const wait = result.retry ? retryMs : REFUSED_MS;
    if (result.message !== lastMessage) options.log(`${result.message}; retrying every ${wait < 1000 ? `${wait} ms` : `${wait / 1000} s`}`);
    lastMessage = result.message;
    return wait;
  };
  const loop = async (): Promise<void> => {
    const wait = await round().catch((error: unknown) => {
      options.log(`handover: ${error instanceof Error ? error.message : String(error)}`);
      return REFUSED_MS;
    });
    if (!stopped) timer = setTimeout(() => void loop(), wait);
  };
  void loop();
  return {
    registered,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

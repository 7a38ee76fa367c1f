// What the brokers of a cluster keep in Redis and say to each other over its pub/sub (cluster.ts has the map).
import type { ErrorCode } from "@tabrelay/protocol";
import type { BrowserInfo } from "../drivers/driver.js";
import type { CallOutcome } from "../tools/idempotency.js";
import type { ForwardedCall } from "../tools/clusterLink.js";

export const K = {
  broker: (id: string) => `tabrelay:broker:${id}`,
  members: "tabrelay:brokers",
  browsers: "tabrelay:browsers",
  record: (directory: string, id: string) => `tabrelay:${directory}:${id}`,
  stopped: "tabrelay:stopped",
  to: (id: string) => `tabrelay:to:${id}`,
  table: (name: string, broker: string) => `tabrelay:t:${name}:${broker}`,
  all: "tabrelay:all",
};

export type Message =
  | { kind: "call"; id: string; from: string; call: ForwardedCall }
  | { kind: "cancel"; id: string }
  | { kind: "answer"; id: string; outcome: CallOutcome }
  | { kind: "up"; broker: string; info: BrowserInfo }
  | { kind: "down"; broker: string; browserId: string }
  | { kind: "session-ended"; id: string; directory?: string }
  | { kind: "ask"; id: string; from: string; topic: string; body: unknown }
  | { kind: "reply"; id: string; value?: unknown }
  | { kind: "stop"; at?: number }
  | { kind: "note"; from: string; topic: string; body: unknown }
  | { kind: "bye"; broker: string }
  | { kind: "row"; table: string; broker: string; key: string; value?: unknown };

/** Sends a message on a channel; resolves with how many brokers were subscribed to it. */
export type Publish = (channel: string, message: Message) => Promise<number>;

export function failure(code: ErrorCode, message: string, unknown: boolean): CallOutcome {
  return { result: { text: `${code}: ${message}`, isError: true, error: { code, message } }, dispatched: unknown, unknown };
}

/** The broker a call went to stopped before it answered: whether the action happened is unknown. */
export function lost(broker: string, why: string): CallOutcome {
  return failure(
    "browser_disconnected",
    `the broker holding this browser (${broker}) went away during the call (${why}); whether it happened is unknown; it was not retried: take a snapshot before acting again`,
    true,
  );
}

export function serverOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "6379"}`;
  } catch {
    return "(unparsable URL)";
  }
}

export function redact(message: string, url: string): string {
  try {
    const password = decodeURIComponent(new URL(url).password);
    return password ? message.split(password).join("***") : message;
  } catch {
    return message;
  }
}

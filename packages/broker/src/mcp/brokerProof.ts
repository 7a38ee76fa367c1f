// The broker proves it knows the MCP token before tabrelay's own clients send it: `POST /auth/proof` answers a
// client's fresh nonce with an HMAC under a key derived from the token (protocol handshake.ts). The stdio
// forwarder and the launcher's handover check the answer first, so a program that took the broker's port while
// tabrelay was down learns neither the token nor a browser's DevTools endpoint.
import { NONCE_PATTERN, mcpBrokerProof, newNonce, proofsEqual } from "@tabrelay/protocol";
import { readLimited } from "../http/body.js";

/** The listener at the broker's address could not prove it knows the MCP token: nothing was sent to it. */
export class BrokerNotProven extends Error {}

/** Nothing answered at the broker's address; `refused` when nothing listens there at all (connection refused). */
export class BrokerUnreachable extends Error {
  constructor(
    message: string,
    readonly refused: boolean,
  ) {
    super(message);
  }
}

/** Answers `POST /auth/proof` with `{"nonce": "<43 base64url characters>"}`. Needs no token: the proof reveals none. */
export async function answerProof(req: Request, token: string): Promise<Response> {
  const reply = (status: number, body: object) => new Response(`${JSON.stringify(body)}\n`, { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
  let nonce: unknown;
  try {
    const raw = await readLimited(req, 1024);
    nonce = raw === undefined ? undefined : Reflect.get(JSON.parse(raw) as object, "nonce");
  } catch {
    nonce = undefined;
  }
  if (typeof nonce !== "string" || !NONCE_PATTERN.test(nonce)) {
    return reply(400, { error: { code: "invalid_request", message: 'send JSON {"nonce": "<32 random bytes, base64url>"}' } });
  }
  return reply(200, { proof: await mcpBrokerProof(token, nonce) });
}

/**
 * Resolves once the broker at `baseUrl` (http://host:port) proved it knows `token`; throws BrokerNotProven when
 * the listener there answered but could not, and BrokerUnreachable (with the cause) when nothing answers.
 */
export async function checkBroker(baseUrl: string, token: string, timeoutMs = 5_000): Promise<void> {
  const nonce = newNonce();
  let response: Response;
  try {
    response = await fetch(`${baseUrl}/auth/proof`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ nonce }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "error",
    });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    const code = error instanceof Error && typeof error.cause === "object" && error.cause !== null ? Reflect.get(error.cause, "code") : undefined;
    throw new BrokerUnreachable(`no broker answers at ${baseUrl} (${cause})`, code === "ECONNREFUSED");
  }
  const body: unknown = await response.json().catch(() => undefined);
  const proof = body && typeof body === "object" ? Reflect.get(body, "proof") : undefined;
  if (response.ok && typeof proof === "string" && proofsEqual(proof, await mcpBrokerProof(token, nonce))) return;
  throw new BrokerNotProven(
    response.status === 404
      ? `the listener at ${baseUrl} is not a tabrelay broker this version can trust (no /auth/proof: an older tabrelay, or another program on that port); the MCP token was not sent. Update tabrelay there, or stop the program that holds the port`
      : `the listener at ${baseUrl} did not prove it knows this MCP token (a broker with another --data-dir or TABRELAY_MCP_TOKEN, or another program on that port); the token was not sent. Use the same --data-dir as \`tabrelay serve\`, or stop the program that holds the port`,
  );
}

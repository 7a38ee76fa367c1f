// The broker proves it knows the MCP token before tabrelay's own clients send it: `POST /auth/proof` answers a
// client's fresh nonce with an HMAC under a key derived from the token (protocol handshake.ts), over the endpoint it
// proves it is: the one the request reached (the socket's local address, never the Host header a relay can rewrite).
// The stdio forwarder, the launcher's handover and the CLI's client check the answer first, and that it was made for
// the address they dialled (a literal loopback address, never `localhost`), so a program that took the broker's port
// while tabrelay was down, or that listens elsewhere and relays the proof request to the real broker, learns neither
// the token nor a browser's DevTools endpoint.
import { NONCE_PATTERN, canonicalEndpoint, dialUrl, mcpBrokerProof, newNonce, proofsEqual, provenEndpoint, socketEndpoint } from "@tabrelay/protocol";
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

/** The local side of the socket a request came in on (node's `socket.localAddress` / `localPort`). */
export interface LocalSide {
  localAddress?: string | undefined;
  localPort?: number | undefined;
}

/**
 * Answers `POST /auth/proof` `{"nonce": "<43 base64url characters>", "endpoint": "<the URL the client dialled>"}` with
 * `{"proof", "endpoint"}`: the endpoint this broker proves it is (protocol `provenEndpoint` of the client's and the
 * socket's own) and the proof over the nonce and it. Needs no token: the proof reveals none. Without a socket (the
 * app called through its fetch core) the proof names no address any client dialled, so every client refuses it.
 */
export async function answerProof(req: Request, token: string, local: LocalSide | undefined): Promise<Response> {
  const reply = (status: number, body: object) =>
    new Response(`${JSON.stringify(body)}\n`, { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store" } });
  let nonce: unknown;
  let claimed: unknown;
  try {
    const raw = await readLimited(req, 1024);
    const body: unknown = raw === undefined ? undefined : JSON.parse(raw);
    nonce = body && typeof body === "object" ? Reflect.get(body, "nonce") : undefined;
    claimed = body && typeof body === "object" ? Reflect.get(body, "endpoint") : undefined;
  } catch {
    nonce = undefined;
  }
  if (typeof nonce !== "string" || !NONCE_PATTERN.test(nonce)) {
    return reply(400, {
      error: { code: "invalid_request", message: 'send JSON {"nonce": "<32 random bytes, base64url>", "endpoint": "http://HOST:PORT you dialled"}' },
    });
  }
  const own = local?.localAddress && local.localPort ? socketEndpoint(local.localAddress, local.localPort) : "http://no-socket:0";
  const endpoint = provenEndpoint(claimed, own);
  return reply(200, { proof: await mcpBrokerProof(token, nonce, endpoint), endpoint });
}

/**
 * Resolves, with the base URL to send the token to, once the broker at `baseUrl` (http://host:port; `localhost` is
 * dialled as 127.0.0.1, and so must every later request be: use the URL this returns) proved it knows `token` for the
 * address dialled; throws BrokerNotProven when the listener there answered but could not, and BrokerUnreachable
 * (with the cause) when nothing answers.
 */
export async function checkBroker(baseUrl: string, token: string, timeoutMs = 5_000): Promise<string> {
  const base = new URL(dialUrl(baseUrl)).origin;
  const endpoint = canonicalEndpoint(base) ?? base;
  const nonce = newNonce();
  let response: Response;
  try {
    response = await fetch(`${base}/auth/proof`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ nonce, endpoint }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "error",
    });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    const code = error instanceof Error && typeof error.cause === "object" && error.cause !== null ? Reflect.get(error.cause, "code") : undefined;
    throw new BrokerUnreachable(`no broker answers at ${base} (${cause})`, code === "ECONNREFUSED");
  }
  const body: unknown = await response.json().catch(() => undefined);
  const proof = body && typeof body === "object" ? Reflect.get(body, "proof") : undefined;
  const proved = body && typeof body === "object" ? Reflect.get(body, "endpoint") : undefined;
  if (response.ok && typeof proof === "string" && typeof proved === "string" && proved !== endpoint) {
    throw new BrokerNotProven(
      `the listener at ${base} answered with a proof made for another address (${proved.slice(0, 100)}): a program there relays to a tabrelay broker elsewhere; the MCP token was not sent. Stop the program that holds ${base}, or point this client at the broker's own address`,
    );
  }
  if (response.ok && typeof proof === "string" && proved === endpoint && proofsEqual(proof, await mcpBrokerProof(token, nonce, endpoint))) return base;
  throw new BrokerNotProven(
    response.status === 404
      ? `the listener at ${base} is not a tabrelay broker this version can trust (no /auth/proof: an older tabrelay, or another program on that port); the MCP token was not sent. Update tabrelay there, or stop the program that holds the port`
      : `the listener at ${base} did not prove it knows this MCP token (a broker with another --data-dir or TABRELAY_MCP_TOKEN, a tabrelay older than this client, or another program on that port); the token was not sent. Use the same --data-dir as \`tabrelay serve\`, or stop the program that holds the port`,
  );
}

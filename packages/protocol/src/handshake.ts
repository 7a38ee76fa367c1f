/**
 * The proofs both ends of a tabrelay link exchange before trusting each other. One definition, run by the
 * broker (Node) and the extension (a service worker), with WebCrypto only, so the two can never disagree.
 *
 * A secret never crosses the wire. Each side picks a fresh 256-bit nonce; each proves it knows the shared
 * secret with an HMAC-SHA256 over both nonces, under a key derived for its own role, so a proof one side sent
 * can never be replayed as the other side's. The broker proves itself first: the browser sends nothing that
 * depends on the secret to a listener that has not proved it. Secrets are tabrelay's 192-bit random tokens
 * (env tokens are checked for entropy), so a proof gives nothing to an offline guesser.
 *
 * @example
 * const browserNonce = newNonce();               // browser -> broker in `hello`
 * const brokerNonce = newNonce();                // broker -> browser in `challenge`, with:
 * const fromBroker = await bridgeProof(secret, "broker", { browserNonce, brokerNonce, browserId });
 * // the browser checks it with proofsEqual before it answers with its own:
 * const fromBrowser = await bridgeProof(secret, "browser", { browserNonce, brokerNonce, browserId });
 */

/** Who is proving. Keys are derived per role: a broker's proof is never a valid browser proof. */
export type ProofRole = "broker" | "browser";

export interface BridgeTranscript {
  browserNonce: string;
  brokerNonce: string;
  browserId: string;
}

/** base64url of 32 random bytes (43 characters). */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A fresh 256-bit nonce, base64url. */
export function newNonce(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The proof over a `/bridge` handshake that `role` knows the pairing secret. */
export function bridgeProof(secret: string, role: ProofRole, transcript: BridgeTranscript): Promise<string> {
  return proof(secret, `bridge/${role}`, `${transcript.browserNonce}.${transcript.brokerNonce}.${transcript.browserId}`);
}

/**
 * The broker's proof that it knows the MCP token, over a client's nonce (`POST /auth/proof`): tabrelay's own
 * clients (the stdio forwarder, the launcher's handover) check it before they send the token anywhere.
 */
export function mcpBrokerProof(token: string, clientNonce: string): Promise<string> {
  return proof(token, "mcp/broker", clientNonce);
}

/** Compares two proofs in time that depends only on their length. */
export function proofsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

async function proof(secret: string, purpose: string, message: string): Promise<string> {
  const key = await hmac(new TextEncoder().encode(secret), `tabrelay/3/${purpose}`);
  return base64url(await hmac(key, message));
}

async function hmac(keyBytes: Uint8Array<ArrayBuffer>, message: string): Promise<Uint8Array<ArrayBuffer>> {
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// `--broker` has one meaning in every mode: where the broker is. It accepts the broker's base URL
// (http(s)://host:port, what `serve` prints) and its bridge URL (ws(s)://host:port/bridge, what `pair` prints)
// alike; each mode takes the form it needs from the same address.

export interface BrokerAddress {
  /** http(s)://host:port: /mcp, /health, /browsers, /auth/proof. */
  base: string;
  /** ws(s)://host:port/bridge: where the extension dials. */
  bridge: string;
  /** The host is this machine's loopback (127.0.0.0/8, ::1, localhost). */
  loopback: boolean;
  /** https:// or wss://. */
  tls: boolean;
}

export class BrokerUrlError extends Error {}

const FORMS = "http://HOST:PORT, https://HOST:PORT, ws://HOST:PORT/bridge or wss://HOST:PORT/bridge";

export function parseBrokerUrl(value: string): BrokerAddress {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BrokerUrlError(`--broker must be the broker's address (${FORMS}), not ${JSON.stringify(value)}`);
  }
  const tls = url.protocol === "https:" || url.protocol === "wss:";
  const web = url.protocol === "ws:" || url.protocol === "wss:";
  const pathOk = web ? url.pathname === "/bridge" || url.pathname === "/" : url.pathname === "/";
  if (!(web || url.protocol === "http:" || url.protocol === "https:") || !pathOk || url.search || url.hash || url.username || url.password) {
    throw new BrokerUrlError(`--broker must be the broker's address (${FORMS}), not ${JSON.stringify(value)}`);
  }
  // The name `localhost` is taken as input and never dialled: it resolves to ::1 as well, where another program may
  // listen on the broker's port and take the connection (bridge and MCP clients alike dial 127.0.0.1).
  if (url.hostname === "localhost") url.hostname = "127.0.0.1";
  const hostPort = url.host;
  return {
    base: `${tls ? "https" : "http"}://${hostPort}`,
    bridge: `${tls ? "wss" : "ws"}://${hostPort}/bridge`,
    loopback: isLoopbackHost(url.hostname),
    tls,
  };
}

/**
 * Why a plain (unencrypted) link to this address is refused, or undefined: pages, the pairing handshake and
 * the MCP session would cross the network in the clear, so a broker off this machine is reached over TLS only,
 * unless the user said `--unsafe-plain-ws`.
 */
export function plainRemoteRefusal(address: BrokerAddress, unsafe: boolean | undefined): string | undefined {
  if (address.tls || address.loopback || unsafe) return undefined;
  const host = new URL(address.base).host;
  return `refusing a plain ws:// link to ${host}: a broker on another machine is reached only over TLS (put a reverse proxy such as caddy or nginx in front of \`tabrelay serve\` and pass --broker wss://${host}/bridge), or pass --unsafe-plain-ws to send pages in the clear anyway`;
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

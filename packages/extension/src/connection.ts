import {
  FrameOpener,
  FrameSealer,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  bridgeProof,
  canonicalEndpoint,
  dialUrl,
  frameKeys,
  newNonce,
  pairingIdOf,
  proofsEqual,
  type BridgeCall,
  type BridgeEvent,
  type BrokerToBrowser,
  type WireError,
} from "@tabrelay/protocol";
import { showQuestions } from "./askState.js";
import { handlers } from "./commands.js";
import { CommandError } from "./commandError.js";
import { setNavigationRules } from "./navigationRules.js";
import { PRODUCT } from "./platform.js";
import { DRAIN_CLOSE_CODE, drainRedialDelay, reconnectDelay } from "./reconnect.js";
import { isLoopback, loadSettings, plainRemoteRefusal, type Settings } from "./settings.js";
import { bridge, scopesWatched, tabsLoaded, type ConnState } from "./state.js";

const EXTENSION_VERSION = chrome.runtime.getManifest().version;
const PING_MS = 20_000;
const PROBE_TIMEOUT_MS = 2_000;
const KEEPALIVE_CALL_MS = 10_000;

function setState(next: ConnState, error = ""): void {
  bridge.state = next;
  bridge.lastError = error;
  const badge: Record<ConnState, [string, string]> = {
    connected: ["ON", "#1a7f37"],
    connecting: ["…", "#9a6700"],
    disconnected: ["OFF", "#6e7781"],
    unpaired: ["SET", "#6e7781"],
    rejected: ["ERR", "#cf222e"],
  };
  const [text, color] = badge[next];
  void chrome.action.setBadgeText({ text });
  void chrome.action.setBadgeBackgroundColor({ color });
  void chrome.action.setTitle({ title: `tabrelay: ${next}${error ? ` (${error})` : ""}` });
}

export async function connect(): Promise<void> {
  // A retry already scheduled stands (the alarm calls this every 30 s): the schedule is reconnectDelay's.
  if (bridge.connecting || bridge.reconnectTimer || (bridge.socket && bridge.socket.readyState <= WebSocket.OPEN)) return;
  bridge.connecting = true;
  let loopback = false;
  try {
    const settings = await loadSettings();
    if (!settings.brokerUrl || !settings.pairingToken) {
      setState("unpaired", "open the tabrelay popup and pair with your broker");
      return;
    }
    const refusal = plainRemoteRefusal(settings);
    if (refusal) {
      setState("rejected", refusal);
      return;
    }
    // Never the name `localhost`: it resolves to ::1 as well, where another program may hold the broker's port.
    const url = dialUrl(settings.brokerUrl);
    loopback = isLoopback(new URL(url).hostname);
    if (loopback && !(await listening(url))) {
      bridge.attempt = 0;
      if (bridge.state !== "disconnected" && bridge.state !== "rejected") setState("disconnected");
      keepWorkerAlive();
      scheduleReconnect(true);
      return;
    }
    setState("connecting");
    const ws = new WebSocket(url);
    bridge.socket = ws;
    const link: Link = {
      ws,
      settings: settings as Link["settings"],
      url,
      endpoint: canonicalEndpoint(url) ?? url,
      nonce: newNonce(),
      step: "hello",
      inbox: Promise.resolve(),
    };
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          browserId: settings.browserId,
          nonce: link.nonce,
          endpoint: link.endpoint,
          extensionVersion: EXTENSION_VERSION,
          ...pairingOf(settings.pairingToken),
        }),
      );
      link.step = "challenge";
    };
    ws.onmessage = (event) => {
      const data: unknown = event.data;
      // One frame at a time, in order: their MACs are checked in sequence.
      if (typeof data === "string") link.inbox = link.inbox.then(() => onFrame(link, data)).catch(() => ws.close());
    };
    ws.onclose = (event) => {
      if (bridge.socket === ws) bridge.socket = undefined;
      if (current === link) current = undefined;
      stopPing();
      // No broker to answer: its questions' notifications go (a broker that still holds them sends them again).
      if (link.step === "serving") void showQuestions([]);
      if (bridge.state !== "rejected") setState("disconnected");
      // A draining broker (1012) is going away on purpose and the URL reaches another one: dial again at once, at
      // the same URL, whether or not this socket was welcomed. Any other close keeps the backoff.
      const drained = event.code === DRAIN_CLOSE_CODE ? drainRedialDelay(++bridge.drains) : undefined;
      if (drained === undefined && link.step !== "serving") bridge.attempt = Math.min(bridge.attempt + 1, 20);
      scheduleReconnect(loopback, drained);
    };
  } catch (error) {
    setState("disconnected", error instanceof Error ? error.message : String(error));
    bridge.attempt = Math.min(bridge.attempt + 1, 20);
    scheduleReconnect(loopback);
  } finally {
    bridge.connecting = false;
  }
}

function scheduleReconnect(loopback: boolean, delay = reconnectDelay(bridge.attempt, loopback)): void {
  if (bridge.reconnectTimer) return;
  bridge.reconnectTimer = setTimeout(() => {
    bridge.reconnectTimer = undefined;
    void connect();
  }, delay);
}

/**
 * Whether anything answers HTTP at the bridge's address (asked of a loopback broker only). Chromium delays every new
 * WebSocket of a renderer by up to 5 s once a dozen of its WebSockets failed (its per-process WebSocket throttle):
 * dialling a broker that is down every 250 ms would earn that delay, so the extension dials once this probe, which
 * fetch makes outside the throttle, says something listens.
 */
async function listening(bridgeUrl: string): Promise<boolean> {
  const url = new URL(bridgeUrl);
  url.protocol = url.protocol === "wss:" ? "https:" : "http:";
  try {
    await fetch(url, { cache: "no-store", credentials: "omit", redirect: "manual", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    return true;
  } catch (error) {
    // A timeout means a listener took the connection and is slow to answer: let the WebSocket find out what it is.
    return error instanceof DOMException && error.name === "TimeoutError";
  }
}

let keptAliveAt = 0;
/**
 * Chrome stops an MV3 service worker after 30 s without events or extension API calls, and with no socket open the
 * probe loop would die with it until the next alarm. Any extension API call resets that timer (Chrome 110+); Firefox
 * suspends its background page alike, socket or not.
 */
function keepWorkerAlive(): void {
  // At most one call per half period: the ping timer's own calls, every KEEPALIVE_CALL_MS, are never skipped.
  if (Date.now() - keptAliveAt < KEEPALIVE_CALL_MS / 2) return;
  keptAliveAt = Date.now();
  void chrome.runtime.getPlatformInfo();
}

export function reconnectNow(): void {
  if (bridge.reconnectTimer) clearTimeout(bridge.reconnectTimer);
  bridge.reconnectTimer = undefined;
  bridge.attempt = 0;
  bridge.socket?.close();
  bridge.socket = undefined;
  void connect();
}

function startPing(link: Link): void {
  stopPing();
  // A message every 20 s keeps an MV3 service worker alive (Chrome 116+); without it Chrome kills the worker after
  // 30 s idle and the socket dies with it. Firefox counts no socket traffic: it suspends the background page 30 s
  // after its last extension event or API call, so an API call every 10 s keeps it there (keepWorkerAlive).
  let ticks = 0;
  bridge.pingTimer = setInterval(() => {
    keepWorkerAlive();
    if (++ticks % (PING_MS / KEEPALIVE_CALL_MS) === 0) sendOn(link, { type: "ping", at: Date.now() });
  }, KEEPALIVE_CALL_MS);
}

function stopPing(): void {
  if (bridge.pingTimer) clearInterval(bridge.pingTimer);
  bridge.pingTimer = undefined;
}

const servingListeners: (() => void)[] = [];
/** `listener` hears each welcome: the broker is served from now on (a new connection after a reconnect too). */
export function onServing(listener: () => void): void {
  servingListeners.push(listener);
}

/** The link being served (welcomed), which events go to. */
let current: Link | undefined;

/** A frame to the broker, sealed (after the broker proved itself; nothing is sent unsealed after `hello`). */
function sendOn(link: Link, frame: unknown): void {
  sendText(link, JSON.stringify(frame));
}

/**
 * One socket's handshake. A listener on the broker's address is trusted only once it proved it knows the pairing
 * secret, for the very address this browser dialled (its challenge); only then does this browser prove itself, and
 * only after the welcome does it serve calls. From the challenge on, every frame either way is sealed under this
 * socket's keys: a frame that fails its check closes the socket, unread.
 */
interface Link {
  ws: WebSocket;
  settings: Settings & { brokerUrl: string; pairingToken: string };
  /** What this socket dialled (the broker URL, `localhost` as 127.0.0.1) and its canonical endpoint. */
  url: string;
  endpoint: string;
  nonce: string;
  step: "hello" | "challenge" | "auth" | "serving";
  inbox: Promise<void>;
  sealer?: FrameSealer;
  opener?: FrameOpener;
}

async function onFrame(link: Link, data: string): Promise<void> {
  const { ws } = link;
  let text = data;
  if (link.opener) {
    const opened = await link.opener.open(data);
    if (opened === undefined) {
      // Before the welcome the broker may still refuse our proof (a wrong pairing code) with a plain reject: shown,
      // nothing served. Any other frame that fails its check did not come from the broker that proved itself.
      const plain = link.step === "auth" ? parse(data) : undefined;
      if (plain?.type === "reject") setState("rejected", `${plain.error.code}: ${plain.error.message}`);
      else
        refuse(
          link,
          `a frame on the link to ${link.url} failed its check (not sealed by the broker that proved itself: another program in the path?); the link was closed and the frame not served`,
        );
      ws.close();
      return;
    }
    text = opened;
  }
  const frame = parse(text);
  if (!frame) return;
  if (frame.type === "reject") {
    setState("rejected", `${frame.error.code}: ${frame.error.message}`);
    return;
  }
  if (link.step !== "serving") {
    await handshake(link, frame);
    return;
  }
  switch (frame.type) {
    case "ping":
      sendOn(link, { type: "pong", at: frame.at });
      return;
    case "call":
      void runCall(link, frame);
      return;
    default:
      return;
  }
}

function parse(text: string): BrokerToBrowser | undefined {
  try {
    return JSON.parse(text) as BrokerToBrowser;
  } catch {
    return undefined;
  }
}

function refuse(link: Link, why: string): void {
  bridge.impostor = `${why} (${new Date().toLocaleTimeString()})`;
  setState("rejected", bridge.impostor);
}

async function handshake(link: Link, frame: BrokerToBrowser): Promise<void> {
  const { ws, settings } = link;
  if (link.step === "challenge" && frame.type === "challenge" && typeof frame.nonce === "string" && typeof frame.proof === "string") {
    link.step = "auth"; // one challenge per socket: a second one is not answered
    const transcript = { browserNonce: link.nonce, brokerNonce: frame.nonce, browserId: settings.browserId, endpoint: link.endpoint };
    if (frame.endpoint !== link.endpoint && typeof frame.endpoint === "string") {
      // A real broker's proof, for the broker's own address: relayed by a program listening where this browser dialled.
      refuse(
        link,
        `the listener at ${link.url} did not prove it is your tabrelay broker: it passed on the proof of a broker at ${frame.endpoint.slice(0, 100)} (another program on ${link.url} relaying to it); this browser sent it nothing and serves it nothing`,
      );
      ws.close();
      return;
    }
    if (proofsEqual(frame.proof, await bridgeProof(settings.pairingToken, "broker", transcript))) {
      const keys = await frameKeys(settings.pairingToken, transcript);
      link.sealer = await FrameSealer.create(keys["browser>broker"]);
      link.opener = await FrameOpener.create(keys["broker>browser"]);
      sendOn(link, {
        type: "auth",
        proof: await bridgeProof(settings.pairingToken, "browser", transcript),
        label: settings.label,
        userAgent: navigator.userAgent,
        product: PRODUCT,
      });
      return;
    }
  } else if (link.step === "auth" && frame.type === "welcome") {
    link.step = "serving";
    current = link;
    bridge.impostor = "";
    bridge.rulesReady = scopesWatched.then(() => setNavigationRules(frame.navigationRules));
    await bridge.rulesReady;
    bridge.attempt = 0;
    bridge.drains = 0;
    setState("connected");
    startPing(link);
    for (const listener of servingListeners) listener();
    return;
  }
  // Anything else before a welcome (a wrong proof, a welcome or a call without one): this listener is not our
  // broker, or an older one. It got nothing that depends on the pairing code; stop talking to it and keep dialling.
  refuse(
    link,
    `the listener at ${link.url} did not prove it is your tabrelay broker (another program on that port, or a broker older than this extension); this browser sent it nothing and serves it nothing`,
  );
  ws.close();
}

async function runCall(link: Link, call: BridgeCall): Promise<void> {
  await tabsLoaded;
  await bridge.rulesReady;
  try {
    const handler = handlers[call.method];
    if (!handler) throw new CommandError("unknown_method", `unknown method ${String(call.method)}`);
    const result = await handler(call.params as never);
    const frame = { type: "result", id: call.id, ok: true, result };
    const text = JSON.stringify(frame);
    // A transport limit: the broker closes a socket that sends an oversized frame (MAX_FRAME_BYTES, the seal's ~60
    // bytes included); answer with an error instead of losing the link. Over CDP there is no bridge and no such limit.
    const bytes = (text.length * 3 > MAX_FRAME_BYTES - 64 ? new TextEncoder().encode(text).length : text.length) + 64;
    if (bytes > MAX_FRAME_BYTES) {
      throw new CommandError(
        "frame_too_large",
        `the answer is ${Math.round(bytes / 1048576)} MiB, more than the ${MAX_FRAME_BYTES / 1048576} MiB the bridge carries; this page is too large to read whole`,
      );
    }
    sendText(link, text);
  } catch (error) {
    const wire: WireError =
      error instanceof CommandError
        ? { code: error.code, message: error.message, ...(error.tabId !== undefined ? { tabId: error.tabId } : {}) }
        : { code: "internal", message: error instanceof Error ? error.message : String(error) };
    sendOn(link, { type: "result", id: call.id, ok: false, error: wire });
  }
}

function sendText(link: Link, json: string): void {
  const { ws, sealer } = link;
  if (!sealer || ws.readyState !== WebSocket.OPEN) return;
  void sealer.seal(json, (sealed) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(sealed);
  });
}

export function emit(event: BridgeEvent): void {
  if (current?.step === "serving") sendOn(current, event);
}

/** A team broker's code names its pairing id in hello (protocol `pairingIdOf`); the broker's own code names none. */
function pairingOf(code: string | undefined): { pairing?: string } {
  const id = code ? pairingIdOf(code) : undefined;
  return id ? { pairing: id } : {};
}

// Hosted browsers for the CDP driver: a provider's HTTP API creates a remote browser session and hands back
// the DevTools WebSocket URL the broker attaches to; stop() ends the session so it is not billed on.
//
// The endpoints, as documented by the providers:
// - Browserbase (header X-BB-API-Key):
//   POST /v1/sessions {projectId, timeout: 60..21600 s} -> {id, connectUrl, expiresAt, ...}
//     https://docs.browserbase.com/reference/api/create-a-session
//     https://docs.browserbase.com/features/timeouts (timeout is the session's whole lifetime)
//   POST /v1/sessions/{id} {status: "REQUEST_RELEASE", projectId?} ends a session before its timeout
//     https://docs.browserbase.com/reference/api/update-a-session ("projectId is optional")
//   GET /v1/sessions/{id}/debug -> {debuggerFullscreenUrl, debuggerUrl, wsUrl, pages} (the live view)
//     https://docs.browserbase.com/reference/api/session-live-urls
//   The create reference marks projectId as required, while newer pages say the API infers it from the
//   key: it is sent when BROWSERBASE_PROJECT_ID is set, and a refusal without it names that variable.
// - Kernel (header Authorization: Bearer):
//   POST /browsers {timeout_seconds: 10..259200} -> {session_id, cdp_ws_url, timeout_seconds, ...}
//     https://www.kernel.sh/docs/api-reference/browsers/create-a-browser-session
//     timeout_seconds is an idle timeout (no CDP or live-view connection), not a lifetime
//     (kernel/kernel-node-sdk src/resources/browsers/browsers.ts, BrowserCreateParams)
//   browser_live_view_url in that answer: the live view (absent for a headless browser)
//   DELETE /browsers/{id}
//     https://kernel.sh/docs/api-reference/browsers/delete-a-browser-session-by-id
//     https://kernel.sh/docs/browsers/create-a-browser ("Tear it down")
//
// Secrets: the API key and the connect URL (it embeds a signing key or a JWT: whoever holds it drives the
// browser) never appear in a log line or an error message; both are redacted from anything the provider
// sends back too, since an error body may echo the request. They are registered in the secrets registry the
// caller passes (the broker's, so that every exit of the broker redacts them too).
import { z } from "zod";
import { isLoopback } from "../config/build.js";
import { SecretRegistry, type SecretSink } from "../util/secrets.js";

export type ProviderName = "local" | "cdp" | "browserbase" | "kernel";
export type HostedProvider = "browserbase" | "kernel";

export interface ProviderSession {
  /** The DevTools WebSocket URL: a credential, never log it nor show it to the model. */
  endpoint: string;
  /** Always false for a hosted session: the provider runs the browser, stop() ends it through the API. */
  ownsBrowser: boolean;
  /** A label for list_browsers; holds no secret. */
  label: string;
  /** When the provider ends the session by itself (epoch ms), if it has a fixed lifetime (Browserbase). */
  expiresAt?: number;
  /** The provider's session id (not a secret: using it takes the API key); for the user's logs. */
  id: string;
  provider: HostedProvider;
  /** Kernel ends a browser after this many seconds without a connection. */
  idleTimeoutSeconds?: number;
  /** Removes the API key and the connect URL (and their parts), and every other registered secret, from a text. */
  redact(text: string): string;
  /**
   * The provider's live-view page for this session, if it has one (Browserbase: the debug endpoint's
   * debuggerFullscreenUrl; Kernel: browser_live_view_url). Whoever holds it watches and drives the browser: it is
   * registered as a secret, and handed only to the user. Resolves undefined when there is none; throws a
   * ProviderError when the provider cannot be asked.
   */
  liveViewUrl(): Promise<string | undefined>;
  /** Ends the session. Idempotent; never throws (a failure is a redacted warning on stderr). */
  stop(): Promise<void>;
}

export type ProviderErrorKind =
  /** A missing or unusable setting (API key, base URL, timeout): fix the environment. */
  | "config"
  /** The provider refused the API key (HTTP 401 or 403). */
  | "auth"
  /** Any other HTTP error from the provider. */
  | "http"
  /** The provider's API could not be reached, or did not answer in time. */
  | "network"
  /** The provider answered something this code does not understand. */
  | "protocol"
  /** The session was created but the browser could not be attached (raised by callers). */
  | "attach";

export class ProviderError extends Error {
  override readonly name = "ProviderError";
  constructor(
    readonly provider: HostedProvider,
    readonly kind: ProviderErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** Where the API keys and URLs are read from: process.env on Node, a Worker's bindings. */
export type ProviderEnv = Readonly<Record<string, string | undefined>>;

export interface CreateProviderSessionOptions {
  /** Browserbase: the session's lifetime (60..21600). Kernel: its idle timeout (10..259200). */
  timeoutSeconds?: number;
  fetchImpl?: typeof fetch;
  /** Where the API key and the session's URLs are registered (the broker's registry); a private one otherwise. */
  secrets?: SecretSink;
}

interface ProviderSpec {
  title: string;
  keyVar: string;
  urlVar: string;
  defaultUrl: string;
  timeoutRange: readonly [number, number];
}

const SPECS: Record<HostedProvider, ProviderSpec> = {
  browserbase: {
    title: "Browserbase",
    keyVar: "BROWSERBASE_API_KEY",
    urlVar: "BROWSERBASE_API_URL",
    defaultUrl: "https://api.browserbase.com",
    timeoutRange: [60, 21_600],
  },
  kernel: { title: "Kernel", keyVar: "KERNEL_API_KEY", urlVar: "KERNEL_API_URL", defaultUrl: "https://api.onkernel.com", timeoutRange: [10, 259_200] },
};

/** The environment variables that hold the providers' API keys: secrets wherever they show. */
export const PROVIDER_KEY_VARS: readonly string[] = Object.values(SPECS).map((spec) => spec.keyVar);

const CREATE_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

const BrowserbaseCreated = z.object({ id: z.string().min(1) });
const BrowserbaseSession = z.object({
  connectUrl: z.string().min(1),
  expiresAt: z.string().optional(),
  signingKey: z.string().optional(),
  seleniumRemoteUrl: z.string().optional(),
});
const BrowserbaseDebug = z.object({ debuggerFullscreenUrl: z.string().min(1), debuggerUrl: z.string().optional(), wsUrl: z.string().optional() });
const KernelCreated = z.object({ session_id: z.string().min(1) });
const KernelBrowser = z.object({
  cdp_ws_url: z.string().min(1),
  timeout_seconds: z.number().optional(),
  webdriver_ws_url: z.string().optional(),
  browser_live_view_url: z.string().optional(),
});
/** Browserbase answers errors as {statusCode, error, message}; Kernel as {code, message, details}. */
const ErrorBody = z.object({ message: z.string().optional(), error: z.union([z.string(), z.object({ message: z.string() })]).optional() });
const ErrorCause = z.object({ code: z.string().optional(), message: z.string().optional() });

/**
 * Creates a hosted browser session. The caller attaches `endpoint` and must call `stop()` on shutdown,
 * and also when anything after this call fails (attaching, start-up): the session is billed until then.
 *
 * @example
 * const session = await createProviderSession("browserbase", process.env, { timeoutSeconds: 3600 });
 * try {
 *   await broker.attachCdp(session.endpoint, { label: session.label, ownsBrowser: false });
 * } catch (error) {
 *   await session.stop();
 *   throw error;
 * }
 */
export async function createProviderSession(name: HostedProvider, env: ProviderEnv, opts: CreateProviderSessionOptions = {}): Promise<ProviderSession> {
  const api = apiFor(name, env, opts);
  const timeout = opts.timeoutSeconds;
  if (timeout !== undefined) {
    const [min, max] = api.spec.timeoutRange;
    if (!Number.isInteger(timeout) || timeout < min || timeout > max)
      throw api.error("config", `the session timeout must be a whole number of seconds from ${min} to ${max}, not ${timeout}`);
  }
  return name === "browserbase" ? createBrowserbase(api, env["BROWSERBASE_PROJECT_ID"]?.trim() || undefined, timeout) : createKernel(api, timeout);
}

/** The provider's API with the key from the environment (a config error names the variable to set). */
function apiFor(name: HostedProvider, env: ProviderEnv, opts: { fetchImpl?: typeof fetch; secrets?: SecretSink }): Api {
  const spec = SPECS[name];
  const apiKey = env[spec.keyVar]?.trim();
  if (!apiKey) throw new ProviderError(name, "config", `${spec.title}: ${spec.keyVar} is not set; export your ${spec.title} API key in it`);
  const redactor: SecretSink = opts.secrets ?? new SecretRegistry();
  redactor.register(apiKey, "provider key");
  const fail = (kind: ProviderErrorKind, message: string) => new ProviderError(name, kind, redactor.redact(`${spec.title}: ${message}`));
  // Called unbound: a Workers runtime refuses fetch called as a method of another object ("Illegal invocation").
  const fetchImpl = opts.fetchImpl ?? fetch;
  // A redirect is never followed (the key would go with it). Not which Workers runtimes refuse.
  const send: typeof fetch = async (input, init) => {
    const response = await fetchImpl(input, { ...init, redirect: "manual" });
    if (response.status >= 300 && response.status < 400)
      throw new Error(`the API answered a redirect (HTTP ${response.status}), which tabrelay does not follow with the API key`);
    return response;
  };
  return new Api(name, spec, apiBase(env[spec.urlVar], spec, fail), apiKey, send, redactor);
}

const BrowserbaseState = z.object({
  status: z.string().optional(),
  connectUrl: z.string().optional(),
  signingKey: z.string().optional(),
  seleniumRemoteUrl: z.string().optional(),
});
/** Browserbase's session states in which the browser still runs. */
const BROWSERBASE_LIVE = new Set(["RUNNING", "PENDING"]);

/**
 * A hosted session looked up again by its id, for a host that keeps no session of its own (the Workers entry resolves
 * a browser handle on every request): its DevTools URL, a credential registered in `opts.secrets`, or undefined when
 * the provider no longer runs it (404; Browserbase: a state other than RUNNING or PENDING).
 */
export async function hostedSessionEndpoint(
  name: HostedProvider,
  env: ProviderEnv,
  id: string,
  opts: { fetchImpl?: typeof fetch; secrets?: SecretSink } = {},
): Promise<string | undefined> {
  const api = apiFor(name, env, opts);
  const path = name === "browserbase" ? `/v1/sessions/${encodeURIComponent(id)}` : `/browsers/${encodeURIComponent(id)}`;
  const body = await api.get(path, `look session ${id} up`, { missing: true });
  if (body === undefined) return undefined;
  if (name === "browserbase") {
    const state = BrowserbaseState.safeParse(body);
    if (!state.success) throw api.error("protocol", `the answer about session ${id} is not a session`);
    if (state.data.status !== undefined && !BROWSERBASE_LIVE.has(state.data.status)) return undefined;
    for (const secret of [state.data.connectUrl, state.data.signingKey, state.data.seleniumRemoteUrl]) api.redactor.register(secret, "provider session");
    const endpoint = state.data.connectUrl === undefined ? undefined : checkEndpoint(state.data.connectUrl);
    if (!endpoint) throw api.error("protocol", `session ${id} came without a usable connectUrl (ws:// or wss://)`);
    return endpoint;
  }
  const browser = KernelBrowser.safeParse(body);
  if (!browser.success) throw api.error("protocol", `the answer about browser ${id} carries no cdp_ws_url`);
  for (const secret of [browser.data.cdp_ws_url, browser.data.webdriver_ws_url, browser.data.browser_live_view_url])
    api.redactor.register(secret, "provider session");
  const endpoint = checkEndpoint(browser.data.cdp_ws_url);
  if (!endpoint) throw api.error("protocol", `browser ${id} came without a usable cdp_ws_url (ws:// or wss://)`);
  return endpoint;
}

/** Ends a hosted session by id, from whichever host: "already_gone" when the provider no longer runs it. */
export async function endHostedSession(
  name: HostedProvider,
  env: ProviderEnv,
  id: string,
  opts: { fetchImpl?: typeof fetch; secrets?: SecretSink } = {},
): Promise<"stopped" | "already_gone"> {
  if ((await hostedSessionEndpoint(name, env, id, opts)) === undefined) return "already_gone";
  const api = apiFor(name, env, opts);
  const projectId = env["BROWSERBASE_PROJECT_ID"]?.trim();
  if (name === "browserbase")
    await api.release(id, "POST", `/v1/sessions/${encodeURIComponent(id)}`, { status: "REQUEST_RELEASE", ...(projectId ? { projectId } : {}) });
  else await api.release(id, "DELETE", `/browsers/${encodeURIComponent(id)}`, undefined);
  return "stopped";
}

async function createBrowserbase(api: Api, projectId: string | undefined, timeout: number | undefined): Promise<ProviderSession> {
  const body = await api.create(
    "/v1/sessions",
    { ...(projectId ? { projectId } : {}), ...(timeout !== undefined ? { timeout } : {}) },
    projectId ? "" : " (is BROWSERBASE_PROJECT_ID needed? it is not set)",
  );
  const created = BrowserbaseCreated.safeParse(body);
  if (!created.success) throw api.error("protocol", "the create-session answer carries no session id");
  const id = created.data.id;
  const release = () => api.release(id, "POST", `/v1/sessions/${encodeURIComponent(id)}`, { status: "REQUEST_RELEASE", ...(projectId ? { projectId } : {}) });
  const session = BrowserbaseSession.safeParse(body);
  if (session.success)
    for (const secret of [session.data.connectUrl, session.data.signingKey, session.data.seleniumRemoteUrl]) api.redactor.register(secret, "provider session");
  const endpoint = session.success ? checkEndpoint(session.data.connectUrl) : undefined;
  if (!session.success || endpoint === undefined) {
    await release();
    throw api.error("protocol", `session ${id} came without a usable connectUrl (ws:// or wss://); tabrelay asked Browserbase to end it`);
  }
  const expiresAt = session.data.expiresAt === undefined ? Number.NaN : Date.parse(session.data.expiresAt);
  const liveView = async (): Promise<string | undefined> => {
    const debug = BrowserbaseDebug.safeParse(await api.get(`/v1/sessions/${encodeURIComponent(id)}/debug`, "read the session's live view"));
    if (!debug.success) throw api.error("protocol", "the live-view answer carries no debuggerFullscreenUrl");
    for (const secret of [debug.data.debuggerFullscreenUrl, debug.data.debuggerUrl, debug.data.wsUrl]) api.redactor.register(secret, "provider session");
    return checkWeb(debug.data.debuggerFullscreenUrl);
  };
  return hosted(api, { id, endpoint, label: "Browserbase session (CDP)", ...(Number.isFinite(expiresAt) ? { expiresAt } : {}) }, release, liveView);
}

async function createKernel(api: Api, timeout: number | undefined): Promise<ProviderSession> {
  const body = await api.create("/browsers", timeout !== undefined ? { timeout_seconds: timeout } : {}, "");
  const created = KernelCreated.safeParse(body);
  if (!created.success) throw api.error("protocol", "the create-browser answer carries no session_id");
  const id = created.data.session_id;
  const release = () => api.release(id, "DELETE", `/browsers/${encodeURIComponent(id)}`, undefined);
  const browser = KernelBrowser.safeParse(body);
  if (browser.success)
    for (const secret of [browser.data.cdp_ws_url, browser.data.webdriver_ws_url, browser.data.browser_live_view_url])
      api.redactor.register(secret, "provider session");
  const endpoint = browser.success ? checkEndpoint(browser.data.cdp_ws_url) : undefined;
  if (!browser.success || endpoint === undefined) {
    await release();
    throw api.error("protocol", `browser ${id} came without a usable cdp_ws_url (ws:// or wss://); tabrelay asked Kernel to delete it`);
  }
  const idle = browser.data.timeout_seconds ?? timeout;
  const live = browser.data.browser_live_view_url;
  return hosted(api, { id, endpoint, label: "Kernel browser (CDP)", ...(idle !== undefined ? { idleTimeoutSeconds: idle } : {}) }, release, async () =>
    live ? checkWeb(live) : undefined,
  );
}

function hosted(
  api: Api,
  facts: { id: string; endpoint: string; label: string; expiresAt?: number; idleTimeoutSeconds?: number },
  release: () => Promise<void>,
  liveViewUrl: () => Promise<string | undefined>,
): ProviderSession {
  let stopping: Promise<void> | undefined;
  return {
    ...facts,
    provider: api.name,
    ownsBrowser: false,
    redact: (text) => api.redactor.redact(text),
    liveViewUrl,
    stop: () => (stopping ??= release()),
  };
}

function checkEndpoint(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === "ws:" || url.protocol === "wss:" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A live-view page is opened by the user's browser: an https:// (or http://) URL, nothing else. */
function checkWeb(value: string): string | undefined {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:" ? value : undefined;
  } catch {
    return undefined;
  }
}

function apiBase(configured: string | undefined, spec: ProviderSpec, fail: (kind: ProviderErrorKind, message: string) => ProviderError): URL {
  const raw = configured?.trim() || spec.defaultUrl;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw fail("config", `${spec.urlVar} is not a URL`);
  }
  // The API key travels in a header: never in clear text beyond this machine.
  const local = isLoopback(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && local))
    throw fail("config", `${spec.urlVar} must be an https:// URL (http:// only for a loopback host)`);
  return url;
}

/** One provider's HTTP API: requests with the key, answers parsed, every message redacted. */
class Api {
  constructor(
    readonly name: HostedProvider,
    readonly spec: ProviderSpec,
    readonly base: URL,
    readonly apiKey: string,
    readonly fetchImpl: typeof fetch,
    readonly redactor: SecretSink,
  ) {}

  error(kind: ProviderErrorKind, message: string): ProviderError {
    return new ProviderError(this.name, kind, this.redactor.redact(`${this.spec.title}: ${message}`));
  }

  #url(path: string): string {
    return `${this.base.href.replace(/\/+$/, "")}${path}`;
  }

  #headers(json: boolean): Record<string, string> {
    const auth: Record<string, string> = this.name === "browserbase" ? { "X-BB-API-Key": this.apiKey } : { Authorization: `Bearer ${this.apiKey}` };
    return { ...auth, Accept: "application/json", ...(json ? { "Content-Type": "application/json" } : {}) };
  }

  /** POSTs the create request; resolves with the parsed JSON answer or throws a ProviderError. */
  async create(path: string, body: Record<string, unknown>, hint: string): Promise<unknown> {
    let response: Response;
    try {
      response = await this.fetchImpl(this.#url(path), {
        method: "POST",
        headers: this.#headers(true),
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(CREATE_TIMEOUT_MS),
      });
    } catch (error) {
      throw this.error("network", `could not reach ${this.base.origin} to create a browser session (${networkReason(error, CREATE_TIMEOUT_MS)})`);
    }
    const text = await response.text().catch(() => "");
    if (response.status === 401 || response.status === 403) {
      throw this.error("auth", `the API key was refused (HTTP ${response.status}); check ${this.spec.keyVar}`);
    }
    if (!response.ok) {
      throw this.error("http", `creating a browser session failed with HTTP ${response.status}${providerMessage(text)}${response.status < 500 ? hint : ""}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw this.error("protocol", `the create answer (HTTP ${response.status}) is not JSON`);
    }
  }

  /** GETs a session's resource; resolves with the parsed JSON answer (undefined for a 404 when `missing`) or throws a ProviderError. */
  async get(path: string, what: string, options: { missing?: true } = {}): Promise<unknown> {
    let response: Response;
    try {
      response = await this.fetchImpl(this.#url(path), { method: "GET", headers: this.#headers(false), signal: AbortSignal.timeout(STOP_TIMEOUT_MS) });
    } catch (error) {
      throw this.error("network", `could not reach ${this.base.origin} to ${what} (${networkReason(error, STOP_TIMEOUT_MS)})`);
    }
    const text = await response.text().catch(() => "");
    if (response.status === 401 || response.status === 403)
      throw this.error("auth", `the API key was refused (HTTP ${response.status}); check ${this.spec.keyVar}`);
    if (response.status === 404 && options.missing) return undefined;
    if (!response.ok) throw this.error("http", `could not ${what}: HTTP ${response.status}${providerMessage(text)}`);
    try {
      return JSON.parse(text);
    } catch {
      throw this.error("protocol", `the answer to ${what} (HTTP ${response.status}) is not JSON`);
    }
  }

  /** Ends the session; never throws. A session that is already gone (404) is fine. */
  async release(id: string, method: "POST" | "DELETE", path: string, body: Record<string, unknown> | undefined): Promise<void> {
    const what = `${this.spec.title} session ${id}`;
    try {
      const response = await this.fetchImpl(this.#url(path), {
        method,
        headers: this.#headers(body !== undefined),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(STOP_TIMEOUT_MS),
      });
      const text = await response.text().catch(() => "");
      if (response.ok || response.status === 404) return;
      this.#warn(
        `could not end the ${what} (HTTP ${response.status}${providerMessage(text)}); end it from the ${this.spec.title} dashboard, or it runs until its timeout`,
      );
    } catch (error) {
      this.#warn(
        `could not end the ${what} (${networkReason(error, STOP_TIMEOUT_MS)}); end it from the ${this.spec.title} dashboard, or it runs until its timeout`,
      );
    }
  }

  #warn(message: string): void {
    const line = this.redactor.redact(message).replace(/[\r\n]+/g, " ");
    console.error(`${new Date().toISOString()} warn ${line}`);
  }
}

/** The provider's own error message, if its body has one (capped, one line); redacted by the caller. */
function providerMessage(text: string): string {
  let message: string | undefined;
  try {
    const parsed = ErrorBody.safeParse(JSON.parse(text));
    if (parsed.success) {
      const { error } = parsed.data;
      message = parsed.data.message ?? (typeof error === "string" ? error : error?.message);
    }
  } catch {
    message = text;
  }
  const clean = (message ?? "").replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return clean ? `: ${clean.length > 300 ? `${clean.slice(0, 300)}…` : clean}` : "";
}

function networkReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${timeoutMs / 1000} s`;
  // fetch rejects with "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a redirect) is its cause.
  const cause = error instanceof Error ? ErrorCause.safeParse(error.cause) : undefined;
  if (cause?.success && (cause.data.code ?? cause.data.message)) return cause.data.code ?? cause.data.message ?? "";
  return error instanceof Error ? error.message : String(error);
}

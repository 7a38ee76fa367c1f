// The stateless entry's configuration: environment bindings (Workers vars and secrets, a function's environment),
// validated once per instance like config.yaml on Node. Policy, code mode and read settings are config.yaml's own
// text in TABRELAY_CONFIG, parsed and checked by the same code as the Node broker's file (the same messages).
import {
  buildConfigFromText,
  PresignedS3Store,
  redactingLogger,
  safeEqual,
  SecretRegistry,
  TOKEN_ADVICE,
  toolsFor,
  weakTokenReason,
  type BrokerConfig,
  type CdpScripts,
  type CdpSocketFactory,
  type Logger,
  type SandboxRunner,
  type ScreenshotStore,
  type Tool,
} from "@tabrelay/broker/core";
import type { AuditSettings } from "./audit.js";
import { fixedEndpoint, hostedSource, type BrowserSource } from "./browsers.js";

/** The bindings the entry reads. Secrets (tokens, URLs with credentials, API keys) are registered and redacted everywhere. */
export interface WorkerEnv {
  /** The bearer token every route but /health needs (at least 128 bits, as on Node). Required. */
  TABRELAY_MCP_TOKEN?: string;
  /** config.yaml's text: policy, read, code_mode, mcp.allowed_origins (a browsers: section is the Node broker's). */
  TABRELAY_CONFIG?: string;
  /** cdp (default when TABRELAY_CDP_URL is set), browserbase or kernel. */
  TABRELAY_PROVIDER?: string;
  /** Provider cdp: the browser's DevTools endpoint (ws(s):// or an http(s):// base); a credential. */
  TABRELAY_CDP_URL?: string;
  /** Audit records are POSTed here as JSON batches besides the log lines. */
  TABRELAY_AUDIT_URL?: string;
  TABRELAY_AUDIT_TOKEN?: string;
  /** Host header values accepted (comma-separated); unset: any (a Workers route is its own host check). */
  TABRELAY_ALLOWED_HOSTS?: string;
  BROWSERBASE_API_KEY?: string;
  BROWSERBASE_PROJECT_ID?: string;
  BROWSERBASE_API_URL?: string;
  KERNEL_API_KEY?: string;
  KERNEL_API_URL?: string;
  /** Screenshots (screenshots.s3 in TABRELAY_CONFIG): the bucket's credentials. */
  AWS_ACCESS_KEY_ID?: string;
  AWS_SECRET_ACCESS_KEY?: string;
  AWS_SESSION_TOKEN?: string;
}

/** What the runtime provides: how to open a DevTools socket, the in-page scripts, the shipped ranking, a sandbox. */
export interface Platform {
  socket: CdpSocketFactory;
  scripts: CdpScripts;
  /** The shipped top-sites ranking (domains, best first), for the read policy's top_sites. */
  ranking: readonly string[];
  sandbox?: SandboxRunner;
  fetch?: typeof fetch;
  /** Where log lines go (default console.error). */
  write?: (line: string) => void;
}

export interface WorkerSettings {
  config: BrokerConfig;
  tools: readonly Tool[];
  source?: BrowserSource;
  /** Where screenshots go (S3, presigned links), when config enables them. */
  screenshots?: ScreenshotStore;
  audit: AuditSettings;
  secrets: SecretRegistry;
  allowedHosts: string[];
  log: Logger;
  tokenMatches(token: string): boolean;
}

export type Settled = { ok: true; value: WorkerSettings } | { ok: false; message: string };

const settled = new WeakMap<object, Settled>();

/** The instance's settings, read from the bindings on first use and kept (a bad binding is logged once). */
export function settingsOf(env: WorkerEnv | undefined, platform: Platform): Settled {
  const key: object = env ?? platform;
  const known = settled.get(key);
  if (known) return known;
  let result: Settled;
  try {
    result = { ok: true, value: readSettings(env ?? {}, platform) };
  } catch (error) {
    result = { ok: false, message: error instanceof Error ? error.message : String(error) };
    (platform.write ?? ((line: string) => console.error(line)))(`tabrelay-worker: configuration refused: ${result.message}`);
  }
  settled.set(key, result);
  return result;
}

function readSettings(env: WorkerEnv, platform: Platform): WorkerSettings {
  const secrets = new SecretRegistry();
  const token = env.TABRELAY_MCP_TOKEN?.trim();
  if (!token)
    throw new Error(
      `TABRELAY_MCP_TOKEN is not set: every route but /health needs a bearer token; ${TOKEN_ADVICE.replace(/ \(or unset.*$/, "")} and set it as a secret binding`,
    );
  const weak = weakTokenReason(token);
  if (weak) throw new Error(`TABRELAY_MCP_TOKEN is too weak to use: ${weak}; ${TOKEN_ADVICE.replace(/ \(or unset.*$/, "")}`);
  secrets.register(token, "mcp token");
  secrets.register(env.TABRELAY_CDP_URL, "cdp endpoint");
  secrets.register(env.BROWSERBASE_API_KEY, "provider key");
  secrets.register(env.KERNEL_API_KEY, "provider key");
  secrets.register(env.TABRELAY_AUDIT_TOKEN, "secret");
  secrets.register(env.AWS_SECRET_ACCESS_KEY, "secret");
  secrets.register(env.AWS_SESSION_TOKEN, "secret");
  const config = buildConfigFromText(env.TABRELAY_CONFIG ?? "", { source: "TABRELAY_CONFIG", mcpToken: token, ranking: platform.ranking });
  if (config.browserSource)
    throw new Error(
      "TABRELAY_CONFIG: browsers: is the Node broker's section; here the provider comes from TABRELAY_PROVIDER (cdp with TABRELAY_CDP_URL, browserbase, kernel): remove it",
    );
  const provider = env.TABRELAY_PROVIDER?.trim() || (env.TABRELAY_CDP_URL ? "cdp" : undefined);
  let source: BrowserSource | undefined;
  if (provider === "cdp") {
    if (!env.TABRELAY_CDP_URL)
      throw new Error("TABRELAY_PROVIDER is cdp but TABRELAY_CDP_URL is not set: set it to the browser's DevTools endpoint (ws://... or http://host:port)");
    if (!/^(wss?|https?):\/\//i.test(env.TABRELAY_CDP_URL)) throw new Error("TABRELAY_CDP_URL is not a ws://, wss://, http:// or https:// URL");
    source = fixedEndpoint(env.TABRELAY_CDP_URL, (url) => platform.socket(url, { maxPayload: 256 * 1024 * 1024 }), platform.fetch);
  } else if (provider === "browserbase" || provider === "kernel") {
    const keyVar = provider === "browserbase" ? "BROWSERBASE_API_KEY" : "KERNEL_API_KEY";
    if (!env[keyVar]) throw new Error(`TABRELAY_PROVIDER is ${provider} but ${keyVar} is not set: add it as a secret binding`);
    source = hostedSource(provider, { ...env }, secrets, platform.fetch);
  } else if (provider !== undefined) {
    throw new Error(`TABRELAY_PROVIDER ${JSON.stringify(provider)} is not a provider: cdp (with TABRELAY_CDP_URL), browserbase or kernel`);
  }
  const screenshots = screenshotStore(config, env, platform);
  const auditUrl = env.TABRELAY_AUDIT_URL?.trim();
  if (auditUrl && !/^https?:\/\//i.test(auditUrl)) throw new Error("TABRELAY_AUDIT_URL is not an http:// or https:// URL");
  const write = platform.write ?? ((line: string) => console.error(line));
  const log = redactingLogger({ info: (m) => write(`info ${m}`), warn: (m) => write(`warn ${m}`), error: (m) => write(`error ${m}`) }, secrets);
  return {
    config,
    tools: toolsFor(config),
    ...(source ? { source } : {}),
    ...(screenshots ? { screenshots } : {}),
    audit: { ...(auditUrl ? { url: auditUrl } : {}), ...(env.TABRELAY_AUDIT_TOKEN ? { token: env.TABRELAY_AUDIT_TOKEN } : {}) },
    secrets,
    allowedHosts: (env.TABRELAY_ALLOWED_HOSTS ?? "")
      .split(",")
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    log,
    tokenMatches: (given) => safeEqual(given, token),
  };
}

/**
 * Screenshots without a disk: objects in S3 (screenshots.s3) linked by presigned GETs, or none (the screenshot tool is
 * then screenshots_disabled, as with screenshots off). Enabled without a bucket is refused: there is nowhere to put them.
 */
function screenshotStore(config: BrokerConfig, env: WorkerEnv, platform: Platform): ScreenshotStore | undefined {
  const settings = config.screenshots;
  if (!settings.enabled) return undefined;
  if (!settings.s3)
    throw new Error(
      "TABRELAY_CONFIG: screenshots.enabled needs screenshots.s3 here (a Worker has no disk to keep pictures on): name the bucket, or set screenshots.enabled: false and use POST /screen",
    );
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY)
    throw new Error("TABRELAY_CONFIG: screenshots.s3 needs the bucket's credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY as secret bindings");
  const { bucket, region, endpoint, forcePathStyle, prefix } = settings.s3;
  return new PresignedS3Store({
    bucket,
    region,
    ...(endpoint ? { endpoint } : {}),
    ...(forcePathStyle !== undefined ? { forcePathStyle } : {}),
    ...(prefix ? { prefix } : {}),
    ttlMs: settings.ttlMs,
    credentials: {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    },
    ...(platform.fetch ? { fetchImpl: platform.fetch } : {}),
  });
}

// The configuration as data, for every host of the broker: config.yaml's text parsed and validated (one schema, the
// same messages), and a BrokerConfig built from it plus where the broker runs and its tokens. No file system: the
// Node loader (config.ts) reads the files, the data dir and the ranking and passes them here; a stateless host (the
// Workers entry) passes its bindings' text and the ranking bundled at build time (buildConfigFromText).
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, parse as parseYaml } from "yaml";
import { z } from "zod";
import { compileReadPolicy, type CompiledReadPolicy, type ReadPolicyInput } from "../policy/readPolicy.js";
import { patternProblem } from "../policy/text.js";
import { compileWritePolicy, type CompiledWritePolicy, type WritePolicyInput } from "../policy/writePolicy.js";
import { compileAskPolicy, type CompiledAskPolicy } from "../policy/askPolicy.js";
import { compileUserPolicies, userPoliciesSchema, type UserPolicy } from "./userPolicies.js";
import { COMMAND_NAMES } from "./commandNames.js";
import { codeModeFileSchema, codeModeSettings, type CodeModeSettings } from "./codeMode.js";
import { browserSourceSettings, browsersFileSchema, type BrowserSourceSettings } from "./browsers.js";
import { chatFileSchema, chatSettings, type ChatSettings } from "./chat.js";
import { pageToolGrantsSchema, pagesFileSchema, pagesSettings, type PagesSettings } from "./pages.js";
import { rangeProblem } from "../util/addresses.js";

/** The extension's ID, fixed by the `key` in its manifest; the bridge accepts only these origins. */
export const BUILTIN_EXTENSION_ID = "bkcjhkpmfjmfjkljdlooigoilajjfhpb";

// Config patterns are RE2 syntax, matched in linear time (policy/text.ts).
const regex = z.string().superRefine((value, ctx) => {
  const problem = patternProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: `not a valid regular expression: ${problem}` });
});

const denySchema = z.array(z.object({ host: z.string(), path: regex.default(".*") }).strict());

/** policy.write's grants (and a user's, config/userPolicies.ts), page tools aside. */
const writeGrantsSchema = z
  .object({
    click: z.record(z.string(), z.object({ label: regex }).strict()).optional(),
    type: z.record(z.string(), z.object({ label: regex }).strict()).optional(),
    // Code mode's browse.upload (a file input's label) and browse.eval (a host, no settings): writePolicy.ts.
    upload: z.record(z.string(), z.object({ label: regex }).strict()).optional(),
    eval: z.record(z.string(), z.object({}).strict()).optional(),
    // Keys that only a page's script gives meaning to (chords, Escape, Enter outside a form): writePolicy.ts.
    keys: z
      .record(
        z.string(),
        z
          .object({
            keys: z.string({ error: 'missing or not a string: the regex of the key combos allowed, e.g. "^Enter$" or "^(Control|Meta)\\+Enter$"' }).pipe(regex),
            label: z
              .string({ error: 'missing or not a string: the regex the element\'s visible text and accessible name must match, e.g. "^Search$"' })
              .pipe(regex),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();

const fileSchema = z
  .object({
    host: z.string().optional().describe("address to listen on"),
    port: z.number().int().min(0).max(65535).optional(),
    mcp: z
      .object({
        allowed_origins: z.array(z.string()).optional(),
        allowed_hosts: z.array(z.string()).optional(),
        trusted_proxies: z
          .array(
            z.string().superRefine((value, ctx) => {
              const problem = rangeProblem(value);
              if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
            }),
          )
          .optional()
          .describe("the load balancers whose X-Forwarded-Proto, X-Forwarded-Host and X-Real-IP are believed"),
        session_idle_minutes: z.number().positive().max(10_080).optional(),
        max_sessions: z.number().int().min(1).max(10_000).optional(),
        max_sessions_per_client: z.number().int().min(1).max(10_000).optional(),
      })
      .strict()
      .optional(),
    tabs: z
      .object({
        lease_idle_minutes: z.number().positive().max(10_080).optional(),
      })
      .strict()
      .optional(),
    bridge: z
      .object({
        extension_ids: z.array(z.string().regex(/^[a-p]{32}$/, "an extension ID is 32 letters a-p")).optional(),
        call_timeout_ms: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    read: z
      .object({
        max_chars: z.number().int().min(1000).max(1_000_000).optional(),
        load_timeout_ms: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
    policy: z
      .object({
        deny: denySchema.optional(),
        read: z
          .object({
            enabled: z.boolean().optional(),
            top_sites: z.number().int().min(0).optional(),
            allow: z.record(z.string(), z.array(regex)).optional(),
          })
          .strict()
          .optional(),
        write: writeGrantsSchema
          .extend({
            // Tools web pages offer (page tools, pages/): which of an origin's tools agents may call.
            page_tools: pageToolGrantsSchema.optional(),
          })
          .strict()
          .optional(),
        // Where a write no grant allows is asked of the user instead of refused (policy/askPolicy.ts).
        ask: z
          .object({
            timeout_s: z.number().int().min(5).max(600).optional(),
            read: z.array(z.string()).optional(),
            write: z.array(z.string()).optional(),
            elicit: z.boolean().optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    // Per-user policy over the base (config/userPolicies.ts): more deny entries, more write grants.
    users: userPoliciesSchema(denySchema, writeGrantsSchema).optional(),
    audit: z.object({ enabled: z.boolean().optional() }).strict().optional(),
    // A team's broker: users, tokens and pairings in PostgreSQL rather than <data-dir>/store.db (store/).
    store: z
      .object({
        postgres_url: z
          .string()
          .regex(/^postgres(ql)?:\/\/\S+$/, "a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE (or leave it out and set TABRELAY_POSTGRES_URL)")
          .optional(),
      })
      .strict()
      .optional(),
    // Several brokers behind a load balancer (cluster/cluster.ts): presence, forwarded calls and MCP sessions in Redis.
    cluster: z
      .object({
        redis_url: z
          .string()
          .regex(/^rediss?:\/\/\S+$/, "a Redis URL: redis://:PASSWORD@HOST:PORT (or leave it out and set TABRELAY_REDIS_URL)")
          .optional(),
        broker_id: z
          .string()
          .regex(/^[A-Za-z0-9._-]{1,40}$/, "letters, digits, . _ - (at most 40)")
          .optional(),
      })
      .strict()
      .optional(),
    // OAuth 2.1 resource server (auth/oauth.ts): access tokens from this issuer act as the user with their subject.
    auth: z
      .object({
        oauth: z
          .object({
            issuer: z.string().url(),
            resource: z.string().url().describe("this broker's MCP URL as clients reach it, the tokens' audience"),
            jwks_url: z.string().url().optional(),
            scopes: z.array(z.string().min(1)).optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    code_mode: codeModeFileSchema.optional(),
    browsers: browsersFileSchema.optional(),
    chat: chatFileSchema.optional(),
    pages: pagesFileSchema.optional(),
    screenshots: z
      .object({
        enabled: z.boolean().optional(),
        ttl_seconds: z.number().int().min(10).max(86_400).optional(),
        quota_mb: z.number().min(1).max(100_000).optional(),
        max_pixels: z.number().int().min(1).optional(),
        max_mb: z.number().min(0.1).max(200).optional(),
        s3: z
          .object({
            bucket: z.string().min(1),
            region: z.string().min(1).default("us-east-1"),
            endpoint: z.string().url().optional(),
            force_path_style: z.boolean().optional(),
            prefix: z.string().optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type ConfigFile = z.infer<typeof fileSchema>;

/** The file's schema, for the template's test (every key the file may hold is in the template a first start writes). */
export const configFileSchema: z.ZodType<ConfigFile> = fileSchema;

export interface BrokerConfig {
  host: string;
  port: number;
  dataDir: string;
  configPath: string;
  mcpToken: string;
  pairingToken: string;
  allowedOrigins: string[];
  /** Host header values /mcp accepts (DNS-rebinding defence). */
  allowedHosts: string[];
  /** Peers (addresses, CIDR ranges) whose forwarded headers are believed: the load balancer's (http/forwarded.ts). */
  trustedProxies: string[];
  /** HTTP MCP sessions: expired after idleMs without a call in flight or an open GET stream; capped in all and per client. */
  mcpSessions: { idleMs: number; max: number; maxPerClient: number };
  /** A tab's lease ends when its MCP session leaves it unused this long (the tab stays open, free to any session). */
  tabLeaseIdleMs: number;
  extensionIds: string[];
  callTimeoutMs: number;
  /**
   * How refusals name where the config lives, so the user knows what to edit: "config.yaml", or on a stateless host
   * "the TABRELAY_CONFIG binding".
   */
  configName: string;
  readMaxChars: number;
  loadTimeoutMs: number;
  policy: CompiledReadPolicy;
  writePolicy: CompiledWritePolicy;
  /** policy.ask: where a write without a grant is asked of the user, and for how long. */
  ask: CompiledAskPolicy;
  /** Users whose policy differs from the base (config `users:`), by name: use configFor (config/userPolicies.ts). */
  userPolicies: ReadonlyMap<string, UserPolicy>;
  rankingPath: string;
  screenshots: ScreenshotSettings;
  /** browser_run: on or off, budgets (defaults and caps), the commands a program may call. */
  codeMode: CodeModeSettings;
  /** Browsers the model starts and stops (browser_start, ...): absent when config names no `browsers.source`. */
  browserSource?: BrowserSourceSettings;
  /** The dashboard's chat panel: on or off, the model's name, its step budget (the key comes from the environment). */
  chat: ChatSettings;
  /** Page tools: the origins that may offer them over /page, and which of their tools agents may call. */
  pages: PagesSettings;
  /** Where users, tokens and pairings live: PostgreSQL when a URL is given, else <data-dir>/store.db. */
  store: { postgresUrl?: string };
  /** A cluster member when redisUrl is set (cluster/cluster.ts); brokerId names it in presence and logs. */
  cluster: { redisUrl?: string; brokerId?: string };
  /** OAuth access tokens accepted besides the static tokens, when configured. */
  oauth?: { issuer: string; resource: string; jwksUrl?: string; scopes?: string[] };
}

export interface ScreenshotSettings {
  enabled: boolean;
  ttlMs: number;
  quotaBytes: number;
  maxPixels: number;
  maxBytes: number;
  /** Where the images go; S3 credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. */
  s3?: { bucket: string; region: string; endpoint?: string; forcePathStyle?: boolean; prefix?: string };
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^(::ffff:)?127\.\d+\.\d+\.\d+$/i.test(host);
}
/**
 * config.yaml's text (from `source`: its path, or the binding it came from), parsed and validated; an unknown key
 * or a bad regex stops start-up naming the source, the key and the reason. Empty text is an empty config.
 */
export function parseConfigText(text: string, source: string): ConfigFile {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${source}: not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (raw === null || raw === undefined) return {};
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const lineOf = yamlLines(text);
    const lines = parsed.error.issues.map((issue) => {
      const key = issue.path.map(String).join(".") || "(top level)";
      const keys = issue.code === "unrecognized_keys" ? ` ${issue.keys.join(", ")}` : "";
      const line = lineOf(issue.path, issue.code === "unrecognized_keys" ? issue.keys[0] : undefined);
      return `  ${line === undefined ? "" : `line ${line}: `}${key}${keys}: ${issue.message}`;
    });
    throw new ConfigError(
      `${source}: invalid configuration:\n${lines.join("\n")}\nFix the file (see docs/configuration.md): a running tabrelay applies it once it is valid; a stopped one starts with it.`,
    );
  }
  return parsed.data;
}

/**
 * The line (1-based) of the node at `path` in YAML `text` (of the key `key` in the map there, for an unknown key),
 * or of its nearest parent that is in the text (a missing key's map).
 */
function yamlLines(text: string): (path: readonly PropertyKey[], key?: string) => number | undefined {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter });
  const lineAt = (offset: number | undefined) => (offset === undefined ? undefined : counter.linePos(offset).line);
  return (path, key) => {
    for (let depth = path.length; depth >= 0; depth--) {
      const node: unknown = doc.getIn(
        path.slice(0, depth).map((p) => (typeof p === "symbol" ? String(p) : p)),
        true,
      );
      if (!isNode(node)) continue;
      if (depth === path.length && key !== undefined && isMap(node)) {
        const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === key);
        if (pair && isScalar(pair.key)) return lineAt(pair.key.range?.[0]);
      }
      return lineAt(node.range?.[0]);
    }
    return undefined;
  };
}

/** Where the broker runs and what it was given besides the file: every BrokerConfig field the file does not set. */
export interface ConfigPlace {
  host: string;
  port: number;
  dataDir: string;
  /** Where the file came from: its path on Node, a binding's name elsewhere; errors name it. */
  configPath: string;
  mcpToken: string;
  pairingToken: string;
  /** Where the ranking came from (a path on Node). */
  rankingPath: string;
}

/** What the file sets, compiled: every BrokerConfig field but the ConfigPlace ones. */
export type ConfigSettings = Omit<BrokerConfig, keyof ConfigPlace>;

/**
 * Compiles the file's settings (read and write policy over `rankingDomains`, code mode, page tools, ...); a rule
 * that does not compile stops start-up naming `source`. The Node loader calls it before it creates token files, so
 * a config that fails leaves none behind.
 */
export function compileSettings(file: ConfigFile, source: string, rankingDomains: readonly string[], configName = "config.yaml"): ConfigSettings {
  const readInput: ReadPolicyInput = {
    configName,
    deny: (file.policy?.deny ?? []).map((d) => ({ host: d.host, path: d.path })),
    read: {
      enabled: file.policy?.read?.enabled ?? true,
      top_sites: file.policy?.read?.top_sites ?? 500,
      allow: file.policy?.read?.allow ?? {},
    },
  };
  let policy: CompiledReadPolicy;
  try {
    policy = compileReadPolicy(readInput, rankingDomains);
  } catch (error) {
    throw new ConfigError(`${source}: policy: ${error instanceof Error ? error.message : String(error)}`);
  }
  const writeInput: WritePolicyInput = {
    configName,
    deny: (file.policy?.deny ?? []).map((d) => ({ host: d.host, path: d.path })),
    write: {
      ...(file.policy?.write?.click ? { click: file.policy.write.click } : {}),
      ...(file.policy?.write?.type ? { type: file.policy.write.type } : {}),
      ...(file.policy?.write?.keys ? { keys: file.policy.write.keys } : {}),
      ...(file.policy?.write?.upload ? { upload: file.policy.write.upload } : {}),
      ...(file.policy?.write?.eval ? { eval: file.policy.write.eval } : {}),
    },
  };
  let writePolicy: CompiledWritePolicy;
  try {
    writePolicy = compileWritePolicy(writeInput);
  } catch (error) {
    throw new ConfigError(`${source}: policy.write: ${error instanceof Error ? error.message : String(error)}`);
  }
  let ask: CompiledAskPolicy;
  try {
    ask = compileAskPolicy(file.policy?.ask);
  } catch (error) {
    throw new ConfigError(`${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let userPolicies: ReadonlyMap<string, UserPolicy>;
  try {
    userPolicies = compileUserPolicies(file.users ?? {}, { read: readInput, write: writeInput }, rankingDomains);
  } catch (error) {
    throw new ConfigError(`${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let codeMode: CodeModeSettings;
  try {
    codeMode = { ...codeModeSettings(file.code_mode, COMMAND_NAMES), configName };
  } catch (error) {
    throw new ConfigError(`${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let pages: PagesSettings;
  try {
    pages = pagesSettings(file.pages, file.policy?.write?.page_tools);
  } catch (error) {
    throw new ConfigError(`${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    allowedOrigins: file.mcp?.allowed_origins ?? [],
    allowedHosts: file.mcp?.allowed_hosts ?? [],
    trustedProxies: file.mcp?.trusted_proxies ?? [],
    mcpSessions: {
      idleMs: Math.round((file.mcp?.session_idle_minutes ?? 30) * 60_000),
      max: file.mcp?.max_sessions ?? 64,
      maxPerClient: file.mcp?.max_sessions_per_client ?? 16,
    },
    tabLeaseIdleMs: Math.round((file.tabs?.lease_idle_minutes ?? 30) * 60_000),
    extensionIds: file.bridge?.extension_ids ?? [BUILTIN_EXTENSION_ID],
    callTimeoutMs: file.bridge?.call_timeout_ms ?? 30_000,
    configName,
    readMaxChars: file.read?.max_chars ?? 40_000,
    loadTimeoutMs: file.read?.load_timeout_ms ?? 20_000,
    policy,
    writePolicy,
    ask,
    userPolicies,
    codeMode,
    ...(file.browsers ? { browserSource: browserSourceSettings(file.browsers) } : {}),
    chat: chatSettings(file.chat),
    pages,
    store: file.store?.postgres_url ? { postgresUrl: file.store.postgres_url } : {},
    cluster: {
      ...(file.cluster?.redis_url ? { redisUrl: file.cluster.redis_url } : {}),
      ...(file.cluster?.broker_id ? { brokerId: file.cluster.broker_id } : {}),
    },
    ...(file.auth?.oauth
      ? {
          oauth: {
            issuer: file.auth.oauth.issuer,
            resource: file.auth.oauth.resource,
            ...(file.auth.oauth.jwks_url ? { jwksUrl: file.auth.oauth.jwks_url } : {}),
            ...(file.auth.oauth.scopes ? { scopes: file.auth.oauth.scopes } : {}),
          },
        }
      : {}),
    screenshots: {
      enabled: file.screenshots?.enabled ?? false,
      ttlMs: (file.screenshots?.ttl_seconds ?? 300) * 1000,
      quotaBytes: Math.round((file.screenshots?.quota_mb ?? 200) * 1024 * 1024),
      maxPixels: file.screenshots?.max_pixels ?? 40_000_000,
      maxBytes: Math.round((file.screenshots?.max_mb ?? 25) * 1024 * 1024),
      ...(file.screenshots?.s3
        ? {
            s3: {
              bucket: file.screenshots.s3.bucket,
              region: file.screenshots.s3.region,
              ...(file.screenshots.s3.endpoint ? { endpoint: file.screenshots.s3.endpoint } : {}),
              ...(file.screenshots.s3.force_path_style !== undefined ? { forcePathStyle: file.screenshots.s3.force_path_style } : {}),
              ...(file.screenshots.s3.prefix ? { prefix: file.screenshots.s3.prefix } : {}),
            },
          }
        : {}),
    },
  };
}

/** A BrokerConfig from a parsed file (parseConfigText), the place, and the top-sites ranking (domains, best first). */
export function buildConfig(file: ConfigFile, inputs: ConfigPlace & { rankingDomains: readonly string[] }): BrokerConfig {
  const { rankingDomains, ...place } = inputs;
  // A config given as text (a stateless host's binding) is named by its binding in refusals; a file as config.yaml.
  return { ...place, ...compileSettings(file, place.configPath, rankingDomains, place.dataDir === "" ? `the ${place.configPath} binding` : "config.yaml") };
}

export interface TextConfigOptions {
  /** Where the text came from (a binding's name): errors name it. */
  source: string;
  mcpToken: string;
  /** The top-sites ranking (domains, best first): policy/topSites.ts parseRankingCsv of the shipped CSV. */
  ranking: readonly string[];
  /** Only a broker with a /bridge uses one. */
  pairingToken?: string;
}

/**
 * A stateless host's config (the Workers entry): config.yaml's text from a binding, validated like the file with the
 * same messages, with no data dir (dataDir is empty) and host and port as the text says (they serve nothing there).
 */
export function buildConfigFromText(text: string, options: TextConfigOptions): BrokerConfig {
  const file = parseConfigText(text, options.source);
  return buildConfig(file, {
    host: file.host ?? "127.0.0.1",
    port: file.port ?? 9333,
    dataDir: "",
    configPath: options.source,
    mcpToken: options.mcpToken,
    pairingToken: options.pairingToken ?? "",
    rankingPath: "the shipped top-sites ranking",
    rankingDomains: options.ranking,
  });
}

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { compileReadPolicy, type CompiledReadPolicy } from "../policy/readPolicy.js";
import { patternProblem } from "../policy/text.js";
import { parseRankingCsv } from "../policy/topSites.js";
import { loadRanking, shippedRankingPath } from "./ranking.js";
import { compileWritePolicy, type CompiledWritePolicy } from "../policy/writePolicy.js";
import { TOKEN_ADVICE, weakTokenReason } from "../util/secrets.js";
import { COMMAND_NAMES } from "../code/commands.js";
import { codeModeFileSchema, codeModeSettings, type CodeModeSettings } from "./codeMode.js";
import { browserSourceSettings, browsersFileSchema, type BrowserSourceSettings } from "./browsers.js";
import { chatFileSchema, chatSettings, type ChatSettings } from "./chat.js";
import { pageToolGrantsSchema, pagesFileSchema, pagesSettings, type PagesSettings } from "./pages.js";
import { readOwnFile, secureDataDir, writeSecretFile, type FileCheck } from "./fileSafety.js";

/** The extension's ID, fixed by the `key` in its manifest; the bridge accepts only these origins. */
export const BUILTIN_EXTENSION_ID = "bkcjhkpmfjmfjkljdlooigoilajjfhpb";

// Config patterns are RE2 syntax, matched in linear time (policy/text.ts).
const regex = z.string().superRefine((value, ctx) => {
  const problem = patternProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: `not a valid regular expression: ${problem}` });
});

const fileSchema = z
  .object({
    host: z.string().optional().describe("address to listen on"),
    port: z.number().int().min(0).max(65535).optional(),
    mcp: z
      .object({
        allowed_origins: z.array(z.string()).optional(),
        allowed_hosts: z.array(z.string()).optional(),
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
        deny: z.array(z.object({ host: z.string(), path: regex.default(".*") }).strict()).optional(),
        read: z
          .object({
            enabled: z.boolean().optional(),
            top_sites: z.number().int().min(0).optional(),
            allow: z.record(z.string(), z.array(regex)).optional(),
          })
          .strict()
          .optional(),
        write: z
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
                    label: z.string({ error: 'missing or not a string: the regex the element\'s visible text and accessible name must match, e.g. "^Search$"' }).pipe(regex),
                  })
                  .strict(),
              )
              .optional(),
            // Tools web pages offer (page tools, pages/): which of an origin's tools agents may call.
            page_tools: pageToolGrantsSchema.optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    audit: z.object({ enabled: z.boolean().optional() }).strict().optional(),
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
  /** HTTP MCP sessions: expired after idleMs without a call in flight or an open GET stream; capped in all and per client. */
  mcpSessions: { idleMs: number; max: number; maxPerClient: number };
  /** A tab's lease ends when its MCP session leaves it unused this long (the tab stays open, free to any session). */
  tabLeaseIdleMs: number;
  extensionIds: string[];
  callTimeoutMs: number;
  readMaxChars: number;
  loadTimeoutMs: number;
  policy: CompiledReadPolicy;
  writePolicy: CompiledWritePolicy;
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

export interface ConfigOptions {
  host?: string;
  port?: number;
  configPath?: string;
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Where a problem tabrelay fixed on its own is reported (default: a `tabrelay: warning:` line on stderr). */
  warn?: (message: string) => void;
}

function stderrWarning(message: string): void {
  process.stderr.write(`tabrelay: warning: ${message}\n`);
}

/** The value of a file check, its warnings reported; a refusal stops start-up. */
function checked<T>(result: FileCheck<T>, warn: (message: string) => void): T {
  if (!result.ok) throw new ConfigError(result.message);
  for (const warning of result.warnings) warn(warning);
  return result.value;
}

export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env["TABRELAY_DATA_DIR"] || join(homedir(), ".tabrelay"));
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^(::ffff:)?127\.\d+\.\d+\.\d+$/i.test(host);
}

/**
 * Reads and validates the YAML file; an unknown key or a bad regex stops start-up naming file, key and reason.
 * The file must be safe to trust (fileSafety.ts); `named` is a path the user gave with --config, whose
 * symlinks are followed.
 */
export function readConfigFile(path: string, options: { named?: boolean; warn?: (message: string) => void } = {}): ConfigFile {
  const text = checked(readOwnFile(path, "config", { followSymlink: options.named ?? false }), options.warn ?? stderrWarning);
  if (text === undefined) return {};
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${path}: not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (raw === null || raw === undefined) return {};
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const key = issue.path.map(String).join(".") || "(top level)";
      const keys = issue.code === "unrecognized_keys" ? ` ${issue.keys.join(", ")}` : "";
      return `  ${key}${keys}: ${issue.message}`;
    });
    throw new ConfigError(`${path}: invalid configuration:\n${lines.join("\n")}\nFix the file (see README, "Configuration") and start again.`);
  }
  return parsed.data;
}

function loadOrCreateToken(dataDir: string, file: string, envName: string, env: NodeJS.ProcessEnv, warn: (message: string) => void): string {
  const fromEnv = env[envName];
  if (fromEnv) {
    const weak = weakTokenReason(fromEnv);
    if (weak !== undefined) throw new ConfigError(`${envName} is too weak to use: ${weak}; ${TOKEN_ADVICE}`);
    return fromEnv;
  }
  const path = join(dataDir, file);
  const stored = checked(readOwnFile(path, "token"), warn)?.trim();
  if (stored) {
    const weak = weakTokenReason(stored);
    if (weak !== undefined) throw new ConfigError(`the token file ${path} holds a token too weak to use: ${weak}; delete it (rm ${path}) and tabrelay creates a new one, or write a strong one into it (openssl rand -hex 32 > ${path})`);
    return stored;
  }
  const token = randomBytes(24).toString("base64url"); // 192 bits
  writeSecretFile(path, `${token}\n`);
  return token;
}

/** Creates the data dir 0700 or checks and, where it can, fixes the existing one (fileSafety.ts). */
export function ensureDataDir(dataDir: string, warn: (message: string) => void = stderrWarning): void {
  checked(secureDataDir(dataDir), warn);
}

function readUserRanking(path: string, warn: (message: string) => void): string[] | undefined {
  const text = checked(readOwnFile(path, "config"), warn);
  if (text === undefined) return undefined;
  try {
    return parseRankingCsv(text);
  } catch (error) {
    throw new ConfigError(`${path}: ${error instanceof Error ? error.message : String(error)}; fix it, or delete it to use the shipped ranking`);
  }
}

export function rankingFile(dataDir: string): string {
  return join(dataDir, "top-sites.csv");
}

export function loadConfig(options: ConfigOptions = {}): BrokerConfig {
  const env = options.env ?? process.env;
  const warn = options.warn ?? stderrWarning;
  const dataDir = options.dataDir ? resolve(options.dataDir) : defaultDataDir(env);
  ensureDataDir(dataDir, warn);
  const configPath = resolve(options.configPath ?? join(dataDir, "config.yaml"));
  if (options.configPath && !existsSync(configPath)) {
    throw new ConfigError(`${configPath}: no such file; pass an existing --config or omit it to use ${join(dataDir, "config.yaml")}`);
  }
  const file = readConfigFile(configPath, { named: options.configPath !== undefined, warn });
  const host = options.host ?? file.host ?? "127.0.0.1";
  const port = options.port ?? file.port ?? 9333;
  const userRanking = rankingFile(dataDir);
  const userDomains = readUserRanking(userRanking, warn);
  const rankingPath = userDomains ? userRanking : shippedRankingPath();
  let policy: CompiledReadPolicy;
  try {
    policy = compileReadPolicy(
      {
        deny: (file.policy?.deny ?? []).map((d) => ({ host: d.host, path: d.path })),
        read: {
          enabled: file.policy?.read?.enabled ?? true,
          top_sites: file.policy?.read?.top_sites ?? 500,
          allow: file.policy?.read?.allow ?? {},
        },
      },
      userDomains ?? loadRanking(rankingPath),
    );
  } catch (error) {
    throw new ConfigError(`${configPath}: policy: ${error instanceof Error ? error.message : String(error)}`);
  }
  let writePolicy: CompiledWritePolicy;
  try {
    writePolicy = compileWritePolicy({
      deny: (file.policy?.deny ?? []).map((d) => ({ host: d.host, path: d.path })),
      write: {
        ...(file.policy?.write?.click ? { click: file.policy.write.click } : {}),
        ...(file.policy?.write?.type ? { type: file.policy.write.type } : {}),
        ...(file.policy?.write?.keys ? { keys: file.policy.write.keys } : {}),
        ...(file.policy?.write?.upload ? { upload: file.policy.write.upload } : {}),
        ...(file.policy?.write?.eval ? { eval: file.policy.write.eval } : {}),
      },
    });
  } catch (error) {
    throw new ConfigError(`${configPath}: policy.write: ${error instanceof Error ? error.message : String(error)}`);
  }
  let codeMode: CodeModeSettings;
  try {
    codeMode = codeModeSettings(file.code_mode, COMMAND_NAMES);
  } catch (error) {
    throw new ConfigError(`${configPath}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let pages: PagesSettings;
  try {
    pages = pagesSettings(file.pages, file.policy?.write?.page_tools);
  } catch (error) {
    throw new ConfigError(`${configPath}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const mcpToken = loadOrCreateToken(dataDir, "mcp-token", "TABRELAY_MCP_TOKEN", env, warn);
  const pairingToken = loadOrCreateToken(dataDir, "pairing-token", "TABRELAY_PAIRING_TOKEN", env, warn);
  return {
    host,
    port,
    dataDir,
    configPath,
    mcpToken,
    pairingToken,
    allowedOrigins: file.mcp?.allowed_origins ?? [],
    allowedHosts: file.mcp?.allowed_hosts ?? [],
    mcpSessions: {
      idleMs: Math.round((file.mcp?.session_idle_minutes ?? 30) * 60_000),
      max: file.mcp?.max_sessions ?? 64,
      maxPerClient: file.mcp?.max_sessions_per_client ?? 16,
    },
    tabLeaseIdleMs: Math.round((file.tabs?.lease_idle_minutes ?? 30) * 60_000),
    extensionIds: file.bridge?.extension_ids ?? [BUILTIN_EXTENSION_ID],
    callTimeoutMs: file.bridge?.call_timeout_ms ?? 30_000,
    readMaxChars: file.read?.max_chars ?? 40_000,
    loadTimeoutMs: file.read?.load_timeout_ms ?? 20_000,
    policy,
    writePolicy,
    rankingPath,
    codeMode,
    ...(file.browsers ? { browserSource: browserSourceSettings(file.browsers) } : {}),
    chat: chatSettings(file.chat),
    pages,
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

// The Node broker's configuration: the data dir (created 0700, checked), config.yaml and the user's ranking read from
// it (files tabrelay trusts only when they are safe: fileSafety.ts), and the tokens from the environment or their
// files (created on first start). What the file says is parsed and compiled by build.ts, which the runtime-neutral
// core shares with the Workers entry.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parseRankingCsv } from "../policy/topSites.js";
import { OAuthResource } from "../auth/oauth.js";
import { loadRanking, shippedRankingPath } from "./ranking.js";
import { TOKEN_ADVICE, weakTokenReason } from "../util/secrets.js";
import { compileSettings, ConfigError, parseConfigText, type BrokerConfig, type ConfigFile } from "./build.js";
import { readOwnFile, secureDataDir, writeSecretFile, type FileCheck } from "./fileSafety.js";
import { CONFIG_TEMPLATE } from "./template.js";

export {
  BUILTIN_EXTENSION_ID,
  buildConfig,
  buildConfigFromText,
  compileSettings,
  ConfigError,
  isLoopback,
  parseConfigText,
  type BrokerConfig,
  type ConfigFile,
  type ConfigPlace,
  type ConfigSettings,
  type ScreenshotSettings,
  type TextConfigOptions,
} from "./build.js";

/**
 * The Node broker's config: what every host compiles (build.ts) and the dashboard's token, which only the Node broker
 * needs (a stateless host serves no dashboard). The implicit user logs in to the dashboard with it, never with the MCP
 * token: that one is what agents hold (written into their config files), and the dashboard answers for the person.
 */
export interface NodeBrokerConfig extends BrokerConfig {
  /** `<data-dir>/dashboard-token` or TABRELAY_DASHBOARD_TOKEN; empty when a look-only load found none. */
  dashboardToken: string;
}

export interface ConfigOptions {
  host?: string;
  port?: number;
  configPath?: string;
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Where a problem tabrelay fixed on its own is reported (default: a `tabrelay: warning:` line on stderr). */
  warn?: (message: string) => void;
  /**
   * false: read what is there and create nothing (no data dir, no token file, no config template); a missing token
   * is a ConfigError saying to start tabrelay once. For commands that only look (`mcp-config`, `doctor`).
   */
  create?: boolean;
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

/**
 * Reads and validates the YAML file; an unknown key or a bad regex stops start-up naming file, key and reason.
 * The file must be safe to trust (fileSafety.ts); `named` is a path the user gave with --config, whose
 * symlinks are followed.
 */
export function readConfigFile(path: string, options: { named?: boolean; warn?: (message: string) => void } = {}): ConfigFile {
  const text = checked(readOwnFile(path, "config", { followSymlink: options.named ?? false }), options.warn ?? stderrWarning);
  return text === undefined ? {} : parseConfigText(text, path);
}

function loadOrCreateToken(dataDir: string, file: string, envName: string, env: NodeJS.ProcessEnv, warn: (message: string) => void, create: boolean): string {
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
    if (weak !== undefined)
      throw new ConfigError(
        `the token file ${path} holds a token too weak to use: ${weak}; delete it (rm ${path}) and tabrelay creates a new one, or write a strong one into it (openssl rand -hex 32 > ${path})`,
      );
    return stored;
  }
  if (!create)
    throw new ConfigError(`no ${file} in ${dataDir} yet: start tabrelay once (tabrelay start, or tabrelay serve) and it creates one, or set ${envName}`);
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

export function loadConfig(options: ConfigOptions = {}): NodeBrokerConfig {
  const env = options.env ?? process.env;
  const warn = options.warn ?? stderrWarning;
  const create = options.create ?? true;
  const dataDir = options.dataDir ? resolve(options.dataDir) : defaultDataDir(env);
  if (create) ensureDataDir(dataDir, warn);
  else if (!existsSync(dataDir))
    throw new ConfigError(`no data dir at ${dataDir} yet: start tabrelay once (tabrelay start, or tabrelay serve) and it creates one`);
  const configPath = resolve(options.configPath ?? join(dataDir, "config.yaml"));
  if (options.configPath && !existsSync(configPath)) {
    throw new ConfigError(`${configPath}: no such file; pass an existing --config or omit it to use ${join(dataDir, "config.yaml")}`);
  }
  // A first start writes the file a person edits: every setting commented out at its default (template.ts).
  if (create && !options.configPath && !existsSync(configPath)) writeSecretFile(configPath, CONFIG_TEMPLATE);
  const file = readConfigFile(configPath, { named: options.configPath !== undefined, warn });
  const host = options.host ?? file.host ?? "127.0.0.1";
  const port = options.port ?? file.port ?? 9333;
  const userRanking = rankingFile(dataDir);
  const userDomains = readUserRanking(userRanking, warn);
  const rankingPath = userDomains ? userRanking : shippedRankingPath();
  let rankingDomains: readonly string[];
  try {
    rankingDomains = userDomains ?? loadRanking(rankingPath);
  } catch (error) {
    // As the policy's own problems: the ranking is what top_sites reads.
    throw new ConfigError(`${configPath}: policy: ${error instanceof Error ? error.message : String(error)}`);
  }
  const settings = compileSettings(file, configPath, rankingDomains, configPath);
  try {
    // Checked at start-up, not at the first token (and here, not in build.ts: jose stays out of the Workers bundle).
    if (settings.oauth) new OAuthResource(settings.oauth);
  } catch (error) {
    throw new ConfigError(`${configPath}: auth.oauth: ${error instanceof Error ? error.message : String(error)}`);
  }
  const mcpToken = loadOrCreateToken(dataDir, "mcp-token", "TABRELAY_MCP_TOKEN", env, warn, create);
  // A look-only command (create: false) needs no pairing code: none is made, and none found is none.
  const pairingToken =
    create || env["TABRELAY_PAIRING_TOKEN"] || existsSync(join(dataDir, "pairing-token"))
      ? loadOrCreateToken(dataDir, "pairing-token", "TABRELAY_PAIRING_TOKEN", env, warn, create)
      : "";
  // The same for the dashboard's token (an older data dir has none until the broker's next start creates it).
  const dashboardToken =
    create || env["TABRELAY_DASHBOARD_TOKEN"] || existsSync(join(dataDir, "dashboard-token"))
      ? loadOrCreateToken(dataDir, "dashboard-token", "TABRELAY_DASHBOARD_TOKEN", env, warn, create)
      : "";
  // One secret for both doors would let an agent, which holds the MCP token, log in where the person answers for it.
  if (dashboardToken && (dashboardToken === mcpToken || dashboardToken === pairingToken)) {
    const path = join(dataDir, "dashboard-token");
    const [from, fix] = env["TABRELAY_DASHBOARD_TOKEN"]
      ? ["TABRELAY_DASHBOARD_TOKEN", TOKEN_ADVICE]
      : [`the token file ${path}`, `delete it (rm ${path}) and tabrelay creates a new one`];
    throw new ConfigError(
      `${from} holds the ${dashboardToken === mcpToken ? "MCP token" : "pairing code"}: the dashboard needs a token of its own (agents hold the MCP token); ${fix}`,
    );
  }
  // The database URL carries a password: from the environment it never needs to sit in config.yaml.
  const postgresUrl = env["TABRELAY_POSTGRES_URL"]?.trim();
  if (postgresUrl) {
    if (!/^postgres(ql)?:\/\/\S+$/.test(postgresUrl))
      throw new ConfigError("TABRELAY_POSTGRES_URL is not a PostgreSQL URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE");
    settings.store = { postgresUrl };
  }
  const redisUrl = env["TABRELAY_REDIS_URL"]?.trim();
  if (redisUrl) {
    if (!/^rediss?:\/\/\S+$/.test(redisUrl)) throw new ConfigError("TABRELAY_REDIS_URL is not a Redis URL: redis://:PASSWORD@HOST:PORT");
    settings.cluster = { ...settings.cluster, redisUrl };
  }
  // A screenshot link is fetched through the load balancer from whichever broker it reaches: a picture kept on one
  // broker's disk would be a 404 on the others.
  if (settings.cluster.redisUrl && settings.screenshots.enabled && !settings.screenshots.s3) {
    throw new ConfigError(
      `${configPath}: screenshots: in a cluster (cluster.redis_url) screenshots need screenshots.s3, shared by every broker: a link must work on whichever broker it reaches; add screenshots.s3 or turn screenshots off`,
    );
  }
  return { host, port, dataDir, configPath, mcpToken, pairingToken, dashboardToken, rankingPath, ...settings };
}

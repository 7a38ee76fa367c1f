// `tabrelay doctor`: checks this install and explains, one line each, what is fine, what is off and how to fix it.
// It changes nothing: files are judged by lstat (the broker's own loader would fix some modes on the way), and
// the config is loaded only where that loader would not have to fix or create anything.
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  BrokerNotProven,
  ConfigError,
  VERSION,
  builtExtensionDir,
  builtFirefoxExtensionDir,
  checkBroker,
  defaultDataDir,
  findChromium,
  findFirefox,
  loadConfig,
  type BrokerConfig,
} from "@tabrelay/broker";
import {
  browserChecks,
  browserVersionCheck,
  configFileCheck,
  dataDirCheck,
  nodeCheck,
  tokenFileCheck,
  type Check,
  type FileFacts,
  type HealthBrowser,
} from "../doctorChecks.js";
import { rootPackageJson } from "../install.js";
import { COMMON_OPTIONS, EXIT, UsageError, parse, printHelp } from "./shared.js";

export const DOCTOR_HELP = `Usage: tabrelay doctor [--host H] [--port P] [--config FILE] [--data-dir DIR]

Checks, one line each (ok / warn / fail, with the fix): Node's version; the Chromium or Chrome tabrelay would
launch (CHROME_PATH honoured) and its version; the built extension; Firefox (FIREFOX_PATH honoured) and the
extension's Firefox build; the config; the data dir's and token files'
permissions; the port (free, or a tabrelay broker answering: its version); the browsers connected to it and their
extension's version. Changes nothing. Exit 0 when nothing fails, 1 otherwise.`;

/** Tokens handed to the config loader in place of a token file it would have to create or fix (never used). */
const STAND_IN = "doctor-stand-in-token-0123456789abcdef";
/** The dashboard's stand-in differs from the others: the loader refuses a dashboard token equal to the MCP token. */
const DASHBOARD_STAND_IN = "doctor-stand-in-dashboard-token-0123456789abcdef";

/** lstat's view of a file; `follow`: stat's, for the data dir (a symlinked data dir is followed, as the broker does). */
function facts(path: string, follow = false): FileFacts {
  try {
    const stats = follow ? statSync(path) : lstatSync(path);
    return {
      path,
      exists: true,
      symlink: stats.isSymbolicLink(),
      kind: stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other",
      mode: stats.mode & 0o7777,
      uid: stats.uid,
    };
  } catch {
    return { path, exists: false };
  }
}

function portOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a number from 0 to 65535, not ${JSON.stringify(value)}`);
  return port;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function nodeLine(): Check {
  const engines = rootPackageJson()?.["engines"];
  const range = engines && typeof engines === "object" ? Reflect.get(engines, "node") : undefined;
  return nodeCheck(process.version, typeof range === "string" ? range : undefined, new Date());
}

function browserLines(env: NodeJS.ProcessEnv, minimumChrome: number): Check[] {
  let path: string;
  try {
    path = findChromium(env);
  } catch (error) {
    const explicit = !!env["CHROME_PATH"];
    return [
      {
        status: explicit ? "fail" : "warn",
        label: "browser",
        message: explicit ? errorText(error) : `${errorText(error)} (tabrelay start and launch need one; serve with your own Chrome does not)`,
      },
    ];
  }
  const lines: Check[] = [{ status: "ok", label: "browser", message: `${path}${env["CHROME_PATH"] ? " (from CHROME_PATH)" : ""}` }];
  const result = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 15_000 });
  if (result.error || result.status !== 0) {
    const why = result.error ? result.error.message : `exit ${result.status}: ${(result.stderr ?? "").trim().split("\n")[0] ?? ""}`;
    lines.push({
      status: "fail",
      label: "browser version",
      message: `${path} --version failed (${why}); check it is a Chromium or Chrome binary this machine can run`,
    });
  } else {
    lines.push(browserVersionCheck(path, result.stdout, minimumChrome));
  }
  return lines;
}

function extensionLines(env: NodeJS.ProcessEnv): { checks: Check[]; minimumChrome: number } {
  let dir: string;
  try {
    dir = builtExtensionDir(env);
  } catch (error) {
    return { checks: [{ status: "fail", label: "extension", message: errorText(error) }], minimumChrome: 116 };
  }
  let manifest: Record<string, unknown> = {};
  try {
    const raw: unknown = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
    if (raw && typeof raw === "object") manifest = Object.fromEntries(Object.entries(raw));
  } catch (error) {
    return {
      checks: [{ status: "fail", label: "extension", message: `${join(dir, "manifest.json")} is not valid JSON (${errorText(error)}); run npm run build` }],
      minimumChrome: 116,
    };
  }
  const version = typeof manifest["version"] === "string" ? manifest["version"] : "?";
  const minimumChrome = Number(manifest["minimum_chrome_version"] ?? 116) || 116;
  const check: Check =
    version === VERSION
      ? { status: "ok", label: "extension", message: `built at ${dir} (version ${version})` }
      : { status: "warn", label: "extension", message: `built at ${dir} is version ${version}, the broker ${VERSION}; run npm run build` };
  return { checks: [check], minimumChrome };
}

/**
 * Firefox, for `start --firefox` and a Firefox the user pairs: the binary (its absence is no fault: Chrome needs none)
 * and the extension's Firefox build.
 */
function firefoxLines(env: NodeJS.ProcessEnv): Check[] {
  const lines: Check[] = [];
  try {
    const path = findFirefox(env);
    const result = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 15_000 });
    const version = result.status === 0 ? (result.stdout ?? "").trim() : "";
    lines.push({ status: "ok", label: "firefox", message: `${path}${env["FIREFOX_PATH"] ? " (from FIREFOX_PATH)" : ""}${version ? ` (${version})` : ""}` });
  } catch (error) {
    lines.push({
      status: env["FIREFOX_PATH"] ? "fail" : "ok",
      label: "firefox",
      message: env["FIREFOX_PATH"] ? errorText(error) : "none found (only tabrelay start --firefox needs one)",
    });
  }
  try {
    const dir = builtFirefoxExtensionDir(env);
    const version = String((JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { version?: unknown }).version ?? "?");
    lines.push(
      version === VERSION
        ? { status: "ok", label: "firefox extension", message: `built at ${dir} (version ${version})` }
        : { status: "warn", label: "firefox extension", message: `built at ${dir} is version ${version}, the broker ${VERSION}; run npm run build` },
    );
  } catch (error) {
    lines.push({ status: "warn", label: "firefox extension", message: `${errorText(error)} (only Firefox needs it)` });
  }
  return lines;
}

interface Options {
  host?: string | undefined;
  port?: number | undefined;
  configPath?: string | undefined;
  dataDir: string;
}

/** The data dir's files; and which token files the config loader may read as they are (it would fix or create the others). */
function fileLines(options: Options, me: number | undefined): { checks: Check[]; configFile: Check | undefined; dirClean: boolean; cleanTokens: Set<string> } {
  const checks: Check[] = [];
  const dir = dataDirCheck(facts(options.dataDir, true), me);
  checks.push(dir);
  const dirExists = existsSync(options.dataDir);
  const cleanTokens = new Set<string>();
  for (const [file, label] of [
    ["mcp-token", "mcp token"],
    ["pairing-token", "pairing token"],
    ["dashboard-token", "dashboard token"],
  ] as const) {
    const path = join(options.dataDir, file);
    const f = facts(path);
    const check = tokenFileCheck(label, f, me);
    checks.push(check);
    if (f.exists && check.status === "ok") cleanTokens.add(file);
  }
  const configFile = options.configPath === undefined ? configFileCheck(facts(join(options.dataDir, "config.yaml")), me) : undefined;
  return { checks, configFile, dirClean: dirExists && dir.status === "ok", cleanTokens };
}

function configLine(
  options: Options,
  dirClean: boolean,
  cleanTokens: Set<string>,
  env: NodeJS.ProcessEnv,
): { check: Check; config?: BrokerConfig; realToken: boolean } {
  const tokenEnv: NodeJS.ProcessEnv = { ...env };
  if (!env["TABRELAY_MCP_TOKEN"] && !cleanTokens.has("mcp-token")) tokenEnv["TABRELAY_MCP_TOKEN"] = STAND_IN;
  if (!env["TABRELAY_PAIRING_TOKEN"] && !cleanTokens.has("pairing-token")) tokenEnv["TABRELAY_PAIRING_TOKEN"] = STAND_IN;
  if (!env["TABRELAY_DASHBOARD_TOKEN"] && !cleanTokens.has("dashboard-token")) tokenEnv["TABRELAY_DASHBOARD_TOKEN"] = DASHBOARD_STAND_IN;
  // A data dir the loader would create or fix: validate the same config file against a scratch data dir instead.
  const scratch = dirClean ? undefined : mkdtempSync(join(tmpdir(), "tabrelay-doctor-"));
  const ownConfig = join(options.dataDir, "config.yaml");
  const configPath = options.configPath ?? (scratch && existsSync(ownConfig) ? ownConfig : undefined);
  const warnings: string[] = [];
  try {
    const config = loadConfig({
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(configPath ? { configPath } : {}),
      dataDir: scratch ?? options.dataDir,
      env: tokenEnv,
      warn: (message) => warnings.push(message),
      create: false, // doctor looks; it writes nothing (the scratch dir aside)
    });
    const where = existsSync(config.configPath)
      ? `${configPath && scratch ? ownConfig : config.configPath} is valid`
      : `no config file (${config.configPath}); the defaults apply`;
    const check: Check = warnings.length
      ? { status: "warn", label: "config", message: `${where}; ${warnings.join("; ")}` }
      : { status: "ok", label: "config", message: `${where} (listens on ${config.host}:${config.port})` };
    const realToken = tokenEnv["TABRELAY_MCP_TOKEN"] !== STAND_IN;
    return { check, config: { ...config, dataDir: options.dataDir }, realToken };
  } catch (error) {
    const message = errorText(error);
    return { check: { status: "fail", label: "config", message: error instanceof ConfigError ? message : `could not load it: ${message}` }, realToken: false };
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

type Probe = { kind: "free" } | { kind: "tabrelay"; version: string; browsers: HealthBrowser[] } | { kind: "other"; what: string };

async function probe(base: string): Promise<Probe> {
  let response: Response;
  try {
    response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(3000), redirect: "manual" });
  } catch (error) {
    const cause = error instanceof Error && error.cause && typeof error.cause === "object" ? Reflect.get(error.cause, "code") : undefined;
    if (cause === "ECONNREFUSED") return { kind: "free" };
    const name = error instanceof Error ? error.name : "";
    return {
      kind: "other",
      what:
        name === "TimeoutError"
          ? "something accepts connections there but does not answer HTTP"
          : `the connection failed (${String(cause ?? errorText(error))})`,
    };
  }
  const text = await response.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.ok && body && typeof body === "object" && Reflect.get(body, "name") === "tabrelay") {
    const browsers = Reflect.get(body, "browsers");
    const list: HealthBrowser[] = Array.isArray(browsers) ? browsers.filter((b): b is HealthBrowser => !!b && typeof b === "object") : [];
    return { kind: "tabrelay", version: String(Reflect.get(body, "version") ?? "?"), browsers: list };
  }
  const server = response.headers.get("server");
  return { kind: "other", what: `GET /health answered HTTP ${response.status}${server ? ` (server: ${server})` : ""}, not tabrelay's` };
}

async function brokerLines(config: BrokerConfig | undefined, options: Options, realToken: boolean): Promise<Check[]> {
  const host = config?.host ?? options.host ?? "127.0.0.1";
  const port = config?.port ?? options.port ?? 9333;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const base = `http://${shown}:${port}`;
  const found = await probe(base);
  if (found.kind === "free") {
    return [
      { status: "ok", label: "port", message: `${host}:${port} is free: tabrelay serve (or tabrelay service install) can listen there` },
      {
        status: "warn",
        label: "browsers",
        message: `no broker runs at ${base}, so no browser is connected; start one with tabrelay serve (or tabrelay start)`,
      },
    ];
  }
  if (found.kind === "other") {
    return [
      {
        status: "fail",
        label: "port",
        message: `${host}:${port} is taken by something that is not tabrelay: ${found.what}; stop that program, or give tabrelay another port (--port, or port: in config.yaml)`,
      },
    ];
  }
  const lines: Check[] = [];
  const sameVersion = found.version === VERSION;
  lines.push(
    sameVersion
      ? { status: "ok", label: "port", message: `tabrelay ${found.version} answers at ${base}` }
      : {
          status: "warn",
          label: "port",
          message: `tabrelay ${found.version} answers at ${base}, but this checkout is ${VERSION}; restart it to run this version (tabrelay service install restarts the service)`,
        },
  );
  if (config && realToken) {
    try {
      await checkBroker(base, config.mcpToken, 3000);
      lines.push({ status: "ok", label: "token", message: `the broker at ${base} knows this data dir's MCP token` });
    } catch (error) {
      lines.push({
        status: "warn",
        label: "token",
        message:
          error instanceof BrokerNotProven
            ? `the broker at ${base} does not know this data dir's MCP token (it runs with another --data-dir or TABRELAY_MCP_TOKEN): MCP clients set up from ${options.dataDir} get 401; pass the same --data-dir to both`
            : `could not ask the broker at ${base} to prove its token: ${errorText(error)}`,
      });
    }
  }
  lines.push(...browserChecks(found.browsers, VERSION));
  return lines;
}

export async function cmdDoctor(args: string[]): Promise<number> {
  const { values } = parse(args, COMMON_OPTIONS);
  if (values.help) return printHelp(DOCTOR_HELP);
  const env = process.env;
  const options: Options = {
    host: values.host,
    port: portOf(values.port),
    configPath: values.config ? resolve(values.config) : undefined,
    dataDir: resolve(values["data-dir"] ?? defaultDataDir(env)),
  };
  const me = typeof process.getuid === "function" ? process.getuid() : undefined;
  const checks: Check[] = [nodeLine()];
  const extension = extensionLines(env);
  checks.push(...browserLines(env, extension.minimumChrome), ...extension.checks, ...firefoxLines(env));
  const files = fileLines(options, me);
  // A config file the broker would refuse (a link in its data dir, writable by others) is not loaded at all.
  const config: ReturnType<typeof configLine> = files.configFile
    ? { check: files.configFile, realToken: false }
    : configLine(options, files.dirClean, files.cleanTokens, env);
  checks.push(...files.checks, config.check);
  checks.push(...(await brokerLines(config.config, options, config.realToken)));

  const out = [`tabrelay doctor: tabrelay ${VERSION}, data dir ${options.dataDir}`];
  for (const check of checks) {
    const [first, ...rest] = check.message.split("\n");
    out.push(`${check.status.padEnd(4)}  ${check.label}: ${first ?? ""}`, ...rest.map((line) => `        ${line}`));
  }
  const count = (status: Check["status"]) => checks.filter((c) => c.status === status).length;
  out.push(`${count("ok")} ok, ${count("warn")} warning${count("warn") === 1 ? "" : "s"}, ${count("fail")} failed`);
  process.stdout.write(`${out.join("\n")}\n`);
  return count("fail") ? EXIT.failure : EXIT.ok;
}

// `tabrelay page-token` and `tabrelay pages`: page tools (web pages offering their own MCP tools over /page).
// page-token mints a token for one origin from this data dir's MCP token, as POST /page-tokens does, so an app's
// backend or a developer can hand one to a page; pages lists what pages offered and approves a changed tool.
import { ConfigError, defaultDataDir, loadConfig, mintPageToken, PAGE_TOKEN_MAX_TTL_S, pageTokenKey, PageToolApprovals } from "@tabrelay/broker";
import { COMMON_OPTIONS, EXIT, UsageError, parse, printHelp } from "./shared.js";

export const PAGE_TOKEN_HELP = `Usage: tabrelay page-token --origin URL [--ttl SECONDS] [--data-dir DIR]

Prints a page token for one origin on pages.allowed_origins: a page of that origin connects to /page with it
as the WebSocket subprotocol bearer.<token>. Short-lived (--ttl, default pages.token_ttl_seconds, at most
${PAGE_TOKEN_MAX_TTL_S} s) and signed with a key derived from the MCP token. An app's backend can instead ask the
running broker: POST /page-tokens {"origin": "..."} with the MCP bearer.`;

export const PAGES_HELP = `Usage: tabrelay pages list [--data-dir DIR]
       tabrelay pages approve ORIGIN NAME [--data-dir DIR]

list: every page tool tabrelay has seen (origin, name, state, fingerprint, first seen).
approve: a tool whose description or schema changed since you approved it is held (agents do not see it);
this approves what its page offers now. A running broker picks the approval up within a second.`;

export async function cmdPageToken(args: string[]): Promise<number> {
  const { values } = parse(args, { ...COMMON_OPTIONS, origin: { type: "string" }, ttl: { type: "string" } });
  if (values.help) return printHelp(PAGE_TOKEN_HELP);
  if (!values.origin) throw new UsageError("page-token needs --origin URL (an origin on pages.allowed_origins, e.g. https://app.example)");
  const ttl = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttl !== undefined && (!Number.isInteger(ttl) || ttl < 10 || ttl > PAGE_TOKEN_MAX_TTL_S))
    throw new UsageError(`--ttl is a whole number of seconds from 10 to ${PAGE_TOKEN_MAX_TTL_S}`);
  const config = loadConfig({ dataDir: values["data-dir"] ?? defaultDataDir(), ...(values.config ? { configPath: values.config } : {}) });
  let origin: string;
  try {
    origin = new URL(values.origin).origin;
  } catch {
    throw new UsageError(`--origin ${JSON.stringify(values.origin)} is not a URL; write it as https://app.example`);
  }
  if (!config.pages.allowedOrigins.includes(origin)) {
    throw new ConfigError(
      `${origin} is not on pages.allowed_origins in ${config.configPath}; add it (pages: { allowed_origins: ["${origin}"] }) and restart the broker`,
    );
  }
  const minted = mintPageToken(pageTokenKey(config.mcpToken), origin, ttl ?? config.pages.tokenTtlSeconds);
  process.stdout.write(`${minted.token}\n`);
  process.stderr.write(`tabrelay: a page token for ${origin}, valid until ${new Date(minted.expiresAt).toISOString()}\n`);
  return EXIT.ok;
}

export async function cmdPages(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, COMMON_OPTIONS);
  if (values.help) return printHelp(PAGES_HELP);
  const [verb, origin, name] = positionals;
  const dataDir = values["data-dir"] ?? defaultDataDir();
  const approvals = () => new PageToolApprovals(dataDir, (m) => process.stderr.write(`tabrelay: warning: ${m}\n`));
  if (verb === "list") {
    const all = approvals().list();
    if (all.length === 0) {
      process.stdout.write("No page tools seen yet.\n");
      return EXIT.ok;
    }
    for (const t of all.sort((a, b) => a.origin.localeCompare(b.origin) || a.name.localeCompare(b.name))) {
      const state = t.state === "changed" ? "changed: held until approved" : "approved";
      process.stdout.write(
        `${t.origin}  ${t.name}  ${state}  ${t.hash.slice(0, 12)}${t.offered ? ` -> ${t.offered.slice(0, 12)}` : ""}  first seen ${new Date(t.firstSeen).toISOString()}\n`,
      );
    }
    return EXIT.ok;
  }
  if (verb === "approve") {
    if (!origin || !name) throw new UsageError("pages approve needs ORIGIN NAME (as tabrelay pages list shows them)");
    const store = approvals();
    const known = store.get(origin, name);
    if (!known) throw new UsageError(`tabrelay has seen no page tool ${JSON.stringify(name)} of ${origin}; tabrelay pages list shows those it has`);
    if (known.state !== "changed") {
      process.stdout.write(`${origin} ${name} is already approved; nothing to do.\n`);
      return EXIT.ok;
    }
    store.approve(origin, name);
    process.stdout.write(
      `Approved ${origin} ${name} as its page offers it now (${known.offered?.slice(0, 12)}); a running broker offers it again within a second.\n`,
    );
    return EXIT.ok;
  }
  throw new UsageError(`unknown pages command ${JSON.stringify(verb ?? "")}; try \`tabrelay pages list\` or \`tabrelay pages approve ORIGIN NAME\``);
}

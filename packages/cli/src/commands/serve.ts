// `tabrelay serve`: the broker alone, optionally with a browser attached over CDP or created by a provider.
import { ConfigError, isLoopback } from "@tabrelay/broker";
import { startWithProvider } from "../providers.js";
import { COMMON_OPTIONS, EnvironmentError, UsageError, configFrom, onShutdown, parse, printClientConfig, printHelp, startBroker } from "./shared.js";

export const SERVE_HELP = `Usage: tabrelay serve [--host 127.0.0.1] [--port 9333] [--config FILE] [--data-dir DIR] [--cdp-url URL]

Runs the broker. Prints the MCP config block to paste into your agent, and the dashboard's URL with where its
own token is (tabrelay dashboard-token prints it; never give it to an agent), on stderr.
--cdp-url attaches a browser that is already running with remote debugging (ws:// endpoint or
http://host:port); it is left running when tabrelay stops. The URL is a credential: it is never logged.
--provider browserbase|kernel creates a hosted browser session (BROWSERBASE_API_KEY [+ BROWSERBASE_PROJECT_ID],
or KERNEL_API_KEY) and releases it when tabrelay stops.
Environment: TABRELAY_MCP_TOKEN, TABRELAY_PAIRING_TOKEN, TABRELAY_DASHBOARD_TOKEN, TABRELAY_DATA_DIR, TABRELAY_CDP_URL.`;

export async function cmdServe(args: string[]): Promise<number | undefined> {
  const { values } = parse(args, { ...COMMON_OPTIONS, "cdp-url": { type: "string" }, provider: { type: "string" } });
  if (values.help) return printHelp(SERVE_HELP);
  if (values.provider !== undefined && values["cdp-url"] !== undefined) throw new UsageError("give --cdp-url or --provider, not both");
  if (values.provider !== undefined && values.provider !== "browserbase" && values.provider !== "kernel") {
    throw new UsageError(`--provider must be browserbase or kernel, not ${JSON.stringify(values.provider)}`);
  }
  const config = configFrom(values);
  if (!isLoopback(config.host)) {
    process.stderr.write(
      [
        "",
        `tabrelay: WARNING: serving on ${config.host}, beyond this machine, over PLAIN HTTP.`,
        "  The MCP token, the pairing token, the dashboard token and every page the agent reads cross the network in clear:",
        "  anyone on the path can read them and take over the browser.",
        "  Put TLS in front: keep tabrelay on 127.0.0.1 and let a reverse proxy terminate TLS and forward to it,",
        `  WebSocket upgrades included (e.g. caddy reverse-proxy --from HOST --to 127.0.0.1:${config.port}, or nginx);`,
        "  agents then use https://HOST/mcp and browsers wss://HOST/bridge.",
        "",
      ].join("\n"),
    );
  }
  const { broker, url } = await startBroker(config);
  let hosted: { stop(): Promise<void> } | undefined;
  if (values.provider === "browserbase" || values.provider === "kernel") {
    try {
      hosted = await startWithProvider(values.provider, broker, process.env);
    } catch (error) {
      await broker.close();
      const kind = error && typeof error === "object" ? Reflect.get(error, "kind") : undefined;
      const message = error instanceof Error ? error.message : String(error);
      if (kind === "config") throw new ConfigError(message);
      throw new EnvironmentError(message);
    }
  }
  const cdpUrl = values["cdp-url"] ?? process.env["TABRELAY_CDP_URL"];
  if (cdpUrl) {
    try {
      await broker.attachCdp(cdpUrl, { label: "attached browser (CDP)", ownsBrowser: false });
    } catch (error) {
      await broker.close();
      throw new EnvironmentError(
        `could not attach the browser given by ${values["cdp-url"] ? "--cdp-url" : "TABRELAY_CDP_URL"}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  printClientConfig(url, config);
  onShutdown(async () => {
    await hosted?.stop();
    // A cluster member drains (calls in flight finish, browsers are sent to another broker); a lone broker just stops.
    if (config.cluster.redisUrl) await broker.drain();
    else await broker.close();
  });
  return undefined; // keep running
}

// `tabrelay mcp-config`: the exact MCP block (or command) for one client, with this data dir's token.
import { resolve } from "node:path";
import type { BrokerConfig } from "@tabrelay/broker";
import { nodeLaunch } from "../install.js";
import { MCP_CLIENTS, clientBlock, findClient, type McpTarget } from "../mcpClients.js";
import { COMMON_OPTIONS, EXIT, UsageError, configFrom, parse, printHelp } from "./shared.js";

export const MCP_CONFIG_HELP = `Usage: tabrelay mcp-config [--client ${MCP_CLIENTS.map((c) => c.id).join("|")}] [--stdio] [--port P] [--data-dir DIR]

Prints the MCP config block (for claude-code: the \`claude mcp add\` command) that adds this tabrelay to one
client, with the real MCP token from the data dir (or TABRELAY_MCP_TOKEN), on stdout; where it goes on stderr.
--stdio prints the form where the client starts \`tabrelay stdio\` itself (Claude Desktop has only that one).
Without --client, lists the clients.`;

/** What a client needs to reach the broker of this config, over HTTP or by starting `tabrelay stdio`. */
export function mcpTarget(config: BrokerConfig, values: { port?: string | undefined; "data-dir"?: string | undefined }): McpTarget {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host.includes(":") ? `[${config.host}]` : config.host;
  const launch = nodeLaunch();
  const args = [launch.bin, "stdio"];
  if (values.port !== undefined) args.push("--port", String(config.port));
  if (values["data-dir"] !== undefined) args.push("--data-dir", resolve(values["data-dir"]));
  return { url: `http://${host}:${config.port}/mcp`, token: config.mcpToken, command: launch.node, args };
}

export async function cmdMcpConfig(args: string[]): Promise<number> {
  const { values } = parse(args, { ...COMMON_OPTIONS, client: { type: "string" }, stdio: { type: "boolean" } });
  if (values.help) return printHelp(MCP_CONFIG_HELP);
  if (values.client === undefined) {
    const width = Math.max(...MCP_CLIENTS.map((c) => c.id.length));
    process.stdout.write(
      [
        "MCP clients tabrelay knows (tabrelay mcp-config --client NAME [--stdio]):",
        ...MCP_CLIENTS.map((c) => `  ${c.id.padEnd(width)}  ${c.name}${c.http ? "" : " (stdio only)"}`),
        "",
      ].join("\n"),
    );
    return EXIT.ok;
  }
  const client = findClient(values.client);
  if (!client) throw new UsageError(`--client must be one of ${MCP_CLIENTS.map((c) => c.id).join(", ")}, not ${JSON.stringify(values.client)}`);
  const target = mcpTarget(configFrom(values, { create: false }), values); // the token as it is: none is made here
  const block = clientBlock(client, target, values.stdio ?? false);
  process.stderr.write(
    `${client.name}: ${client.where.replace(/`/g, "")}.\n` + (block.stdio ? "" : "It holds your MCP token: keep it out of version control.\n"),
  );
  process.stdout.write(`${block.text}\n`);
  return EXIT.ok;
}

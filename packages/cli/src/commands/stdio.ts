// `tabrelay stdio`: MCP on stdin/stdout, relayed to the broker on the port, which several agents share. When none
// answers there, it starts the shared broker in the background (sharedBroker.ts): the broker never lives in an
// agent's own process, so no agent's exit takes the others' broker (or the browser's connection) with it.
import { resolve } from "node:path";
import { BrokerNotProven, BrokerUnreachable, Relay, StdinLines, type JsonRpcMessage } from "@tabrelay/broker";
import { SHARED_IDLE_MS, SHARED_LOG, SharedBrokerStarter, runSharedBroker } from "../sharedBroker.js";
import { COMMON_OPTIONS, EXIT, EnvironmentError, UsageError, configFrom, onShutdown, parse, printHelp } from "./shared.js";

export const STDIO_HELP = `Usage: tabrelay stdio [--host 127.0.0.1] [--port 9333] [--config FILE] [--data-dir DIR]

Speaks MCP on stdin/stdout for an agent that starts tabrelay itself, relaying every message to the broker
on the port, which several agents share (one browser). When no broker answers there, starts one in the
background (DATA_DIR/${SHARED_LOG} is its log) that outlives this agent and exits after ${SHARED_IDLE_MS / 60_000} minutes
without any agent. When the broker goes away and comes back (or another one starts), reconnects by itself:
the agent need not initialize again; a call cut off meanwhile gets an error saying a retry will work.
A message (one line) over 10 MB is answered with an error; the next ones are served. Logs go to stderr.
--shared-broker   be that background broker (what stdio starts; no MCP on stdin/stdout).`;

export async function cmdStdio(args: string[]): Promise<number | undefined> {
  const { values } = parse(args, { ...COMMON_OPTIONS, "shared-broker": { type: "boolean" } });
  if (values.help) return printHelp(STDIO_HELP);
  const config = configFrom(values);
  if (config.port === 0) throw new UsageError("tabrelay stdio shares one broker per port: give a fixed --port (not 0)");
  if (values["shared-broker"]) return runSharedBroker(config);

  const base = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`;
  const starter = new SharedBrokerStarter(config, values.config ? resolve(values.config) : undefined, base);
  const write = (message: JsonRpcMessage) => process.stdout.write(`${JSON.stringify(message)}\n`);
  const relay = new Relay({
    mcpUrl: `${base}/mcp`,
    token: config.mcpToken,
    send: write,
    log: (line) => process.stderr.write(`${line}\n`),
    noBroker: (lostForMs) => starter.noBroker(lostForMs),
    onConnected: () => starter.connected(),
  });
  try {
    await relay.connect();
  } catch (error) {
    // Something else holds the port, or a broker with another token: nothing was sent to it.
    if (error instanceof BrokerNotProven || error instanceof BrokerUnreachable) throw new EnvironmentError(error.message);
    throw error;
  }

  const lines = new StdinLines();
  return new Promise<number>((done) => {
    let ended = false;
    const end = (code: number, why: string) => {
      if (ended) return;
      ended = true;
      process.stderr.write(`tabrelay: stdio session ending: ${why}\n`);
      void relay.close().finally(() => done(code));
    };
    const handle = (line: ReturnType<StdinLines["push"]>[number]) => {
      if (line.kind === "message") relay.receive(line.message);
      else {
        process.stderr.write(`${line.message}\n`);
        write({ jsonrpc: "2.0", id: line.id, error: { code: line.code, message: line.message } });
      }
    };
    process.stdin.on("data", (chunk: Buffer) => {
      for (const line of lines.push(chunk)) handle(line);
    });
    process.stdin.once("end", () => {
      for (const line of lines.end()) handle(line);
      // The agent may still read the answers to its last calls (MCP's stdio shutdown: stdin first, then a signal).
      void relay.settled(30_000).then(() => end(EXIT.ok, "the agent closed stdin"));
    });
    process.stdin.once("error", (error) => end(EXIT.failure, `stdin failed: ${error.message}`));
    process.stdout.once("error", (error) => end(EXIT.failure, `stdout failed (the agent is gone?): ${error.message}`));
    onShutdown(async () => {
      process.stderr.write("tabrelay: stdio session ending: signal\n");
      await relay.close();
    });
  });
}

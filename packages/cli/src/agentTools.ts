// The `tabrelay/agent-tools` entry of the tabrelay package: tabrelay's tools as Vercel AI SDK tool objects, in this
// process (a Broker started here: new Broker({ config: loadConfig() })) or over HTTP to a running broker. Bundled on
// its own by build.mjs with `ai` left to the user's install (a peer, 6 or 7); its types are types/agent-tools.d.ts.
export { AGENT_TOOLS_CLIENT, endTabrelaySession, tabrelayInstructions, tabrelayTools, tabrelayToolsOverHttp } from "@tabrelay/agent-tools";
export { Broker, loadConfig } from "@tabrelay/broker";

// Types of the tabrelay package's `tabrelay/agent-tools` entry (packages/cli/src/agentTools.ts, bundled by
// packages/cli/build.mjs): tabrelay's tools as Vercel AI SDK tool objects. Written for users, not generated:
// test/release/agentToolsTypes.ts holds the code to them (typecheck), and test/release/package.test.ts compiles and
// runs a program against them from the installed package. `ai` (6 or 7) is the user's: a peer dependency.
import type { Tool } from "ai";

/** What a tool call gives back. */
export interface TabrelayToolResult {
  /** The result as tabrelay words it for a model; a failure's text starts with its code (`write_denied: ...`). */
  text: string;
  /** The call failed: the model receives `text` as an error result. */
  isError: boolean;
  /** A failed call's code (`stale_ref`, `write_denied`, `budget_exceeded`, ...), for programs that branch on it. */
  code?: string;
  /** browser_run's `{ run, status, value, logs, failedCall?, error?, usage }`. */
  structuredContent?: Record<string, unknown>;
  /** Base64 images a tool returned inline (screenshot, when asked for inline). */
  images?: { data: string; mimeType: string }[];
}

/** A tabrelay tool as the AI SDK takes it. */
export type TabrelayTool = Tool<Record<string, unknown>, TabrelayToolResult>;

/** Which tools to hand out: `only` these names, or all but `except` (names as tools/list shows them). */
export interface ToolFilter {
  only?: readonly string[];
  except?: readonly string[];
}

/** A user of a team's broker. */
export interface Principal {
  user: string;
  name: string;
  role: "admin" | "member";
}

/** Where the broker's configuration comes from (all optional: ~/.tabrelay and its config.yaml by default). */
export interface ConfigOptions {
  host?: string;
  port?: number;
  /** Another config file than <dataDir>/config.yaml. */
  configPath?: string;
  /** Default ~/.tabrelay (or TABRELAY_DATA_DIR). */
  dataDir?: string;
  env?: NodeJS.ProcessEnv;
  warn?: (message: string) => void;
}

/** The broker's configuration, as loadConfig reads it (the fields a program may want; the rest is the broker's). */
export interface BrokerConfig {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly configPath: string;
  /** The MCP bearer token (from TABRELAY_MCP_TOKEN or <dataDir>/mcp-token). */
  readonly mcpToken: string;
}

/** Reads <dataDir>/config.yaml and the tokens (creating what a first start creates); throws naming file, line and key. */
export declare function loadConfig(options?: ConfigOptions): BrokerConfig;

/** A tabrelay broker in this process: the extension dials its /bridge once it listens, or attach a Chromium over CDP. */
export declare class Broker {
  constructor(options: { config: BrokerConfig; watchConfig?: boolean });
  readonly config: BrokerConfig;
  /** Listens on the config's host and port (0: a free one); rejects with EADDRINUSE when the port is taken. */
  listen(): Promise<{ port: number; url: string }>;
  /** Attaches a Chromium running with remote debugging (ws://.../devtools/browser/... or http://host:port). */
  attachCdp(endpoint: string, options: { label: string; ownsBrowser: boolean }): Promise<unknown>;
  close(): Promise<void>;
}

export interface TabrelayToolsOptions extends ToolFilter {
  /** A broker started in this process (`new Broker({ config: loadConfig() })`, listening or not). */
  broker: Broker;
  /** The agent's session: the tabs it opens are leased to it. Default: a fresh id per call of tabrelayTools. */
  session?: string;
  /** The client name in audit records and on the dashboard. Default "agent-tools". */
  client?: string;
  /** The user the tools act for, on a team's broker. */
  user?: Principal;
}

/** Every tool the broker lists over MCP, as AI SDK tool objects; each call goes through the broker's own runner. */
export declare function tabrelayTools(options: TabrelayToolsOptions): Record<string, TabrelayTool>;

/** What the MCP server tells its clients: page content is untrusted, refs, every error code. A system prompt. */
export declare function tabrelayInstructions(filter?: ToolFilter): string;

/** Ends an agent's session: closes the tabs it opened and still holds. */
export declare function endTabrelaySession(broker: Broker, session: string): void;

export interface TabrelayToolsOverHttpOptions extends ToolFilter {
  /** The broker's MCP endpoint, e.g. http://127.0.0.1:9333/mcp. */
  url: string;
  /** Its MCP token. */
  token: string;
  client?: string;
}

export interface TabrelayHttpTools {
  tools: Record<string, TabrelayTool>;
  /** The broker's instructions, for the system prompt. */
  instructions: string;
  /** Ends the MCP session (the broker closes the tabs it holds). */
  close(): Promise<void>;
}

/** The tools of a running broker (tabrelay start / serve), over its MCP endpoint, after it proved it knows the token. */
export declare function tabrelayToolsOverHttp(options: TabrelayToolsOverHttpOptions): Promise<TabrelayHttpTools>;

/** The client name tabrelayTools uses by default. */
export declare const AGENT_TOOLS_CLIENT: string;

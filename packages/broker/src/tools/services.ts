// The services a tool may use that the broker may not have (ToolContext's optional fields), as the tools need them:
// interfaces tools/ owns, implemented above it (the sandbox pool, the browsers the model starts, the page tools) and
// handed in by the server. The cluster's is tools/clusterLink.ts, idempotency keys' tools/idempotency.ts, the page
// tools' PageToolSource (tools/tool.ts, beside Tool).
import type { HostAnswer, HostCall, RunRequest, RunResult } from "@tabrelay/sandbox";
import type { BrowserSourceSettings } from "../config/browsers.js";
import type { StartedBrowser } from "../launch/sessions.js";
import type { Principal } from "../users/principal.js";

/** What runs programs (code mode): the sandbox pool (@tabrelay/sandbox), created by the broker on first use. */
export interface SandboxRunner {
  /** `owner` is whose turn it is in the pool's fair queue: the MCP session (runs of one session never starve another's). */
  run(request: RunRequest, call: (c: HostCall) => Promise<HostAnswer>, signal?: AbortSignal, owner?: string): Promise<RunResult>;
  close(): Promise<void>;
}

/** The browsers the model starts (browser_start, browser_run's browser "new"): launch/sessions.ts BrowserSessions. */
export interface StartedBrowsers {
  readonly settings: Pick<BrowserSourceSettings, "idleMs" | "maxSessions">;
  /** The user's started browsers (every user's without `owner`). */
  list(owner?: string): StartedBrowser[];
  get(id: string, owner?: string): StartedBrowser | undefined;
  /** When a call last used it (epoch ms). */
  lastUsed(id: string): number | undefined;
  /** Whether it was started here and has stopped since. */
  wasStopped(id: string, owner?: string): boolean;
  liveViewUrl(id: string): Promise<string | undefined>;
  start(options?: { temporary?: boolean; owner?: Principal }): Promise<StartedBrowser>;
  stop(id: string, why?: string, owner?: string): Promise<"stopped" | "already" | undefined>;
}

export { Broker, type BrokerOptions } from "./server.js";
export { openUsers } from "./users/open.js";
export { Users, UserError, TOKEN_PREFIX, DASHBOARD_TOKEN_PREFIX, isDashboardToken } from "./users/users.js";
export type { Principal } from "./users/principal.js";
export type { Store, User, TokenInfo, Role } from "./store/store.js";
export { BrowserRegistry } from "./drivers/registry.js";
export { BrowserConnection } from "./drivers/extension/connection.js";
export type { BrowserDriver, BrowserInfo } from "./drivers/driver.js";
export { launchLocalChromium } from "./launch/cdpChromium.js";
export {
  loadConfig,
  ConfigError,
  defaultDataDir,
  rankingFile,
  isLoopback,
  BUILTIN_EXTENSION_ID,
  type BrokerConfig,
  type NodeBrokerConfig,
} from "./config/config.js";
export { connectHttpClient } from "./mcp/adapter.js";
export { checkBroker, BrokerNotProven, BrokerUnreachable } from "./mcp/brokerProof.js";
export { Relay, type RelayOptions } from "./mcp/relay.js";
export { StdinLines, STDIO_LINE_LIMIT, type StdinLine, type JsonRpcMessage } from "./mcp/stdioLines.js";
export { tools, toolsFor } from "./catalog.js";
export { findChromium, builtExtensionDir, prepareExtension, launchChromium, chromiumArgs, LaunchError, type LaunchedBrowser } from "./launch/chromium.js";
export { FIREFOX_ADDON_ID, builtFirefoxExtensionDir, findFirefox, firefoxArgs, launchFirefox, prepareFirefoxProfile } from "./launch/firefox.js";
export { parseRankingCsv } from "./policy/topSites.js";
export { allowRead, grantWrite, type GrantKind, type Edited } from "./config/edit.js";
export { editConfigFile } from "./config/editFile.js";
export type { ConfigStatus, ReloadOutcome } from "./config/reload.js";
// What a Node host of the runtime-neutral core (core.ts) passes it: the DevTools socket over ws, the in-page scripts
// and the shipped ranking read from disk.
export { nodeCdpSocket } from "./drivers/cdp/nodeSocket.js";
export { nodeCdpScripts } from "./drivers/cdp/nodeScripts.js";
export { nodeRanking } from "./config/ranking.js";
export { redactingLogger, silentLogger, type Logger } from "./util/log.js";
export { createLogger } from "./util/stderrLog.js";
export { SecretRegistry, type SecretKind, type SecretSink, type Redactor } from "./util/secrets.js";
export { VERSION } from "./version.js";
export { AuditLog, formatAuditLine, type AuditRecord, type AuditDecision, type StoredAuditRecord } from "./audit/auditLog.js";
export { createProviderSession, ProviderError, type ProviderName, type HostedProvider, type ProviderSession } from "./launch/providers.js";
export { startVncDisplay, findVncTools, NOVNC_WEB_ROOT, type VncDisplay, type VncDisplayOptions } from "./launch/vnc.js";
// In-process tool calls (@tabrelay/agent-tools): the tool table's runner, its types, the MCP server's instructions, a session's end.
export { runTool, type RunOptions } from "./tools/runner.js";
export type { Tool, ToolContext, ToolKind } from "./tools/tool.js";
export type { RenderedResult } from "./tools/response.js";
export type { Caller } from "./gate/decisions.js";
export { endSessionLeases } from "./gate/enforce.js";
export { instructions as toolInstructions, advertisedInputSchema } from "./mcp/adapter.js";
// The dashboard's chat panel (@tabrelay/chat implements it; Broker.mountDashboardChat mounts it).
export type { DashboardChat, ChatEvent } from "./dashboard/chat.js";
export { CHAT_KEY_VARS, type ChatSettings } from "./config/chat.js";
// Page tools (pages/): the CLI's page-token and pages commands.
export { PageToolApprovals, type ToolApproval } from "./pages/approvals.js";
export { mintPageToken, pageTokenKey, PAGE_TOKEN_MAX_TTL_S } from "./pages/tokens.js";

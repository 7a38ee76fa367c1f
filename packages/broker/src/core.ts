// The runtime-neutral core (@tabrelay/broker/core): what a host without Node runs the same tools with (the Workers
// entry, packages/worker): the tool table and its runner, the gate and policy, extraction, the CDP driver, code
// mode's command layer, config as data. Nothing reachable from here imports a node: module or a Node-only package
// (ws, @hono/node-server, @aws-sdk); scripts/check-deps.mjs walks this file's imports and bundles it
// for a neutral platform to hold that. The host provides what the core cannot have on its own: the DevTools socket
// and the in-page scripts (CdpBrowserOptions.socket, .scripts), the top-sites ranking (buildConfigFromText), an audit
// sink, a sandbox (ToolContext.sandbox); the Node broker (index.ts) provides them from ws and the disk.

// The tool table, its runner and what a call's context is made of.
export { tools, toolsFor, programTools } from "./catalog.js";
export { runTool, type RunOptions } from "./tools/runner.js";
export type { CallContext, PageToolSource, Tool, ToolContext, ToolKind } from "./tools/tool.js";
export type { SandboxRunner, StartedBrowsers } from "./tools/services.js";
export type { RenderedResult } from "./tools/response.js";
export { SnapshotCache } from "./tools/snapshotCache.js";
export { DocCache } from "./tools/docCache.js";
export { Denials } from "./gate/tabRecord.js";
export { enforceOnCommit, endSessionLeases } from "./gate/enforce.js";
export { cdpPolicyOptions } from "./gate/networkPolicy.js";
export { captureForPerson } from "./gate/stage.js";
export type { Caller } from "./gate/decisions.js";
// Audit records as the runner writes them (types only: the SQLite log is Node's; a host brings its own AuditSink).
export type { AuditBegun, AuditDecision, AuditRecord, AuditSink } from "./audit/auditLog.js";

// Browsers: the registry the runner picks from, and the CDP driver over the host's WebSocket.
export { BrowserRegistry, type RegistryEvents } from "./drivers/registry.js";
export type { BrowserDriver, BrowserInfo, CallOptions } from "./drivers/driver.js";
export { CdpBrowser, type CdpBrowserOptions } from "./drivers/cdp/cdpBrowser.js";
export type { CdpScripts } from "./drivers/cdp/cdpCore.js";
export { DEFAULT_MAX_PAYLOAD, type CdpSocket, type CdpSocketFactory } from "./drivers/cdp/cdpClient.js";
export { resolveCdpEndpoint } from "./drivers/cdp/endpoint.js";
// Screenshots in an S3 bucket over fetch and Web Crypto (SigV4), linked by presigned GETs.
export { PresignedS3Store, type PresignedS3Options } from "./screenshots/sigv4.js";
export type { ScreenshotMeta, ScreenshotStore, StoredImage } from "./screenshots/store.js";
// Hosted browsers by their providers' HTTP APIs (fetch only): created, looked up again by id, ended by id.
export { createProviderSession, endHostedSession, hostedSessionEndpoint, ProviderError, type HostedProvider, type ProviderEnv } from "./launch/providers.js";

// MCP over Streamable HTTP without sessions, for a host that keeps none (the one SDK importer: mcp/adapter.ts).
export { serveStateless, instructions, advertisedInputSchema } from "./mcp/adapter.js";
export { readLimited } from "./http/body.js";

// Configuration as data: config.yaml's text validated and compiled, with the same messages as on Node.
export {
  BUILTIN_EXTENSION_ID,
  buildConfig,
  buildConfigFromText,
  compileSettings,
  ConfigError,
  parseConfigText,
  type BrokerConfig,
  type ConfigFile,
  type ConfigPlace,
  type ConfigSettings,
  type ScreenshotSettings,
  type TextConfigOptions,
} from "./config/build.js";
export { parseRankingCsv } from "./policy/topSites.js";

// Read conversion: in-process by default here (the Node broker installs its worker pool).
export { inProcessRunner, setExtractRunner, type ExtractRunner, type RunOutcome } from "./extract/runner.js";

// Code mode's command layer: the browse API's documents, and a program's run over a host's sandbox.
export { apiDocs } from "./code/browserRun.js";
export { apiDeclarations, apiGuide } from "./code/apiDoc.js";
export { allowedCommands, runProgram, type ProgramRun } from "./code/run.js";

// Errors, secrets, logs.
export { TabrelayError } from "./util/errors.js";
export { ERROR_CODES, ERRORS, type ErrorCode } from "@tabrelay/protocol";
export { safeEqual, SecretRegistry, TOKEN_ADVICE, weakTokenReason, type Redactor, type SecretKind, type SecretSink } from "./util/secrets.js";
export { redactingLogger, silentLogger, type Logger } from "./util/log.js";
export { VERSION } from "./version.js";

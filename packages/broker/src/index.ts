export { Broker, type BrokerOptions } from "./server.js";
export { BrowserRegistry, BrowserConnection, type BrowserInfo } from "./bridge/registry.js";
export { loadConfig, ConfigError, defaultDataDir, rankingFile, isLoopback, BUILTIN_EXTENSION_ID, type BrokerConfig } from "./config/config.js";
export { serveStdio, forwardStdio, connectHttpClient } from "./mcp/adapter.js";
export { tools } from "./tools/index.js";
export { findChromium, builtExtensionDir, prepareExtension, launchChromium, chromiumArgs, LaunchError, type LaunchedBrowser } from "./launch/chromium.js";
export { parseRankingCsv } from "./policy/topSites.js";
export { createLogger, silentLogger, type Logger } from "./util/log.js";
export { VERSION } from "./version.js";

/** This package's version (sent as the MCP client's version). */
export const VERSION = "0.1.0";

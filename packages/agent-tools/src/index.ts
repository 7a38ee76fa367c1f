export { tabrelayTools, tabrelayInstructions, endTabrelaySession, AGENT_TOOLS_CLIENT, type TabrelayToolsOptions } from "./inProcess.js";
export { tabrelayToolsOverHttp, type TabrelayToolsOverHttpOptions, type TabrelayHttpTools } from "./overHttp.js";
export type { TabrelayTool, TabrelayToolResult, ToolFilter } from "./shape.js";

// The names of code mode's browse commands, as a program calls them ("tabs.list" is browse.tabs.list()): what
// config.yaml's code_mode.allow and code_mode.deny are checked against (config/build.ts) without config reaching the
// commands themselves and the tools they run. Each command's name must be one of these (commands.ts, typed), and
// every one of these a command (packages/broker/test/config/commandNames.test.ts).
export const COMMAND_NAMES = [
  "open",
  "goto",
  "back",
  "forward",
  "reload",
  "tabs.list",
  "tabs.new",
  "tabs.select",
  "tabs.close",
  "snapshot",
  "query",
  "read",
  "click",
  "fill",
  "select",
  "check",
  "press",
  "hover",
  "scroll",
  "waitFor",
  "screenshot",
  "get",
  "mouse.click",
  "mouse.hover",
  "mouse.scroll",
  "is",
  "mouse.drag",
  "highlight",
  "viewport",
  "upload",
  "eval",
  "pageTools",
  "callPageTool",
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

export type * from "./types.js";
export { createSandbox, type Sandbox, type SandboxOptions } from "./sandbox.js";
export {
  runProgram,
  MAX_STACK_BYTES,
  COMMAND_ARGS_MAX_CHARS,
  ECHO_ARG_MAX_CHARS,
  echoArgs,
  type EngineOutcome,
  type HostCallFn,
  type RunHooks,
} from "./engine.js";
export { loadQuickJS, instanceMemoryFor, INSTANCE_BASE_BYTES, type LoadOptions } from "./load.js";
export { compileProgram, type Compiled } from "./compile.js";

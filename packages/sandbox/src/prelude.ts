// The only code that runs in a fresh QuickJS context before the program: it builds `browse` and `log` from
// two host functions and hands the host two helpers it keeps for itself (never reachable from the program).
// Everything crosses as JSON strings, so no host object or handle ever enters the sandbox.
// It captures JSON, Error and WeakMap first: whatever the program later does to the globals, the copies of
// arguments, answers and the returned value use the originals.

/**
 * The most one command's arguments may take as JSON (characters): room for the largest command (browse.upload's
 * 10 MiB file as base64), far past what a person types; past it the command fails (invalid_params) without leaving
 * the sandbox. A string argument longer than this is caught before it is even copied as JSON. What the host holds
 * for all of a run's commands in flight is bounded by the run's memory budget (engine.ts).
 */
export const COMMAND_ARGS_MAX_CHARS = 16 * 1024 * 1024;

/** Evaluates to `install(hostCall, hostLog, commandsJson) -> { copyOut, failedSeq }`. */
export const PRELUDE =
  String.raw`(function install(hostCall, hostLog, commandsJson) {
  const MAX_ARGS_CHARS = ` +
  String(COMMAND_ARGS_MAX_CHARS) +
  String.raw`;
  "use strict";
  const stringify = JSON.stringify, parse = JSON.parse, ErrorCtor = Error, failures = new WeakMap();
  const define = Object.defineProperty, freeze = Object.freeze, create = Object.create;
  const text = (value) => {
    if (typeof value === "string") return value;
    try { const json = stringify(value); return json === undefined ? String(value) : json; }
    catch { try { return String(value); } catch { return "[value without a text form]"; } }
  };
  const command = (path) => async function (...args) {
    // A string past the cap is not copied at all: the host is told its length ("\u0000" never starts JSON).
    let long = 0;
    for (const arg of args) if (typeof arg === "string" && arg.length > MAX_ARGS_CHARS) long = arg.length;
    const answer = parse(await hostCall(path, long ? "\u0000" + long : stringify(args)));
    if (answer.ok) return answer.value;
    const error = new ErrorCtor(answer.error.message);
    error.name = "CommandError";
    error.code = answer.error.code;
    error.command = path;
    failures.set(error, answer.seq);
    throw error;
  };
  const browse = create(null);
  // Shorter paths first: "tabs" is a function before "tabs.list" hangs beneath it.
  const paths = parse(commandsJson).map((path) => path.split(".")).sort((a, b) => a.length - b.length);
  for (const parts of paths) {
    let node = browse;
    for (let i = 0; i < parts.length - 1; i++) {
      const key = parts[i];
      if (node[key] === undefined) define(node, key, { value: create(null), enumerable: true });
      node = node[key];
    }
    const leaf = parts[parts.length - 1];
    if (node[leaf] === undefined) define(node, leaf, { value: command(parts.join(".")), enumerable: true });
  }
  const deepFreeze = (node) => {
    for (const key of Object.keys(node)) if (typeof node[key] === "object" || typeof node[key] === "function") deepFreeze(node[key]);
    return freeze(node);
  };
  const logger = (level) => (...args) => { hostLog(level, args.map(text).join(" ")); };
  define(globalThis, "browse", { value: deepFreeze(browse), enumerable: false });
  // log("x") is log.info("x"): both read naturally, and a program that calls log() should not die of it.
  const log = logger("info");
  for (const level of ["info", "warn", "error"]) define(log, level, { value: logger(level), enumerable: true });
  define(globalThis, "log", { value: freeze(log), enumerable: false });
  return {
    copyOut(value) {
      if (value === undefined) return undefined;
      const json = stringify(value);
      if (json === undefined) throw new TypeError("a " + typeof value + " has no JSON form");
      return json;
    },
    failedSeq(error) { return (typeof error === "object" && error !== null && failures.get(error)) || 0; },
  };
})`;

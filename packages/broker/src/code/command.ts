// One browse command as code mode declares it (its name, parameters, declared result, doc line) and runs it: the
// shape commands.ts's table and the tables it takes in (pageCommands.ts, pageToolCommands.ts) are made of.
import type { Param } from "./args.js";
import type { CommandName } from "../config/commandNames.js";
import type { RunState } from "./runState.js";

export interface Command {
  /** Dotted, as the program calls it: "tabs.list" is browse.tabs.list(); one of COMMAND_NAMES (commandNames.ts). */
  name: CommandName;
  params: readonly Param[];
  /** The TypeScript type the promise resolves to. */
  returns: string;
  /** Type parameters of its declaration ("W extends string"), when its return type depends on an argument. */
  typeParams?: string;
  /** One line, for the declarations. */
  doc: string;
  /** Reads or acts on pages only through tools; a write is gated by the tool it calls. */
  run(state: RunState, args: unknown[]): Promise<unknown>;
}

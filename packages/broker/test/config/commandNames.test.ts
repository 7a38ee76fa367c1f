// config.yaml's code_mode.allow / deny are checked against config/commandNames.ts (config does not reach the commands
// themselves); each command's name is one of those names by its type, and here every name is a command.
import { describe, expect, it } from "vitest";
import { COMMAND_NAMES } from "../../src/config/commandNames.js";
import { COMMANDS } from "../../src/code/commands.js";

describe("code mode's command names", () => {
  it("are the commands there are, each once", () => {
    expect([...COMMAND_NAMES].sort()).toEqual(COMMANDS.map((c) => c.name).sort());
    expect(new Set(COMMAND_NAMES).size).toBe(COMMAND_NAMES.length);
  });
});

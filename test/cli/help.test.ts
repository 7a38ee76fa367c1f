// `tabrelay --help` lists the install and operations commands, and each has its own --help.
import { describe, expect, it } from "vitest";
import { tabrelay } from "./run.js";

describe("help for service, doctor and mcp-config", () => {
  it("the main help lists them and each answers --help", async () => {
    const main = await tabrelay(["--help"]);
    expect(main.code).toBe(0);
    for (const command of ["service install|uninstall|status", "doctor", "mcp-config [--client NAME] [--stdio]"]) expect(main.stdout).toContain(`  ${command}`);
    for (const command of ["service", "doctor", "mcp-config"]) {
      const own = await tabrelay([command, "--help"]);
      expect(own.code, command).toBe(0);
      expect(own.stdout, command).toContain(`Usage: tabrelay ${command}`);
    }
  });
});

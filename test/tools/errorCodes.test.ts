// One table of error codes in code (packages/protocol/src/errors.ts): docs/reference/errors.md's table is generated from it, and
// each tool's "Errors: ..." sentence from the codes the tool declares. These checks keep the three in step.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tools } from "../../packages/broker/src/catalog.js";
import { errorScopeOf, errorsSentence, EVERY_TOOL_ERRORS } from "../../packages/broker/src/tools/tool.js";
import { ERROR_CODES } from "../../packages/protocol/src/index.js";

const root = new URL("../..", import.meta.url).pathname;

describe("error codes", () => {
  it("docs/reference/errors.md's table is the table in code", () => {
    // Exits 1, naming the fix, when they differ.
    expect(execFileSync("node", [join(root, "scripts/errors-table.mjs"), "--check"], { encoding: "utf8" })).toContain("matches");
  });

  it("every code is listed once", () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
  });

  it("each tool lists codes that exist, once, and its description's Errors sentence comes from that list (less the codes the instructions say once)", () => {
    for (const tool of tools) {
      for (const code of tool.errors) expect(ERROR_CODES, `${tool.name}: ${code}`).toContain(code);
      expect(new Set(tool.errors).size, tool.name).toBe(tool.errors.length);
      const sentence = errorsSentence(tool.errors, errorScopeOf(tool));
      if (sentence) expect(tool.description.endsWith(` ${sentence}`), tool.name).toBe(true);
      // One Errors sentence, the generated one.
      expect(tool.description.split("Errors:").length - 1, tool.name).toBe(sentence ? 1 : 0);
    }
  });

  it("hover and scroll need no write grant, so they never offer write_denied or audit_unavailable", () => {
    for (const name of ["hover", "scroll"]) {
      const tool = tools.find((t) => t.name === name);
      expect(tool?.kind).toBe("read");
      expect(tool?.errors).not.toContain("write_denied");
      expect(tool?.errors).not.toContain("audit_unavailable");
    }
  });

  it("each code a tool's own code throws (its handler and the tool and gate functions it calls) is listed", () => {
    // A static reading: a code thrown by name (`new TabrelayError("x"`, a refusal's `code: "x"`) anywhere a tool's
    // definition reaches through top-level functions of tools/ and gate/ (and code/browserRun.ts, where browser_run and
    // browser_api are defined, with code mode; a program's commands answer with their own codes inside its result).
    // Codes that come back from the browser are dynamic and not covered here.
    const dirs = ["packages/broker/src/tools", "packages/broker/src/gate"].map((d) => join(root, d));
    const sources = [
      ...dirs.flatMap((dir) =>
        readdirSync(dir)
          .filter((f) => f.endsWith(".ts"))
          .map((f) => readFileSync(join(dir, f), "utf8")),
      ),
      readFileSync(join(root, "packages/broker/src/code/browserRun.ts"), "utf8"),
    ];
    const functions = new Map<string, string>();
    for (const source of sources) {
      for (const m of source.matchAll(/^(?:export )?(?:async )?function (\w+)\([\s\S]*?\n\}\n/gm)) if (m[1]) functions.set(m[1], m[0]);
    }
    const thrownBy = (text: string, seen = new Set<string>()): Set<string> => {
      const codes = new Set([...text.matchAll(/TabrelayError\(\s*"(\w+)"|\bcode: "(\w+)"/g)].map((m) => m[1] ?? m[2] ?? ""));
      for (const [, name] of text.matchAll(/\b(\w+)\(/g)) {
        const body = name ? functions.get(name) : undefined;
        if (!name || !body || seen.has(name)) continue;
        seen.add(name);
        for (const code of thrownBy(body, seen)) codes.add(code);
      }
      return codes;
    };
    for (const tool of tools) {
      const definition = sources.map((s) => definitionOf(s, tool.name)).find((d) => d !== undefined);
      expect(definition, `${tool.name}'s definition`).toBeDefined();
      // hover and scroll go through perform() as writes do, but the write policy allows them without a grant
      // (policy/writePolicy.ts, read-only actions): write_denied is reachable in the text, not in fact.
      const listed = new Set<string>([...tool.errors, ...EVERY_TOOL_ERRORS, ...(tool.kind === "read" ? ["write_denied"] : [])]);
      const missing = [...thrownBy(definition ?? "")].filter((code) => !listed.has(code));
      expect(missing, `${tool.name} throws these but does not list them`).toEqual([]);
    }
  });
});

/** The top-level `export const x = defineTool({ ... name: "<tool>" ... });` statement naming the tool. */
function definitionOf(source: string, name: string): string | undefined {
  for (const m of source.matchAll(/^export const \w+ = (?:[^\n]*\}\);$|[\s\S]*?^\}\);$)/gm)) if (m[0].includes(`name: "${name}"`)) return m[0];
  return undefined;
}

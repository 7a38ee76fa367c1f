// Turns the agent's program (TypeScript or JavaScript, the body of an async function) into one script
// expression QuickJS evaluates to that function. Sucrase strips types in place, line for line, and the
// wrapper opens on the program's first line, so a line number in an error is the agent's own.
import { transform } from "sucrase";

const OPEN = "(async () => {";
const CLOSE = "\n})";

export type Compiled = { ok: true; code: string } | { ok: false; message: string };

export function compileProgram(program: string): Compiled {
  try {
    const { code } = transform(OPEN + program + CLOSE, { transforms: ["typescript"], disableESTransforms: true });
    return { ok: true, code };
  } catch (error) {
    return { ok: false, message: syntaxMessage(error, program.split("\n").length) };
  }
}

/** The file name the program is evaluated under: stack frames in it are the program's. */
export const PROGRAM_FILE = "program.js";

/** "Unexpected token (line 2, column 9)" from sucrase's "Unexpected token (2:9)" (wrapper removed). */
function syntaxMessage(error: unknown, programLines: number): string {
  const message = error instanceof Error ? error.message : String(error);
  const loc = /\((\d+):(\d+)\)\s*$/.exec(message);
  if (!loc) return `the program does not parse: ${message}`;
  const line = Number(loc[1]);
  const column = Number(loc[2]) - (line === 1 ? OPEN.length : 0);
  const what = message.slice(0, loc.index).trim();
  if (line > programLines) return `the program does not parse: ${what} (at its end: a bracket or brace left open?)`;
  return `the program does not parse: ${what} (line ${line}, column ${Math.max(column, 1)})`;
}

// Strings in policy messages and regexes from config, alike for the read and the write policy.
import { RE2JS } from "re2js";

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A page's or config's string quoted for a message, cut at `max` characters. */
export function shown(raw: string, max = 200): string {
  return JSON.stringify(raw.length > max ? `${raw.slice(0, max)}…` : raw);
}

/**
 * A regex from config, matched in time linear in the text (RE2 semantics, re2js): a pattern cannot stall the
 * broker however the page words a label or a URL.
 */
export interface ConfigPattern {
  /** The pattern as written, shown the way JavaScript shows a RegExp's source (`/` as `\/`). */
  readonly source: string;
  test(text: string): boolean;
}

const LINEAR = "tabrelay matches config patterns in linear time (RE2 syntax)";

/** Why RE2 refuses a pattern JavaScript would accept, with what to write instead; undefined if not one of those. */
function unsupportedSyntax(source: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const next = source[i + 1] ?? "";
      if (/[1-9]/.test(next) || (next === "k" && source[i + 2] === "<")) {
        return `backreferences are not supported: ${LINEAR}; spell the repeated text out, or list its forms as alternatives (a|b)`;
      }
      if (next === "u") return `\\u escapes are not supported: ${LINEAR}; write \\x{00E9} for U+00E9`;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") {
      inClass = true;
      if (source[i + 1] === "^") i++;
      if (source[i + 1] === "]") i++;
      continue;
    }
    if (c === "(" && source[i + 1] === "?") {
      const kind = source.slice(i + 2, i + 4);
      if (kind.startsWith("=") || kind.startsWith("!")) {
        return `lookahead is not supported: ${LINEAR}; match the text itself (anchor with ^ and $, list allowed forms as alternatives), and put what must never match under policy.deny`;
      }
      if (kind === "<=" || kind === "<!") {
        return `lookbehind is not supported: ${LINEAR}; match the text itself (anchor with ^ and $, list allowed forms as alternatives), and put what must never match under policy.deny`;
      }
      if (kind.startsWith(">")) return `atomic groups are not supported: ${LINEAR} and needs none; write the group without ?>`;
    }
  }
  return undefined;
}

/** Why `source` is not a config pattern (RE2 syntax), or undefined if it is one. */
export function patternProblem(source: string): string | undefined {
  try {
    RE2JS.compile(source);
    return undefined;
  } catch (error) {
    return unsupportedSyntax(source) ?? errorText(error);
  }
}

/** RegExp.prototype.source's form: unescaped `/` outside a class and line breaks escaped. */
function displaySource(source: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] ?? "";
    if (c === "\\") {
      out += source.slice(i, i + 2);
      i++;
    } else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\u2028") out += "\\u2028";
    else if (c === "\u2029") out += "\\u2029";
    else {
      if (c === "[") inClass = true;
      else if (c === "]") inClass = false;
      out += c === "/" && !inClass ? "\\/" : c;
    }
  }
  return out === "" ? "(?:)" : out;
}

/**
 * Compiles a regex from config (RE2 syntax, linear-time matching); throws an Error naming the config key (`where`)
 * when it is not one. `full`: the pattern must span the whole text, as if written `^(?:…)$`.
 */
export function compileRegex(source: unknown, where: string, what = "a path pattern", options: { full?: boolean } = {}): ConfigPattern {
  if (typeof source !== "string") throw new Error(`${where}: ${what} must be a string holding a regular expression`);
  const problem = patternProblem(source);
  if (problem !== undefined) throw new Error(`${where}: invalid regular expression ${JSON.stringify(source)}: ${problem}`);
  // Valid on its own, so wrapping cannot change how it parses; the anchors make it a full match.
  const compiled = RE2JS.compile(options.full === true ? `^(?:${source})$` : source);
  return Object.freeze({ source: displaySource(source), test: (text: string) => compiled.test(text) });
}

// Strings in policy messages and regexes from config, alike for the read and the write policy.

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A page's or config's string quoted for a message, cut at `max` characters. */
export function shown(raw: string, max = 200): string {
  return JSON.stringify(raw.length > max ? `${raw.slice(0, max)}…` : raw);
}

/** Compiles a regex from config; throws an Error naming the config key (`where`) when it is not one. */
export function compileRegex(source: unknown, where: string, what = "a path pattern"): RegExp {
  if (typeof source !== "string") throw new Error(`${where}: ${what} must be a string holding a regular expression`);
  try {
    return new RegExp(source);
  } catch (error) {
    throw new Error(`${where}: invalid regular expression ${JSON.stringify(source)}: ${errorText(error)}`);
  }
}

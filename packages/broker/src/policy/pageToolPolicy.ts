// Which page tools an agent may call (policy.write.page_tools), and which origins may offer them at all
// (pages.allowed_origins). A page tool runs with the user's session and can do anything its page can, whatever
// its annotations say, so calling one is a write: no grant, no call. Pure, deny on failure; compiled once.
import { compileRegex, type ConfigPattern } from "./text.js";

export type PageToolVerdict = { ok: true; rule: string } | { ok: false; rule: string; message: string };

export interface PageToolPolicy {
  /** May an agent call the page tool `name` of `origin`? */
  check(origin: string, name: string): PageToolVerdict;
  /** Origins with a grant, for the README's example and the dashboard. */
  readonly grantedOrigins: readonly string[];
}

/**
 * An origin as config names it, made exact: a bare host is https (`app.example` -> `https://app.example`); http
 * only where it is written; no path, query or credentials. Throws naming `where`.
 */
export function exactOrigin(value: string, where: string): string {
  const text = value.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`${where}: ${JSON.stringify(value)} is not an origin; write it as https://app.example (or http://localhost:3000)`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new Error(`${where}: ${JSON.stringify(value)}: an origin is https:// (or http://) and a host`);
  if (url.username || url.password || (url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) {
    throw new Error(
      `${where}: ${JSON.stringify(value)} is not an origin (it has a path, query or credentials); write only scheme, host and port: ${url.origin}`,
    );
  }
  return url.origin;
}

export function compilePageToolPolicy(grants: Record<string, { tools: string }> | undefined): PageToolPolicy {
  const compiled = new Map<string, ConfigPattern>();
  for (const [key, grant] of Object.entries(grants ?? {})) {
    const origin = exactOrigin(key, `policy.write.page_tools: ${JSON.stringify(key)}`);
    compiled.set(origin, compileRegex(grant.tools, `policy.write.page_tools["${key}"].tools`, "the tools pattern", { full: true }));
  }
  const grantedOrigins = Object.freeze([...compiled.keys()]);
  return Object.freeze({
    grantedOrigins,
    check(origin: string, name: string): PageToolVerdict {
      const pattern = compiled.get(origin);
      const rule = `policy.write.page_tools["${origin}"]`;
      if (!pattern) {
        return {
          ok: false,
          rule,
          message: `no grant lets agents call page tools of ${origin}; the user may add policy.write.page_tools: { "${origin}": { tools: "^(${name})$" } } to config.yaml`,
        };
      }
      if (!pattern.test(name))
        return { ok: false, rule, message: `the page tool ${JSON.stringify(name)} of ${origin} is not matched by ${rule}.tools (${pattern.source})` };
      return { ok: true, rule };
    },
  });
}

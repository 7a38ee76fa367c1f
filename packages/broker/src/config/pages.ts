// `pages:` in config.yaml: which web origins may offer their own tools to agents (page tools, over /page), and
// `policy.write.page_tools`, which of those tools agents may call. Off by default: no origin, no /page connection.
import { z } from "zod";
import { compilePageToolPolicy, exactOrigin, type PageToolPolicy } from "../policy/pageToolPolicy.js";

export const pagesFileSchema = z
  .object({
    /** Exact origins (https unless written with http://) whose pages may connect to /page. */
    allowed_origins: z.array(z.string().min(1)).max(1000).optional(),
    /** Offer WebMCP tools (document.modelContext) of agent tabs too. */
    webmcp: z.boolean().optional(),
    /** How long a page tool call may take before it fails with timeout (and the page is told to cancel). */
    call_timeout_ms: z.number().int().min(100).max(600_000).optional(),
    /** Default lifetime of a page token (POST /page-tokens, tabrelay page-token). */
    token_ttl_seconds: z.number().int().min(10).max(86_400).optional(),
  })
  .strict();

export const pageToolGrantsSchema = z.record(
  z.string(),
  z.object({ tools: z.string({ error: 'missing or not a string: the regex of the page tool names allowed, e.g. "^(render_chart|search_orders)$"' }) }).strict(),
);

export interface PagesSettings {
  allowedOrigins: string[];
  webmcp: boolean;
  callTimeoutMs: number;
  tokenTtlSeconds: number;
  /** policy.write.page_tools, compiled. */
  toolPolicy: PageToolPolicy;
}

/** Throws an Error naming the key at fault. */
export function pagesSettings(file: z.infer<typeof pagesFileSchema> | undefined, grants: z.infer<typeof pageToolGrantsSchema> | undefined): PagesSettings {
  const allowedOrigins = [...new Set((file?.allowed_origins ?? []).map((o, i) => exactOrigin(o, `pages.allowed_origins[${i}]`)))];
  return {
    allowedOrigins,
    webmcp: file?.webmcp ?? false,
    callTimeoutMs: file?.call_timeout_ms ?? 60_000,
    tokenTtlSeconds: file?.token_ttl_seconds ?? 600,
    toolPolicy: compilePageToolPolicy(grants),
  };
}

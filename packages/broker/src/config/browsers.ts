// `browsers:` in config.yaml: where the browsers the model starts itself come from (browser_start, browser_run with
// browser "new"). The hosted sources are the same provider clients and environment variables as
// `tabrelay serve --provider` (launch/providers.ts); `local` launches a headless Chromium (launch/cdpChromium.ts).
import { z } from "zod";

export const BROWSER_SOURCES = ["local", "browserbase", "kernel"] as const;
export type BrowserSource = (typeof BROWSER_SOURCES)[number];

export const browsersFileSchema = z
  .object({
    source: z.enum(BROWSER_SOURCES, { error: "source must be local, browserbase or kernel" }),
    max_sessions: z.number().int().min(1).max(50).optional(),
    idle_minutes: z.number().positive().max(1440).optional(),
    /** local only: a visible window (false) or none (true, the default). */
    headless: z.boolean().optional(),
    /** local only: the Chromium binary (default: the one `tabrelay launch` finds). */
    chromium: z.string().min(1).optional(),
  })
  .strict();

export interface BrowserSourceSettings {
  source: BrowserSource;
  /** Browsers started and not stopped, at most (browser_run's temporary ones count too). */
  maxSessions: number;
  /** A started browser no tool call has addressed for this long is stopped. */
  idleMs: number;
  headless: boolean;
  chromiumPath?: string;
}

export function browserSourceSettings(file: z.infer<typeof browsersFileSchema>): BrowserSourceSettings {
  return {
    source: file.source,
    maxSessions: file.max_sessions ?? 3,
    idleMs: Math.round((file.idle_minutes ?? 15) * 60_000),
    headless: file.headless ?? true,
    ...(file.chromium ? { chromiumPath: file.chromium } : {}),
  };
}

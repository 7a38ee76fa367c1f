import { z } from "zod";
import { validatePng } from "../screenshots/png.js";
import { base64ToBytes } from "../util/bytes.js";
import { TabrelayError, unwrap } from "../util/errors.js";
import { PAGE_TEXT_MAX } from "../util/pageText.js";
import { capabilitiesOf, flavorOf } from "../drivers/capabilities.js";
import { defineTool, fields } from "./tool.js";

export const screenshot = defineTool({
  name: "screenshot",
  title: "Screenshot a tab",
  description: "A tab (viewport, element by ref, or full page) as a short-lived PNG link: a bearer credential, do not share it.",
  input: {
    tab: fields.tab,
    ref: fields.ref.optional(),
    revision: fields.revision.optional(),
    full_page: z.boolean().optional().describe("Whole page."),
    activate: z.boolean().optional().describe("Bring it to the front (default true)."),
    inline: z.boolean().optional().describe("Also return the image itself."),
    browser: fields.browser,
  },
  kind: "read",
  errors: ["screenshots_disabled", "tab_not_visible", "stale_ref", "not_actionable", "policy_denied", "invalid_image"],
  async handler(ctx, params, response) {
    const settings = ctx.config.screenshots;
    if (!settings.enabled || !ctx.screenshots) {
      throw new TabrelayError(
        "screenshots_disabled",
        `screenshots are off: a picture of a logged-in tab can show private data. The user can enable them with \`screenshots: { enabled: true }\` in ${ctx.config.configName}; use read_page or snapshot meanwhile`,
      );
    }
    if (params.ref && !params.revision) throw new TabrelayError("invalid_params", "a ref needs the revision of the snapshot it came from");
    const conn = ctx.browser();
    if (params.ref && /^f\d+e/.test(params.ref) && !capabilitiesOf(flavorOf(conn.info)).frameElementScreenshot) {
      throw new TabrelayError(
        "not_actionable",
        `${params.ref} is inside a frame, and this browser (connected through the extension) cannot capture an element inside a frame: take the screenshot without a ref (the viewport shows the frame), or use a browser attached over CDP`,
      );
    }
    const tab = await ctx.gate.tab(params.tab);
    const clip = params.ref && params.revision ? unwrap(await tab.call("page.rect", { ref: params.ref, revision: params.revision })) : undefined;
    const shot = unwrap(
      await tab.call(
        "page.capture",
        { activate: params.activate ?? true, ...(clip ? { clip } : {}), ...(params.full_page ? { fullPage: true } : {}) },
        { timeoutMs: 30_000 },
      ),
    );
    // The picture shows what the tab showed when it was taken: judge that URL too.
    // What was captured is judged like any document the tab shows: the page may have moved on since it was checked.
    tab.judgeShown(shot.url);
    // Not base64 at all: nothing a PNG check would accept either.
    const bytes = base64ToBytes(shot.png) ?? new Uint8Array();
    const valid = validatePng(bytes, { maxBytes: settings.maxBytes, maxPixels: settings.maxPixels });
    if (!valid.ok) throw new TabrelayError("invalid_image", `${valid.message}; the browser sent something that is not an acceptable PNG, nothing was stored`);
    const stored = await ctx.screenshots.put(bytes, {
      width: valid.width,
      height: valid.height,
      pageUrl: shot.url,
      capturedAt: shot.capturedAt,
      owner: ctx.user.user,
    });
    response.line(
      `Screenshot of tab ${params.tab}${params.ref ? ` (element ${params.ref})` : params.full_page ? " (full page)" : ""}: ${valid.width}x${valid.height} PNG`,
    );
    response.pageText("Page", shot.url, PAGE_TEXT_MAX.url);
    response.line(`Captured: ${new Date(shot.capturedAt).toISOString()}; link expires ${new Date(stored.expiresAt).toISOString()}`);
    response.line(
      stored.owner === undefined
        ? `Link (a bearer credential; do not share): ${stored.url}`
        : `Link (fetched with your tabrelay token as the Authorization bearer; do not share): ${stored.url}`,
    );
    response.structured({
      link: stored.url,
      width: valid.width,
      height: valid.height,
      pageUrl: shot.url,
      capturedAt: shot.capturedAt,
      expiresAt: stored.expiresAt,
    });
    if (params.inline) response.image(shot.png, "image/png");
  },
});

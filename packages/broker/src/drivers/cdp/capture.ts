// Screenshots in the CDP driver: page.capture (viewport, clip, full page), with background tabs
// brought to the front or retried.
import type { CaptureParams, CaptureResult } from "@tabrelay/protocol";
import type { Protocol } from "devtools-protocol";
import { type CdpCore, DriverError, type Tab } from "./cdpCore.js";
import { isVisible } from "./navigation.js";
import { base64ToBytes, latin1, readUint32 } from "../../util/bytes.js";

export const MAX_SCREENSHOT_HEIGHT = 16_384;

/** Width and height from a PNG's IHDR chunk (signature, length, "IHDR", width, height). */
export function pngSize(base64: string): { width: number; height: number } | undefined {
  const head = base64ToBytes(base64.slice(0, 44));
  if (!head || head.length < 24 || readUint32(head, 0) !== 0x89504e47 || latin1(head, 12, 16) !== "IHDR") return undefined;
  return { width: readUint32(head, 16), height: readUint32(head, 20) };
}

/** The viewport: optimizeForSpeed, the same lossless PNG at zlib's fast level (about a quarter larger, the encode a fraction). */
const VIEWPORT_SHOT: Protocol.Page.CaptureScreenshotRequest = { format: "png", optimizeForSpeed: true };

export async function capture(core: CdpCore, tab: Tab & { sessionId: string }, params: CaptureParams): Promise<CaptureResult> {
  const viewport = !params.clip && !params.fullPage;
  // A tab last seen in front (as the call's gate looked at it) has its viewport captured while its visibility is asked;
  // the capture counts only if the tab is in front. A viewport needs no layout metrics (a clip and a full page do).
  const early = viewport && tab.lastVisible === true ? core.send("Page.captureScreenshot", VIEWPORT_SHOT, tab.sessionId) : undefined;
  const [seen, metrics] = await Promise.all([isVisible(core, tab), viewport ? undefined : core.must("Page.getLayoutMetrics", {}, tab.sessionId)]);
  let visible = seen;
  let data: string | undefined;
  if (early && visible) {
    const result = await early;
    if (!result.ok) throw core.failure(result.error);
    data = result.value.data;
  }
  // Chrome stalls captures of a background tab. In a browser whose every page is the agent's (or when asked to) the tab is
  // brought to the front; otherwise the capture is retried (it does complete, irregularly).
  if (!visible && (params.activate || core.allPagesAgents)) {
    await core.must("Target.activateTarget", { targetId: tab.targetId });
    visible = true;
  }
  // A clip or a full page, up to MAX_SCREENSHOT_HEIGHT tall, keeps the smaller file.
  let shot = VIEWPORT_SHOT;
  if (metrics && params.clip) {
    // The protocol's clip is viewport-relative; CDP's is in document coordinates.
    const { pageX, pageY } = metrics.cssVisualViewport;
    shot = {
      format: "png",
      clip: { x: params.clip.x + pageX, y: params.clip.y + pageY, width: Math.max(1, params.clip.width), height: Math.max(1, params.clip.height), scale: 1 },
    };
  } else if (metrics && params.fullPage) {
    const { width, height } = metrics.cssContentSize;
    shot = {
      format: "png",
      captureBeyondViewport: true,
      clip: { x: 0, y: 0, width: Math.ceil(width), height: Math.ceil(Math.min(height, MAX_SCREENSHOT_HEIGHT)), scale: 1 },
    };
  }
  for (let attempt = 0; attempt < (visible ? 1 : 4) && data === undefined; attempt++) {
    const result = await core.send("Page.captureScreenshot", shot, tab.sessionId, visible ? undefined : 3000);
    if (result.ok) data = result.value.data;
    else if (result.error.kind !== "timeout" || visible) throw core.failure(result.error);
  }
  if (data === undefined)
    throw new DriverError("timeout", `tab ${tab.tabId} is in the background and did not render a frame to capture; activate it (activate_tab) and retry`);
  const size = pngSize(data);
  if (!size) throw new DriverError("internal", "the browser returned something other than a PNG");
  // The document the picture shows (asked after it was taken): its URL is all a capture answers, not whether it is in front.
  const url = await tabUrl(core, tab);
  return { png: data, width: size.width, height: size.height, url, capturedAt: Date.now() };
}

/** The URL of the tab's document now (Target.getTargetInfo; the tab's last known one if the browser does not say). */
async function tabUrl(core: CdpCore, tab: Tab): Promise<string> {
  if (tab.gone) throw new DriverError("no_such_tab", `tab ${tab.tabId} no longer exists; call list_tabs`);
  const target = await core.send("Target.getTargetInfo", { targetId: tab.targetId });
  if (target.ok) {
    tab.title = target.value.targetInfo.title;
    tab.url = target.value.targetInfo.url || tab.url;
  }
  return tab.url;
}

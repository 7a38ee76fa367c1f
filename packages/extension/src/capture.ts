// Screenshots: captures of the visible tab, cropped to a clip or stitched into a full page.
import { scriptingError } from "./inpageScript.js";

interface PageMetrics {
  innerWidth: number;
  innerHeight: number;
  scrollHeight: number;
  scrollY: number;
  dpr: number;
}

let lastCaptureAt = 0;

export async function pageMetrics(tabId: number): Promise<PageMetrics> {
  const [frame] = await chrome.scripting
    .executeScript({
      target: { tabId, frameIds: [0] },
      func: () => ({
        innerWidth,
        innerHeight,
        scrollHeight: Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0),
        scrollY,
        dpr: devicePixelRatio,
      }),
    })
    .catch((error: unknown) => {
      throw scriptingError(error);
    });
  return frame?.result as PageMetrics;
}

export async function scrollTo(tabId: number, y: number): Promise<void> {
  await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, func: (top: number) => window.scrollTo(0, top), args: [y] });
}

/**
 * captureVisibleTab right after a DOM change can return the previous frame: wait for two animation frames in the
 * page first. Chrome allows at most two captures a second, counted when the browser receives each call: captures
 * run one at a time, each at least CAPTURE_GAP_MS after the previous one *ended* (by then the browser had received
 * it), so no three ever land in one second however late a busy machine delivers them. A quota error all the same
 * (another extension of the profile capturing too) waits out the second once.
 */
export function captureFresh(tabId: number, windowId: number): Promise<string> {
  const turn = captureChain.then(() => captureOnce(tabId, windowId));
  captureChain = turn.then(
    () => undefined,
    () => undefined,
  );
  return turn;
}

const CAPTURE_GAP_MS = 510;
let captureChain: Promise<void> = Promise.resolve();

async function captureOnce(tabId: number, windowId: number): Promise<string> {
  await chrome.scripting.executeScript({
    target: { tabId, frameIds: [0] },
    func: () => new Promise<boolean>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))),
  });
  for (let attempt = 0; ; attempt++) {
    const wait = lastCaptureAt + CAPTURE_GAP_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      const dataUrl = await chrome.tabs.captureVisibleTab(windowId, { format: "png" });
      return dataUrl.slice(dataUrl.indexOf(",") + 1);
    } catch (error) {
      if (attempt > 0 || !/MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND/.test(error instanceof Error ? error.message : String(error))) throw error;
      lastCaptureAt = Date.now() + 1000 - CAPTURE_GAP_MS;
    } finally {
      lastCaptureAt = Math.max(lastCaptureAt, Date.now());
    }
  }
}

async function decode(png: string): Promise<ImageBitmap> {
  const blob = await (await fetch(`data:image/png;base64,${png}`)).blob();
  return createImageBitmap(blob);
}

async function encode(canvas: OffscreenCanvas): Promise<string> {
  const blob = await canvas.convertToBlob({ type: "image/png" });
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** Width and height from a base64 PNG's IHDR (bytes 16-23, in its first 32 characters): read, not decoded. */
export function pngSize(png: string): { width: number; height: number } {
  const head = atob(png.slice(0, 32));
  const u32 = (at: number) => ((head.charCodeAt(at) << 24) | (head.charCodeAt(at + 1) << 16) | (head.charCodeAt(at + 2) << 8) | head.charCodeAt(at + 3)) >>> 0;
  return { width: u32(16), height: u32(20) };
}

/** Crops the capture to `clip`, or without one stitches the captures of a full page. */
export async function compose(
  shots: { png: string; y: number }[],
  metrics: PageMetrics,
  clip: { x: number; y: number; width: number; height: number } | undefined,
): Promise<{ png: string; width: number; height: number }> {
  const first = await decode(shots[0]!.png);
  const scale = first.width / metrics.innerWidth;
  if (clip) {
    const sx = Math.max(0, Math.round(clip.x * scale));
    const sy = Math.max(0, Math.round(clip.y * scale));
    const w = Math.max(1, Math.min(first.width - sx, Math.round(clip.width * scale)));
    const h = Math.max(1, Math.min(first.height - sy, Math.round(clip.height * scale)));
    const canvas = new OffscreenCanvas(w, h);
    canvas.getContext("2d")?.drawImage(first, sx, sy, w, h, 0, 0, w, h);
    return { png: await encode(canvas), width: w, height: h };
  }
  const last = shots[shots.length - 1]!;
  const height = Math.round((last.y + metrics.innerHeight) * scale);
  const canvas = new OffscreenCanvas(first.width, Math.min(height, 16_384));
  const ctx = canvas.getContext("2d");
  for (const shot of shots) ctx?.drawImage(await decode(shot.png), 0, Math.round(shot.y * scale));
  return { png: await encode(canvas), width: canvas.width, height: canvas.height };
}

// Network enforcement of the CDP driver: Fetch interception that asks the request policy about every
// request (navigations and subresources) and stops responses the browser would save as files, and the
// cancelling of downloads started in an agent tab.
import type { Protocol } from "devtools-protocol";
import type { CdpCore, Tab } from "./cdpCore.js";

/** Every request passes the request policy; top documents are paused again at their response (downloads). */
export const PAGE_FETCH_PATTERNS: Protocol.Fetch.RequestPattern[] = [
  { urlPattern: "*" },
  { urlPattern: "*", resourceType: "Document", requestStage: "Response" },
];

/** MIME types a browser shows rather than saves (beyond text/*, image/*, audio/*, video/*). */
export const SHOWN_TYPES =
  /^(application\/(json|xml|xhtml\+xml|pdf|javascript|x-javascript|ecmascript|[\w.+-]+\+(xml|json))|message\/rfc822|multipart\/(x-mixed-replace|related))$/;

/** Whether a document response would be saved as a file: `Content-Disposition: attachment`, or a type no tab shows. */
export function isDownloadResponse(headers: Protocol.Fetch.HeaderEntry[] = []): boolean {
  const header = (name: string) => headers.find((h) => h.name.toLowerCase() === name)?.value;
  if (/^\s*attachment\b/i.test(header("content-disposition") ?? "")) return true;
  const type = (header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "") return false; // sniffed: usually shown
  return !(/^(text|image|audio|video)\//.test(type) || SHOWN_TYPES.test(type));
}

/** A download started in any frame of an agent tab is cancelled (in a browser of our own it is refused anyway). */
export async function onDownload(core: CdpCore, { frameId, guid, url }: Protocol.Browser.DownloadWillBeginEvent): Promise<void> {
  if (!frameId || !guid) return;
  for (const tab of core.tabs.values()) {
    let ours = tab.targetId === frameId || tab.mainFrameId === frameId;
    if (!ours && tab.sessionId !== undefined) {
      const routes = await core.frames(Object.assign(tab, { sessionId: tab.sessionId })).catch(() => []);
      ours = routes.some((route) => route.frameId === frameId);
    }
    if (ours) {
      await core.send("Browser.cancelDownload", { guid });
      core.emit({ type: "event", event: "tab.download", params: { tabId: tab.tabId, url, outcome: "cancelled" } });
      return;
    }
  }
}

export function onRequestPaused(core: CdpCore, params: Protocol.Fetch.RequestPausedEvent, sessionId: string, tab?: Tab): void {
  const { requestId, frameId } = params;
  const url = params.request.url;
  if (!requestId) return;
  if (params.responseStatusCode !== undefined || params.responseErrorReason !== undefined) {
    // A document's response, before the browser acts on it: one the browser would save as a file is
    // stopped here, so nothing lands on the user's disk, in an attached browser too.
    const status = params.responseStatusCode ?? 0;
    if (tab && frameId === tab.mainFrameId && status > 0) core.emit({ type: "event", event: "tab.response", params: { tabId: tab.tabId, url, status } });
    if (tab && status >= 200 && status < 300 && isDownloadResponse(params.responseHeaders)) {
      if (frameId === tab.mainFrameId) tab.blockedDownload = url;
      void core.client.send("Fetch.failRequest", { requestId, errorReason: "BlockedByClient" }, sessionId);
      core.emit({ type: "event", event: "tab.download", params: { tabId: tab.tabId, url, outcome: "stopped" } });
    } else {
      void core.client.send("Fetch.continueRequest", { requestId }, sessionId);
    }
    return;
  }
  const navigation = params.resourceType === "Document";
  let allowed = false;
  try {
    allowed = core.options.requestPolicy?.(url, navigation ? "navigation" : "subresource", (tab ?? core.children.get(sessionId))?.tabId) === true;
  } catch {
    // A policy that fails denies.
  }
  if (allowed) {
    void core.client.send("Fetch.continueRequest", { requestId }, sessionId);
    return;
  }
  void core.client.send("Fetch.failRequest", { requestId, errorReason: "BlockedByClient" }, sessionId);
  const owner = tab ?? core.children.get(sessionId);
  if (navigation && owner) {
    const frame = frameId !== owner.mainFrameId;
    if (!frame) owner.blockedNavigation = { url, at: Date.now() };
    core.emit({ type: "event", event: "tab.blocked", params: { tabId: owner.tabId, url, frame } });
  }
}

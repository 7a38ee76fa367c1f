// What each kind of driver can and cannot do, where they really differ. Tools read these flags instead of finding out
// from a driver's error, and list_browsers and docs/servers.md state them; everything else behaves the same on every
// driver.
import type { BrowserInfo } from "./driver.js";

export interface DriverCapabilities {
  /** A screenshot of one element inside a frame (screenshot with a frame's ref). */
  frameElementScreenshot: boolean;
  /** A screenshot of a tab in the background, left where it is (screenshot with activate: false). */
  backgroundCapture: boolean;
  /** What happens to alert / confirm / prompt / beforeunload dialogs an agent tab's page opens. */
  dialogs: "dismissed" | "left to the person";
  /** Code mode's eval on a page whose Content-Security-Policy forbids eval (no 'unsafe-eval'). */
  evalUnderCsp: boolean;
  /** Code mode's viewport sizes that tab alone (else: the tab's whole window, brought to the front of it). */
  viewportOfTabOnly: boolean;
}

/** A driver and, for the extension, the browser it runs in: where capabilities can differ. */
export type DriverFlavor = "extension" | "cdp" | "firefox";

export function flavorOf(info: Pick<BrowserInfo, "kind" | "product">): DriverFlavor {
  return info.kind === "extension" && info.product === "firefox" ? "firefox" : info.kind;
}

const CAPABILITIES: Record<DriverFlavor, DriverCapabilities> = {
  // chrome.tabs.captureVisibleTab sees the top frame's viewport; a frame's offset in it is not known to the extension.
  // An extension cannot answer a page's dialog: it waits for the person at the browser.
  // captureVisibleTab pictures whatever tab is in front, so a background tab must come to the front first.
  // chrome.scripting's MAIN world is the page's own, under its CSP; a tab has no viewport apart from its window's.
  extension: { frameElementScreenshot: false, backgroundCapture: false, dialogs: "left to the person", evalUnderCsp: false, viewportOfTabOnly: false },
  // Over DevTools a frame's box is known in the page's coordinates; dialogs are answered (alert and beforeunload
  // accepted, confirm and prompt cancelled) so a page cannot hold the tab.
  // Page.captureScreenshot renders the tab it is asked for, in front or not.
  // Runtime.evaluate is DevTools' own evaluation, which a page's CSP does not govern; device metrics are per tab.
  cdp: { frameElementScreenshot: true, backgroundCapture: true, dialogs: "dismissed", evalUnderCsp: true, viewportOfTabOnly: true },
  // The same WebExtension APIs in Firefox (tabs.captureVisibleTab, scripting's MAIN world under the page's CSP).
  firefox: { frameElementScreenshot: false, backgroundCapture: false, dialogs: "left to the person", evalUnderCsp: false, viewportOfTabOnly: false },
};

export function capabilitiesOf(flavor: DriverFlavor): DriverCapabilities {
  return CAPABILITIES[flavor];
}

/** The capabilities in words, for list_browsers. */
export function describeCapabilities(flavor: DriverFlavor): string {
  const c = capabilitiesOf(flavor);
  return `element screenshots in frames: ${c.frameElementScreenshot ? "yes" : "no"}; background tab screenshots: ${c.backgroundCapture ? "yes" : "no"}; page dialogs: ${c.dialogs}`;
}

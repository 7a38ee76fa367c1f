// The one place where the extension's two builds differ at run time (build.mjs makes dist/ for Chrome and
// dist-firefox/ for Firefox from these same sources, and sets TABRELAY_BROWSER for each). Everything else calls the
// same `chrome.*` APIs in both: Firefox provides them under that name too, with promises.
import type { BrowserProduct } from "@tabrelay/protocol";

declare const TABRELAY_BROWSER: BrowserProduct;

/** The browser this build is for: the broker names it (list_browsers), the popup words its hints after it. */
export const PRODUCT: BrowserProduct = TABRELAY_BROWSER;

/** A question's notification, as each browser can show it. */
export interface QuestionNotice {
  title: string;
  message: string;
  context: string;
}

/**
 * Chrome shows the question with its two answers as buttons, until the person acts on it. Firefox's notifications
 * take no buttons, context line, priority or requireInteraction (it refuses the call with any of them): the
 * notification says where to answer, and clicking it opens the popup on the question (asks.ts), as in Chrome.
 */
export function questionNotification(notice: QuestionNotice): chrome.notifications.NotificationCreateOptions {
  const iconUrl = chrome.runtime.getURL("icons/icon-128.png");
  if (PRODUCT === "firefox")
    return { type: "basic", iconUrl, title: notice.title, message: `${notice.message}\n${notice.context}\nClick to answer (Allow once, Always, Deny).` };
  return {
    type: "basic",
    iconUrl,
    title: notice.title,
    message: notice.message,
    contextMessage: notice.context,
    buttons: [{ title: "Allow once" }, { title: "Deny" }],
    requireInteraction: true,
    priority: 2,
  };
}

/**
 * Firefox's load errors (webNavigation.onErrorOccurred: "Error code <nsresult>") named as Chrome names them
 * ("net::ERR_..."), so that one reading of them serves both: which ones mean "replaced by another navigation", "blocked
 * by the navigation rules", or a failure to report by name. An nsresult without a Chrome counterpart keeps its own.
 */
const FIREFOX_LOAD_ERRORS: Record<number, string> = {
  0x804b0002: "net::ERR_ABORTED", // NS_BINDING_ABORTED
  0x80004004: "net::ERR_BLOCKED_BY_CLIENT", // NS_ERROR_ABORT: a request an extension's rule cancelled
  0x804b000d: "net::ERR_CONNECTION_REFUSED", // NS_ERROR_CONNECTION_REFUSED
  0x804b000e: "net::ERR_TIMED_OUT", // NS_ERROR_NET_TIMEOUT
  0x804b0010: "net::ERR_INTERNET_DISCONNECTED", // NS_ERROR_OFFLINE
  0x804b0014: "net::ERR_CONNECTION_RESET", // NS_ERROR_NET_RESET
  0x804b001e: "net::ERR_NAME_NOT_RESOLVED", // NS_ERROR_UNKNOWN_HOST
  0x804b001f: "net::ERR_TOO_MANY_REDIRECTS", // NS_ERROR_REDIRECT_LOOP
  0x804b002a: "net::ERR_PROXY_CONNECTION_FAILED", // NS_ERROR_UNKNOWN_PROXY_HOST
  0x804b0047: "net::ERR_CONNECTION_CLOSED", // NS_ERROR_NET_INTERRUPT
  0x804b0048: "net::ERR_PROXY_CONNECTION_FAILED", // NS_ERROR_PROXY_CONNECTION_REFUSED
};

export function loadError(error: string): string {
  if (PRODUCT !== "firefox") return error;
  const code = /^Error code (\d+)$/.exec(error)?.[1];
  if (code === undefined) return error;
  const value = Number(code);
  // NSS's range (0x805A....): the certificate or the TLS handshake.
  if (value >>> 16 === 0x805a) return `net::ERR_CERT_INVALID (Firefox security error 0x${value.toString(16)})`;
  return FIREFOX_LOAD_ERRORS[value] ?? `Firefox load error 0x${value.toString(16)}`;
}

/**
 * A request's error (webRequest.onErrorOccurred) as Chrome names it: Firefox says NS_ERROR_ABORT for a request a
 * declarativeNetRequest rule (or another extension) cancelled, where Chrome says net::ERR_BLOCKED_BY_CLIENT.
 */
export function requestError(error: string): string {
  return PRODUCT === "firefox" && error === "NS_ERROR_ABORT" ? "net::ERR_BLOCKED_BY_CLIENT" : error;
}

/**
 * Whether a scripting error only means the tab's document is being replaced: Firefox refuses a script with "Missing
 * host permission for the tab" while a tab of a page it may script is between documents (a page refreshing itself).
 * The caller checks that the tab shows an http(s) page, which the extension's <all_urls> permission covers.
 */
export function replacedWhileScripting(message: string): boolean {
  return PRODUCT === "firefox" && /Missing host permission for the tab/.test(message);
}

/**
 * A tab's title as the page gave it. Firefox titles a blank tab with its own words ("New Tab", in the person's
 * language), which no page wrote; Chrome gives a page without a title its URL, which is what the blank tab gets here.
 */
export function tabTitle(tab: { url?: string; title?: string }): string {
  if (PRODUCT === "firefox" && tab.url === "about:blank") return "about:blank";
  return tab.title ?? "";
}

/**
 * Match patterns for content scripts on these origins ("https://app.example:8443"). Firefox's match patterns take
 * no port (one with a port matches nothing there): the host's pattern matches it on every port, and what the scripts
 * report is judged by its exact origin (the broker takes page tools only from pages.allowed_origins).
 */
export function originMatches(origins: readonly string[]): string[] {
  const exact = origins.filter((o) => /^https?:\/\/[^/*]+$/.test(o));
  return PRODUCT === "firefox" ? [...new Set(exact.map((o) => `${o.replace(/:\d+$/, "")}/*`))] : exact.map((o) => `${o}/*`);
}

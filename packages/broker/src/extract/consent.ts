// Consent, cookie and newsletter overlays, dropped in readable mode (full mode keeps everything).
//
// A consent banner is usually the first block of text in <body>, so Readability keeps it as the article's first
// paragraph ("We use cookies ... Accept all"). Three ways to recognise one, cheapest first:
//   1. the containers of the common consent managers (OneTrust, Cookiebot, Quantcast Choice / IAB TCF, Didomi,
//      Usercentrics, TrustArc, Sourcepoint, Osano, CookieYes, Complianz, iubenda, Google's Funding Choices, ...):
//      their ids and classes mean nothing else, so they go whatever their text;
//   2. a dialog (role=dialog/alertdialog, an open <dialog>), or a landmark region labelled for cookies,
//      consent or privacy, whose text asks for cookie or tracking consent, or to subscribe to a newsletter;
//   3. any element whose id or class names cookies, consent or a newsletter pop-up, or that is fixed or
//      sticky (its computed position, which the in-page reader marks with POSITION_MARK_ATTR on the copy it sends,
//      or its inline style), when its text is about that too;
//   4. a plain banner with none of these marks: a consent button ("Accept all", "Reject", "Got it", ...) whose nearest
//      small ancestor speaks of cookies or consent; that ancestor goes.
// 2 and 3 also need the element to be small (a banner, not a page), to hold none of the page's main landmarks and to
// sit outside any <article>, so an article about cookies (the baked kind, or the HTTP kind), a section of one, and a
// page wrapper with a "cookie-banner-open" class stay. A fixed or sticky box about consent goes from inside an
// article too: it floats over the text rather than being part of it.

import { POSITION_MARK_ATTR } from "@tabrelay/protocol";
import { compactLength, isElement, type DomElement } from "./dom.js";

/** Containers only consent managers use, by id (or id prefix) and by class. */
const CONSENT_MANAGER_IDS = new Set([
  "onetrust-consent-sdk",
  "onetrust-banner-sdk",
  "onetrust-pc-sdk", // OneTrust
  "CybotCookiebotDialog",
  "CookiebotWidget",
  "cookiebanner", // Cookiebot
  "qc-cmp2-container",
  "qc-cmp2-ui", // Quantcast Choice (IAB TCF)
  "didomi-host",
  "didomi-popup",
  "didomi-notice", // Didomi
  "usercentrics-root",
  "usercentrics-cmp-ui",
  "uc-banner-modal", // Usercentrics
  "truste-consent-track",
  "consent_blackbar", // TrustArc
  "cmplz-cookiebanner-container",
  "iubenda-cs-banner",
  "axeptio_overlay",
  "BorlabsCookieBox", // Complianz, iubenda, ...
  "cookie-law-info-bar",
  "moove_gdpr_cookie_info_bar",
]);
const CONSENT_MANAGER_ID_PREFIXES = ["sp_message_container_"]; // Sourcepoint
const CONSENT_MANAGER_CLASS = new RegExp(
  `(?:^|\\s)(?:${[
    "optanon-alert-box-wrapper",
    "qc-cmp2-container",
    "qc-cmp-ui-container",
    "didomi-popup-container",
    "truste_box_overlay",
    "osano-cm-window",
    "cc-window", // Osano and its open-source cookieconsent
    "cky-consent-container",
    "cky-modal",
    "cmplz-cookiebanner",
    "fc-consent-root",
    "klaro",
  ].join("|")})(?:\\s|$)`,
);

const DIALOG_ROLES = new Set(["dialog", "alertdialog"]);
/** Landmark regions consent banners use, when their label says what they are ("Cookie banner", "Privacy"). */
const REGION_ROLES = new Set(["region", "banner", "complementary"]);
const CONSENT_LABEL = /cookie|consent|privacy|gdpr/i;

/** id/class tokens of a consent or newsletter overlay (as whole words inside the attribute). */
const OVERLAY_NAME =
  /(?:^|[\s_-])(?:cookies?|cookie-?(?:banner|bar|notice|consent|law|popup|wall)|consent|gdpr|ccpa|cmp|privacy-?(?:banner|notice|popup)|newsletter-?(?:popup|modal|overlay|signup)?|subscribe-?(?:popup|modal))(?:$|[\s_-])/i;
const FIXED_STYLE = /(?:^|[;\s])position\s*:\s*(?:fixed|sticky)/i;

const COOKIE_TEXT = /\b(?:cookies?|tracking technolog(?:y|ies)|personal data|consent|your privacy|privacy (?:settings|preferences|choices))\b/i;
const CONSENT_ACTION = /\b(?:accept|agree|allow|consent|reject|decline|refuse|manage|preferences|settings|customi[sz]e|got it|ok|okay|continue)\b/i;
const NEWSLETTER_TEXT = /\b(?:newsletter|subscribe|sign up|signup|inbox|mailing list)\b/i;

/** The label of a button that answers a consent prompt. */
const CONSENT_BUTTON =
  /^(?:accept|agree|allow|reject|decline|deny|refuse|ok|okay|got it|i understand|understood|only (?:necessary|essential)|(?:necessary|essential) only|manage (?:cookies|options|preferences)|cookie settings|customi[sz]e)\b/i;
/** A plain banner is a sentence or two and its buttons. */
const MAX_PLAIN_BANNER_CHARS = 1200;
const MAX_CLIMB = 6;

/** A banner or pop-up holds a few sentences; a consent manager's long vendor lists are caught by its container. */
const MAX_OVERLAY_CHARS = 3000;
const MAIN_LANDMARKS = "main, article, [role=main], h1";

function isAboutConsent(text: string): boolean {
  return COOKIE_TEXT.test(text) && CONSENT_ACTION.test(text);
}

function isNewsletterPrompt(el: DomElement, text: string): boolean {
  return NEWSLETTER_TEXT.test(text) && el.querySelector("input[type=email], input[name*=mail i], button, [role=button], input[type=submit]") !== null;
}

/**
 * Small, not the page (no main landmark inside) and not part of the article (a section on cookies, say), unless it
 * floats (fixed or sticky) over the article rather than being part of its text.
 */
function isOverlaySized(el: DomElement, text: string, floats = false): boolean {
  return compactLength(text) <= MAX_OVERLAY_CHARS && el.querySelector(MAIN_LANDMARKS) === null && (floats || el.closest("article") === null);
}

function looksLikeOverlay(el: DomElement, floats: boolean): boolean {
  const text = el.textContent ?? "";
  if (!isOverlaySized(el, text, floats)) return false;
  return isAboutConsent(text) || isNewsletterPrompt(el, text);
}

type Kind = "consent manager" | "candidate" | "floating" | "button";

/**
 * What an element may be, from its tag and five attributes (id, class, the position mark, style, role): the walk visits every element,
 * and on linkedom each attribute read costs about a microsecond.
 */
function classify(el: DomElement): Kind | undefined {
  const id = el.getAttribute("id");
  if (id !== null && (CONSENT_MANAGER_IDS.has(id) || CONSENT_MANAGER_ID_PREFIXES.some((prefix) => id.startsWith(prefix)))) return "consent manager";
  const classes = el.getAttribute("class");
  if (classes !== null && CONSENT_MANAGER_CLASS.test(classes)) return "consent manager";
  if (el.getAttribute(POSITION_MARK_ATTR) !== null) return "floating";
  const style = el.getAttribute("style");
  if (style !== null && FIXED_STYLE.test(style)) return "floating";
  if ((id !== null && OVERLAY_NAME.test(id)) || (classes !== null && OVERLAY_NAME.test(classes))) return "candidate";
  const tag = el.tagName;
  const role = el.getAttribute("role")?.trim().toLowerCase();
  if (role !== undefined) {
    if (DIALOG_ROLES.has(role)) return "candidate";
    if (REGION_ROLES.has(role) && CONSENT_LABEL.test(el.getAttribute("aria-label") ?? "")) return "candidate";
    if (role === "button") return "button";
  }
  if (tag === "DIALOG" && el.hasAttribute("open")) return "candidate";
  // Where a consent answer can be clicked: buttons, and links that act as buttons (no real destination).
  if (tag === "BUTTON") return "button";
  if (tag === "INPUT") return /^(?:button|submit)$/i.test(el.getAttribute("type") ?? "") ? "button" : undefined;
  if (tag === "A") {
    const href = (el.getAttribute("href") ?? "").trim();
    if (href === "" || href.startsWith("#") || /^javascript:/i.test(href)) return "button";
  }
  return undefined;
}

/** The nearest ancestor of a consent button that speaks of cookies or consent, while it is banner-sized. */
function plainBannerAround(button: DomElement, root: DomElement): DomElement | undefined {
  let el = button.parentNode;
  for (let i = 0; i < MAX_CLIMB && isElement(el) && el !== root; i++, el = el.parentNode) {
    const text = el.textContent ?? "";
    if (compactLength(text) > MAX_PLAIN_BANNER_CHARS) return undefined;
    if (COOKIE_TEXT.test(text)) return isOverlaySized(el, text) ? el : undefined;
  }
  return undefined;
}

/** Removes consent, cookie and newsletter overlays below `root`; returns how many it removed. */
export function dropConsentOverlays(root: DomElement): number {
  const doomed: DomElement[] = [];
  const within = (el: DomElement) => doomed.some((outer) => outer === el || outer.contains(el));
  // One walk in document order; a doomed element's subtree is not visited.
  const stack: DomElement[] = [];
  for (let child = root.lastElementChild; child !== null; child = child.previousElementSibling) stack.push(child);
  for (let el = stack.pop(); el !== undefined; el = stack.pop()) {
    const kind = classify(el);
    if (kind === "consent manager" || ((kind === "candidate" || kind === "floating") && looksLikeOverlay(el, kind === "floating"))) {
      doomed.push(el);
      continue;
    }
    if (kind === "button") {
      const label = (el.textContent || el.getAttribute("value") || "").replace(/\s+/g, " ").trim();
      if (label.length <= 40 && CONSENT_BUTTON.test(label)) {
        const banner = plainBannerAround(el, root);
        if (banner !== undefined && !within(banner)) doomed.push(banner);
      }
    }
    for (let child = el.lastElementChild; child !== null; child = child.previousElementSibling) if (!within(child)) stack.push(child);
  }
  // A plain banner found from its button encloses elements visited before it: keep the outermost only.
  const outermost = doomed.filter((el) => !doomed.some((other) => other !== el && other.contains(el)));
  for (const el of outermost) el.remove();
  return outermost.length;
}

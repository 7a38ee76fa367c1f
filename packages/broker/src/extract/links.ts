// Links and images.
import type { DomDocument, DomElement } from "./dom.js";

const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:", "tel:", "ftp:"]);
const IMAGE_PROTOCOLS = new Set(["http:", "https:"]);
const INVISIBLE = /[\s\u200b-\u200d\u2060\ufeff]+/g;

function resolveUrl(raw: string, base: URL | undefined): URL | undefined {
  try {
    // The URL parser strips tabs/newlines and surrounding control characters, so "java\tscript:" and " JAVASCRIPT:"
    // come out with protocol "javascript:" and are rejected by the protocol allow-lists.
    return new URL(raw, base);
  } catch {
    return undefined;
  }
}

function firstSrcsetUrl(srcset: string | null): string | null {
  if (srcset === null) return null;
  const first = srcset.trim().split(/\s+/)[0];
  return first === undefined || first === "" ? null : first.replace(/,$/, "");
}

function imageUrl(img: DomElement, base: URL | undefined): string | undefined {
  // Lazy-loading pages put a data: placeholder in src and the real image in data-src / srcset.
  const candidates = [
    img.getAttribute("src"),
    img.getAttribute("data-src"),
    img.getAttribute("data-original"),
    img.getAttribute("data-lazy-src"),
    firstSrcsetUrl(img.getAttribute("srcset")),
    firstSrcsetUrl(img.getAttribute("data-srcset")),
  ];
  for (const raw of candidates) {
    if (raw === null || raw.trim() === "") continue;
    const url = resolveUrl(raw, base);
    if (url !== undefined && IMAGE_PROTOCOLS.has(url.protocol)) return url.href;
  }
  return undefined;
}

/**
 * Makes every link and image absolute (against <base href> when present), drops javascript:/data:/other unsafe
 * targets (link text is kept; images are replaced by their alt text or removed), and removes links left empty.
 */
export function fixLinksAndImages(root: DomElement, base: URL | undefined): void {
  for (const img of Array.from(root.querySelectorAll("img"))) {
    const src = imageUrl(img, base);
    if (src !== undefined) {
      img.setAttribute("src", src);
      continue;
    }
    const alt = (img.getAttribute("alt") ?? "").replace(INVISIBLE, " ").trim();
    if (alt !== "") img.replaceWith(alt);
    else img.remove();
  }
  for (const a of Array.from(root.querySelectorAll("a"))) {
    const href = a.getAttribute("href");
    if (href !== null) {
      const url = resolveUrl(href, base);
      if (url !== undefined && LINK_PROTOCOLS.has(url.protocol)) a.setAttribute("href", url.href);
      else a.removeAttribute("href"); // Turndown then emits the bare link text.
    }
    if (a.querySelector("img") === null && (a.textContent ?? "").replace(INVISIBLE, "") === "") a.remove();
  }
}

export function baseUrl(doc: DomDocument, pageUrl: string): URL | undefined {
  const page = resolveUrl(pageUrl, undefined);
  const href = doc.querySelector("base[href]")?.getAttribute("href");
  if (href == null || href.trim() === "") return page;
  const base = resolveUrl(href, page);
  return base !== undefined && IMAGE_PROTOCOLS.has(base.protocol) ? base : page;
}

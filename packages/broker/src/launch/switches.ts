// Command-line switches both ways of launching Chromium share (launch/chromium.ts with the extension, and
// launch/cdpChromium.ts over CDP).

/**
 * Features a headless browser turns off: the WebUI omnibox popups, which Chromium preloads into a renderer of their
 * own at start although no one can ever see them; ~1.5 s of CPU at each start, about half of what a headless start
 * costs on its own (measured: 8 s after launch, ~400 vs ~230 clock ticks over the browser's processes).
 */
export const HEADLESS_DISABLED_FEATURES = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"];

/**
 * Chromium honours only the last `--enable-features=` and the last `--disable-features=`: every occurrence of each
 * is merged into one, in the place of the first, so a caller's extra switches add to tabrelay's rather than replace them.
 */
export function mergeFeatureSwitches(args: string[]): string[] {
  const merged = new Map<string, string[]>();
  const out: string[] = [];
  for (const arg of args) {
    const match = /^(--(?:enable|disable)-features)=(.*)$/.exec(arg);
    if (!match) {
      out.push(arg);
      continue;
    }
    const [, name = "", list = ""] = match;
    const features = merged.get(name);
    const items = list.split(",").filter(Boolean);
    if (features) {
      for (const item of items) if (!features.includes(item)) features.push(item);
    } else {
      merged.set(name, items);
      out.push(name); // a placeholder, filled below
    }
  }
  return out.map((arg) => (merged.has(arg) ? `${arg}=${merged.get(arg)?.join(",") ?? ""}` : arg));
}

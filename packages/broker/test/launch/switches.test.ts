// Chromium's switches as tabrelay launches it: Chromium reads only the last --disable-features (and the last
// --enable-features), so a caller's extra switches must add to tabrelay's, never silently replace them (branded
// Chrome would then ignore --load-extension, and the extension would not load).
import { describe, expect, it } from "vitest";
import { cdpChromiumArgs } from "../../src/launch/cdpChromium.js";
import { chromiumArgs } from "../../src/launch/chromium.js";
import { HEADLESS_DISABLED_FEATURES, mergeFeatureSwitches } from "../../src/launch/switches.js";

const featureSwitches = (args: string[]) => args.filter((arg) => /^--(enable|disable)-features=/.test(arg));

describe("feature switches", () => {
  it("merges every --disable-features and --enable-features into one each, in the place of the first, without repeats", () => {
    expect(
      mergeFeatureSwitches(["--a", "--disable-features=X,Y", "--enable-features=E", "--b", "--disable-features=Y,Z", "--enable-features=F", "about:blank"]),
    ).toEqual(["--a", "--disable-features=X,Y,Z", "--enable-features=E,F", "--b", "about:blank"]);
    expect(mergeFeatureSwitches(["--a", "about:blank"])).toEqual(["--a", "about:blank"]);
  });

  it("keeps the extension switch and the headless ones when a caller disables features of its own (extension launch)", () => {
    const args = chromiumArgs({
      chromiumPath: "/x",
      profileDir: "/p",
      extensionDir: "/e",
      headless: true,
      extraArgs: ["--disable-features=Translate", "--enable-features=WebMCP"],
    });
    expect(featureSwitches(args)).toEqual([
      `--disable-features=${["DisableLoadExtensionCommandLineSwitch", ...HEADLESS_DISABLED_FEATURES, "Translate"].join(",")}`,
      "--enable-features=WebMCP",
    ]);
    expect(args.at(-1)).toBe("about:blank");
  });

  it("turns the omnibox popups off only headless, where no one can see them (CDP launch)", () => {
    expect(featureSwitches(cdpChromiumArgs({ profileDir: "/p", headless: true, extraArgs: ["--disable-features=Translate"] }))).toEqual([
      `--disable-features=${[...HEADLESS_DISABLED_FEATURES, "Translate"].join(",")}`,
    ]);
    expect(featureSwitches(cdpChromiumArgs({ profileDir: "/p", headless: false }))).toEqual([]);
    expect(featureSwitches(chromiumArgs({ chromiumPath: "/x", profileDir: "/p", extensionDir: "/e", headless: false }))).toEqual([
      "--disable-features=DisableLoadExtensionCommandLineSwitch",
    ]);
  });
});

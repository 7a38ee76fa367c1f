// The profile tabrelay's Firefox starts on (launch/firefox.ts prepareFirefoxProfile): its add-on named by a proxy
// file, preferences that load only the profile's own add-ons, and a profile someone browses with refused outright.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FIREFOX_ADDON_ID, prepareFirefoxProfile } from "../../src/launch/firefox.js";

const dir = (prefix: string) => mkdtempSync(join(tmpdir(), `tabrelay-${prefix}-`));

describe("tabrelay's Firefox profile", () => {
  it("names the prepared add-on and loads add-ons from the profile's own folder only, unprompted", () => {
    const profile = dir("ffprofile");
    prepareFirefoxProfile(profile, "/somewhere/tabrelay-extension", { "dom.disable_open_during_load": false });
    expect(readFileSync(join(profile, "extensions", FIREFOX_ADDON_ID), "utf8")).toBe("/somewhere/tabrelay-extension\n");
    const userJs = readFileSync(join(profile, "user.js"), "utf8");
    expect(userJs).toContain('user_pref("extensions.enabledScopes", 1);');
    expect(userJs).toContain('user_pref("extensions.autoDisableScopes", 14);');
    expect(userJs).toContain('user_pref("dom.disable_open_during_load", false);');
    expect(userJs).not.toContain("app.update");
    // Its own profile again, after Firefox wrote prefs.js: taken as it is.
    writeFileSync(join(profile, "prefs.js"), "// Mozilla User Preferences\n");
    expect(() => prepareFirefoxProfile(profile, "/somewhere/tabrelay-extension")).not.toThrow();
  });

  it("refuses a Firefox profile it did not create, leaving its files as they were", () => {
    const everyday = dir("everyday");
    writeFileSync(join(everyday, "prefs.js"), "// Mozilla User Preferences\n");
    expect(() => prepareFirefoxProfile(everyday, "/x")).toThrow(/is a Firefox profile tabrelay did not create; .* give --profile a new folder/);
    const hardened = dir("hardened");
    writeFileSync(join(hardened, "user.js"), 'user_pref("xpinstall.signatures.required", true);\n');
    expect(() => prepareFirefoxProfile(hardened, "/x")).toThrow(/did not create/);
    expect(readFileSync(join(hardened, "user.js"), "utf8")).toBe('user_pref("xpinstall.signatures.required", true);\n');
  });
});

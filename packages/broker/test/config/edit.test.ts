// config.yaml as a person keeps it: the template a first start writes holds every key the file may have, at its
// default; `tabrelay policy` edits keep every comment and line they do not touch.
import { describe, expect, it } from "vitest";
import { type z } from "zod";
import { allowRead, grantWrite } from "../../src/config/edit.js";
import { compileSettings, configFileSchema, parseConfigText } from "../../src/config/build.js";
import { CONFIG_TEMPLATE } from "../../src/config/template.js";

const RANKING = ["example.com", "wikipedia.org"];

/** Every key path the schema allows (records as "*"), e.g. policy.read.top_sites. */
function keyPaths(schema: z.ZodType, prefix = ""): string[] {
  const def = (
    schema as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; shape?: Record<string, z.ZodType>; valueType?: z.ZodType; in?: z.ZodType } } }
  )._zod.def;
  if (def.type === "optional" || def.type === "default" || def.type === "nullable") return keyPaths(def.innerType!, prefix);
  if (def.type === "pipe") return keyPaths(def.in!, prefix);
  if (def.type === "object") return Object.entries(def.shape!).flatMap(([key, value]) => [`${prefix}${key}`, ...keyPaths(value, `${prefix}${key}.`)]);
  if (def.type === "record") return keyPaths(def.valueType!, `${prefix}*.`);
  return [];
}

/** The template with every commented setting line uncommented (prose stays a comment). */
function uncommented(template: string): string {
  return template
    .split("\n")
    .map((line) => (/^# ( *)(- |("[^"]+"|[a-z_0-9]+):( |$))/.test(line) ? line.slice(2) : line))
    .join("\n");
}

describe("the config template", () => {
  it("names every key the file may hold", () => {
    const text = uncommented(CONFIG_TEMPLATE);
    const file = parseConfigText(text, "template");
    const present = new Set(
      keyPaths(configFileSchema).filter(
        (path) =>
          path
            .split(".")
            .reduce<unknown>(
              (node, key) => (node && typeof node === "object" ? (key === "*" ? Object.values(node)[0] : Reflect.get(node, key)) : undefined),
              file,
            ) !== undefined,
      ),
    );
    // A user's policy section takes the same keys as policy.deny and policy.write: shown once, there.
    const missing = keyPaths(configFileSchema).filter(
      (path) => !present.has(path) && !present.has(path.replace(/^users\.\*\.policy\./, "policy.")) && !path.endsWith(".*"),
    );
    expect(missing).toEqual([]);
  });

  it("says each setting's default as the broker applies it", () => {
    const file = parseConfigText(uncommented(CONFIG_TEMPLATE), "template");
    const defaults = compileSettings({}, "template", RANKING);
    // The sections whose template lines are the defaults themselves (the others show examples of what to add).
    const said = compileSettings(
      {
        read: file.read,
        tabs: file.tabs,
        mcp: file.mcp,
        code_mode: file.code_mode,
        pages: file.pages,
        audit: file.audit,
        screenshots: { ...file.screenshots, s3: undefined },
        chat: { ...file.chat, model: undefined },
        bridge: file.bridge,
      },
      "template",
      RANKING,
    );
    for (const key of [
      "readMaxChars",
      "loadTimeoutMs",
      "tabLeaseIdleMs",
      "mcpSessions",
      "allowedOrigins",
      "allowedHosts",
      "trustedProxies",
      "codeMode",
      "screenshots",
      "chat",
      "extensionIds",
      "callTimeoutMs",
    ] as const) {
      expect(said[key], key).toEqual(defaults[key]);
    }
    expect({ ...said.pages, toolPolicy: undefined }).toEqual({ ...defaults.pages, toolPolicy: undefined });
  });
});

describe("tabrelay policy's edits", () => {
  const mine = `# my broker\nport: 9333 # the default, but mine\npolicy:\n  read:\n    top_sites: 100 # fewer\n    allow:\n      "x.example": [".*"] # keep\n`;

  it("adds a host and a path under policy.read.allow, keeping every comment", () => {
    const { text, said } = allowRead(mine, "docs.example.com/guide/v1.2");
    expect(said).toBe('added "docs.example.com": ["^/guide/v1\\\\.2"] under policy.read.allow');
    for (const kept of ["# my broker", "# the default, but mine", "top_sites: 100 # fewer", "# keep"]) expect(text).toContain(kept);
    expect(parseConfigText(text, "t").policy?.read?.allow).toEqual({ "x.example": [".*"], "docs.example.com": ["^/guide/v1\\.2"] });
    expect(allowRead(text, "docs.example.com/guide/v1.2").text).toBe(text); // once is enough
    expect(allowRead(text, "x.example/any").said).toContain("already");
  });

  it("sets a write grant, naming the one it replaced", () => {
    const first = grantWrite(mine, "click", "Shop.Example", "^Add to cart$");
    expect(parseConfigText(first.text, "t").policy?.write?.click).toEqual({ "shop.example": { label: "^Add to cart$" } });
    const second = grantWrite(first.text, "click", "shop.example", "^Buy$");
    expect(second.said).toContain('(it replaced {"label":"^Add to cart$"})');
    const keys = grantWrite(mine, "keys", "app.example", "^Message$", "^Enter$");
    expect(parseConfigText(keys.text, "t").policy?.write?.keys).toEqual({ "app.example": { keys: "^Enter$", label: "^Message$" } });
    expect(() => grantWrite(mine, "keys", "app.example", "^Message$")).toThrow(/needs --keys/);
  });

  it("edits the template a first start wrote: its comments stay above the settings", () => {
    const { text } = allowRead(CONFIG_TEMPLATE, "127.0.0.1:3000");
    expect(text.startsWith(CONFIG_TEMPLATE.trimEnd())).toBe(true);
    expect(parseConfigText(text, "t")).toEqual({ policy: { read: { allow: { "127.0.0.1:3000": [".*"] } } } });
  });

  it("writes a path as a URL has it, and refuses a wildcard over a whole top-level domain", () => {
    expect(allowRead(mine, "x2.example/../admin").said).toContain('["^/admin"]');
    expect(allowRead(mine, "x2.example/a b").said).toContain('["^/a%20b"]');
    expect(() => allowRead(mine, "*.com")).toThrow(/"\*\.com" is every site under \.com; name the site/);
    expect(() => grantWrite(mine, "click", "*.uk", "^Buy$")).toThrow(/is every site under \.uk/);
    expect(parseConfigText(allowRead(mine, "*.example.com").text, "t").policy?.read?.allow?.["*.example.com"]).toEqual([".*"]);
  });

  it("refuses what is not a host", () => {
    expect(() => allowRead(mine, "https://x.example/")).toThrow(/is not a host name/);
    expect(() => allowRead(mine, "a b")).toThrow(/is not a host name/);
  });
});

// config.yaml as a person keeps it: the template a first start writes holds every key the file may have, at its
// default; `tabrelay policy` edits keep every comment and line they do not touch.
import { describe, expect, it } from "vitest";
import { type z } from "zod";
import {
  addWriteGrant,
  allowPageTools,
  allowRead,
  askAbout,
  denyEntry,
  exactPattern,
  grantWrite,
  policyEntries,
  removeEntry,
  type PolicyEntry,
} from "../../src/config/edit.js";
import { compileRegex } from "../../src/policy/text.js";
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

describe("the dashboard's edits", () => {
  const mine = `# my broker\npolicy:\n  deny:\n    - { host: bank.example, path: ".*" } # never\n  write:\n    click:\n      "Shop.Example": { label: "^Checkout$" } # the one button\n`;
  /** The file as a start would take it: what editFile.ts checks before it writes. */
  const valid = (text: string) => compileSettings(parseConfigText(text, "t"), "t", RANKING);
  const label = (text: string, kind: string, host: string) => {
    const grants: unknown = Reflect.get(parseConfigText(text, "t").policy?.write ?? {}, kind);
    return grants && typeof grants === "object" ? (Reflect.get(grants, host) as { label: string } | undefined)?.label : undefined;
  };
  const whole = (regex: string) => compileRegex(regex, "t", "the label", { full: true });

  it("grants an exact label as that label and no other: every character a regex reads as syntax is escaped", () => {
    for (const text of [".*", "Buy|Delete", "a+b (2) [x] {3} ^$ \\ ?", "€ 5.00"]) {
      const pattern = exactPattern(text);
      expect(whole(pattern).test(text), text).toBe(true);
      for (const other of ["", "anything", "Buy", "Delete", "a", `${text}!`, ` ${text}`]) expect(whole(pattern).test(other), `${text} vs ${other}`).toBe(false);
    }
    const { text } = addWriteGrant("", "click", "shop.example", { exact: "Buy|Delete" });
    expect(label(text, "click", "shop.example")).toBe("^Buy\\|Delete$");
    valid(text);
  });

  it("adds a new grant, and joins a label to a host's grant (spelled as the file has it) rather than replacing it", () => {
    const added = addWriteGrant(mine, "type", "shop.example", { exact: "Email" });
    expect(added.said).toBe('added policy.write.type["shop.example"]: {"label":"^Email$"}');
    expect(added.key).toBe('policy.write.type["shop.example"]');
    const joined = addWriteGrant(mine, "click", "shop.example", { exact: "Add to cart" });
    expect(label(joined.text, "click", "Shop.Example")).toBe("^Checkout$|^Add to cart$");
    expect(joined.said).toContain('it was "^Checkout$"');
    expect(joined.key).toBe('policy.write.click["Shop.Example"].label');
    for (const kept of ["# my broker", "# never", "# the one button"]) expect(joined.text).toContain(kept);
    const grant = whole(label(joined.text, "click", "Shop.Example") ?? "");
    expect([grant.test("Checkout"), grant.test("Add to cart"), grant.test("Add to cart!")]).toEqual([true, true, false]);
    valid(joined.text);
    // What the grant allows already is left as it is.
    const again = addWriteGrant(joined.text, "click", "SHOP.example", { exact: "Add to cart" });
    expect(again.text).toBe(joined.text);
    expect(again.said).toContain("already");
  });

  it("keeps a flag group of the old label to itself: a case-blind label does not make the new one case-blind", () => {
    const text = addWriteGrant('policy:\n  write:\n    click:\n      "a.example": { label: "(?i)^buy$" }\n', "click", "a.example", { exact: "Sell" }).text;
    const grant = whole(label(text, "click", "a.example") ?? "");
    expect([grant.test("BUY"), grant.test("Sell"), grant.test("SELL"), grant.test("sell")]).toEqual([true, true, false, false]);
  });

  it("pairs a keys grant's keys with its label: a label joins it, other keys are refused", () => {
    const keys = 'policy:\n  write:\n    keys:\n      "mail.example": { keys: "^Control\\\\+Enter$", label: "^Message$" }\n';
    const joined = addWriteGrant(keys, "keys", "mail.example", { exact: "Reply" });
    expect(parseConfigText(joined.text, "t").policy?.write?.keys).toEqual({ "mail.example": { keys: "^Control\\+Enter$", label: "^Message$|^Reply$" } });
    expect(() => addWriteGrant(keys, "keys", "mail.example", { exact: "Reply" }, "^Escape$")).toThrow(/pairs its keys with its label/);
    expect(() => addWriteGrant("", "keys", "mail.example", { regex: "^Message$" })).toThrow(/needs the key combos/);
  });

  it("refuses what is no narrow grant: an empty label, a host that is not one, a whole top-level domain", () => {
    expect(() => addWriteGrant(mine, "click", "shop.example", { exact: " " })).toThrow(/cannot be empty/);
    expect(() => addWriteGrant(mine, "click", "https://shop.example/", { exact: "Buy" })).toThrow(/is not a host name/);
    expect(() => addWriteGrant(mine, "click", "*.com", { exact: "Buy" })).toThrow(/every site under \.com/);
    expect(() => addWriteGrant(mine, "click", "shop.example", { regex: "" })).toThrow(/regex is empty/);
  });

  it("grants page tools of an origin, finding the grant however the file spells the origin", () => {
    const added = allowPageTools("", "app.example", { exact: "render.chart" });
    expect(parseConfigText(added.text, "t").policy?.write?.page_tools).toEqual({ "https://app.example": { tools: "^render\\.chart$" } });
    const spelled = 'policy:\n  write:\n    page_tools:\n      "app.example": { tools: "^search$" }\n';
    const joined = allowPageTools(spelled, "https://app.example", { exact: "render.chart" });
    expect(parseConfigText(joined.text, "t").policy?.write?.page_tools).toEqual({ "app.example": { tools: "^search$|^render\\.chart$" } });
    valid(joined.text);
    expect(() => allowPageTools("", "https://app.example/path", { exact: "x" })).toThrow(/not an origin/);
  });

  it("adds a deny entry to the list, once, keeping the others and their comments", () => {
    const denied = denyEntry(mine, "Admin.Example", "^/admin");
    expect(parseConfigText(denied.text, "t").policy?.deny).toEqual([
      { host: "bank.example", path: ".*" },
      { host: "admin.example", path: "^/admin" },
    ]);
    expect(denied.text).toContain("# never");
    expect(denied.key).toBe("policy.deny[1]");
    expect(denyEntry(denied.text, "admin.example", "^/admin").text).toBe(denied.text);
    expect(parseConfigText(denyEntry("", "bank.example", "").text, "t").policy?.deny).toEqual([{ host: "bank.example", path: ".*" }]);
    expect(() => denyEntry(mine, "not a host", "")).toThrow(/is not a host name/);
    valid(denied.text);
  });

  it("lists the policy's entries as the file holds them, and removes each, keeping the rest and its comments", () => {
    const text = allowRead(allowPageTools(mine, "app.example", { regex: "^search$" }).text, "docs.example/guide").text;
    const listed = policyEntries(text);
    expect(listed.map((e) => e.key)).toEqual([
      'policy.read.allow["docs.example"]',
      "policy.deny[0]",
      'policy.write.click["Shop.Example"]',
      'policy.write.page_tools["https://app.example"]',
    ]);
    let left = text;
    for (const { entry } of listed) {
      const removed = removeEntry(left, entry);
      expect(removed.said).toMatch(/^removed /);
      left = removed.text;
      valid(left);
    }
    expect(policyEntries(left)).toEqual([]);
    expect(left).toContain("# my broker");
    const gone: PolicyEntry = { section: "write", kind: "click", host: "shop.example" };
    expect(() => removeEntry(mine, gone)).toThrow(/is not in config.yaml \(any more\)/);
    expect(() => removeEntry(mine, { section: "deny", host: "bank.example", path: "^/other" })).toThrow(/not in config.yaml/);
  });
});

describe("the ask list's edits (policy.ask.write)", () => {
  const FILE = '# mine\npolicy:\n  read:\n    allow:\n      "shop.example": [".*"]\n';

  it("adds a host once, keeps the comments, validates, and lists and removes it", () => {
    const added = askAbout(FILE, "Shop.Example");
    expect(added.text).toContain("# mine");
    expect(added.said).toContain('added "shop.example" to policy.ask.write');
    const settings = compileSettings(parseConfigText(added.text, "config.yaml"), "config.yaml", RANKING);
    expect(settings.ask.asksWrite("https://shop.example/cart")).toBe(true);
    expect(askAbout(added.text, "shop.example").text).toBe(added.text);
    const listed = policyEntries(added.text).filter((e) => e.entry.section === "ask.write");
    expect(listed).toEqual([{ entry: { section: "ask.write", host: "shop.example" }, key: "policy.ask.write[0]", value: "shop.example" }]);
    const removed = removeEntry(added.text, { section: "ask.write", host: "shop.example" });
    const after = compileSettings(parseConfigText(removed.text, "config.yaml"), "config.yaml", RANKING);
    expect(after.ask.asksWrite("https://shop.example/cart")).toBe(false);
    expect(() => removeEntry(removed.text, { section: "ask.write", host: "shop.example" })).toThrow(/not in config.yaml/);
  });

  it("keeps the read list apart: a site asked about for reads is listed, judged and removed as such", () => {
    const added = askAbout(FILE, "news.example", "read");
    expect(added.said).toContain('added "news.example" to policy.ask.read');
    const settings = compileSettings(parseConfigText(added.text, "config.yaml"), "config.yaml", RANKING);
    expect(settings.ask.asksRead("https://news.example/a")).toBe(true);
    expect(settings.ask.asksWrite("https://news.example/a")).toBe(false);
    expect(policyEntries(added.text).filter((e) => e.entry.section === "ask.read")).toEqual([
      { entry: { section: "ask.read", host: "news.example" }, key: "policy.ask.read[0]", value: "news.example" },
    ]);
    const removed = removeEntry(added.text, { section: "ask.read", host: "news.example" });
    expect(compileSettings(parseConfigText(removed.text, "config.yaml"), "config.yaml", RANKING).ask.asksRead("https://news.example/a")).toBe(false);
  });

  it("refuses a wildcard over a whole top-level domain, and a bad host", () => {
    expect(() => askAbout(FILE, "*.com")).toThrow(/every site under \.com/);
    expect(() => askAbout(FILE, "https://shop.example/")).toThrow();
  });
});

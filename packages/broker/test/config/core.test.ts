// The runtime-neutral core (src/core.ts, @tabrelay/broker/core): what a stateless host builds its config and its
// version from behaves as the Node broker's. That nothing in it needs Node is scripts/check-deps.mjs's to hold.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { loadRanking } from "../../src/config/ranking.js";
import { buildConfigFromText, ConfigError, parseRankingCsv, VERSION } from "../../src/core.js";

const TOKENS = { TABRELAY_MCP_TOKEN: "core-test-mcp-token-0123456789abcdef", TABRELAY_PAIRING_TOKEN: "core-test-pairing-token-0123456789abcdef" };
const SHIPPED = readFileSync(new URL("../../data/top-sites.csv", import.meta.url), "utf8");

/** The message loadConfig stops with for this config.yaml, with its path in place of the file's. */
function nodeRefusal(text: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-core-"));
  writeFileSync(join(dataDir, "config.yaml"), text, { mode: 0o600 });
  try {
    loadConfig({ dataDir, port: 0, env: TOKENS });
  } catch (error) {
    return error instanceof Error ? error.message.split(join(dataDir, "config.yaml")).join("SOURCE") : String(error);
  }
  throw new Error("loadConfig accepted the config");
}

function textRefusal(text: string): string {
  try {
    buildConfigFromText(text, { source: "SOURCE", mcpToken: TOKENS.TABRELAY_MCP_TOKEN, ranking: parseRankingCsv(SHIPPED) });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error("buildConfigFromText accepted the config");
}

describe("the runtime-neutral core", () => {
  it("has the version package.json says", () => {
    const manifest: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    expect(VERSION).toBe(manifest && typeof manifest === "object" ? Reflect.get(manifest, "version") : undefined);
  });

  it("refuses a config text with the Node loader's messages", () => {
    for (const text of [
      "port: [1\n", // not YAML
      "porty: 1\n", // an unknown key
      "policy:\n  deny:\n    - host: a.example\n      path: '(?=a)b'\n", // a regex RE2 cannot match in linear time
      "policy:\n  write:\n    click:\n      '*.*.example': { label: 'Buy' }\n", // a bad host pattern
      "code_mode:\n  commands: [no_such_command]\n", // code mode's own check
    ]) {
      expect(textRefusal(text), text).toBe(nodeRefusal(text));
    }
  });

  it("builds the Node loader's settings from the same text and ranking", () => {
    const text = "read:\n  max_chars: 5000\npolicy:\n  read:\n    top_sites: 20\n    allow:\n      docs.example: ['^/guide/']\n";
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-core-"));
    writeFileSync(join(dataDir, "config.yaml"), text, { mode: 0o600 });
    const node = loadConfig({ dataDir, port: 0, env: TOKENS });
    const neutral = buildConfigFromText(text, { source: "TABRELAY_CONFIG", mcpToken: TOKENS.TABRELAY_MCP_TOKEN, ranking: loadRanking() });
    expect(neutral.readMaxChars).toBe(5000);
    // The plain parts (compiled policies hold functions: they are compared by what they decide).
    // Where the config lives is each one's own: refusals name the file there, the binding here.
    expect(node.configName).toBe(join(dataDir, "config.yaml")); // the file's path: where a person goes to change it
    expect(neutral.configName).toBe("the TABRELAY_CONFIG binding");
    const plain = (c: typeof neutral) =>
      JSON.parse(
        JSON.stringify({
          ...c,
          configName: 0,
          codeMode: { ...c.codeMode, configName: 0 },
          policy: undefined,
          writePolicy: undefined,
          pages: { ...c.pages, toolPolicy: undefined },
        }),
      );
    // The dashboard's token is the Node broker's alone: a stateless host serves no dashboard.
    expect(node.dashboardToken).not.toBe("");
    expect({ ...plain(neutral), host: 0, port: 0, dataDir: 0, configPath: 0, pairingToken: 0, rankingPath: 0 }).toEqual({
      ...plain(node),
      dashboardToken: undefined,
      host: 0,
      port: 0,
      dataDir: 0,
      configPath: 0,
      pairingToken: 0,
      rankingPath: 0,
    });
    for (const url of ["https://docs.example/guide/x", "https://docs.example/blog", "https://google.com/", "http://127.0.0.1/"]) {
      const here = neutral.policy.check(url);
      const named = here.ok ? here : { ...here, message: here.message.replaceAll("the TABRELAY_CONFIG binding", join(dataDir, "config.yaml")) };
      expect(named, url).toEqual(node.policy.check(url));
    }
    const refused = neutral.policy.check("https://docs.example/blog");
    expect(refused.ok ? "" : refused.message).toContain("in the TABRELAY_CONFIG binding");
    // No text: an empty config, as a missing config.yaml.
    expect(buildConfigFromText("", { source: "TABRELAY_CONFIG", mcpToken: TOKENS.TABRELAY_MCP_TOKEN, ranking: [] }).codeMode.enabled).toBe(
      node.codeMode.enabled,
    );
  });
});

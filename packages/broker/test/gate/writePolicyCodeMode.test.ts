// The write policy's grants for code mode's program-only commands, as a spec: drag is judged as a click on the
// element grabbed, upload needs write.upload for the file input's label, eval needs write.eval for the host (none by
// default, the deny list wins), highlight needs nothing.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ElementFacts } from "@tabrelay/protocol";
import { loadConfig } from "../../src/config/config.js";
import { compileWritePolicy, type WritePolicyInput } from "../../src/policy/writePolicy.js";

const APP = "https://app.example/settings";

function facts(label: string, overrides: Partial<ElementFacts> = {}): ElementFacts {
  return {
    ref: "e1",
    role: "button",
    name: label,
    visibleText: label,
    tag: "button",
    disabled: false,
    editable: false,
    attributeText: "",
    frameUrl: APP,
    ...overrides,
  };
}

const policy = (write: WritePolicyInput["write"], deny: WritePolicyInput["deny"] = []) => compileWritePolicy({ deny, write });

describe("eval", () => {
  it("is refused with no grants at all, naming policy.write.eval", () => {
    const decision = policy({}).checkEval(APP);
    expect(decision).toMatchObject({ ok: false, code: "write_denied", rule: "default: no write grants" });
    expect(decision.ok ? "" : decision.message).toContain("policy.write.eval");
  });

  it("is refused where other kinds are granted but eval is not, naming the grant to add", () => {
    const decision = policy({ click: { "app.example": { label: ".*" } } }).checkEval(APP);
    expect(decision).toMatchObject({ ok: false, rule: "default: no write.eval grant" });
    expect(decision.ok ? "" : decision.message).toMatch(/add "app\.example" under policy\.write\.eval/);
  });

  it("is allowed on a granted host (subdomains by *.), not on another", () => {
    const p = policy({ eval: { "*.app.example": {} } });
    expect(p.checkEval("https://admin.app.example/")).toEqual({ ok: true, rule: 'write.eval["*.app.example"]' });
    expect(p.checkEval("https://other.example/").ok).toBe(false);
    expect(p.checkEval("file:///etc/passwd").ok).toBe(false);
  });

  it("the deny list wins over an eval grant", () => {
    expect(policy({ eval: { "app.example": {} } }, [{ host: "app.example", path: "^/settings" }]).checkEval(APP)).toMatchObject({
      ok: false,
      rule: "deny[0] app.example ^/settings",
    });
  });

  it("an eval grant takes no settings", () => {
    expect(() => policy({ eval: { "app.example": { label: ".*" } as unknown as Record<string, never> } })).toThrow(
      /policy\.write\.eval\["app\.example"\]\.label: unknown setting/,
    );
  });
});

describe("upload, drag and highlight", () => {
  const p = policy({ click: { "app.example": { label: "^(Photo|Card)$" } }, upload: { "app.example": { label: "^Photo$" } } });
  const file = (label: string) => facts(label, { tag: "input", inputType: "file" });

  it("upload needs the write.upload grant for the input's label; a click grant is not enough", () => {
    expect(p.check("upload", APP, file("Photo"))).toEqual({ ok: true, rule: 'write.upload["app.example"]' });
    const card = p.check("upload", APP, file("Card"));
    expect(card).toMatchObject({ ok: false, rule: 'write.upload["app.example"].label' });
    const clickOnly = policy({ click: { "app.example": { label: ".*" } } }).check("upload", APP, file("Photo"));
    expect(clickOnly).toMatchObject({ ok: false, rule: "default: no write.upload grant" });
  });

  it("upload is refused on a hidden or disabled input, whatever the grant", () => {
    expect(p.check("upload", APP, file("Photo")).ok).toBe(true);
    expect(p.check("upload", APP, { ...file("Photo"), hidden: "display" })).toMatchObject({ ok: false, rule: "element: hidden" });
    expect(p.check("upload", APP, { ...file("Photo"), disabled: true })).toMatchObject({ ok: false, rule: "element: disabled" });
  });

  it("drag is judged as a click on the element grabbed", () => {
    expect(p.check("drag", APP, facts("Card"))).toEqual({ ok: true, rule: 'write.click["app.example"]' });
    expect(p.check("drag", APP, facts("Delete"))).toMatchObject({ ok: false, code: "write_denied" });
    expect(policy({ type: { "app.example": { label: ".*" } } }).check("drag", APP, facts("Card"))).toMatchObject({
      ok: false,
      rule: "default: no write.click grant",
    });
    expect(p.isStateChanging("drag")).toBe(true);
  });

  it("highlight changes nothing: no grant needed, not state-changing", () => {
    expect(policy({}).check("highlight", APP, facts("Anything"))).toEqual({ ok: true, rule: "read-only action" });
    expect(p.isStateChanging("highlight")).toBe(false);
  });
});

describe("config.yaml: the upload and eval grants", () => {
  const load = (grants: string) => {
    const dataDir = mkdtempSync(join(tmpdir(), "tabrelay-grants-"));
    writeFileSync(join(dataDir, "config.yaml"), `policy:\n  write:\n${grants}`);
    return loadConfig({
      dataDir,
      port: 0,
      env: { TABRELAY_MCP_TOKEN: "test-mcp-token-0123456789abcdef", TABRELAY_PAIRING_TOKEN: "test-pairing-token-0123456789abcdef" },
    });
  };

  it("loads both and enforces them; the description names them", () => {
    const config = load(`    upload:\n      "app.example": { label: "^Photo$" }\n    eval:\n      "app.example": {}\n`);
    expect(config.writePolicy.checkEval(APP)).toEqual({ ok: true, rule: 'write.eval["app.example"]' });
    expect(config.writePolicy.check("upload", APP, facts("Photo", { tag: "input", inputType: "file" })).ok).toBe(true);
    const lines = config.writePolicy.describe().join("\n");
    expect(lines).toContain('write.eval["app.example"]: programs may run expressions in pages of app.example');
    expect(lines).toMatch(/write\.upload\["app\.example"\]: setting the files of a file input .* \/\^Photo\$\//);
  });

  it("stops start-up on an eval grant with a setting, or an upload grant without its label", () => {
    expect(() => load(`    eval:\n      "app.example": { label: ".*" }\n`)).toThrow(/policy\.write\.eval/);
    expect(() => load(`    upload:\n      "app.example": {}\n`)).toThrow(/policy\.write\.upload/);
  });
});

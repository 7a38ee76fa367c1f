// tabrelay setup's edits of other programs' files: only tabrelay's own entry changes, everything else stays as written.
import { describe, expect, it } from "vitest";
import { mergeJson, mergeToml } from "../src/clientFiles.js";

describe("mergeToml (Codex's config.toml)", () => {
  const entry = { url: "http://127.0.0.1:9333/mcp", http_headers: { Authorization: "Bearer t" } };
  const table = '[mcp_servers.tabrelay]\nurl = "http://127.0.0.1:9333/mcp"\nhttp_headers = { Authorization = "Bearer t" }';

  it("replaces an earlier tabrelay table and its subtables in place, keeping the tables around it and their comments", () => {
    const before = `a = 1\n\n[mcp_servers.tabrelay]\ncommand = "old"\n\n[mcp_servers.tabrelay.env]\nX = "1"\n\n# docs server\n[mcp_servers.docs]\ncommand = "d"\n`;
    expect(mergeToml(before, entry)).toBe(`a = 1\n\n${table}\n\n# docs server\n[mcp_servers.docs]\ncommand = "d"\n`);
  });

  it("appends to a file without one, and to an empty file; the same text when it is there already", () => {
    expect(mergeToml("", entry)).toBe(`${table}\n`);
    const once = mergeToml('model = "o4"', entry);
    expect(once).toBe(`model = "o4"\n\n${table}\n`);
    expect(mergeToml(once, entry)).toBe(once);
  });

  it("does not take a table whose name only starts like ours", () => {
    const before = `[mcp_servers.tabrelay-old]\ncommand = "x"\n`;
    expect(mergeToml(before, entry)).toBe(`${before}\n${table}\n`);
  });
});

describe("mergeJson", () => {
  it("keeps every other key and server, and returns the text unchanged when the entry is there", () => {
    const before = `{"mcpServers":{"a":{"command":"a"}},"x":[1]}`;
    const after = mergeJson(before, "mcpServers", { url: "u" });
    expect(JSON.parse(after)).toEqual({ mcpServers: { a: { command: "a" }, tabrelay: { url: "u" } }, x: [1] });
    expect(mergeJson(after, "mcpServers", { url: "u" })).toBe(after);
  });

  it("refuses what it cannot keep: comments, a non-object, a non-object servers key", () => {
    expect(() => mergeJson("{ // c\n}", "mcpServers", {})).toThrow(/not plain JSON/);
    expect(() => mergeJson("[]", "mcpServers", {})).toThrow(/does not hold a JSON object/);
    expect(() => mergeJson('{"mcpServers": []}', "mcpServers", {})).toThrow(/is not an object/);
  });
});
